package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/countersign/countersign/app"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/people"
)

// openAccount opens the configured database (making the default account on
// a fresh one) and finds the account the command names. The commands log
// through slog.Default, the CLI's logger that main sets.
func openAccount(ctx context.Context, cfg app.Config, name string) (*models.Store, *people.Account, error) {
	store, err := app.OpenStore(ctx, cfg, slog.Default())
	if err != nil {
		return nil, nil, err
	}
	if err := store.EnsureDefaultAccount(ctx); err != nil {
		return nil, nil, err
	}
	acct, err := store.AccountByName(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	return store, acct, nil
}

const accountUsage = `usage: countersign account create NAME
       countersign account set NAME --allow-private-evidence=true|false
       countersign account list`

const agentUsage = `usage: countersign agent create --name NAME --scopes mcp:read,mcp:write,approvals:read,approvals:write [--for SUBJECT] [--account NAME]
       countersign agent list [--account NAME]
       countersign agent disable NAME [--account NAME] [--reason TEXT]`

// subjectsByID maps the account's members' person ids to their subjects,
// for lists that name people.
func subjectsByID(ctx context.Context, store *models.Store, accountID string) (map[string]string, error) {
	members, err := store.Members(ctx, accountID)
	if err != nil {
		return nil, err
	}
	subjects := make(map[string]string, len(members))
	for _, m := range members {
		subjects[m.ID] = m.Subject
	}
	return subjects, nil
}

func accountCommand(ctx context.Context, cfg app.Config, args []string, out io.Writer) error {
	if len(args) == 0 {
		return usageError{"account needs create, set or list\n" + accountUsage}
	}
	store, err := app.OpenStore(ctx, cfg, slog.Default())
	if err != nil {
		return err
	}
	if err := store.EnsureDefaultAccount(ctx); err != nil {
		return err
	}
	switch args[0] {
	case "create":
		if len(args) != 2 {
			return usageError{"usage: countersign account create NAME"}
		}
		a, err := store.CreateAccount(ctx, args[1])
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "account %s created (%s)\n", a.Name, a.ID)
		return nil
	case "set":
		fs := flag.NewFlagSet("account set", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		allow := fs.String("allow-private-evidence", "", "true or false")
		if len(args) < 2 {
			return usageError{"usage: countersign account set NAME --allow-private-evidence=true|false"}
		}
		if err := fs.Parse(args[2:]); err != nil || fs.NArg() > 0 {
			return usageError{"usage: countersign account set NAME --allow-private-evidence=true|false"}
		}
		v, err := strconv.ParseBool(*allow)
		if err != nil {
			return usageError{"--allow-private-evidence must be true or false"}
		}
		a, err := store.AccountByName(ctx, args[1])
		if err != nil {
			return err
		}
		if err := store.SetAllowPrivateEvidence(ctx, a.ID, v); err != nil {
			return err
		}
		fmt.Fprintf(out, "account %s: allow_private_evidence=%t\n", a.Name, v)
		return nil
	case "list":
		accounts, err := store.ListAccounts(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tID\tALLOW_PRIVATE_EVIDENCE\tCREATED")
		for _, a := range accounts {
			fmt.Fprintf(tw, "%s\t%s\t%t\t%s\n", a.Name, a.ID, a.AllowPrivateEvidence, a.CreatedAt.Format("2006-01-02 15:04"))
		}
		return tw.Flush()
	}
	return usageError{fmt.Sprintf("unknown account command %q", args[0])}
}

func agentCommand(ctx context.Context, cfg app.Config, args []string, out io.Writer) error {
	if len(args) == 0 {
		return usageError{"agent needs create, list or disable\n" + agentUsage}
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("agent "+sub, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	account := fs.String("account", people.DefaultAccountName, "account name")
	name := fs.String("name", "", "agent name")
	scopes := fs.String("scopes", "", "comma-separated scopes")
	forSubject := fs.String("for", "", "the subject of the person the agent acts for")
	reason := fs.String("reason", "disabled by an admin", "why")
	positional, err := parseInterspersed(fs, args)
	if err != nil {
		return usageError{fmt.Sprintf("agent %s: %v", sub, err)}
	}
	store, acct, err := openAccount(ctx, cfg, *account)
	if err != nil {
		return err
	}
	switch sub {
	case "create":
		if *name == "" || *scopes == "" || len(positional) > 0 {
			return usageError{"usage: countersign agent create --name NAME --scopes mcp:read,mcp:write,approvals:read,approvals:write [--for SUBJECT] [--account NAME]"}
		}
		agent, token, err := store.CreateAgentFor(ctx, acct.ID, *name, strings.Split(*scopes, ","), *forSubject)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "agent %s created in account %s with scopes %s\n", agent.Name, acct.Name, agent.Scopes)
		if *forSubject != "" {
			fmt.Fprintf(out, "it acts for %s: their approval does not count towards a two-person rule on its asks\n", *forSubject)
		}
		fmt.Fprintln(out, "its token is shown this once; only its hash is kept:")
		fmt.Fprintln(out, token)
		return nil
	case "list":
		agents, err := store.ListAgents(ctx, acct.ID)
		if err != nil {
			return err
		}
		subjects, err := subjectsByID(ctx, store, acct.ID)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tSUBJECT\tFOR\tSCOPES\tSTATE\tCREATED")
		for _, a := range agents {
			state := "enabled"
			if a.Disabled {
				state = "disabled: " + a.DisabledReason
			}
			forSubject := "-"
			if a.ForPersonID != nil {
				forSubject = subjects[*a.ForPersonID]
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", a.Name, a.Subject, forSubject, strings.ReplaceAll(a.Scopes, " ", ","), state, a.CreatedAt.Format("2006-01-02 15:04"))
		}
		return tw.Flush()
	case "disable":
		if len(positional) != 1 {
			return usageError{"usage: countersign agent disable NAME [--account NAME] [--reason TEXT]"}
		}
		agent, err := store.DisableAgent(ctx, acct.ID, positional[0], *reason, "cli")
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "agent %s disabled; its token no longer works and its open asks are cancelled\n", agent.Name)
		return nil
	}
	return usageError{fmt.Sprintf("unknown agent command %q", sub)}
}
