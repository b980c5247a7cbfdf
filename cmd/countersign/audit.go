package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/countersign/countersign/app"
	"github.com/countersign/countersign/models/people"
)

const auditUsage = "usage: countersign audit verify [--account NAME] [--seal]"

// auditCommand checks an account's audit log against its hash chain: exit 0
// when it verifies, 1 when a row was edited, deleted or added.
func auditCommand(ctx context.Context, cfg app.Config, args []string, out io.Writer) error {
	if len(args) == 0 || args[0] != "verify" {
		return usageError{auditUsage}
	}
	fs := flag.NewFlagSet("audit verify", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	account := fs.String("account", people.DefaultAccountName, "account name")
	seal := fs.Bool("seal", false, "seal the events that can be sealed first, as the running service does every second")
	if err := fs.Parse(args[1:]); err != nil || fs.NArg() > 0 {
		return usageError{auditUsage}
	}
	store, acct, err := openAccount(ctx, cfg, *account)
	if err != nil {
		return err
	}
	if *seal {
		sealer := store.NewAuditSealer()
		// Twice: on PostgreSQL a call seals what the call before it marked.
		for range 2 {
			if _, err := sealer.Seal(ctx); err != nil {
				return err
			}
		}
	}
	r, err := store.VerifyAudit(ctx, acct.ID)
	if err != nil {
		return err
	}
	head := "an empty chain"
	if r.HeadPos > 0 {
		head = fmt.Sprintf("chain head %d %s", r.HeadPos, r.HeadHash)
	}
	fmt.Fprintf(out, "audit log of account %s: %d sealed events checked, %s; %d newer events not sealed yet\n", acct.Name, r.Sealed, head, r.Unsealed)
	if r.OK() {
		fmt.Fprintln(out, "ok: no sealed row was edited, deleted or added")
		return nil
	}
	for _, p := range r.Problems {
		fmt.Fprintln(out, "  "+p)
	}
	problems := fmt.Sprintf("%d problems", len(r.Problems))
	if len(r.Problems) == 1 {
		problems = "1 problem"
	}
	return fmt.Errorf("the audit log of account %s does not verify: %s", acct.Name, problems)
}
