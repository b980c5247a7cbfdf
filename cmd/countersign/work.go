package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/countersign/countersign/app"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/people"
)

const workUsage = `usage: countersign work column add --key KEY --name NAME [--account NAME]
       countersign work column remove KEY [--account NAME]
       countersign work item add --column KEY --title TITLE [--description TEXT] [--account NAME]
       countersign work item remove ID [--account NAME]
       countersign work list [--account NAME]`

// operator is how the work board's history names a change made from the CLI.
const operator = "operator"

// workCommand manages an account's work board for operators and scripts:
// the same store calls the /work page makes.
func workCommand(ctx context.Context, cfg app.Config, args []string, out io.Writer) error {
	what := ""
	switch {
	case len(args) >= 2 && (args[0] == "column" || args[0] == "item"):
		what, args = args[0]+" "+args[1], args[2:]
	case len(args) >= 1 && args[0] == "list":
		what, args = "list", args[1:]
	default:
		return usageError{workUsage}
	}
	fs := flag.NewFlagSet("work", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	account := fs.String("account", people.DefaultAccountName, "account name")
	key := fs.String("key", "", "column key")
	name := fs.String("name", "", "column name")
	column := fs.String("column", "", "column key")
	title := fs.String("title", "", "item title")
	description := fs.String("description", "", "item description")
	positional, err := parseInterspersed(fs, args)
	if err != nil {
		return usageError{workUsage}
	}
	needs := map[string]int{"column add": 0, "column remove": 1, "item add": 0, "item remove": 1, "list": 0}
	if n, ok := needs[what]; !ok || len(positional) != n {
		return usageError{workUsage}
	}
	store, acct, err := openAccount(ctx, cfg, *account)
	if err != nil {
		return err
	}
	switch what {
	case "column add":
		c, err := store.AddColumn(ctx, acct.ID, *key, *name)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "added column %s (%s) to account %s\n", c.Key, c.Name, acct.Name)
	case "column remove":
		if err := store.RemoveColumn(ctx, acct.ID, positional[0]); err != nil {
			return err
		}
		fmt.Fprintf(out, "removed column %s\n", positional[0])
	case "item add":
		it, err := store.AddItem(ctx, acct.ID, *column, *title, *description, asks.ActorAdmin, operator)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "added %q to column %s\n%s\n", it.Title, it.ColumnKey, it.ID)
	case "item remove":
		if err := store.RemoveItem(ctx, acct.ID, positional[0], asks.ActorAdmin, operator); err != nil {
			return err
		}
		fmt.Fprintf(out, "removed item %s\n", positional[0])
	case "list":
		b, err := store.WorkBoard(ctx, acct.ID, "")
		if err != nil {
			return err
		}
		for _, c := range b.Columns {
			fmt.Fprintf(out, "%s\t%s\n", c.Key, c.Name)
			for _, it := range b.Items {
				if it.ColumnKey == c.Key {
					fmt.Fprintf(out, "  %s\t%s\n", it.ID, it.Title)
				}
			}
		}
	}
	return nil
}
