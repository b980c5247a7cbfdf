package handlers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
)

// logLines is a JSON log kept in memory, safe for the server's goroutines.
type logLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// records returns every record whose msg is msg.
func (l *logLines) records(t *testing.T, msg string) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.buf.String()), "\n") {
		var r map[string]any
		if line == "" {
			continue
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if r["msg"] == msg {
			out = append(out, r)
		}
	}
	return out
}

func startLogged(t *testing.T, db apptest.Database) (*apptest.Env, *logLines) {
	t.Helper()
	logs := &logLines{}
	env := apptest.StartLogged(t, apptest.Config(t, db, nil), slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	return env, logs
}

func TestEachRequestIsLoggedOnceWithItsIDAndForMCPTheToolAndAgent(t *testing.T) {
	env, logs := startLogged(t, apptest.SQLite)
	_, token := env.Agent(env.Account.ID, "bot")
	c := env.Connect(token)
	c.OK("approvals_list", map[string]any{})

	req, _ := http.NewRequest(http.MethodGet, env.URL+"/healthz", nil)
	req.Header.Set("X-Request-Id", "from-the-proxy-123")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if got := res.Header.Get("X-Request-Id"); got != "from-the-proxy-123" {
		t.Errorf("X-Request-Id = %q, want the proxy's id echoed", got)
	}
	res, err = http.Get(env.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	made := res.Header.Get("X-Request-Id")
	if !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(made) {
		t.Errorf("X-Request-Id = %q, want a fresh id", made)
	}

	// A request is logged when its handler returns, which may be just after
	// the client read the answer: wait for the tool call's record.
	var sawProxy, sawMade, sawTool int
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if strings.Contains(logs.String(), `"tool":"approvals_list"`) {
			break
		}
	}
	for _, r := range logs.records(t, "request") {
		switch {
		case r["id"] == "from-the-proxy-123":
			sawProxy++
			if r["route"] != "/healthz" || r["status"] != 200.0 || r["method"] != "GET" {
				t.Errorf("the /healthz record is %v", r)
			}
		case r["id"] == made:
			sawMade++
		case r["route"] == "/mcp" && r["tool"] == "approvals_list":
			sawTool++
			if r["agent"] != "agent:bot" {
				t.Errorf("the approvals_list record names agent %v, want agent:bot: %v", r["agent"], r)
			}
		}
	}
	if sawProxy != 1 || sawMade != 1 || sawTool != 1 {
		t.Errorf("records: %d for the proxy's id, %d for the fresh id, %d for the tool call; want one each\n%s", sawProxy, sawMade, sawTool, logs.buf.String())
	}
}

func TestAClientThatGoesAwayIsNotAServerError(t *testing.T) {
	env, logs := startLogged(t, apptest.SQLite)
	_, token := env.Agent(env.Account.ID, "bot")
	c := env.Connect(token)
	ask := c.OK("approvals_create", map[string]any{
		"kind": "review", "title": "Read this", "approve_means": "I go on", "deny_means": "I stop",
		"payload": map[string]any{"review": map[string]any{"url": "https://example.com/doc"}},
	})
	owner := env.Member(env.Account.ID, "ada", core.RoleOwner)
	browser := signIn(t, env, owner).client
	// The live timeline streams until the client leaves.
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, env.URL+"/approvals/"+ask["approval_id"].(string)+"/events", nil)
	res, err := browser.Do(req)
	if err != nil {
		t.Fatalf("open the stream: %v", err)
	}
	cancel()
	res.Body.Close()
	var rec map[string]any
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && rec == nil; time.Sleep(20 * time.Millisecond) {
		for _, r := range logs.records(t, "request") {
			if r["route"] == "/approvals/:id/events" {
				rec = r
			}
		}
	}
	if rec == nil {
		t.Fatalf("the abandoned stream was not logged:\n%s", logs.buf.String())
	}
	if rec["level"] == "ERROR" || rec["level"] == "WARN" {
		t.Errorf("the abandoned stream was logged at %v: %v", rec["level"], rec)
	}
	if n := strings.Count(logs.buf.String(), `"level":"ERROR"`); n > 0 {
		t.Errorf("%d ERROR records after a client went away:\n%s", n, logs.buf.String())
	}
}

func TestReadyzSaysWhetherThisInstanceCanServe(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		env := apptest.Start(t, db, nil)
		get := func() (int, map[string]string) {
			res, err := http.Get(env.URL + "/readyz")
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			var body map[string]string
			_ = json.NewDecoder(res.Body).Decode(&body)
			return res.StatusCode, body
		}
		// On PostgreSQL it waits for the change listener to connect.
		var (
			code int
			body map[string]string
		)
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if code, body = get(); code == http.StatusOK {
				break
			}
		}
		if code != http.StatusOK || body["status"] != "ready" || body["database"] != string(db) {
			t.Fatalf("/readyz = %d %v, want 200 ready on %s", code, body, db)
		}
		// A database a migration behind this binary is not ready.
		if err := env.Store.DB().Exec(`DELETE FROM schema_migrations WHERE version = (SELECT MAX(version) FROM schema_migrations)`).Error; err != nil {
			t.Fatal(err)
		}
		if code, body = get(); code != http.StatusServiceUnavailable || body["failed"] != "schema" {
			t.Errorf("/readyz with a migration missing = %d %v, want 503 failed schema", code, body)
		}
	})
}
