package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/countersign/countersign/app"
	"github.com/countersign/countersign/mcp"
	"github.com/countersign/countersign/mcp/bearer"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/people"
)

// The per-requester ask limit the in-process service runs with: every client
// files as the same agent, so the default (60/m, burst 20) would refuse nearly
// every ask with RESOURCE_EXHAUSTED.
const (
	loadAskRate  = "1000000/s"
	loadAskBurst = "1000000"
)

// loadSessionsPerToken lets the one agent of the load hold as many MCP
// sessions as the instance: each client is a session of that agent, and
// holds its GET stream open, so past the default cap of 100 per token the
// clients beyond it would be refused.
var loadSessionsPerToken = strconv.Itoa(mcp.DefaultSessions)

// target is the Countersign MCP endpoint under load and the token to call it with.
type target struct {
	endpoint string
	token    string
	database string // what the service stores asks in, for the report
	close    func()
	// store and agent are the in-process service's store and the agent the
	// load files as, for the direct run; nil for a remote service.
	store *models.Store
	agent *people.Agent
}

// startService runs Countersign in this process, configured through
// app.LoadConfig like the real binary, behind a net/http listener on
// 127.0.0.1, and makes the agent the clients file asks as. With background
// false it runs none of the service's background work (the sweeper, the
// push sender, the audit sealer): -scale does not want the sealer sealing
// the million events it seeded while it times the lists.
func startService(ctx context.Context, databaseURL string, background bool, out io.Writer) (*target, error) {
	var cleanups []func()
	cleanup := func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
	}
	dataDir, err := os.MkdirTemp("", "countersign-load-")
	if err != nil {
		return nil, fmt.Errorf("data folder: %w", err)
	}
	cleanups = append(cleanups, func() { os.RemoveAll(dataDir) })
	database := "sqlite " + dataDir
	if databaseURL != "" {
		fresh, drop, err := freshPostgres(ctx, databaseURL)
		if err != nil {
			cleanup()
			return nil, err
		}
		cleanups = append(cleanups, drop)
		databaseURL, database = fresh, "postgres "+redact(fresh)
	}
	env := map[string]string{
		"COUNTERSIGN_ADDR":                   "127.0.0.1:0",
		"COUNTERSIGN_DATA":                   dataDir,
		"COUNTERSIGN_DATABASE_URL":           databaseURL,
		"COUNTERSIGN_ASK_RATE":               loadAskRate,
		"COUNTERSIGN_ASK_BURST":              loadAskBurst,
		"COUNTERSIGN_MCP_SESSIONS_PER_TOKEN": loadSessionsPerToken,
	}
	cfg, err := app.LoadConfig(func(k string) string { return env[k] })
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("service config: %w", err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	gogc := app.TuneGC(os.Getenv) // as countersign serve does; the bare run shares this process and so this setting
	a, err := app.Open(ctx, cfg, log)
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("open service: %w", err)
	}
	cleanups = append(cleanups, func() { a.Close() })
	acct, err := a.Store.AccountByName(ctx, people.DefaultAccountName)
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("default account: %w", err)
	}
	agent, token, err := a.Store.CreateAgent(ctx, acct.ID, "load", people.AllScopes)
	if err != nil {
		cleanup()
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("listen: %w", err)
	}
	stopServer := serveHTTP(ln, a.Handler)
	// The expiry sweeper, the push sender and (on PostgreSQL) its listener, as countersign serve runs them.
	bgCtx, stopBackground := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	if background {
		wg.Go(func() { a.Background(bgCtx) })
	}
	cleanups = append(cleanups, func() { stopBackground(); wg.Wait() }, stopServer)

	fmt.Fprintf(out, "service: in-process, http://%s/mcp, %s\n", ln.Addr(), database)
	fmt.Fprintf(out, "service: per-requester ask limit raised through configuration: COUNTERSIGN_ASK_RATE=%s COUNTERSIGN_ASK_BURST=%d; and the sessions of one token: COUNTERSIGN_MCP_SESSIONS_PER_TOKEN=%d\n",
		cfg.AskRate, cfg.AskBurst, cfg.MCPSessions.PerToken)
	fmt.Fprintf(out, "service: GOGC=%s, as countersign serve runs (the bare run shares this process and so this setting)\n", gogc)
	return &target{endpoint: "http://" + ln.Addr().String() + "/mcp", token: token, database: string(a.Store.Dialect()), close: cleanup,
		store: a.Store, agent: agent}, nil
}

// remoteService targets an already running server on this machine.
func remoteService(rawURL, token string, out io.Writer) (*target, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("-url %q: want a base URL like http://127.0.0.1:8080", rawURL)
	}
	if !isLoopback(u.Hostname()) {
		return nil, fmt.Errorf("-url %q: the load goes only to this machine (127.0.0.1, ::1 or localhost)", rawURL)
	}
	if token == "" {
		return nil, errors.New("-url needs -token: an agent token with mcp:write and approvals:write (countersign agent create --name load --scopes mcp:read,mcp:write,approvals:read,approvals:write)")
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/mcp"
	}
	fmt.Fprintf(out, "service: already running at %s\n", u)
	fmt.Fprintf(out, "service: it must have been started with COUNTERSIGN_ASK_RATE=%s and COUNTERSIGN_ASK_BURST=%s: every client files as one agent, and the default limit (60/m, burst 20) refuses nearly every ask with RESOURCE_EXHAUSTED; "+
		"with more than 100 clients also COUNTERSIGN_MCP_SESSIONS_PER_TOKEN at least that many, or initialize is refused past 100 sessions of one token\n", loadAskRate, loadAskBurst)
	return &target{endpoint: u.String(), token: token, database: "remote", close: func() {}}, nil
}

// serveHTTP serves h on ln with the timeouts of countersign serve, and returns
// the function that stops it.
func serveHTTP(ln net.Listener, h http.Handler) func() {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			slog.Error("serve", "err", err)
		}
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if srv.Shutdown(ctx) != nil {
			srv.Close() // streams still open after the deadline
		}
		<-done
	}
}

// clientTransport is one client's own connections, never through a proxy.
func clientTransport() *http.Transport {
	return &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        4,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     90 * time.Second,
	}
}

// The MCP revisions the load's clients speak: with sessions, and (from
// revisionStateless on) without, every call standing alone.
const (
	revisionSessions  = "2025-11-25"
	revisionStateless = "2026-07-28"
)

// connect opens n MCP clients of revision, each with its own HTTP
// connections, as apptest.Connect does: on 2025-11-25 each is a session.
func connect(ctx context.Context, t *target, n int, revision string) ([]*sdk.ClientSession, error) {
	sessions := make([]*sdk.ClientSession, 0, n)
	for range n {
		client := sdk.NewClient(&sdk.Implementation{Name: "countersign-load", Version: "1"}, nil)
		hc := &http.Client{Transport: bearer.Transport{Token: t.token, Base: clientTransport()}}
		s, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: t.endpoint, HTTPClient: hc, MaxRetries: -1}, &sdk.ClientSessionOptions{ProtocolVersion: revision})
		if err != nil {
			closeAll(sessions)
			return nil, fmt.Errorf("connect MCP client %d: %w", len(sessions)+1, err)
		}
		sessions = append(sessions, s)
	}
	return sessions, nil
}

func closeAll(sessions []*sdk.ClientSession) {
	for _, s := range sessions {
		s.Close()
	}
}

// prAsk is a valid pull_request ask (as mcp/flow_test.go files it) whose
// number and head differ for every n.
func prAsk(c int, n int64) map[string]any {
	return map[string]any{
		"kind":          "pull_request",
		"title":         fmt.Sprintf("Merge acme/web#%d", n),
		"summary":       "Fixes the login redirect.",
		"approve_means": fmt.Sprintf("I merge #%d; nothing rolls", n),
		"deny_means":    fmt.Sprintf("#%d stays open", n),
		"payload": map[string]any{"pull_request": map[string]any{
			"repo": "Acme/Web", "number": n, "head": fmt.Sprintf("%08x%032x", c, n), "title": "Fix login redirect",
		}},
		"context": map[string]any{"plan_id": "plan_1", "plan_item": "item_2", "job_id": fmt.Sprintf("job_%d", n%1000)},
	}
}

// createAsk files one ask over session s and checks that it came back pending.
func createAsk(ctx context.Context, s *sdk.ClientSession, c int, n int64) error {
	var out struct {
		ApprovalID string `json:"approval_id"`
		Status     string `json:"status"`
	}
	if err := callTool(ctx, s, "approvals_create", prAsk(c, n), &out); err != nil {
		return err
	}
	if !strings.HasPrefix(out.ApprovalID, "appr_") || out.Status != "pending" {
		return fmt.Errorf("unexpected result: approval_id %q status %q", out.ApprovalID, out.Status)
	}
	return nil
}

// requestAsk files one advisory work_change with approval_request over
// session s, with a new idempotency key, and checks that it came back pending.
func requestAsk(ctx context.Context, s *sdk.ClientSession, c int, n int64) error {
	var out struct {
		ApprovalID string `json:"approvalId"`
		Status     string `json:"status"`
	}
	err := callTool(ctx, s, "approval_request", map[string]any{
		"kind": "work_change", "title": fmt.Sprintf("Tidy the login code, part %d", n),
		"description": "No behaviour changes; the tests stay as they are.",
		"targetType":  "repo", "targetId": "acme/web",
		"proposal":       map[string]any{"mode": "advisory"},
		"idempotencyKey": fmt.Sprintf("load-%d-%d", c, n),
	}, &out)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(out.ApprovalID, "appr_") || out.Status != "pending" {
		return fmt.Errorf("unexpected result: approvalId %q status %q", out.ApprovalID, out.Status)
	}
	return nil
}

// callTool calls a tool over session s and reads its structured result into
// out; a tool error is returned as an error with its text.
func callTool(ctx context.Context, s *sdk.ClientSession, name string, args map[string]any, out any) error {
	res, err := s.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return err
	}
	if res.IsError {
		text := "isError"
		if len(res.Content) > 0 {
			if tc, ok := res.Content[0].(*sdk.TextContent); ok {
				text = tc.Text
			}
		}
		return errors.New(text)
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return fmt.Errorf("read result: %w", err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("read result: %w", err)
	}
	return nil
}

// freshPostgres makes an empty database on the PostgreSQL server of base and
// returns its URL and the function that drops it.
func freshPostgres(ctx context.Context, base string) (string, func(), error) {
	u, err := url.Parse(base)
	if err != nil || u.Scheme != "postgres" && u.Scheme != "postgresql" || u.Host == "" {
		return "", nil, fmt.Errorf("-database: want postgres://user:password@127.0.0.1:5432/db")
	}
	if !isLoopback(u.Hostname()) {
		return "", nil, fmt.Errorf("-database: the load goes only to this machine (127.0.0.1, ::1 or localhost), not %s", u.Hostname())
	}
	admin, err := gorm.Open(postgres.Open(base), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		return "", nil, fmt.Errorf("connect to -database: %w", err)
	}
	closeAdmin := func() {
		if db, err := admin.DB(); err == nil {
			db.Close()
		}
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "cs_load_" + hex.EncodeToString(b)
	if err := admin.WithContext(ctx).Exec("CREATE DATABASE " + name).Error; err != nil {
		closeAdmin()
		return "", nil, fmt.Errorf("create database %s: %w", name, err)
	}
	u.Path = "/" + name
	drop := func() {
		if err := admin.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)").Error; err != nil {
			slog.Error("drop load database", "name", name, "err", err)
		}
		closeAdmin()
	}
	return u.String(), drop, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// redact hides the password of a database URL.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "postgres"
	}
	return u.Redacted()
}
