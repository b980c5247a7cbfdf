package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/people"
)

// countersignTools are the tools an agent holding every scope sees in
// tools/list, in the order the server lists them.
func countersignTools() []string {
	return []string{"approval_request", "approval_status", "approvals_add_progress", "approvals_create", "approvals_get",
		"approvals_get_auto_approve_policy", "approvals_list", "approvals_request_auto_approve", "approvals_revoke_auto_approve_policy",
		"session_end", "session_heartbeat", "session_start", "work_list"}
}

// needNodePackage returns the path of an npm package's file under
// node_modules. Without node on PATH or without the package it skips the
// test, except in CI (CI set), where it fails: CI installs both (.ci/run).
func needNodePackage(t *testing.T, file string) string {
	t.Helper()
	root := repoRoot(t)
	path := filepath.Join(root, "node_modules", filepath.FromSlash(file))
	missing := ""
	if _, err := exec.LookPath("node"); err != nil {
		missing = "node is not on PATH: install Node.js 20 (see .ci/run)"
	} else if _, err := os.Stat(path); err != nil {
		missing = fmt.Sprintf("node_modules/%s is missing: run `npm ci` in %s (make test does it)", file, root)
	}
	if missing != "" {
		if os.Getenv("CI") != "" {
			t.Fatal(missing)
		}
		t.Skip(missing)
	}
	return path
}

// startOnLocalhost runs the service on a free loopback port with
// http://localhost:PORT as its base URL, so that the resource in its
// protected-resource metadata is the very URL a client connects to, as
// RFC 9728 §3.3 has clients check.
func startOnLocalhost(t *testing.T, settings ...map[string]string) *server {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, apptest.SQLite, append(settings, map[string]string{
		"COUNTERSIGN_ADDR":     fmt.Sprintf("127.0.0.1:%d", port),
		"COUNTERSIGN_BASE_URL": fmt.Sprintf("http://localhost:%d", port),
	})...)
	s.URL = fmt.Sprintf("http://localhost:%d", port)
	return s
}

// node runs a Node.js script from the repository's root; see program.
func node(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	return program(t, env, "node", args...)
}

// program runs name from the repository's root to its end, with a limit of
// two minutes, no standard input and env added to its environment, and
// returns what it printed and its exit code.
func program(t *testing.T, env map[string]string, name string, args ...string) result {
	t.Helper()
	return runFor(t, 2*time.Minute, repoRoot(t), env, name, args...)
}

// bearerProxy forwards every request to target with token in the
// Authorization header, keeping the request's own Host and Origin. The
// conformance suite's server command sends no headers of its own, and
// Countersign answers nothing without an agent token.
func bearerProxy(t *testing.T, target, token string) *httptest.Server {
	t.Helper()
	to, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := httptest.NewServer(&httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(to)
			r.Out.Host = r.In.Host
			r.Out.Header.Set("Authorization", "Bearer "+token)
		},
		FlushInterval: -1, // SSE events pass at once
	})
	t.Cleanup(p.Close)
	return p
}

// conformanceCheck is one entry of the suite's checks.json.
type conformanceCheck struct {
	ID           string `json:"id"`
	Status       string `json:"status"`
	ErrorMessage string `json:"errorMessage"`
}

// runScenario runs one server scenario of the conformance suite against
// endpoint and returns its checks and the run.
func runScenario(t *testing.T, cli, endpoint, scenario string) ([]conformanceCheck, result) {
	t.Helper()
	out := t.TempDir()
	r := node(t, nil, cli, "server", "--url", endpoint, "--scenario", scenario, "--output-dir", out)
	files, err := filepath.Glob(filepath.Join(out, "*", "checks.json"))
	if err != nil || len(files) != 1 {
		t.Fatalf("scenario %s wrote checks.json %d times (%v)\n%s", scenario, len(files), err, r)
	}
	raw, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var checks []conformanceCheck
	if err := json.Unmarshal(raw, &checks); err != nil {
		t.Fatalf("scenario %s: checks.json: %v\n%s", scenario, err, raw)
	}
	return checks, r
}

// The conformance suite's server scenarios that apply to Countersign. The
// suite is 0.1.13, the newest that runs on Node 20 (0.1.14 on, 0.1.16
// included, need Node 22); its client speaks 2025-11-25, and runs against
// the binary that serves 2026-07-28 too (revision_test.go checks that
// revision with the go-sdk client). The others need what the suite's own test server has (tools such as
// test_simple_text, resources under test://, prompts, completions); the
// suite's auth scenarios all test clients (docs/agents.md, "Checked with the official
// conformance suite and the MCP Inspector").
func bearerOnlyScenarios() []string {
	return []string{
		"server-initialize", "ping", "tools-list", "logging-set-level", "resources-list",
		"server-sse-multiple-streams", "dns-rebinding-protection",
	}
}

func TestTheConformanceSuitesServerScenariosPassAgainstTheBinary(t *testing.T) {
	cli := needNodePackage(t, "@modelcontextprotocol/conformance/dist/index.js")
	s := startOnLocalhost(t)
	created := mustCLI(t, s.env, "agent", "create", "--name", "conformance", "--scopes", strings.Join(people.AllScopes, ","))
	token := lastLine(created.stdout)
	proxy := bearerProxy(t, s.URL, token)

	for _, scenario := range bearerOnlyScenarios() {
		t.Run(scenario, func(t *testing.T) {
			checks, r := runScenario(t, cli, proxy.URL+"/mcp", scenario)
			passed := 0
			for _, c := range checks {
				switch c.Status {
				case "SUCCESS":
					passed++
				case "FAILURE", "WARNING":
					t.Errorf("%s: %s %s", c.ID, c.Status, c.ErrorMessage)
				}
			}
			t.Logf("%s: %d of %d checks passed", scenario, passed, len(checks))
			if passed == 0 || r.code != 0 {
				t.Errorf("scenario %s: %d checks passed, exit %d\n%s", scenario, passed, r.code, r)
			}
		})
	}

	// Straight to the endpoint, without the proxy's token, the suite gets
	// no further than the 401: every scenario above needs the token.
	t.Run("without a token", func(t *testing.T) {
		checks, r := runScenario(t, cli, s.URL+"/mcp", "server-initialize")
		if len(checks) != 1 || checks[0].Status != "FAILURE" || !strings.Contains(checks[0].ErrorMessage, "send Authorization: Bearer <agent token>") {
			t.Fatalf("server-initialize without a token: %+v, want one FAILURE with the server's reason\n%s", checks, r)
		}
	})
}

// inspector runs the MCP Inspector's command-line client against endpoint
// with args, with no terminal (as in CI), and returns its run.
func inspector(t *testing.T, launcher, home, endpoint string, args ...string) result {
	t.Helper()
	return node(t, inspectorEnv(home), append([]string{launcher, "--cli", endpoint, "--format", "json", "--connect-timeout", "30000"}, args...)...)
}

// inspectorEnv is the Inspector's environment: HOME is home, so that no
// OAuth token or catalog of the developer's takes part, and its secrets stay
// in memory.
func inspectorEnv(home string) map[string]string {
	return map[string]string{"HOME": home, "MCP_INSPECTOR_SECRET_STORE": "memory"}
}

// shellQuote quotes each word for sh.
func shellQuote(words ...string) string {
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	return strings.Join(quoted, " ")
}

// inspectorResult is the JSON the Inspector's CLI prints with --format json:
// the method's result on stdout, or an error envelope on stderr.
type inspectorResult struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// decodeInspector reads the Inspector's JSON object from out (its last line).
func decodeInspector(t *testing.T, out string, r result) inspectorResult {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var v inspectorResult
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &v); err != nil {
		t.Fatalf("the Inspector printed no JSON object: %v\n%s", err, r)
	}
	return v
}

// The MCP Inspector's schema-portability report (tools/list --strict) finds
// nothing in any tool's input or output schema: no type union (a host that
// maps schemas onto a one-type dialect, such as Gemini's, rejects the tool or
// drops the constraint), no schema that constrains nothing, no remote $ref.
func TestTheInspectorFindsEveryToolSchemaPortable(t *testing.T) {
	launcher := needNodePackage(t, "@modelcontextprotocol/inspector/clients/launcher/build/index.js")
	s := startOnLocalhost(t)
	created := mustCLI(t, s.env, "agent", "create", "--name", "inspector", "--scopes", strings.Join(people.AllScopes, ","))
	bearer := "Authorization: Bearer " + lastLine(created.stdout)

	r := inspector(t, launcher, t.TempDir(), s.URL+"/mcp", "--method", "tools/list", "--header", bearer, "--strict")
	if r.code != 0 {
		t.Fatalf("tools/list --strict:\n%s", r)
	}
	var listed struct {
		Result struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		} `json:"result"`
		SchemaFindings []struct {
			ToolName string `json:"toolName"`
			Findings []struct {
				Rule     string `json:"rule"`
				Severity string `json:"severity"`
				Schema   string `json:"schema"`
				Path     string `json:"path"`
			} `json:"findings"`
		} `json:"schemaFindings"`
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &listed); err != nil {
		t.Fatalf("the Inspector printed no JSON object: %v\n%s", err, r)
	}
	if len(listed.Result.Tools) != len(countersignTools()) {
		t.Fatalf("the Inspector listed %d tools, want %d\n%s", len(listed.Result.Tools), len(countersignTools()), r)
	}
	findings := 0
	for _, tool := range listed.SchemaFindings {
		for _, f := range tool.Findings {
			findings++
			t.Errorf("%s %s: %s at %s.%s", tool.ToolName, f.Severity, f.Rule, f.Schema, f.Path)
		}
	}
	if findings > 0 || strings.Contains(r.stderr, "Schema portability") || strings.Contains(r.stderr, "Warning:") {
		t.Errorf("the Inspector's portability report over %d tools is not empty:\n%s", len(listed.Result.Tools), r.stderr)
	}
}

func TestTheInspectorCLIWorksWithABearerToken(t *testing.T) {
	launcher := needNodePackage(t, "@modelcontextprotocol/inspector/clients/launcher/build/index.js")
	s := startOnLocalhost(t)
	created := mustCLI(t, s.env, "agent", "create", "--name", "inspector", "--scopes", strings.Join(people.AllScopes, ","))
	token := lastLine(created.stdout)
	endpoint := s.URL + "/mcp"
	bearer := "Authorization: Bearer " + token
	home := t.TempDir()

	r := inspector(t, launcher, home, endpoint, "--method", "tools/list", "--header", bearer)
	if r.code != 0 {
		t.Fatalf("tools/list:\n%s", r)
	}
	var listed struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(decodeInspector(t, r.stdout, r).Result, &listed); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range listed.Tools {
		names = append(names, tool.Name)
	}
	if !slices.Equal(names, countersignTools()) {
		t.Fatalf("tools/list through the Inspector = %v, want %v", names, countersignTools())
	}

	// A write and a read: file an ask, then read it back.
	ask := `{"kind":"pull_request","title":"Merge acme/web#901","summary":"Fixes the logout redirect.",` +
		`"approve_means":"I merge #901; nothing rolls","deny_means":"#901 stays open",` +
		`"payload":{"pull_request":{"repo":"acme/web","number":901,"head":"4f1c2a9e0b7d3c5a8e6f1b2d4c9a7e3f5b8d0c1a","title":"Fix logout redirect"}},"context":{"no_context_reason":"a one-line fix found in review"}}`
	r = inspector(t, launcher, home, endpoint, "--method", "tools/call", "--tool-name", "approvals_create", "--tool-args-json", ask, "--header", bearer)
	var filed struct {
		IsError           bool `json:"isError"`
		StructuredContent struct {
			ApprovalID string `json:"approval_id"`
		} `json:"structuredContent"`
	}
	if r.code != 0 {
		t.Fatalf("tools/call approvals_create:\n%s", r)
	}
	if err := json.Unmarshal(decodeInspector(t, r.stdout, r).Result, &filed); err != nil || filed.IsError || !strings.HasPrefix(filed.StructuredContent.ApprovalID, "appr_") {
		t.Fatalf("approvals_create through the Inspector (%v):\n%s", err, r)
	}
	id := filed.StructuredContent.ApprovalID
	r = inspector(t, launcher, home, endpoint, "--method", "tools/call", "--tool-name", "approvals_get", "--tool-arg", "approval_id="+id, "--header", bearer)
	var got struct {
		IsError           bool `json:"isError"`
		StructuredContent struct {
			ApprovalID string `json:"approval_id"`
			Status     string `json:"status"`
			Title      string `json:"title"`
		} `json:"structuredContent"`
	}
	if r.code != 0 {
		t.Fatalf("tools/call approvals_get:\n%s", r)
	}
	if err := json.Unmarshal(decodeInspector(t, r.stdout, r).Result, &got); err != nil || got.IsError ||
		got.StructuredContent.ApprovalID != id || got.StructuredContent.Status != "pending" || got.StructuredContent.Title != "Merge acme/web#901" {
		t.Fatalf("approvals_get through the Inspector = %+v (%v), want %s pending\n%s", got, err, id, r)
	}

	// A wrong token. With --stored-auth-only, the flag the Inspector gives
	// for runs with nobody at the keyboard, it starts no OAuth flow and shows
	// the reason of the server's 401. Without it and without a terminal it
	// refuses to start the interactive flow.
	wrong := "Authorization: Bearer " + people.TokenPrefix + "notatoken"
	r = inspector(t, launcher, home, endpoint, "--method", "tools/list", "--header", wrong, "--stored-auth-only")
	if e := decodeInspector(t, r.stderr, r).Error; r.code == 0 || e == nil || e.Code != "auth_required" ||
		!strings.Contains(e.Message, "the token is not an agent token of this service") {
		t.Fatalf("tools/list with a wrong token and --stored-auth-only: want auth_required with the server's reason\n%s", r)
	}
	r = inspector(t, launcher, home, endpoint, "--method", "tools/list", "--header", wrong)
	if e := decodeInspector(t, r.stderr, r).Error; r.code == 0 || e == nil || e.Code != "auth_required" {
		t.Fatalf("tools/list with a wrong token: want auth_required\n%s", r)
	}
	for _, path := range []string{"/register", "/authorize", "/token"} {
		if strings.Contains(s.log.String(), "path="+path+" ") {
			t.Errorf("the Inspector reached %s: it started an OAuth flow\n%s", path, s.log)
		}
	}

	// With a terminal, as a person runs it, the Inspector starts its OAuth
	// flow after the 401: it reads the resource metadata, finds Countersign
	// named as the authorization server, reads its metadata, registers a
	// client at /oauth/register and sends the person to sign in at
	// /oauth/authorize with PKCE S256 and the endpoint as resource. Nobody
	// signs in here, so it is stopped after a while.
	t.Run("with a terminal", func(t *testing.T) {
		if _, err := exec.LookPath("script"); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatal("script (util-linux) is not on PATH: it gives the Inspector a terminal")
			}
			t.Skip("script (util-linux) is not on PATH: it gives the Inspector a terminal")
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		callback := fmt.Sprintf("http://%s/oauth/callback", l.Addr())
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		line := shellQuote("timeout", "20", "node", launcher, "--cli", endpoint, "--format", "json", "--method", "tools/list",
			"--header", wrong, "--callback-url", callback)
		r := program(t, inspectorEnv(home), "script", "-qec", line, "/dev/null")
		if r.code == 0 {
			t.Fatalf("tools/list with a wrong token on a terminal succeeded\n%s", r)
		}
		for _, step := range []string{"path=/.well-known/oauth-authorization-server status=200", "path=/oauth/register status=201"} {
			if !strings.Contains(s.log.String(), step) {
				t.Fatalf("the Inspector's OAuth flow did not reach %q\n%s\n%s", step, r, s.log)
			}
		}
		if !strings.Contains(r.stdout, "/oauth/authorize?") || !strings.Contains(r.stdout, "code_challenge_method=S256") {
			t.Fatalf("the Inspector did not send the person to /oauth/authorize with PKCE S256\n%s", r)
		}
	})
}
