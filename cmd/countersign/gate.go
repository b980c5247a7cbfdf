package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/mcp/gate"
	"github.com/countersign/countersign/mcp/gate/proxy"
)

const gateUsage = `usage:
  countersign gate --rules gate.json [--timeout 45s] [--caller NAME] [--audit-log FILE] -- COMMAND ARGS...
      an upstream MCP server launched over stdio, served to the client over stdio
  countersign gate --rules gate.json --upstream URL [--upstream-header 'Authorization: …']... --listen ADDR [...]
      an upstream over Streamable HTTP, served over Streamable HTTP at ADDR/mcp; callers send a bearer
      token of COUNTERSIGN_GATE_TOKENS (name=token,name=token), and the name is the caller in audit events

Rules: per tool, true or a CEL predicate over args. Compare paths with path.within(p, dir) and path.clean(p),
which read a path as the upstream opens it (.., //, ~ under paths.home or HOME, a relative path against
paths.roots), never with startsWith, contains or ==, which /srv/fs/public/../secret/b.txt slips past:
  {"server": "filesystem", "timeout": "45s", "ask_life": "10m", "paths": {"roots": ["/srv/fs"]},
   "tools": {"write_file": {"approval": "path.within(args.path, '/srv/fs/secret')"},
             "move_file": {"approval": "path.within(args.source, '/srv/fs/secret') || path.within(args.destination, '/srv/fs/secret')"},
             "edit_file": {"approval": true}}}

A client that takes URL elicitation (2025-11-25 URL mode, or 2026-07-28 input_required) is answered at once with
the ask's page to open; its call completes when the client comes back, within ask_life (default 10m). Other
clients' calls wait on the connection for the timeout, and are told the ask's page and check code while they
wait: as a progress notification when the call carries a progress token, else as a log message
(notifications/message, level warning). The ask page says where the code is shown.

Environment: COUNTERSIGN_URL (the service's base URL) and COUNTERSIGN_TOKEN (an agent token with the
approvals scopes) reach Countersign; neither is passed to the upstream nor shown to the caller.`

// gateSecrets are the variables the upstream never sees.
var gateSecrets = []string{"COUNTERSIGN_URL", "COUNTERSIGN_TOKEN", "COUNTERSIGN_GATE_TOKENS"}

// gateCommand runs the proxy until the caller goes away or ctx ends.
func gateCommand(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("gate", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	rulesFile := fs.String("rules", "", "the rules JSON file")
	timeout := fs.Duration("timeout", 0, "how long a call waits for an answer, from its arrival (default: the rules' timeout, else 45s)")
	callerName := fs.String("caller", "", "the caller's name in audit events over stdio (default: the local user and the client's name)")
	auditLog := fs.String("audit-log", "", "append audit events as JSON lines to FILE instead of stderr")
	upstreamURL := fs.String("upstream", "", "the upstream's Streamable HTTP endpoint")
	listen := fs.String("listen", "", "serve Streamable HTTP at ADDR (with --upstream)")
	var headers []string
	fs.Func("upstream-header", "a header sent to the upstream, 'Name: value' (repeatable)", func(v string) error {
		if !strings.Contains(v, ":") {
			return fmt.Errorf("%q is not 'Name: value'", v)
		}
		headers = append(headers, v)
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return usageError{fmt.Sprintf("gate: %v\n%s", err, gateUsage)}
	}
	command := fs.Args()
	switch {
	case *rulesFile == "":
		return usageError{"gate: --rules is required\n" + gateUsage}
	case *upstreamURL == "" && len(command) == 0:
		return usageError{"gate: name the upstream: -- COMMAND ARGS, or --upstream URL --listen ADDR\n" + gateUsage}
	case *upstreamURL != "" && len(command) > 0:
		return usageError{"gate: either -- COMMAND ARGS or --upstream URL, not both\n" + gateUsage}
	case *upstreamURL != "" && *listen == "":
		return usageError{"gate: --upstream needs --listen ADDR\n" + gateUsage}
	case *timeout < 0:
		return usageError{"gate: --timeout must be positive"}
	}
	raw, err := os.ReadFile(*rulesFile)
	if err != nil {
		return fmt.Errorf("gate: read the rules: %w", err)
	}
	rules, err := proxy.ParseRules(raw, homeDir(getenv))
	if err != nil {
		return fmt.Errorf("gate: %s: %w", *rulesFile, err)
	}
	warnRawPathComparisons(slog.New(slog.NewTextHandler(stderr, nil)), *rulesFile, rules.Warnings)
	audit := gate.JSONLines(stderr, nil)
	if *auditLog != "" {
		f, err := os.OpenFile(*auditLog, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			return fmt.Errorf("gate: open the audit log: %w", err)
		}
		defer f.Close()
		audit = gate.JSONLines(f, func(err error) { fmt.Fprintln(stderr, "countersign gate: write the audit log:", err) })
	}
	opts := gate.Options{ApprovalTimeout: *timeout, Audit: audit}
	if needsSink(rules) {
		url, token := getenv("COUNTERSIGN_URL"), getenv("COUNTERSIGN_TOKEN")
		if url == "" || token == "" {
			return errors.New("gate: the rules ask for approvals: set COUNTERSIGN_URL (the service's base URL) and COUNTERSIGN_TOKEN (an agent token)")
		}
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		sink, err := gate.NewCountersign(cctx, gate.CountersignOptions{URL: url, Token: token, Server: rules.Server})
		cancel()
		if err != nil {
			return fmt.Errorf("gate: Countersign at %s: %w", url, err)
		}
		defer sink.Close()
		// Runs before the sink closes: the asks of 2025-11-25 callers that
		// went away are withdrawn first.
		var finishing sync.WaitGroup
		opts.Finishing = &finishing
		defer waitAtMost(&finishing, 10*time.Second)
		opts.OnApproval = sink.RequestApproval
		// A caller whose client takes URL elicitation is sent to the ask's
		// page at once, and its call waits as long as the ask lives.
		opts.Deferred = sink
	}
	if *upstreamURL != "" {
		return gateHTTP(ctx, *upstreamURL, headers, *listen, getenv("COUNTERSIGN_GATE_TOKENS"), rules, opts, stderr)
	}
	return gateStdio(ctx, command, *callerName, rules, opts, stdin, stdout, stderr)
}

// warnRawPathComparisons warns, at start, of each rule that compares a path
// argument as a raw string: the upstream resolves the path first, so the
// same file spelled another way (/srv/fs/public/../secret) slips past it.
func warnRawPathComparisons(log *slog.Logger, file string, warnings []proxy.RuleWarning) {
	for _, w := range warnings {
		log.Warn("gate: a rule compares a path as a raw string, and the same path spelled another way (.., //, ~) slips past it",
			"rules", file, "tool", w.Tool, "rule", w.Expression, "argument", "args."+w.Argument, "function", w.Function, "use", w.Suggestion())
	}
}

// homeDir is the directory a leading ~ names for an upstream the gate
// starts, found as Node's os.homedir() finds it: HOME, else the user's
// entry in the password database.
func homeDir(getenv func(string) string) string {
	if home := getenv("HOME"); home != "" {
		return home
	}
	if u, err := user.Current(); err == nil {
		return u.HomeDir
	}
	return ""
}

func needsSink(r *proxy.Rules) bool {
	for _, rule := range r.Approval {
		if rule.Asks() {
			return true
		}
	}
	return false
}

// upstreamEnv is the proxy's environment without the Countersign secrets.
func upstreamEnv() []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains(gateSecrets, name)
	})
}

func gateStdio(ctx context.Context, command []string, callerName string, rules *proxy.Rules, opts gate.Options, stdin io.Reader, stdout, stderr io.Writer) error {
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Env = upstreamEnv()
	cmd.Stderr = stderr
	local := "someone"
	if u, err := user.Current(); err == nil {
		local = u.Username
	}
	opts.Caller = func(_ context.Context, req mcp.Request) gate.Caller {
		if callerName != "" {
			return gate.Caller{Name: callerName}
		}
		if client := gate.ClientName(req); client != "" {
			return gate.Caller{Name: local + " via " + client}
		}
		return gate.Caller{Name: local}
	}
	p, err := proxy.Start(ctx, &mcp.CommandTransport{Command: cmd}, proxy.Options{Rules: rules, Gate: opts})
	if err != nil {
		return fmt.Errorf("gate: %s: %w", command[0], err)
	}
	defer p.Close()
	err = p.Server.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}})
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		return fmt.Errorf("gate: serve over stdio: %w", err)
	}
	return nil
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// headerTransport sends fixed headers to the upstream.
type headerTransport struct {
	headers http.Header
	next    http.RoundTripper
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.headers {
		r.Header[k] = v
	}
	return h.next.RoundTrip(r)
}

// waitAtMost waits for wg, or for d at most.
func waitAtMost(wg *sync.WaitGroup, d time.Duration) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
	}
}

// byRevision serves the gate's server to callers of either revision: a
// request of 2026-07-28 (its Mcp-Protocol-Version says so), which has no
// sessions, through the SDK's stateless handler, which alone serves it;
// the revisions before, which open sessions, through its session handler.
func byRevision(server *mcp.Server) http.Handler {
	of := func(*http.Request) *mcp.Server { return server }
	sessions := mcp.NewStreamableHTTPHandler(of, nil)
	stateless := mcp.NewStreamableHTTPHandler(of, &mcp.StreamableHTTPOptions{Stateless: true})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if v := r.Header.Get("Mcp-Protocol-Version"); v >= "2026-07-28" {
			stateless.ServeHTTP(w, r)
			return
		}
		sessions.ServeHTTP(w, r)
	})
}

func gateHTTP(ctx context.Context, upstream string, headers []string, listen, tokens string, rules *proxy.Rules, opts gate.Options, stderr io.Writer) error {
	callers := map[string]string{} // token → name
	for _, pair := range strings.Split(tokens, ",") {
		name, token, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if ok && name != "" && token != "" {
			callers[token] = name
		}
	}
	if len(callers) == 0 {
		return errors.New("gate: --listen needs COUNTERSIGN_GATE_TOKENS (name=token,…): callers are authenticated")
	}
	h := http.Header{}
	for _, kv := range headers {
		k, v, _ := strings.Cut(kv, ":")
		h.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	client := &http.Client{Transport: headerTransport{headers: h, next: http.DefaultTransport}}
	opts.Caller = gate.TokenCaller
	p, err := proxy.Start(ctx, &mcp.StreamableClientTransport{Endpoint: upstream, HTTPClient: client, MaxRetries: -1}, proxy.Options{Rules: rules, Gate: opts})
	if err != nil {
		return fmt.Errorf("gate: %s: %w", upstream, err)
	}
	defer p.Close()
	handler := byRevision(p.Server)
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		name, ok := callers[token]
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: name, Expiration: time.Now().Add(time.Hour)}, nil
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", auth.RequireBearerToken(verify, nil)(handler))
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("gate: listen on %s: %w", listen, err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	fmt.Fprintf(stderr, "countersign gate: serving %s at http://%s/mcp\n", upstream, ln.Addr())
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("gate: serve: %w", err)
	}
	return nil
}
