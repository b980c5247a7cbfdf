package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/countersign/countersign/app"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/oidc"
	"github.com/countersign/countersign/models/people"
	"github.com/countersign/countersign/oauth"
)

const cibaClientUsage = `usage:
  countersign ciba-client add --name NAME --method private_key_jwt --jwks FILE --person SUBJECT [--person SUBJECT …]
                 [--mode poll|ping] [--notification-endpoint URL] [--account NAME]
  countersign ciba-client add --name NAME --method client_secret_basic --person SUBJECT [--person SUBJECT …]
                 [--mode poll|ping] [--notification-endpoint URL] [--account NAME]
                                               register an OpenID CIBA client that may ask the people named; its
                                               client_id on the last line, or for client_secret_basic its
                                               client_id then its secret (shown this once) on the last two
  countersign ciba-client list [--account NAME]
  countersign ciba-client revoke ID [--account NAME]
                                               it can no longer authenticate; its open asks are cancelled`

const oidcUsage = `usage:
  countersign oidc keys                        the OpenID provider's signing keys: the current one, and the
                                               retired ones still published at /oauth/jwks.json
  countersign oidc rotate-key [--overlap 24h]  make a new signing key current; the old one stays published
                                               for the overlap; the new kid on the last line`

// repeated is a flag given once per value (--person ada --person bob).
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, ",") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }

// providerOf is the OpenID provider of the service cfg configures, on store.
func providerOf(cfg app.Config, store *models.Store) *oauth.Server {
	srv := oauth.New(store, cfg.BaseURL, cfg.BaseURL+"/mcp")
	srv.NotificationPrivateHosts = cfg.ChannelPrivate
	return srv
}

func cibaClientCommand(ctx context.Context, cfg app.Config, args []string, out io.Writer) error {
	if len(args) == 0 {
		return usageError{cibaClientUsage}
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("ciba-client "+sub, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	account := fs.String("account", people.DefaultAccountName, "account name")
	name := fs.String("name", "", "the client's name")
	method := fs.String("method", "", "private_key_jwt or client_secret_basic")
	jwksFile := fs.String("jwks", "", "a file holding the client's JWK Set (private_key_jwt)")
	mode := fs.String("mode", oidc.DeliveryPoll, "poll or ping")
	endpoint := fs.String("notification-endpoint", "", "where a ping goes (ping mode)")
	var persons repeated
	fs.Var(&persons, "person", "a person the client may ask, by subject (repeat)")
	positional, err := parseInterspersed(fs, args)
	if err != nil {
		return usageError{fmt.Sprintf("ciba-client %s: %v\n%s", sub, err, cibaClientUsage)}
	}
	store, acct, err := openAccount(ctx, cfg, *account)
	if err != nil {
		return err
	}
	switch sub {
	case "add":
		if *name == "" || *method == "" || len(persons) == 0 || len(positional) > 0 {
			return usageError{cibaClientUsage}
		}
		in := oauth.CIBAClientRegistration{AccountID: acct.ID, Name: *name, AuthMethod: *method, DeliveryMode: *mode,
			NotificationEndpoint: *endpoint, CreatedBy: "cli"}
		if *jwksFile != "" {
			raw, err := os.ReadFile(*jwksFile)
			if err != nil {
				return fmt.Errorf("--jwks: %w", err)
			}
			in.JWKS = string(raw)
		}
		members, err := store.Members(ctx, acct.ID)
		if err != nil {
			return err
		}
		for _, subject := range persons {
			id := ""
			for _, m := range members {
				if m.Subject == subject {
					id = m.ID
				}
			}
			if id == "" {
				return fmt.Errorf("--person: no person %q is a member of account %s", subject, acct.Name)
			}
			in.PersonIDs = append(in.PersonIDs, id)
		}
		c, secret, err := providerOf(cfg, store).RegisterCIBAClient(ctx, in)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "CIBA client %s registered in account %s (%s, %s); it may ask %s; its asks are filed by its own agent\n",
			c.Name, acct.Name, c.AuthMethod, c.DeliveryMode, strings.Join(persons, ", "))
		fmt.Fprintf(out, "the provider's configuration: %s%s\n", cfg.BaseURL, oauth.OpenIDConfigurationPath)
		if secret == "" {
			fmt.Fprintln(out, "its client_id:")
			fmt.Fprintln(out, c.ID)
			return nil
		}
		fmt.Fprintln(out, "its client_id, then its secret, shown this once (only its SHA-256 is kept):")
		fmt.Fprintln(out, c.ID)
		fmt.Fprintln(out, secret)
		return nil
	case "list":
		if len(positional) > 0 {
			return usageError{cibaClientUsage}
		}
		return listCIBAClients(ctx, store, acct.ID, out)
	case "revoke":
		if len(positional) != 1 {
			return usageError{cibaClientUsage}
		}
		if err := store.RevokeCIBAClient(ctx, acct.ID, positional[0], "cli"); err != nil {
			return err
		}
		fmt.Fprintf(out, "CIBA client %s revoked; it can no longer authenticate, and its open asks were cancelled\n", positional[0])
		return nil
	}
	return usageError{fmt.Sprintf("unknown ciba-client command %q\n%s", sub, cibaClientUsage)}
}

func listCIBAClients(ctx context.Context, store *models.Store, accountID string, out io.Writer) error {
	clients, err := store.CIBAClients(ctx, accountID)
	if err != nil {
		return err
	}
	subjects, err := subjectsByID(ctx, store, accountID)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tMETHOD\tMODE\tPEOPLE\tSTATE\tREGISTERED")
	for _, c := range clients {
		ids, err := store.CIBAClientPeople(ctx, c.ID)
		if err != nil {
			return err
		}
		var who []string
		for _, id := range ids {
			if s := subjects[id]; s != "" {
				who = append(who, s)
			}
		}
		state := "active"
		if c.RevokedAt != nil {
			state = "revoked"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.ID, strings.ReplaceAll(c.Name, "\t", " "), c.AuthMethod, c.DeliveryMode,
			strings.Join(who, ","), state, c.CreatedAt.Format("2006-01-02 15:04"))
	}
	return tw.Flush()
}

func oidcCommand(ctx context.Context, cfg app.Config, args []string, out io.Writer) error {
	if len(args) == 0 {
		return usageError{oidcUsage}
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("oidc "+sub, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	overlap := fs.Duration("overlap", 24*time.Hour, "how long the old key stays published")
	positional, err := parseInterspersed(fs, args)
	if err != nil || len(positional) > 0 {
		return usageError{fmt.Sprintf("oidc %s: %v\n%s", sub, err, oidcUsage)}
	}
	store, _, err := openAccount(ctx, cfg, people.DefaultAccountName)
	if err != nil {
		return err
	}
	switch sub {
	case "keys":
		keys, err := store.PublishedSigningKeys(ctx)
		if err != nil {
			return err
		}
		if len(keys) == 0 {
			fmt.Fprintln(out, "no signing key yet: the first is made when the provider first needs one")
			return nil
		}
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "KID\tSTATE\tMADE")
		for _, k := range keys {
			state := "current"
			if k.RetiredAt != nil {
				state = "retired, published until " + k.PublishedUntil.Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", k.Kid, state, k.CreatedAt.Format(time.RFC3339))
		}
		return tw.Flush()
	case "rotate-key":
		kid, err := providerOf(cfg, store).RotateSigningKey(ctx, *overlap)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "a new signing key is current; the one before stays published for %s\n", *overlap)
		fmt.Fprintln(out, kid)
		return nil
	}
	return usageError{fmt.Sprintf("unknown oidc command %q\n%s", sub, oidcUsage)}
}
