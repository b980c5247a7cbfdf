package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/countersign/countersign/ask"

	"github.com/countersign/countersign/app"
	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
)

// binary is the countersign command, built once for every test here.
var binary string

func TestMain(m *testing.M) {
	if os.Getenv(environmentUpstream) != "" {
		os.Exit(serveEnvironmentUpstream())
	}
	dir, err := os.MkdirTemp("", "countersign-cli-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, "make build folder:", err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "countersign")
	build := exec.Command("go", "build", "-ldflags", "-X main.version="+testBuildVersion, "-o", binary, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "go build ./cmd/countersign:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// environ is the test process's environment without any COUNTERSIGN_
// setting of the developer's, plus env.
func environ(env map[string]string) []string {
	out := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "COUNTERSIGN_") })
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

// result is what one run of the binary did.
type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// cli runs the binary with args to its end and returns what it printed and its
// exit code; a run that does not end within a minute fails the test.
func cli(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	return runFor(t, time.Minute, "", env, binary, args...)
}

// runFor runs name in dir ("" for this one) with env added to the
// environment and no standard input, and returns what it printed and its
// exit code; a run that does not end within limit fails the test.
func runFor(t *testing.T, limit time.Duration, dir string, env map[string]string, name string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = environ(env)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("%s %s did not end within %s\n%s", filepath.Base(name), strings.Join(args, " "), limit, r)
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("run %s %s: %v", filepath.Base(name), strings.Join(args, " "), err)
	}
	return r
}

// mustCLI runs the binary and fails the test unless it exits 0.
func mustCLI(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	r := cli(t, env, args...)
	if r.code != 0 {
		t.Fatalf("countersign %s failed:\n%s", strings.Join(args, " "), r)
	}
	return r
}

// row finds the line of a table printed by the CLI whose first column is
// name, split into its columns.
func row(t *testing.T, table, name string) []string {
	t.Helper()
	for _, line := range strings.Split(table, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == name {
			return f
		}
	}
	t.Fatalf("no row %q in:\n%s", name, table)
	return nil
}

func TestBadConfigurationStopsTheStart(t *testing.T) {
	tests := []struct {
		name, variable, value string
	}{
		{"an address without a port", "COUNTERSIGN_ADDR", "localhost"},
		{"a trusted proxy that is not an address", "COUNTERSIGN_TRUSTED_PROXIES", "127.0.0.1,proxy.example"},
		{"a port out of range", "COUNTERSIGN_ADDR", "127.0.0.1:70000"},
		{"a database URL that is not postgres", "COUNTERSIGN_DATABASE_URL", "mysql://root@127.0.0.1/countersign"},
		{"a base URL without a scheme", "COUNTERSIGN_BASE_URL", "approvals.example.com"},
		{"a base URL with a path", "COUNTERSIGN_BASE_URL", "https://approvals.example.com/app"},
		{"an ask life in days", "COUNTERSIGN_ASK_TTL", "7d"},
		{"an ask life under a minute", "COUNTERSIGN_ASK_TTL", "30s"},
		{"an ask rate that is not a rate", "COUNTERSIGN_ASK_RATE", "fast"},
		{"an ask burst of zero", "COUNTERSIGN_ASK_BURST", "0"},
		{"an ask burst that is not a number", "COUNTERSIGN_ASK_BURST", "many"},
		{"a session idle time in days", "COUNTERSIGN_SESSION_IDLE_WEB", "1d"},
		{"a session idle time under two minutes", "COUNTERSIGN_SESSION_IDLE_WEB", "30s"},
		{"a session idle time past the absolute life", "COUNTERSIGN_SESSION_IDLE_WEB", "1000h"},
	}
	for _, tt := range tests {
		t.Run(tt.name+" stops the start and names "+tt.variable, func(t *testing.T) {
			t.Parallel()
			data := t.TempDir()
			env := map[string]string{"COUNTERSIGN_DATA": data, "COUNTERSIGN_ADDR": "127.0.0.1:0", tt.variable: tt.value}
			r := cli(t, env, "serve")
			if r.code != 1 {
				t.Fatalf("exit code %d, want 1\n%s", r.code, r)
			}
			if !strings.Contains(r.stderr, tt.variable+":") {
				t.Fatalf("the message does not name %s:\n%s", tt.variable, r)
			}
			for _, s := range app.Settings {
				if s.Name != tt.variable && strings.Contains(r.stderr, s.Name+":") {
					t.Fatalf("the message names %s too, which was not set wrong:\n%s", s.Name, r)
				}
			}
			if _, err := os.Stat(filepath.Join(data, "countersign.db")); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("a database was opened despite the bad configuration (stat: %v)", err)
			}
		})
	}
}

// agentRow is an agent as the database holds it.
type agentRow struct {
	TokenHash string
	Scopes    string
	Disabled  bool
}

// readAgent reads the agent named name from the SQLite file in data.
func readAgent(t *testing.T, data, name string) agentRow {
	t.Helper()
	db, _, err := core.Open(context.Background(), "", data, 0, apptest.Logger())
	if err != nil {
		t.Fatalf("open the database: %v", err)
	}
	defer func() {
		if sqlDB, err := db.DB(); err == nil {
			sqlDB.Close()
		}
	}()
	var rows []agentRow
	if err := db.Raw(`SELECT token_hash, scopes, disabled FROM agents WHERE name = ?`, name).Scan(&rows).Error; err != nil {
		t.Fatalf("read agents: %v", err)
	}
	if len(rows) != 1 {
		t.Fatalf("%d agents named %q in the database, want 1", len(rows), name)
	}
	return rows[0]
}

func TestAgentCommands(t *testing.T) {
	data := t.TempDir()
	env := map[string]string{"COUNTERSIGN_DATA": data}

	created := mustCLI(t, env, "agent", "create", "--init", "--name", "bot", "--scopes", "mcp:read,approvals:read")
	lines := strings.Split(strings.TrimRight(created.stdout, "\n"), "\n")
	token := lines[len(lines)-1]
	if !regexp.MustCompile(`^` + people.TokenPrefix + `[a-z2-7]{40,}$`).MatchString(token) {
		t.Fatalf("the last line of stdout is %q, want the token alone\n%s", token, created)
	}
	if n := strings.Count(created.stdout+created.stderr, token); n != 1 {
		t.Fatalf("the token is printed %d times, want once\n%s", n, created)
	}

	t.Run("the database holds only the token's SHA-256", func(t *testing.T) {
		files, err := os.ReadDir(data)
		if err != nil {
			t.Fatal(err)
		}
		read := 0
		for _, f := range files { // countersign.db and any -wal or -shm beside it
			b, err := os.ReadFile(filepath.Join(data, f.Name()))
			if err != nil {
				t.Fatal(err)
			}
			read++
			if bytes.Contains(b, []byte(token)) {
				t.Fatalf("the token text is in %s", f.Name())
			}
		}
		if read == 0 {
			t.Fatalf("no database file in %s", data)
		}
		sum := sha256.Sum256([]byte(token))
		got := readAgent(t, data, "bot")
		if got.TokenHash != hex.EncodeToString(sum[:]) {
			t.Fatalf("token_hash = %q, want the SHA-256 of the token %q", got.TokenHash, hex.EncodeToString(sum[:]))
		}
		if got.Scopes != "mcp:read approvals:read" || got.Disabled {
			t.Fatalf("scopes = %q, disabled = %t; want \"mcp:read approvals:read\", false", got.Scopes, got.Disabled)
		}
	})

	t.Run("agent list shows it enabled with its scopes", func(t *testing.T) {
		list := mustCLI(t, env, "agent", "list")
		r := row(t, list.stdout, "bot")
		if len(r) < 5 || r[1] != "agent:bot" || r[2] != "-" || r[3] != "mcp:read,approvals:read" || r[4] != "enabled" {
			t.Fatalf("row = %q, want bot agent:bot - mcp:read,approvals:read enabled\n%s", r, list)
		}
		if strings.Contains(list.stdout, token) {
			t.Fatalf("agent list shows the token\n%s", list)
		}
	})

	t.Run("agent disable bot disables it", func(t *testing.T) {
		disabled := mustCLI(t, env, "agent", "disable", "bot")
		if !strings.Contains(disabled.stdout, "agent bot disabled") {
			t.Fatalf("disable says:\n%s", disabled)
		}
		list := mustCLI(t, env, "agent", "list")
		if r := row(t, list.stdout, "bot"); len(r) < 5 || r[4] != "disabled:" {
			t.Fatalf("row after disable = %q, want state disabled\n%s", r, list)
		}
		if got := readAgent(t, data, "bot"); !got.Disabled {
			t.Fatalf("the database says bot is not disabled")
		}
	})

	t.Run("an unknown scope is refused and named", func(t *testing.T) {
		r := cli(t, env, "agent", "create", "--name", "bot2", "--scopes", "mcp:read,approvals:admin")
		if r.code == 0 {
			t.Fatalf("an agent with scope approvals:admin was made\n%s", r)
		}
		if !strings.Contains(r.stderr, "approvals:admin") {
			t.Fatalf("the message does not name the scope approvals:admin\n%s", r)
		}
		if r.stdout != "" {
			t.Fatalf("a refused create printed on stdout (a token?)\n%s", r)
		}
		if list := mustCLI(t, env, "agent", "list"); strings.Contains(list.stdout, "bot2") {
			t.Fatalf("the refused agent is listed\n%s", list)
		}
	})
}

func TestAccountCommands(t *testing.T) {
	env := map[string]string{"COUNTERSIGN_DATA": t.TempDir()}

	created := mustCLI(t, env, "--init", "account", "create", "acme")
	m := regexp.MustCompile(`account acme created \((acct_[a-z2-7]+)\)`).FindStringSubmatch(created.stdout)
	if m == nil {
		t.Fatalf("create says:\n%s", created)
	}
	id := m[1]

	list := mustCLI(t, env, "account", "list")
	if r := row(t, list.stdout, "acme"); len(r) < 3 || r[1] != id || r[2] != "false" {
		t.Fatalf("acme row = %q, want acme %s false\n%s", r, id, list)
	}
	if r := row(t, list.stdout, people.DefaultAccountName); len(r) < 3 || r[2] != "false" {
		t.Fatalf("default row = %q, want allow_private_evidence false\n%s", r, list)
	}

	set := mustCLI(t, env, "account", "set", "acme", "--allow-private-evidence=true")
	if !strings.Contains(set.stdout, "allow_private_evidence=true") {
		t.Fatalf("set says:\n%s", set)
	}
	list = mustCLI(t, env, "account", "list")
	if r := row(t, list.stdout, "acme"); len(r) < 3 || r[1] != id || r[2] != "true" {
		t.Fatalf("acme row after set = %q, want acme %s true\n%s", r, id, list)
	}
	if r := row(t, list.stdout, people.DefaultAccountName); len(r) < 3 || r[2] != "false" {
		t.Fatalf("default row after setting acme = %q, want it unchanged (false)\n%s", r, list)
	}
}

// lockedBuffer collects a process's output while tests read it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// server is `countersign serve` running as its own process.
type server struct {
	URL    string // http://127.0.0.1:PORT, or https:// with COUNTERSIGN_TLS_CERT
	client *http.Client
	env    map[string]string
	cmd    *exec.Cmd
	log    *lockedBuffer
	done   chan struct{} // closed when the process has ended
	err    error         // how it ended, once done is closed
}

var listening = regexp.MustCompile(`msg="countersign listening" addr=(\S+)`)

// startServer runs the service on a port the system picks, reads the port
// from its start-up log line and waits until /healthz answers 200. settings
// are added to (or replace) its environment.
func startServer(t *testing.T, db apptest.Database, settings ...map[string]string) *server {
	t.Helper()
	env := map[string]string{
		"COUNTERSIGN_DATA":         t.TempDir(),
		"COUNTERSIGN_DATABASE_URL": apptest.DatabaseURL(t, db),
		"COUNTERSIGN_ADDR":         "127.0.0.1:0",
	}
	for _, m := range settings {
		maps.Copy(env, m)
	}
	s := &server{
		client: http.DefaultClient,
		env:    env,
		log:    &lockedBuffer{},
		done:   make(chan struct{}),
	}
	scheme := "http://"
	if cert := env["COUNTERSIGN_TLS_CERT"]; cert != "" {
		scheme, s.client = "https://", trusting(t, cert)
	}
	s.cmd = exec.Command(binary, "serve")
	s.cmd.Env = environ(s.env)
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	s.cmd.Stdout = s.log
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start countersign serve: %v", err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			fmt.Fprintln(s.log, sc.Text())
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
		_, _ = io.Copy(s.log, stderr) // what is left after a line too long to scan
		s.err = s.cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() {
		select {
		case <-s.done:
		default:
			_ = s.cmd.Process.Kill()
			<-s.done
		}
		if t.Failed() {
			t.Logf("server log:\n%s", s.log)
		}
	})
	select {
	case a := <-addr:
		s.URL = scheme + a
	case <-s.done:
		t.Fatalf("countersign serve ended before it listened: %v\n%s", s.err, s.log)
	case <-time.After(time.Minute):
		t.Fatalf("countersign serve did not log that it listens within a minute\n%s", s.log)
	}
	s.waitHealthy(t, string(db))
	return s
}

// waitHealthy polls /healthz until it answers 200 with the database named.
func (s *server) waitHealthy(t *testing.T, database string) {
	t.Helper()
	var last string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		res, err := s.client.Get(s.URL + "/healthz")
		if err != nil {
			last = err.Error()
			continue
		}
		var body map[string]string
		err = json.NewDecoder(res.Body).Decode(&body)
		res.Body.Close()
		last = fmt.Sprintf("HTTP %d %v (%v)", res.StatusCode, body, err)
		if res.StatusCode == http.StatusOK {
			if body["status"] != "ok" || body["database"] != database {
				t.Fatalf("/healthz = %v, want status ok and database %s", body, database)
			}
			return
		}
	}
	t.Fatalf("/healthz did not answer 200 within 30 s; last: %s\n%s", last, s.log)
}

// stop sends SIGTERM and returns the exit error, failing the test when the
// process does not end within a few seconds.
func (s *server) stop(t *testing.T) error {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("send SIGTERM: %v", err)
	}
	select {
	case <-s.done:
		return s.err
	case <-time.After(10 * time.Second):
		t.Fatalf("countersign serve did not exit within 10 s of SIGTERM\n%s", s.log)
		return nil
	}
}

func TestServeAnswersHealthAndStopsOnSIGTERM(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := startServer(t, db)
		if err := s.stop(t); err != nil {
			t.Fatalf("countersign serve exited with %v after SIGTERM, want exit 0\n%s", err, s.log)
		}
		if !strings.Contains(s.log.String(), "shutting down") {
			t.Fatalf("no shutdown was logged\n%s", s.log)
		}
	})
}

// repoRoot is the module's root folder, where package.json and node_modules are.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no go.mod in %s: %v", root, err)
	}
	return root
}

// sdkSummary is the line mcp-sdk-check.mjs prints.
type sdkSummary struct {
	OK            bool     `json:"ok"`
	Error         string   `json:"error"`
	Server        string   `json:"server"`
	Tools         []string `json:"tools"`
	ApprovalID    string   `json:"approval_id"`
	PayloadSHA256 string   `json:"payload_sha256"`
	Listed        int      `json:"listed"`
	FinalStatus   string   `json:"final_status"`
	Updated       string   `json:"updated"`
	ResourceState string   `json:"resource_status"`
	Refusal       string   `json:"refusal"`
	Session       struct {
		SessionID         string         `json:"session_id"`
		ApprovalID        string         `json:"approval_id"`
		Waiting           string         `json:"waiting"`
		Answer            map[string]any `json:"answer"`
		StatusAnswer      map[string]any `json:"status_answer"`
		InstructionsAfter int            `json:"instructions_after"`
		Ended             string         `json:"ended"`
		AfterEnd          string         `json:"after_end"`
	} `json:"session"`
}

// answerQuestions answers, as the person, every question an agent asks in
// the store until ctx ends: it picks the second choice. It returns how many
// it answered once ctx ended.
func answerQuestions(ctx context.Context, t *testing.T, store *models.Store, accountID string, person *people.Member) <-chan int {
	answered := make(chan int, 1)
	go func() {
		n := 0
		defer func() { answered <- n }()
		for ctx.Err() == nil {
			// Only a question its agent has heartbeated on since filing it
			// (a written heartbeat time, flushed within a second): answered
			// sooner, the first heartbeat would carry the answer and the
			// script would never see its session waiting.
			var ids []string
			if err := store.DB().WithContext(ctx).Raw(`SELECT a.id FROM approvals a
				JOIN agent_requests r ON r.approval_id = a.id JOIN agent_sessions s ON s.id = r.session_id
				WHERE a.account_id = ? AND a.kind = ? AND a.status = ? AND s.heartbeat_at > r.created_at`,
				accountID, ask.KindAgentRequest, asks.StatusPending).Scan(&ids).Error; err != nil && ctx.Err() == nil {
				t.Errorf("find questions: %v", err)
				return
			}
			for _, id := range ids {
				if _, err := store.Decide(ctx, accountID, id, person, asks.Decision{Verdict: "choice:1"}); err != nil {
					t.Errorf("answer %s: %v", id, err)
					return
				}
				n++
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return answered
}

// runSDKCheck runs web/test/mcp-sdk-check.mjs against endpoint with token and
// returns its summary and exit code.
func runSDKCheck(t *testing.T, root, endpoint, token string) (sdkSummary, result) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join("web", "test", "mcp-sdk-check.mjs"), endpoint, token)
	cmd.Dir = root
	cmd.Env = environ(nil)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("mcp-sdk-check.mjs did not end within 2 minutes\n%s", r)
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("run node: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	var sum sdkSummary
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
		t.Fatalf("the last line of mcp-sdk-check.mjs is not its JSON summary: %v\n%s", err, r)
	}
	return sum, r
}

func TestTheTypeScriptSDKWorksAgainstTheBinary(t *testing.T) {
	root := repoRoot(t)
	if _, err := os.Stat(filepath.Join(root, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		t.Fatalf("node_modules/@modelcontextprotocol/sdk is missing: run `npm ci` in %s (make test does it)", root)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("node is not on PATH: install Node.js 20 (see .ci/run)")
	}
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := startServer(t, db)
		created := mustCLI(t, s.env, "agent", "create", "--name", "sdk-check", "--scopes", strings.Join(people.AllScopes, ","))
		lines := strings.Split(strings.TrimSpace(created.stdout), "\n")
		token := lines[len(lines)-1]

		// The service's own store, where the person answers the script's question.
		store, err := app.OpenStore(context.Background(), mustConfig(t, s.env), apptest.Logger())
		if err != nil {
			t.Fatalf("open the store: %v", err)
		}
		defer func() {
			if sqlDB, err := store.DB().DB(); err == nil {
				sqlDB.Close()
			}
		}()
		acct, err := store.AccountByName(context.Background(), people.DefaultAccountName)
		if err != nil {
			t.Fatal(err)
		}
		person, err := store.AddMember(context.Background(), acct.ID, "ada", "Ada", core.RoleOwner)
		if err != nil {
			t.Fatal(err)
		}
		answering, stopAnswering := context.WithCancel(context.Background())
		answered := answerQuestions(answering, t, store, acct.ID, person)
		sum, r := runSDKCheck(t, root, s.URL+"/mcp", token)
		stopAnswering()
		if n := <-answered; n != 1 {
			t.Errorf("the person answered %d questions, want the one the script asked", n)
		}
		if r.code != 0 || !sum.OK {
			t.Fatalf("mcp-sdk-check.mjs exited %d: %s\nstderr:\n%s", r.code, sum.Error, r.stderr)
		}
		if !slices.Equal(sum.Tools, countersignTools()) {
			t.Fatalf("tools = %v, want %v", sum.Tools, countersignTools())
		}
		ss := sum.Session
		if !strings.HasPrefix(ss.ApprovalID, "appr_") || ss.Waiting != "waiting" || ss.InstructionsAfter != 0 || ss.Ended != "ended" ||
			ss.AfterEnd != "FAILED_PRECONDITION" || ss.Answer["choice"] != "next" || ss.Answer["index"] != float64(1) ||
			ss.StatusAnswer["choice"] != "next" || ss.StatusAnswer["index"] != float64(1) {
			t.Fatalf("session loop = %+v", ss)
		}
		if !strings.HasPrefix(sum.Server, "countersign ") || !strings.HasPrefix(sum.ApprovalID, "appr_") ||
			!regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(sum.PayloadSHA256) || sum.Listed != 1 ||
			sum.FinalStatus != "stale" || sum.Refusal != "INVALID_ARGUMENT" ||
			sum.Updated != "countersign://approvals/"+sum.ApprovalID || sum.ResourceState != "stale" {
			t.Fatalf("summary = %+v", sum)
		}

		// The service's own record agrees with what the SDK saw.
		a, err := store.GetApproval(context.Background(), acct.ID, sum.ApprovalID)
		if err != nil {
			t.Fatalf("the approval the SDK made is not in the database: %v", err)
		}
		if a.Status != asks.StatusStale || a.PayloadSHA256 != sum.PayloadSHA256 || a.RequesterSubject != "agent:sdk-check" {
			t.Fatalf("stored approval: status %s, payload_sha256 %s, requester %s; want stale, %s, agent:sdk-check",
				a.Status, a.PayloadSHA256, a.RequesterSubject, sum.PayloadSHA256)
		}

		t.Run("a wrong token makes the check fail", func(t *testing.T) {
			sum, r := runSDKCheck(t, root, s.URL+"/mcp", people.TokenPrefix+"notatoken")
			if r.code == 0 || sum.OK || sum.Error == "" {
				t.Fatalf("the check passed with a wrong token: %+v\n%s", sum, r)
			}
		})

		if err := s.stop(t); err != nil {
			t.Fatalf("countersign serve exited with %v after SIGTERM, want exit 0\n%s", err, s.log)
		}
	})
}

// mustConfig loads the configuration the server was started with.
func mustConfig(t *testing.T, env map[string]string) app.Config {
	t.Helper()
	cfg, err := app.LoadConfig(func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return cfg
}

func TestAnAdminCommandSaysWhichDatabaseAndMakesNoneWhereServeNeverRan(t *testing.T) {
	data := filepath.Join(t.TempDir(), "mistyped")
	env := map[string]string{"COUNTERSIGN_DATA": data}
	file, err := filepath.Abs(filepath.Join(data, "countersign.db"))
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"agent", "list"}, {"account", "create", "acme"}, {"vapid"}, {"invite", "--role", "owner"}} {
		r := cli(t, env, args...)
		if r.code != 1 || !strings.Contains(r.stderr, "no database at "+file) || !strings.Contains(r.stderr, "--init") {
			t.Errorf("%v on a folder where serve never ran:\n%s\nwant exit 1 naming %s and --init", args, r, file)
		}
		if _, err := os.Stat(data); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%v made %s (stat: %v)", args, data, err)
		}
	}
	// --init makes it, and says where; later commands need no --init.
	r := mustCLI(t, env, "account", "create", "acme", "--init")
	if !strings.Contains(r.stderr, "database=\"sqlite "+file+"\"") && !strings.Contains(r.stderr, "database=sqlite "+file) {
		t.Errorf("account create --init does not say it opened %s:\n%s", file, r)
	}
	if r := mustCLI(t, env, "account", "list"); !strings.Contains(r.stdout, "acme") || !strings.Contains(r.stderr, file) {
		t.Errorf("account list after --init:\n%s", r)
	}
}

func TestHelpPrintsTheWholeConfigurationTable(t *testing.T) {
	r := mustCLI(t, nil, "help")
	if !strings.HasSuffix(r.stdout, app.TextTable(110)) {
		t.Errorf("help does not end with the configuration table:\n%s", r.stdout)
	}
	for _, s := range app.Settings {
		if !strings.Contains(r.stdout, "  "+s.Name+" ") {
			t.Errorf("help has no row for %s", s.Name)
		}
	}
	if !strings.Contains(r.stdout, "  GOGC ") {
		t.Errorf("help leaves out GOGC")
	}
}

func TestTheCLIsUsageAnswers(t *testing.T) {
	if r := cli(t, nil, "verify", "--help"); r.code != 0 || !strings.Contains(r.stdout, "usage: countersign verify") || !strings.Contains(r.stdout, "-keys") {
		t.Errorf("verify --help:\n%s\nwant exit 0 with the usage and the flags on stdout", r)
	}
	missing := filepath.Join(t.TempDir(), "nope.json")
	if r := cli(t, nil, "verify", missing); r.code != 1 || !strings.Contains(r.stderr, "cannot read the proof file") || strings.Contains(r.stderr, "NOT valid") {
		t.Errorf("verify of a file that is not there:\n%s\nwant it reported as unreadable, not as an invalid proof", r)
	}
	env := map[string]string{"COUNTERSIGN_DATA": t.TempDir()}
	if r := cli(t, env, "agent", "create", "--init", "--name", "bot"); r.code != 2 || !strings.Contains(r.stderr, "usage: countersign agent create") {
		t.Errorf("agent create without --scopes:\n%s\nwant exit 2 with the usage", r)
	}
}

var setupLink = regexp.MustCompile(`setup_url=(\S+)`)

// The owner setup link is one link: a restart before anyone registers
// prints a new one and the earlier stops working.
func TestARestartBeforeAnyoneRegistersLeavesOneSetupLink(t *testing.T) {
	// The link is logged just after the listener starts: wait for it.
	waitLink := func(s *server) []string {
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if m := setupLink.FindStringSubmatch(s.log.String()); m != nil {
				return m
			}
		}
		return nil
	}
	first := startServer(t, apptest.SQLite)
	m := waitLink(first)
	if m == nil {
		t.Fatalf("no setup link in the first start's log:\n%s", first.log)
	}
	if err := first.stop(t); err != nil {
		t.Fatalf("stop: %v", err)
	}
	second := startServer(t, apptest.SQLite, first.env)
	n := waitLink(second)
	if n == nil || n[1] == m[1] {
		t.Fatalf("the second start printed %v, want a new setup link:\n%s", n, second.log)
	}
	if !strings.Contains(second.log.String(), "no longer works") {
		t.Errorf("the second start does not say the earlier link stopped working:\n%s", second.log)
	}
	get := func(link string) int {
		path := link[strings.Index(link, "/invite/"):]
		res, err := http.Get(second.URL + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if code := get(m[1]); code == http.StatusOK {
		t.Errorf("the first start's link still opens the setup page")
	}
	if code := get(n[1]); code != http.StatusOK {
		t.Errorf("the second start's link answers HTTP %d, want 200", code)
	}
}
