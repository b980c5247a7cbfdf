// Package apptest runs the whole service inside a test process, on a real
// SQLite file or a real PostgreSQL database, and drives it over HTTP with the
// official MCP client.
package apptest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/countersign/countersign/app"
	"github.com/countersign/countersign/mcp/bearer"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
)

// PostgresEnv names the variable that points the tests at a PostgreSQL server
// (postgres://user:pass@host:port/db); each test gets a database of its own on it.
const PostgresEnv = "COUNTERSIGN_TEST_POSTGRES_URL"

// Database is one backend the suite runs on.
type Database string

// The backends.
const (
	SQLite   Database = "sqlite"
	Postgres Database = "postgres"
)

// ForEachDatabase runs f as a subtest on SQLite and on PostgreSQL. Without
// COUNTERSIGN_TEST_POSTGRES_URL the PostgreSQL half is skipped, except in CI,
// where it fails: CI must test both.
func ForEachDatabase(t *testing.T, f func(t *testing.T, db Database)) {
	t.Helper()
	for _, db := range []Database{SQLite, Postgres} {
		t.Run(string(db), func(t *testing.T) {
			if db == Postgres && os.Getenv(PostgresEnv) == "" {
				if os.Getenv("CI") != "" {
					t.Fatalf("%s is not set: CI runs every test on PostgreSQL too", PostgresEnv)
				}
				t.Skipf("%s is not set", PostgresEnv)
			}
			f(t, db)
		})
	}
}

// DatabaseURL returns "" for SQLite, or the URL of a new, empty PostgreSQL
// database that is dropped when the test ends.
func DatabaseURL(t testing.TB, db Database) string {
	t.Helper()
	if db == SQLite {
		return ""
	}
	base := os.Getenv(PostgresEnv)
	if base == "" {
		t.Fatalf("%s is not set", PostgresEnv)
	}
	return DatabaseOn(t, base)
}

// DatabaseOn returns the URL of a new, empty database on the PostgreSQL
// server at base (postgres://user:pass@host:port/db), dropped when the test
// ends.
func DatabaseOn(t testing.TB, base string) string {
	t.Helper()
	admin, err := gorm.Open(postgres.Open(base), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatalf("connect to %s: %v", base, err)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "cs_test_" + hex.EncodeToString(b)
	if err := admin.Exec("CREATE DATABASE " + name).Error; err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		admin.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)")
		if sqlDB, err := admin.DB(); err == nil {
			sqlDB.Close()
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("parse %s: %v", base, err)
	}
	u.Path = "/" + name
	return u.String()
}

// Env is a running service.
type Env struct {
	t       testing.TB
	App     *app.App
	Store   *models.Store
	URL     string // base URL of the HTTP server
	Account *people.Account
}

// Config returns a test configuration on db with a fresh data folder, the
// ask rate limit out of the way, and overrides applied.
func Config(t testing.TB, db Database, overrides map[string]string) app.Config {
	t.Helper()
	env := map[string]string{
		"COUNTERSIGN_DATA":         t.TempDir(),
		"COUNTERSIGN_DATABASE_URL": DatabaseURL(t, db),
		"COUNTERSIGN_ASK_RATE":     "100000/s",
		"COUNTERSIGN_ASK_BURST":    "100000",
	}
	for k, v := range overrides {
		env[k] = v
	}
	cfg, err := app.LoadConfig(func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("test config: %v", err)
	}
	return cfg
}

// OpenStore opens the store of cfg as an instance of the service would, and
// closes its database when the test ends; it also returns that database.
func OpenStore(t testing.TB, cfg app.Config) (*models.Store, *sql.DB) {
	t.Helper()
	store, err := app.OpenStore(context.Background(), cfg, Logger())
	if err != nil {
		t.Fatal(err)
	}
	sqlDB, err := store.DB().DB()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sqlDB.Close() })
	return store, sqlDB
}

// Start runs the service on db behind an httptest server.
func Start(t testing.TB, db Database, overrides map[string]string) *Env {
	t.Helper()
	return StartWith(t, Config(t, db, overrides))
}

// StartUnswept is Start with the service's sweeper making no pass of its
// own while the test runs: none at start (app.Config.NoStartSweep) and the
// next an hour later, unless overrides set COUNTERSIGN_SWEEP_EVERY. A test
// that expires asks itself (Store.ExpireDue) then counts exactly the asks
// its own pass expired.
func StartUnswept(t testing.TB, db Database, overrides map[string]string) *Env {
	t.Helper()
	o := map[string]string{"COUNTERSIGN_SWEEP_EVERY": "1h"}
	maps.Copy(o, overrides)
	cfg := Config(t, db, o)
	cfg.NoStartSweep = true
	return StartWith(t, cfg)
}

// StartWith runs the service with cfg behind an httptest server.
func StartWith(t testing.TB, cfg app.Config) *Env {
	t.Helper()
	return StartLogged(t, cfg, Logger())
}

// StartLogged runs the service with cfg behind an httptest server, logging to log.
func StartLogged(t testing.TB, cfg app.Config, log *slog.Logger) *Env {
	t.Helper()
	return start(t, cfg, log, nil)
}

// StartOpened is Start that first hands the opened app to opened, before the
// server and the background workers start: the place to set up what must
// not race with them (a gorm callback, say).
func StartOpened(t testing.TB, db Database, overrides map[string]string, opened func(*app.App)) *Env {
	t.Helper()
	return start(t, Config(t, db, overrides), Logger(), opened)
}

func start(t testing.TB, cfg app.Config, log *slog.Logger, opened func(*app.App)) *Env {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	env := serve(t, cfg, srv, log, opened)
	env.URL = srv.URL
	return env
}

// Logger is the logger a service under test writes to: nothing, or its
// warnings and errors on stderr under go test -v, so test output stays quiet.
func Logger() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return slog.New(slog.DiscardHandler)
}

// serve opens the app with cfg, starts srv with it and the app's background
// workers (expiry sweeper, push sender), and stops all of them when the test ends.
func serve(t testing.TB, cfg app.Config, srv *httptest.Server, log *slog.Logger, opened func(*app.App)) *Env {
	t.Helper()
	ctx := context.Background()
	a, err := app.Open(ctx, cfg, log)
	if err != nil {
		srv.Listener.Close()
		t.Fatalf("open app: %v", err)
	}
	if opened != nil {
		opened(a)
	}
	srv.Config.Handler = a.Handler
	srv.Start()
	bg, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.Background(bg)
	}()
	t.Cleanup(func() {
		stop()
		<-done
		srv.Close()
		a.Close()
	})
	acct, err := a.Store.AccountByName(ctx, people.DefaultAccountName)
	if err != nil {
		t.Fatalf("default account: %v", err)
	}
	return &Env{t: t, App: a, Store: a.Store, URL: cfg.BaseURL, Account: acct}
}

// AllScopes is every agent scope.
var AllScopes = people.AllScopes

// Agent makes an agent in the account with scopes (all when none are given)
// and returns it with its token.
func (e *Env) Agent(accountID, name string, scopes ...string) (*people.Agent, string) {
	e.t.Helper()
	if len(scopes) == 0 {
		scopes = AllScopes
	}
	a, token, err := e.Store.CreateAgent(context.Background(), accountID, name, scopes)
	if err != nil {
		e.t.Fatalf("create agent: %v", err)
	}
	return a, token
}

// Member adds a person to the account.
func (e *Env) Member(accountID, subject string, role core.Role) *people.Member {
	e.t.Helper()
	m, err := e.Store.AddMember(context.Background(), accountID, subject, subject, role)
	if err != nil {
		e.t.Fatalf("add member: %v", err)
	}
	return m
}

// Client is an MCP client session authenticated as one agent.
type Client struct {
	t       testing.TB
	Session *sdk.ClientSession
}

// BearerClient is an HTTP client that sends token on every request.
func BearerClient(token string) *http.Client {
	return &http.Client{Transport: bearer.Transport{Token: token}}
}

// Connect opens an MCP session to the service with token.
func (e *Env) Connect(token string) *Client {
	e.t.Helper()
	c, err := Connect(context.Background(), e.URL+"/mcp", token)
	if err != nil {
		e.t.Fatalf("connect: %v", err)
	}
	e.t.Cleanup(func() { c.Close() })
	return &Client{t: e.t, Session: c}
}

// SessionRevision is the newest MCP revision with sessions (initialize,
// Mcp-Session-Id, resources/subscribe): the one the tests of sessions and
// most hosts today speak. The 2026-07-28 revision's tests ask for it by name.
const SessionRevision = "2025-11-25"

// Connect opens an MCP session (SessionRevision) to endpoint with a bearer token.
func Connect(ctx context.Context, endpoint, token string) (*sdk.ClientSession, error) {
	return ConnectRevision(ctx, endpoint, token, SessionRevision)
}

// ConnectRevision connects to endpoint with a bearer token, asking for the
// MCP revision given: "2026-07-28" has no session, server/discover instead
// of initialize.
func ConnectRevision(ctx context.Context, endpoint, token, revision string) (*sdk.ClientSession, error) {
	client := sdk.NewClient(&sdk.Implementation{Name: "countersign-test", Version: "1"}, nil)
	return client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: endpoint, HTTPClient: BearerClient(token), MaxRetries: -1},
		&sdk.ClientSessionOptions{ProtocolVersion: revision})
}

// Result is a tool result, read.
type Result struct {
	IsError bool
	Text    string         // the first text content
	Out     map[string]any // the structured content
	Code    string         // of a refusal: INVALID_ARGUMENT, …
	Field   string         // of a refusal, when it names one
}

// Call calls a tool and reads its result; a protocol error fails the test.
func (c *Client) Call(name string, args any) Result {
	c.t.Helper()
	r, err := CallTool(context.Background(), c.Session, name, args)
	if err != nil {
		c.t.Fatalf("call %s: %v", name, err)
	}
	return r
}

// OK calls a tool and fails the test unless it succeeds.
func (c *Client) OK(name string, args any) map[string]any {
	c.t.Helper()
	r := c.Call(name, args)
	if r.IsError {
		c.t.Fatalf("%s refused: %s", name, r.Text)
	}
	return r.Out
}

// CallTool calls a tool on a session and reads the result.
func CallTool(ctx context.Context, s *sdk.ClientSession, name string, args any) (Result, error) {
	res, err := s.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return Result{}, err
	}
	var r Result
	r.IsError = res.IsError
	if len(res.Content) > 0 {
		if tc, ok := res.Content[0].(*sdk.TextContent); ok {
			r.Text = tc.Text
		}
	}
	if res.StructuredContent != nil {
		if err := checkOutput(name, res.StructuredContent); err != nil {
			return Result{}, err
		}
		b, _ := json.Marshal(res.StructuredContent)
		_ = json.Unmarshal(b, &r.Out)
	}
	if r.IsError {
		r.Code, r.Field = ParseRefusal(r.Text)
	}
	return r, nil
}

// outputSchemas are the tools' output schemas as tools/list declares them:
// the golden file mcp's tests hold tools/list to.
var outputSchemas = sync.OnceValues(func() (map[string]*jsonschema.Resolved, error) {
	_, here, _, _ := runtime.Caller(0)
	path := filepath.Join(filepath.Dir(here), "..", "mcp", "testdata", "tools.golden.json")
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the tools' output schemas: %w", err)
	}
	var tools []struct {
		Name         string             `json:"name"`
		OutputSchema *jsonschema.Schema `json:"outputSchema"`
	}
	if err := json.Unmarshal(b, &tools); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	out := map[string]*jsonschema.Resolved{}
	for _, t := range tools {
		if out[t.Name], err = t.OutputSchema.Resolve(nil); err != nil {
			return nil, fmt.Errorf("output schema of %s: %w", t.Name, err)
		}
	}
	return out, nil
})

// checkOutput holds a tool's structured content to the output schema it declares.
func checkOutput(tool string, structured any) error {
	schemas, err := outputSchemas()
	if err != nil {
		return err
	}
	schema, ok := schemas[tool]
	if !ok {
		return fmt.Errorf("%s returned structured content but declares no output schema", tool)
	}
	if err := schema.Validate(structured); err != nil {
		return fmt.Errorf("%s result does not match its output schema: %w", tool, err)
	}
	return nil
}

// ParseRefusal splits "CODE: field: message" into its code and field. A
// message without a field gives "".
func ParseRefusal(text string) (code, field string) {
	code, rest, _ := strings.Cut(text, ": ")
	f, _, ok := strings.Cut(rest, ": ")
	if ok && !strings.Contains(f, " ") {
		field = f
	}
	return code, field
}

// Close ends the session.
func (c *Client) Close() error { return c.Session.Close() }

// String renders a Result for failure messages.
func (r Result) String() string {
	return fmt.Sprintf("isError=%t code=%s field=%s text=%s", r.IsError, r.Code, r.Field, r.Text)
}

// SeedDeviceKey stores a passkey for a person straight into the database, as
// a fixture: the service itself adds one only through an invite or a signed
// add-device grant.
func SeedDeviceKey(ctx context.Context, store *models.Store, personID string, key people.DeviceKey) error {
	key.PersonID, key.CreatedAt = personID, store.Now()
	if err := store.DB().WithContext(ctx).Table("device_keys").Create(&key).Error; err != nil {
		return fmt.Errorf("seed passkey: %w", err)
	}
	return nil
}
