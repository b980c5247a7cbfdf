package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/apptest/gatetest"
	"github.com/countersign/countersign/mcp/gate"
	"github.com/countersign/countersign/models/outbox"
)

// environmentUpstream, set, makes the test binary an MCP server over stdio
// whose tool environment reports the environment it was started with.
const environmentUpstream = "GATE_TEST_ENVIRONMENT_UPSTREAM"

type pathArgs struct {
	Path    string `json:"path"`
	Content string `json:"content,omitempty"`
}

// serveEnvironmentUpstream is the upstream of TestTheUpstreamNeverSeesCountersignsSecrets.
func serveEnvironmentUpstream() int {
	srv := mcp.NewServer(&mcp.Implementation{Name: "environment", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "environment", Description: "Report the environment."}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Join(os.Environ(), "\n")}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "write_file", Description: "Write a file."}, func(context.Context, *mcp.CallToolRequest, pathArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "written"}}}, nil, nil
	})
	fmt.Fprintln(os.Stderr, "environment upstream: serving over stdio") // a line of the upstream's own, which the gate passes on
	if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "environment upstream:", err)
		return 1
	}
	return 0
}

func writeRules(t *testing.T, rules string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "gate.json")
	if err := os.WriteFile(file, []byte(rules), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

func TestTheUpstreamNeverSeesCountersignsSecrets(t *testing.T) {
	env, _ := serviceWithAda(t)
	_, token := env.Agent(env.Account.ID, "gate")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	rules := writeRules(t, `{"server": "environment", "tools": {"write_file": {"approval": true}}}`)
	cmd := exec.Command(binary, "gate", "--rules", rules, "--caller", "claude", "--", self)
	cmd.Env = environ(map[string]string{
		"COUNTERSIGN_URL": env.URL, "COUNTERSIGN_TOKEN": token, "COUNTERSIGN_GATE_TOKENS": "claude=caller-secret",
		environmentUpstream: "1", "GATE_TEST_MARKER": "passed-through",
	})
	cmd.Stderr = os.Stderr
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	session, err := mcp.NewClient(&mcp.Implementation{Name: "desktop", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to countersign gate: %v", err)
	}
	defer session.Close()
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "environment", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("environment = %v, %v", res, err)
	}
	reported := strings.Split(res.Content[0].(*mcp.TextContent).Text, "\n")
	if !slices.Contains(reported, "GATE_TEST_MARKER=passed-through") {
		t.Fatalf("the upstream's environment lacks the proxy's own variables: %q", reported)
	}
	for _, kv := range reported {
		name, value, _ := strings.Cut(kv, "=")
		if slices.Contains([]string{"COUNTERSIGN_URL", "COUNTERSIGN_TOKEN", "COUNTERSIGN_GATE_TOKENS"}, name) ||
			strings.Contains(value, token) || strings.Contains(value, "caller-secret") {
			t.Errorf("the upstream sees %s", kv)
		}
	}
}

// httpUpstream is somebody else's server over Streamable HTTP, recording the
// headers of every request it gets and the files it writes.
type httpUpstream struct {
	url     string
	mu      sync.Mutex
	headers []http.Header
	written []string
}

func startHTTPUpstream(t *testing.T) *httpUpstream {
	t.Helper()
	u := &httpUpstream{}
	srv := mcp.NewServer(&mcp.Implementation{Name: "files", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "write_file", Description: "Write a file."}, func(_ context.Context, _ *mcp.CallToolRequest, in pathArgs) (*mcp.CallToolResult, any, error) {
		u.mu.Lock()
		u.written = append(u.written, in.Path)
		u.mu.Unlock()
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "wrote " + in.Path}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "read_text_file", Description: "Read a file."}, func(_ context.Context, _ *mcp.CallToolRequest, in pathArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "contents of " + in.Path}}}, nil, nil
	})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.headers = append(u.headers, r.Header.Clone())
		u.mu.Unlock()
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	u.url = hs.URL
	return u
}

func (u *httpUpstream) Written() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.written)
}

func (u *httpUpstream) Headers() []http.Header {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.headers)
}

// bearerTransport authenticates a caller to the proxy.
type bearerTransport string

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

var servingAt = regexp.MustCompile(`serving \S+ at (http://\S+/mcp)`)

// startHTTPGate runs countersign gate --upstream --listen and returns the
// proxy's endpoint once it serves.
func startHTTPGate(t *testing.T, env map[string]string, args ...string) string {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"gate"}, args...)...)
	cmd.Env = environ(env)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})
	endpoint := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			fmt.Fprintln(os.Stderr, sc.Text())
			if m := servingAt.FindStringSubmatch(sc.Text()); m != nil {
				endpoint <- m[1]
			}
		}
		close(endpoint)
	}()
	select {
	case url, ok := <-endpoint:
		if !ok {
			t.Fatal("countersign gate ended before it served")
		}
		return url
	case <-time.After(time.Minute):
		t.Fatal("countersign gate did not serve within a minute")
		return ""
	}
}

func TestGateOverStreamableHTTP(t *testing.T) {
	env, ada := serviceWithAda(t)
	_, token := env.Agent(env.Account.ID, "gate")
	up := startHTTPUpstream(t)
	rules := writeRules(t, `{"server": "files", "tools": {"write_file": {"approval": true}}}`)
	auditLog := filepath.Join(t.TempDir(), "audit.jsonl")
	endpoint := startHTTPGate(t, map[string]string{
		"COUNTERSIGN_URL": env.URL, "COUNTERSIGN_TOKEN": token, "COUNTERSIGN_GATE_TOKENS": "claude=claude-secret, ci=ci-secret",
	}, "--rules", rules, "--upstream", up.url+"/", "--upstream-header", "Authorization: Bearer upstream-secret",
		"--upstream-header", "X-Tenant: acme", "--listen", "127.0.0.1:0", "--audit-log", auditLog)

	t.Run("a caller without a known bearer token is refused", func(t *testing.T) {
		for _, auth := range []string{"", "Bearer nobody", "Bearer " + token} {
			req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusUnauthorized {
				t.Errorf("with Authorization %q: %d, want 401", auth, res.StatusCode)
			}
		}
	})

	connect := func(t *testing.T, secret, revision string) *mcp.ClientSession {
		t.Helper()
		session, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(context.Background(),
			&mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: bearerTransport(secret)}, MaxRetries: -1},
			&mcp.ClientSessionOptions{ProtocolVersion: revision})
		if err != nil {
			t.Fatalf("connect with %s: %v", secret, err)
		}
		if got := session.InitializeResult().ProtocolVersion; got != revision {
			t.Fatalf("connected on %s, want %s", got, revision)
		}
		t.Cleanup(func() { session.Close() })
		return session
	}
	tests := []struct {
		name, secret, tool, path, answer string
		wantText                         string
		wantAudit                        map[string]any
	}{
		{"claude's write approved by ada runs, and the audit line names both", "claude-secret", "write_file", "/a", "approve", "wrote /a",
			map[string]any{"caller": "claude", "approver": "ada", "phase": "allowed", "decision": "allow", "tool": "write_file"}},
		{"ci's write denied by ada is refused, and the audit line names ci", "ci-secret", "write_file", "/b", "deny", gate.RefusalText,
			map[string]any{"caller": "ci", "approver": "ada", "phase": "refused", "decision": "deny", "tool": "write_file"}},
		{"a read passes straight through", "ci-secret", "read_text_file", "/c", "", "contents of /c", nil},
	}
	for _, revision := range []string{"2025-11-25", "2026-07-28"} {
		for _, tc := range tests {
			t.Run(revision+": "+tc.name, func(t *testing.T) {
				before := len(gatetest.AuditLines(t, auditLog))
				session := connect(t, tc.secret, revision)
				done := make(chan *mcp.CallToolResult, 1)
				path := tc.path + "-" + revision
				go func() {
					res, err := session.CallTool(context.Background(), &mcp.CallToolParams{Name: tc.tool, Arguments: map[string]any{"path": path, "content": "x"}})
					if err != nil {
						t.Errorf("call: %v", err)
					}
					done <- res
				}()
				if tc.answer != "" {
					a := gatetest.OpenAsk(t, env)
					if r := ada.For(t).Decide(a.ID, tc.answer, ""); r.Status != http.StatusOK {
						t.Fatalf("ada answers %s: %s", tc.answer, r)
					}
				}
				res := <-done
				if res == nil {
					return
				}
				if want := strings.ReplaceAll(tc.wantText, tc.path, path); res.Content[0].(*mcp.TextContent).Text != want {
					t.Errorf("result = %q, want %q", res.Content[0].(*mcp.TextContent).Text, want)
				}
				ran := slices.Contains(up.Written(), path)
				if wantRan := tc.tool == "write_file" && tc.answer == "approve"; ran != wantRan {
					t.Errorf("the upstream wrote %s: %t, want %t", path, ran, wantRan)
				}
				gatetest.CheckAudit(t, gatetest.AuditLines(t, auditLog)[before:], tc.wantAudit)
			})
		}
	}

	t.Run("the upstream gets the --upstream-header values and none of the secrets", func(t *testing.T) {
		headers := up.Headers()
		if len(headers) == 0 {
			t.Fatal("the upstream got no request")
		}
		for i, h := range headers {
			if h.Get("Authorization") != "Bearer upstream-secret" || h.Get("X-Tenant") != "acme" {
				t.Errorf("request %d: Authorization %q, X-Tenant %q", i, h.Get("Authorization"), h.Get("X-Tenant"))
			}
			for name, values := range h {
				for _, v := range values {
					if strings.Contains(v, token) || strings.Contains(v, "claude-secret") || strings.Contains(v, "ci-secret") {
						t.Errorf("request %d: the upstream sees %s: %s", i, name, v)
					}
				}
			}
		}
	})
}

// Rules that ask for approvals with nowhere to ask fail at boot, naming what
// is missing, before any upstream is started; rules that ask for nothing
// need no Countersign.
func TestTheGateWithRulesThatAskAndNoCountersignFailsAtBoot(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "upstream-started")
	upstream := []string{"--", "sh", "-c", "touch " + marker}
	for _, tc := range []struct {
		name string
		env  map[string]string
	}{
		{"neither variable", map[string]string{}},
		{"no token", map[string]string{"COUNTERSIGN_URL": "http://127.0.0.1:1"}},
		{"no URL", map[string]string{"COUNTERSIGN_TOKEN": "cs_agent_x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rules := writeRules(t, `{"server": "files", "tools": {"write_file": {"approval": "path.within(args.path, '/etc')"}}}`)
			var stderr strings.Builder
			err := gateCommand(context.Background(), append([]string{"--rules", rules}, upstream...),
				func(k string) string { return tc.env[k] }, strings.NewReader(""), io.Discard, &stderr)
			if err == nil || !strings.Contains(err.Error(), "set COUNTERSIGN_URL (the service's base URL) and COUNTERSIGN_TOKEN (an agent token)") {
				t.Fatalf("gate = %v, want a refusal naming COUNTERSIGN_URL and COUNTERSIGN_TOKEN", err)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Fatal("the upstream was started although the gate could not ask anyone")
			}
		})
	}
	t.Run("rules that ask for nothing start the upstream without Countersign", func(t *testing.T) {
		rules := writeRules(t, `{"server": "files", "tools": {"write_file": {"approval": false}}}`)
		err := gateCommand(context.Background(), append([]string{"--rules", rules}, upstream...),
			func(string) string { return "" }, strings.NewReader(""), io.Discard, io.Discard)
		if err != nil && strings.Contains(err.Error(), "COUNTERSIGN_URL") {
			t.Fatalf("gate = %v, want no call for Countersign", err)
		}
		if _, err := os.Stat(marker); err != nil {
			t.Fatalf("the upstream was not started: %v", err)
		}
	})
}

// A tool_call filed by countersign gate ends when the gate stops waiting:
// the ask's expires_at is the gate's deadline (45 s after the call
// arrived), so the ask page, the inbox and the push's TTL show the real wait.
func TestAToolCallFiledByTheGateExpiresWhenTheGateStopsWaiting(t *testing.T) {
	ps := apptest.NewPushService(t)
	env, ada := serviceWithAdaAnd(t, map[string]string{"COUNTERSIGN_PUSH_ALLOWED_HOSTS": ps.Host()})
	ctx := context.Background()
	person, err := env.Store.PersonBySubject(ctx, "ada")
	if err != nil {
		t.Fatal(err)
	}
	endpoint, p256dh, auth := ps.Subscribe("phone")
	if _, err := env.Store.SavePushSubscription(ctx, person.ID, outbox.PushSubscription{Endpoint: endpoint, P256dh: p256dh, Auth: auth}); err != nil {
		t.Fatal(err)
	}
	_, token := env.Agent(env.Account.ID, "gate")
	up := startHTTPUpstream(t)
	rules := writeRules(t, `{"server": "files", "tools": {"write_file": {"approval": true}}}`)
	gateURL := startHTTPGate(t, map[string]string{
		"COUNTERSIGN_URL": env.URL, "COUNTERSIGN_TOKEN": token, "COUNTERSIGN_GATE_TOKENS": "claude=claude-secret",
	}, "--rules", rules, "--upstream", up.url+"/", "--listen", "127.0.0.1:0", "--timeout", "45s")
	session, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: gateURL, HTTPClient: &http.Client{Transport: bearerTransport("claude-secret")}, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()

	sent := time.Now()
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": "/a", "content": "x"}})
		if err != nil {
			t.Errorf("call: %v", err)
		}
		done <- res
	}()
	a := gatetest.OpenAsk(t, env)
	seen := time.Now()
	// The gate's deadline is 45 s after the call reached it: between sent and seen.
	if early, late := a.ExpiresAt.Sub(sent.Add(45*time.Second)), a.ExpiresAt.Sub(seen.Add(45*time.Second)); early < -2*time.Second || late > 2*time.Second {
		t.Errorf("the ask expires at %s, %s after the call was sent: want the gate's deadline, 45 s after it, within 2 s",
			a.ExpiresAt.Format(time.RFC3339Nano), a.ExpiresAt.Sub(sent))
	}
	if !strings.Contains(a.Payload, fmt.Sprintf(`"expires_at":%d`, a.ExpiresAt.Unix())) {
		t.Errorf("the payload %s does not carry the deadline the person signs", a.Payload)
	}

	page := func(path string) string {
		res, err := ada.HTTP.Get(env.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: HTTP %d", path, res.StatusCode)
		}
		return string(body)
	}
	secondsLeft := regexp.MustCompile(`>[1-4]?\ds left<`)
	if body := page("/approvals/" + a.ID); !strings.Contains(body, `data-testid="tool-call-waits"`) || !secondsLeft.MatchString(body) {
		t.Errorf("the ask page does not show the caller's wait in seconds:\n%s", body)
	}
	if body := page("/"); !secondsLeft.MatchString(body) {
		t.Errorf("the inbox does not show the ask's seconds left:\n%s", body)
	}
	d, ok := ps.Next(10 * time.Second)
	if !ok {
		t.Fatal("the ask was not pushed")
	}
	if ttl, err := strconv.Atoi(d.Header.Get("TTL")); err != nil || ttl > 47 || ttl < 30 {
		t.Errorf("the push's TTL is %q, want the seconds left of the gate's wait and the ask's slack after it (at most 47)", d.Header.Get("TTL"))
	}

	if r := ada.For(t).Decide(a.ID, "deny", ""); r.Status != http.StatusOK {
		t.Fatalf("ada denies: %s", r)
	}
	if res := <-done; res == nil || res.Content[0].(*mcp.TextContent).Text != gate.RefusalText {
		t.Errorf("the denied call answered %+v, want the refusal", res)
	}
}
