package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os/user"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/countersign/countersign/app"
	"github.com/countersign/countersign/models/people"
	"github.com/countersign/countersign/models/rules"
)

const ruleUsage = `usage: countersign rule add ID --count N --pool POOL [--kinds K,K] [--effects E,E] [--servers P,P] [--tools P,P]
                 [--requesters agent:NAME,…] [--min-priority N] [--apply-from N] [--escalate-to POOL] [--escalate-channel '#oncall'] [--escalate-after 30m]
                 [--remind-every 10m] [--name TEXT] [--account NAME]
       countersign rule list [--account NAME]
       countersign rule remove ID [--account NAME]
POOL is owners, admins, members, asked_of+<role> or group:<name>=<subject>,<subject>.
A rule with a built-in's id (builtin-production-run, builtin-roll, builtin-auto-approve, builtin-rule-change)
replaces it; removing a built-in switches it off. This is the operator's path on the host: the change applies at
once and goes on the audit chain; a change made in the browser waits for the quorum the rules give to rule changes.`

// ruleCommand adds, lists and removes an account's approval rules.
func ruleCommand(ctx context.Context, cfg app.Config, args []string, out io.Writer) error {
	if len(args) == 0 {
		return usageError{"rule needs add, list or remove\n" + ruleUsage}
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("rule "+sub, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	account := fs.String("account", people.DefaultAccountName, "account name")
	name := fs.String("name", "", "the rule in words")
	count := fs.Int("count", 0, "distinct people, 1 to 5")
	pool := fs.String("pool", "", "whom the rule asks")
	kinds := fs.String("kinds", "", "ask kinds it covers")
	effects := fs.String("effects", "", "run effects it covers")
	servers := fs.String("servers", "", "tool_call server patterns")
	tools := fs.String("tools", "", "tool_call tool patterns")
	requesters := fs.String("requesters", "", "requesting agents' subjects")
	minPriority := fs.Int("min-priority", 0, "priority at least")
	applyFrom := fs.Int("apply-from", 0, "stand aside while the pool has fewer people")
	escalateTo := fs.String("escalate-to", "", "the escalation pool")
	escalateAfter := fs.Duration("escalate-after", 0, "the delay before it escalates")
	escalateChannel := fs.String("escalate-channel", "", "a shared channel (Admin → Channels) the ask is posted to after the delay")
	remindEvery := fs.Duration("remind-every", 0, "how often an unanswered ask is pushed again")
	positional, err := parseInterspersed(fs, args)
	if err != nil {
		return usageError{fmt.Sprintf("rule %s: %v\n%s", sub, err, ruleUsage)}
	}
	store, acct, err := openAccount(ctx, cfg, *account)
	if err != nil {
		return err
	}
	switch sub {
	case "add":
		if len(positional) != 1 {
			return usageError{ruleUsage}
		}
		spec := rules.RuleSpec{Name: *name, Kinds: list(*kinds), Effects: list(*effects), Servers: list(*servers), Tools: list(*tools),
			Requesters: list(*requesters), MinPriority: *minPriority, Count: *count, ApplyFrom: *applyFrom,
			EscalateAfter: rules.Duration(*escalateAfter), EscalateChannel: *escalateChannel, RemindEvery: rules.Duration(*remindEvery)}
		if spec.Pool, err = rules.ParsePool(*pool); err != nil {
			return err
		}
		if *escalateTo != "" {
			if spec.EscalateTo, err = rules.ParsePool(*escalateTo); err != nil {
				return err
			}
		}
		r, err := store.SetRule(ctx, acct.ID, positional[0], spec, ruleOperator())
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "rule %s set in account %s: %s\n", r.ID, acct.Name, r.Summary())
		return nil
	case "list":
		rules, err := store.RulesWithRemoved(ctx, acct.ID)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tSTATE\tRULE\tNAME\tCHANGED BY")
		for _, r := range rules {
			state := "on"
			if r.Removed {
				state = "off"
			}
			by := r.CreatedBy
			if by == "" {
				by = "built in"
			} else {
				by += " at " + r.UpdatedAt.Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.ID, state, r.Summary(), r.Name, by)
		}
		return tw.Flush()
	case "remove":
		if len(positional) != 1 {
			return usageError{"usage: countersign rule remove ID [--account NAME]"}
		}
		if err := store.RemoveRule(ctx, acct.ID, positional[0], ruleOperator()); err != nil {
			return err
		}
		fmt.Fprintf(out, "rule %s removed from account %s\n", positional[0], acct.Name)
		return nil
	}
	return usageError{fmt.Sprintf("unknown rule command %q\n%s", sub, ruleUsage)}
}

// list splits a comma-separated flag.
func list(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// ruleOperator names who changed a rule from the host: cli:<user>.
func ruleOperator() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return "cli:" + u.Username
	}
	return "cli"
}
