package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"time"

	"github.com/countersign/countersign/app"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
)

const (
	inviteUsage = "usage: countersign invite --role owner|admin|member [--subject S | --add-role --subject S] [--account NAME]"
	keysUsage   = "usage: countersign keys export [--account NAME] [--out FILE]"
	personUsage = "usage: countersign person rename OLD NEW"
)

// personCommand renames a person: OLD, matched exactly, takes the subject NEW,
// which no other person may have in any case or Unicode form. It is how an
// operator ends the subject clashes an older version let in, which serve
// refuses to start with; it needs no running service.
func personCommand(ctx context.Context, cfg app.Config, args []string, out io.Writer) error {
	if len(args) != 3 || args[0] != "rename" {
		return usageError{personUsage}
	}
	store, err := app.OpenStore(ctx, cfg, slog.Default())
	if err != nil {
		return err
	}
	p, err := store.RenamePerson(ctx, args[1], args[2], "cli")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "person %s (%s) is now %s; their open asks and add-role invites follow, their history keeps %s, and the audit log of each of their accounts says so\n",
		args[1], p.ID, p.Subject, args[1])
	return nil
}

// inviteCommand makes a one-time invite and prints its URL alone on the last
// line. The operator invites as an owner. An invite for an existing person
// (--add-role) gives them the role when they sign in with their own passkey.
func inviteCommand(ctx context.Context, cfg app.Config, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("invite", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	role := fs.String("role", "", "owner, admin or member")
	subject := fs.String("subject", "", "the subject the new person must take (empty: they choose), or the existing person with --add-role")
	addRole := fs.Bool("add-role", false, "invite the existing person --subject names; they accept by signing in with their own passkey")
	account := fs.String("account", people.DefaultAccountName, "account name")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		return usageError{inviteUsage}
	}
	r, err := core.ParseRole(*role)
	if err != nil {
		return usageError{fmt.Sprintf("--role must be owner, admin or member, not %q\n%s", *role, inviteUsage)}
	}
	store, acct, err := openAccount(ctx, cfg, *account)
	if err != nil {
		return err
	}
	kind := people.InviteNewPerson
	if *addRole {
		kind = people.InviteAddRole
	}
	token, inv, err := store.CreateInvite(ctx, people.NewInvite{AccountID: acct.ID, Kind: kind, Role: r, Subject: *subject,
		By: people.OperatorInviter("cli")})
	if err != nil {
		return err
	}
	who := "a new person"
	if inv.Subject != "" {
		who = "a new person, " + inv.Subject
	}
	if inv.Kind == people.InviteAddRole {
		who = "the existing person " + inv.Subject
	}
	fmt.Fprintf(out, "invite for %s to join account %s as %s; it works once, until %s.\n", who, acct.Name, inv.Role, inv.ExpiresAt.Format(time.RFC3339))
	if inv.Kind == people.InviteAddRole {
		fmt.Fprintf(out, "only %s can accept it, by signing in with a passkey they already have:\n", inv.Subject)
	} else {
		fmt.Fprintln(out, "open it on the phone or computer that will hold the passkey:")
	}
	link := app.InviteURL(cfg.BaseURL, token)
	if screen := terminalOf(out); screen != nil {
		printQR(screen, "scan it with the phone's camera, or open the link below:", link)
	}
	fmt.Fprintln(out, link)
	return nil
}

// keysCommand exports an account's device keys for `countersign verify --keys`.
func keysCommand(ctx context.Context, cfg app.Config, args []string, out io.Writer) error {
	if len(args) == 0 || args[0] != "export" {
		return usageError{keysUsage}
	}
	fs := flag.NewFlagSet("keys export", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	account := fs.String("account", people.DefaultAccountName, "account name")
	file := fs.String("out", "", "write to this file instead of stdout")
	if err := fs.Parse(args[1:]); err != nil || fs.NArg() > 0 {
		return usageError{keysUsage}
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil {
		return fmt.Errorf("COUNTERSIGN_BASE_URL: %w", err)
	}
	store, acct, err := openAccount(ctx, cfg, *account)
	if err != nil {
		return err
	}
	export, err := store.ExportKeys(ctx, acct.ID, u.Hostname())
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(export, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if *file == "" {
		_, err := out.Write(b)
		return err
	}
	if err := os.WriteFile(*file, b, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", *file, err)
	}
	fmt.Fprintf(out, "wrote %d device keys of account %s (%s, RP ID %s) to %s\n", len(export.Keys), acct.Name, acct.ID, export.RPID, *file)
	return nil
}
