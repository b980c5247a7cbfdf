package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/countersign/countersign/app"
	"github.com/countersign/countersign/models/people"
	"github.com/countersign/countersign/runner"
)

const runnerUsage = `usage:
  countersign runner init --dir D [--scripts S]          on the runner host: key pair and scripts folder; public key on the last line
  countersign runner trust --dir D --keys KEYS.json      on the runner host: pin the device keys of countersign keys export
  countersign runner serve --dir D --server URL [--token-file F] [--time-limit 10m] [--parallel 4]
                           [--min-signers-production N]
                                                         on the runner host: run approved pinned runs, up to --parallel at once,
                                                         a production run only with the approvals of N people or more (default 1)
                                                         (token: --token-file or COUNTERSIGN_RUNNER_TOKEN; the minimum:
                                                         COUNTERSIGN_RUNNER_MIN_SIGNERS_PRODUCTION when the flag is left out)
  countersign runner enroll --name N --public-key KEY [--account A]
                                                         on the service: enroll a runner; its id, then its token, on the last two lines
  countersign runner list [--account A]
  countersign runner disable NAME [--account A]         its token stops and its runs that have not ended fail`

// minSignersProductionEnv sets runner serve's --min-signers-production
// when the flag is not given.
const minSignersProductionEnv = "COUNTERSIGN_RUNNER_MIN_SIGNERS_PRODUCTION"

// runnerHostCommand runs the runner-host commands, which need no server
// configuration: only --dir, --server and the runner token. It reports
// handled false for the commands that run on the service instead.
func runnerHostCommand(ctx context.Context, args []string, getenv func(string) string, out io.Writer, log *slog.Logger) (bool, error) {
	if len(args) == 0 {
		return true, usageError{runnerUsage}
	}
	sub, args := args[0], args[1:]
	if sub != "init" && sub != "trust" && sub != "serve" {
		return false, nil
	}
	fs := flag.NewFlagSet("runner "+sub, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dir := fs.String("dir", "", "the runner's folder")
	scripts := fs.String("scripts", "", "the approved scripts folder (init; default DIR/scripts)")
	keys := fs.String("keys", "", "a key export (trust)")
	server := fs.String("server", "", "the service's base URL (serve)")
	tokenFile := fs.String("token-file", "", "a file holding the runner token (serve)")
	limit := fs.Duration("time-limit", 10*time.Minute, "how long one run may take (serve)")
	poll := fs.Duration("poll", 30*time.Second, "how often to list its runs besides being told (serve)")
	parallel := fs.Int("parallel", runner.DefaultParallel, "how many runs to execute at once; 1 runs them one after another (serve)")
	minProduction := fs.Int("min-signers-production", 1, "the fewest distinct people whose approvals a production run must carry, whatever the server requires (serve)")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 || *dir == "" {
		return true, usageError{runnerUsage}
	}
	switch sub {
	case "init":
		key, err := runner.Init(*dir, *scripts)
		if err != nil {
			return true, err
		}
		fmt.Fprintf(out, "runner folder %s is ready; its private key stays in %s/%s.\n", *dir, *dir, runner.KeyFile)
		fmt.Fprintln(out, "Enroll it on the service with: countersign runner enroll --name NAME --public-key KEY; its public key:")
		fmt.Fprintln(out, key)
		return true, nil
	case "trust":
		if *keys == "" {
			return true, usageError{runnerUsage}
		}
		raw, err := os.ReadFile(*keys)
		if err != nil {
			return true, err
		}
		change, err := runner.Trust(*dir, raw)
		if err != nil {
			return true, err
		}
		if change.First {
			fmt.Fprintf(out, "pinned %d device key(s):\n", len(change.Added))
		} else if len(change.Added)+len(change.Removed) == 0 {
			fmt.Fprintln(out, "the pinned device keys are unchanged")
		}
		for _, k := range change.Added {
			fmt.Fprintln(out, "  + "+k)
		}
		for _, k := range change.Removed {
			fmt.Fprintln(out, "  - "+k)
		}
		return true, nil
	}
	// serve
	if *server == "" {
		return true, usageError{runnerUsage}
	}
	if *parallel < 1 {
		return true, usageError{fmt.Sprintf("runner serve: --parallel %d: at least 1 run at a time\n%s", *parallel, runnerUsage)}
	}
	if !flagGiven(fs, "min-signers-production") {
		if v := strings.TrimSpace(getenv(minSignersProductionEnv)); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return true, usageError{fmt.Sprintf("runner serve: %s=%q is not a whole number\n%s", minSignersProductionEnv, v, runnerUsage)}
			}
			*minProduction = n
		}
	}
	if *minProduction < 1 {
		return true, usageError{fmt.Sprintf("runner serve: --min-signers-production (or %s) %d: at least 1 person\n%s", minSignersProductionEnv, *minProduction, runnerUsage)}
	}
	token := strings.TrimSpace(getenv("COUNTERSIGN_RUNNER_TOKEN"))
	if *tokenFile != "" {
		raw, err := os.ReadFile(*tokenFile)
		if err != nil {
			return true, fmt.Errorf("read the token: %w", err)
		}
		token = strings.TrimSpace(string(raw))
	}
	if token == "" {
		return true, usageError{"runner serve needs its token: --token-file F or COUNTERSIGN_RUNNER_TOKEN"}
	}
	host, err := runner.Load(*dir)
	if err != nil {
		return true, err
	}
	r, err := runner.New(host, runner.Options{Server: *server, Token: token, Poll: *poll, TimeLimit: *limit, Parallel: *parallel,
		MinSignersProduction: *minProduction, Logger: log})
	if err != nil {
		return true, err
	}
	log.Info("runner serving", "server", *server, "scripts", host.Scripts, "pinned_keys", len(host.Trusted.Keys), "parallel", *parallel,
		"min_signers_production", *minProduction)
	return true, r.Serve(ctx)
}

// runnerCommand runs the runner commands of the service: enroll, list, disable.
func runnerCommand(ctx context.Context, cfg app.Config, args []string, out io.Writer) error {
	if len(args) == 0 {
		return usageError{runnerUsage}
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("runner "+sub, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	account := fs.String("account", people.DefaultAccountName, "account name")
	name := fs.String("name", "", "runner name")
	key := fs.String("public-key", "", "the public key countersign runner init printed")
	positional, err := parseInterspersed(fs, args)
	if err != nil {
		return usageError{fmt.Sprintf("runner %s: %v\n%s", sub, err, runnerUsage)}
	}
	store, acct, err := openAccount(ctx, cfg, *account)
	if err != nil {
		return err
	}
	switch sub {
	case "enroll":
		if *name == "" || *key == "" || len(positional) > 0 {
			return usageError{runnerUsage}
		}
		r, token, err := store.EnrollRunner(ctx, acct.ID, *name, *key, "cli")
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "runner %s enrolled in account %s with public key %s\n", r.Name, acct.Name, r.PublicKey)
		fmt.Fprintln(out, "its id (pinned runs name it as payload.run.runner_id), then its token, shown this once (only its hash is kept):")
		fmt.Fprintln(out, r.ID)
		fmt.Fprintln(out, token)
		return nil
	case "list":
		if len(positional) > 0 {
			return usageError{runnerUsage}
		}
		runners, err := store.ListRunners(ctx, acct.ID)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tID\tPUBLIC KEY\tSTATE\tENROLLED")
		for _, r := range runners {
			state := "enabled"
			if r.Disabled {
				state = "disabled by " + r.DisabledBy
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Name, r.ID, r.PublicKey, state, r.CreatedAt.Format("2006-01-02 15:04"))
		}
		return tw.Flush()
	case "disable":
		if len(positional) != 1 {
			return usageError{runnerUsage}
		}
		r, err := store.DisableRunner(ctx, acct.ID, positional[0], "cli")
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "runner %s disabled; its token no longer works and its runs that had not ended failed\n", r.Name)
		return nil
	}
	return usageError{fmt.Sprintf("unknown runner command %q\n%s", sub, runnerUsage)}
}
