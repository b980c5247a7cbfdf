// Command countersign is the Countersign service and its admin commands.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"syscall"

	"github.com/countersign/countersign/app"
)

const usage = `countersign: an approvals service that agents and people trust.

Usage:
  countersign [serve]                          run the service (the default)
  countersign version                          print the version make build stamped
  countersign healthcheck                      exit 0 when the service at COUNTERSIGN_ADDR answers /readyz,
                                               1 when not (the container's HEALTHCHECK)
  countersign account create NAME              make an account
  countersign account set NAME --allow-private-evidence=true|false
  countersign account list
  countersign agent create --name NAME --scopes mcp:read,mcp:write,approvals:read,approvals:write [--for SUBJECT] [--account NAME]
                                               make an agent; its token is printed alone on the last line
  countersign agent list [--account NAME]
  countersign agent disable NAME [--account NAME] [--reason TEXT]
  countersign invite --role owner|admin|member [--subject S | --add-role --subject S] [--account NAME]
                                               make a one-time invite (24 h) for a new person, or with --add-role a role
                                               the existing person S accepts with their own passkey; URL on the last line
  countersign keys export [--account NAME] [--out FILE]
                                               write the account's device keys, for verify --keys
  countersign person rename OLD NEW            give the person OLD (exactly) the subject NEW, unique in any case or
                                               Unicode form; serve refuses to start while two subjects clash
  countersign runner init --dir D [--scripts S]
                                               on a runner host: its key pair and approved scripts folder;
                                               the public key alone on the last line
  countersign runner enroll --name N --public-key KEY [--account NAME]
                                               enroll a runner: its id, then its token, on the last two lines
  countersign runner list [--account NAME]
  countersign runner disable NAME [--account NAME]
                                               its token stops; its runs that have not ended fail
  countersign runner trust --dir D --keys KEYS.json
                                               on a runner host: pin the device keys it accepts decisions from
  countersign runner serve --dir D --server URL [--token-file F] [--time-limit 10m] [--parallel 4]
                 [--min-signers-production N]
                                               on a runner host: run approved pinned runs once each, up to
                                               --parallel at once, a production run only with the approvals of
                                               N people or more (default 1) (docs/runners.md)
  countersign rule add ID --count N --pool POOL [--kinds K,…] [--effects E,…] [--servers P,…] [--tools P,…]
                 [--requesters agent:N,…] [--min-priority N] [--apply-from N] [--escalate-to POOL] [--escalate-channel C] [--escalate-after D]
                 [--remind-every D] [--name TEXT] [--account NAME]
                                               set an approval rule (two people for what matters); applies at once
  countersign rule list [--account NAME]       the rules in force, built-ins included
  countersign rule remove ID [--account NAME]  remove a rule (a built-in is switched off)
  countersign ciba-client add --name N --method private_key_jwt --jwks FILE | --method client_secret_basic
                 --person SUBJECT … [--mode poll|ping] [--notification-endpoint URL] [--account NAME]
                                               register an OpenID CIBA client and the people it may ask
  countersign ciba-client list [--account NAME]
  countersign ciba-client revoke ID [--account NAME]
  countersign oidc keys                        the OpenID provider's published signing keys
  countersign oidc rotate-key [--overlap 24h]  make a new signing key; the old one stays published for the overlap
  countersign doctor [--open URL]              check the configuration serve runs with and say what to fix: https
                                               or localhost, the RP ID, VAPID keys, clock, database, push services;
                                               exit 0 when all is OK, 1 when not
  countersign vapid                            print the Web Push (VAPID) public key
  countersign backup --out FILE                copy the SQLite database to a new FILE while serve runs
                                               (VACUUM INTO); on PostgreSQL use pg_dump
  countersign work column add --key KEY --name NAME [--account NAME]
  countersign work column remove KEY [--account NAME]
  countersign work item add --column KEY --title TITLE [--description TEXT] [--account NAME]
                                               the new item's id alone on the last line
  countersign work item remove ID [--account NAME]
  countersign work list [--account NAME]       the board's columns and items, with their ids
  countersign audit verify [--account NAME] [--seal]
                                               check the audit log against its hash chain; exit 0 intact, 1 not
  countersign verify PROOF.json|BUNDLE.json [--keys KEYS.json] [--rp-id ID] [--origin ORIGIN]
                 [--allow-self-asserted] [--allow-missing-payload]
                                               check a decision proof offline (docs/proof.md); exit 0 valid
                                               with a registered key and its payload, 1 not
  countersign ask --title TEXT [--approve-means TEXT] [--deny-means TEXT] [--kind KIND] [--payload JSON]
                 [--timeout 10m] [--proof FILE] [--url URL] [--token-file F]
                                               file an ask as an agent (COUNTERSIGN_URL, COUNTERSIGN_TOKEN) and wait:
                                               exit 0 approved, 1 denied, 2 no answer, 3 not asked;
                                               countersign ask --title "Deploy api" && ./deploy.sh
  countersign gate --rules gate.json [--timeout 45s] [--caller NAME] [--audit-log FILE] -- COMMAND ARGS...
  countersign gate --rules gate.json --upstream URL [--upstream-header 'H: v'] --listen ADDR
                                               an MCP proxy that holds the calls its rules name until a person approves

Every command prints its own usage with --help.

An admin command works on the database serve uses (it says which) and refuses to make a new
SQLite file where serve has never run, unless given --init.

Configuration is read from the environment:
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	slog.SetDefault(log)
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, log); err != nil {
		var code exitCode
		if errors.As(err, &code) { // a command whose exit codes say more than yes or no (ask)
			if code.err != nil {
				fmt.Fprintln(os.Stderr, "countersign:", code.err)
			}
			os.Exit(code.code)
		}
		var u usageError
		if errors.As(err, &u) {
			fmt.Fprintln(os.Stderr, "countersign:", err)
			os.Exit(2)
		}
		fmt.Fprintln(os.Stderr, "countersign:", err)
		os.Exit(1)
	}
}

// commandUsage is each command's usage, printed by countersign COMMAND
// --help (on stdout, exit 0); serve's is the whole help.
var commandUsage = map[string]string{
	"account":     accountUsage,
	"agent":       agentUsage,
	"ask":         askUsage,
	"audit":       auditUsage,
	"backup":      backupUsage,
	"ciba-client": cibaClientUsage,
	"doctor":      doctorUsage,
	"gate":        gateUsage,
	"healthcheck": healthcheckUsage,
	"invite":      inviteUsage,
	"keys":        keysUsage,
	"oidc":        oidcUsage,
	"rule":        ruleUsage,
	"runner":      runnerUsage,
	"vapid":       "usage: countersign vapid        print the Web Push (VAPID) public key",
	"verify":      verifyUsage,
	"work":        workUsage,
}

// version is stamped by make build (-ldflags -X main.version=…).
var version = "dev"

type usageError struct{ msg string }

func (u usageError) Error() string { return u.msg }

func run(ctx context.Context, args []string, getenv func(string) string, out io.Writer, log *slog.Logger) error {
	// --init may stand anywhere: it lets an admin command make a new database.
	init := slices.Contains(args, "--init")
	args = slices.DeleteFunc(slices.Clone(args), func(a string) bool { return a == "--init" })
	cmd := "serve"
	if len(args) > 0 {
		cmd, args = args[0], args[1:]
	}
	if cmd == "help" || cmd == "-h" || cmd == "--help" {
		fmt.Fprint(out, usage, app.TextTable(110))
		return nil
	}
	if cmd == "version" || cmd == "--version" {
		fmt.Fprintln(out, "countersign", version)
		return nil
	}
	if cmd == "verify" { // offline: no configuration, database or network
		return verifyCommand(args, out) // its --help lists its flags as well
	}
	if helpAsked(args) { // before the configuration and the database are read
		if u, ok := commandUsage[cmd]; ok {
			fmt.Fprintln(out, u)
			return nil
		}
		if cmd == "serve" {
			fmt.Fprint(out, usage, app.TextTable(110))
			return nil
		}
	}
	if cmd == "ask" { // an agent's ask over MCP: no database of its own
		return askCommand(ctx, args, getenv, out, os.Stderr)
	}
	if cmd == "gate" { // a proxy: no database; it reaches the service over MCP
		return gateCommand(ctx, args, getenv, os.Stdin, out, os.Stderr)
	}
	if cmd == "runner" { // the runner host's commands need no server configuration
		if handled, err := runnerHostCommand(ctx, args, getenv, out, log); handled {
			return err
		}
	}
	cfg, err := app.LoadConfig(getenv)
	if err != nil {
		return fmt.Errorf("configuration:\n%w", err)
	}
	cfg.Version = version
	if cmd == "healthcheck" { // a probe of the running service: no database of its own
		return healthcheckCommand(ctx, cfg, args, out)
	}
	if cmd == "doctor" { // checks the database itself, and says so when there is none
		return doctorCommand(ctx, cfg, args, out)
	}
	if cmd != "serve" {
		// An admin command: say which database, and make none by mistake.
		if err := app.CheckDatabase(cfg, init); err != nil {
			return err
		}
		log.Info("database", "database", cfg.DatabaseName())
	}
	switch cmd {
	case "serve":
		log.Info("garbage collector", "GOGC", app.TuneGC(getenv))
		return serve(ctx, cfg, log, terminalOf(os.Stderr))
	case "account":
		return accountCommand(ctx, cfg, args, out)
	case "agent":
		return agentCommand(ctx, cfg, args, out)
	case "invite":
		return inviteCommand(ctx, cfg, args, out)
	case "vapid":
		return vapidCommand(ctx, cfg, out)
	case "keys":
		return keysCommand(ctx, cfg, args, out)
	case "person":
		return personCommand(ctx, cfg, args, out)
	case "audit":
		return auditCommand(ctx, cfg, args, out)
	case "work":
		return workCommand(ctx, cfg, args, out)
	case "runner":
		return runnerCommand(ctx, cfg, args, out)
	case "rule":
		return ruleCommand(ctx, cfg, args, out)
	case "backup":
		return backupCommand(ctx, cfg, args, out)
	case "ciba-client":
		return cibaClientCommand(ctx, cfg, args, out)
	case "oidc":
		return oidcCommand(ctx, cfg, args, out)
	}
	return usageError{fmt.Sprintf("unknown command %q; run countersign help", cmd)}
}
