package mcp_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/countersign/countersign/app"
	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
)

// toolScopes is the tool surface of seed 001: each of its seven tools and
// the scopes a token needs to see and call it.
var toolScopes = map[string][]string{
	"approvals_create":                     {people.ScopeMCPWrite, people.ScopeApprovalsWrite},
	"approvals_get":                        {people.ScopeMCPRead, people.ScopeApprovalsRead},
	"approvals_list":                       {people.ScopeMCPRead, people.ScopeApprovalsRead},
	"approvals_add_progress":               {people.ScopeMCPWrite, people.ScopeApprovalsWrite},
	"approvals_request_auto_approve":       {people.ScopeMCPWrite, people.ScopeApprovalsWrite},
	"approvals_get_auto_approve_policy":    {people.ScopeMCPRead, people.ScopeApprovalsRead},
	"approvals_revoke_auto_approve_policy": {people.ScopeMCPWrite, people.ScopeApprovalsWrite},
}

// Ids that no row has: one shaped like a real account id, one like an approval id.
const (
	madeUpAccountID  = "acct_aaaaaaaaaaaaaaaaaaaa"
	madeUpApprovalID = "appr_aaaaaaaaaaaaaaaaaaaa"
)

// toolNames lists the tools a session sees, sorted.
func toolNames(t *testing.T, c *apptest.Client) []string {
	t.Helper()
	res, err := c.Session.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

// world is what a refused call must leave as it was: how many approvals and
// timeline events there are, and the status and version of every approval.
type world struct {
	Approvals, Events int64
	Rows              map[string]string // approval id → "status v<version> superseded_by=<id>"
}

func snapshot(t *testing.T, env *apptest.Env) world {
	t.Helper()
	db := env.Store.DB()
	w := world{Rows: map[string]string{}}
	if err := db.Table("approvals").Count(&w.Approvals).Error; err != nil {
		t.Fatalf("count approvals: %v", err)
	}
	if err := db.Table("events").Count(&w.Events).Error; err != nil {
		t.Fatalf("count events: %v", err)
	}
	var rows []struct {
		ID, Status, SupersededBy string
		Version                  int
	}
	if err := db.Table("approvals").Select("id, status, superseded_by, version").Scan(&rows).Error; err != nil {
		t.Fatalf("read approvals: %v", err)
	}
	for _, r := range rows {
		w.Rows[r.ID] = fmt.Sprintf("%s v%d superseded_by=%s", r.Status, r.Version, r.SupersededBy)
	}
	return w
}

func (w world) mustEqual(t *testing.T, after world, what string) {
	t.Helper()
	if !reflect.DeepEqual(w, after) {
		t.Errorf("%s changed the database:\nbefore %+v\nafter  %+v", what, w, after)
	}
}

// approvalRow reads the status and version of one approval from the database.
func approvalRow(t *testing.T, env *apptest.Env, id string) (asks.Status, int) {
	t.Helper()
	var a asks.Approval
	if err := env.Store.DB().Table("approvals").Where("id = ?", id).Take(&a).Error; err != nil {
		t.Fatalf("read approval %s: %v", id, err)
	}
	return a.Status, a.Version
}

// rawReply is an HTTP answer of the MCP endpoint, read whole.
type rawReply struct {
	Status int
	Header http.Header
	Body   []byte
}

// rawPost sends one JSON-RPC body to /mcp as an MCP client would, with token
// (none when empty) and the session id and protocol version when given.
func rawPost(t *testing.T, env *apptest.Env, token, session, protocol string, body []byte) rawReply {
	t.Helper()
	return rawPostTo(t, env, "/mcp", token, session, protocol, body)
}

// rawPostTo is rawPost to another path of the service.
func rawPostTo(t *testing.T, env *apptest.Env, path, token, session, protocol string, body []byte) rawReply {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, env.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatalf("new request: %v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	if protocol != "" {
		req.Header.Set("Mcp-Protocol-Version", protocol)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read reply: %v", err)
	}
	return rawReply{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// rpcResult reads the JSON-RPC response of a raw reply, sent as JSON or as
// the first data line of an event stream that carries a response.
func rpcResult(t *testing.T, r rawReply) map[string]any {
	t.Helper()
	var msgs [][]byte
	if strings.HasPrefix(r.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(bytes.NewReader(r.Body))
		sc.Buffer(make([]byte, 1<<20), 4<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data:"); ok {
				msgs = append(msgs, []byte(strings.TrimSpace(data)))
			}
		}
	} else {
		msgs = append(msgs, r.Body)
	}
	for _, m := range msgs {
		var out map[string]any
		if json.Unmarshal(m, &out) == nil && out["id"] != nil {
			return out
		}
	}
	t.Fatalf("no JSON-RPC response in reply %d: %s", r.Status, r.Body)
	return nil
}

func initializeBody() []byte {
	return []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
}

func toolCallBody(t *testing.T, name string, args map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": 7, "method": "tools/call",
		"params": map[string]any{"name": name, "arguments": args},
	})
	if err != nil {
		t.Fatalf("marshal tools/call: %v", err)
	}
	return b
}

// protocolOf is the protocol version a session negotiated, for raw requests on it.
func protocolOf(c *apptest.Client) string { return c.Session.InitializeResult().ProtocolVersion }

func mustBe401(t *testing.T, r rawReply, what string) {
	t.Helper()
	if r.Status != http.StatusUnauthorized {
		t.Errorf("%s: HTTP %d, want 401: %s", what, r.Status, r.Body)
	}
	if h := r.Header.Get("WWW-Authenticate"); !strings.HasPrefix(h, "Bearer ") {
		t.Errorf("%s: WWW-Authenticate = %q, want a Bearer challenge", what, h)
	}
}

func withArgs(base map[string]any, kv ...any) map[string]any {
	out := maps.Clone(base)
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

func without(scopes []string, drop string) []string {
	return slices.DeleteFunc(slices.Clone(scopes), func(s string) bool { return s == drop })
}

func TestEveryToolRefusesACallerWithoutTheRightToIt(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		env := apptest.Start(t, db, nil)
		_, token := env.Agent(env.Account.ID, "bot")
		bot := env.Connect(token)
		own := bot.OK("approvals_create", prAsk(900, "abcdef1234567"))
		ownID := own["approval_id"].(string)

		other, err := env.Store.CreateAccount(ctx, "other")
		if err != nil {
			t.Fatalf("create account: %v", err)
		}
		_, strangerToken := env.Agent(other.ID, "stranger")
		foreign := env.Connect(strangerToken).OK("approvals_create", prAsk(77, "1234567abcdef"))
		foreignID := foreign["approval_id"].(string)
		foreignStatus, foreignVersion := approvalRow(t, env, foreignID)
		if foreignStatus != asks.StatusPending || foreign["account_id"] != other.ID {
			t.Fatalf("foreign ask = %v", foreign)
		}

		// A disabled agent, with a session it opened while it was still enabled.
		_, goneToken := env.Agent(env.Account.ID, "gone")
		gone := env.Connect(goneToken)
		if _, err := env.Store.DisableAgent(ctx, env.Account.ID, "gone", "test", "admin"); err != nil {
			t.Fatalf("disable agent: %v", err)
		}

		// One agent per scope, holding every scope but that one.
		lacking := map[string]*apptest.Client{}
		for _, s := range people.AllScopes {
			_, tok := env.Agent(env.Account.ID, "no-"+strings.ReplaceAll(s, ":", "-"), without(people.AllScopes, s)...)
			lacking[s] = env.Connect(tok)
		}

		// Seed 001's tools; seed 000's (no account_id) are held to their rights in sessions_test.go.
		names := slices.DeleteFunc(toolNames(t, bot), func(n string) bool { return !strings.HasPrefix(n, "approvals_") })
		if len(toolScopes) != 7 {
			t.Fatalf("seed 001 has 7 tools, toolScopes lists %d", len(toolScopes))
		}
		if want := slices.Sorted(maps.Keys(toolScopes)); !slices.Equal(names, want) {
			t.Fatalf("tools/list with every scope = %v, want %v", names, want)
		}
		declared := env.App.MCP.Tools()
		for _, name := range names {
			if got := slices.Sorted(slices.Values(declared[name])); !slices.Equal(got, slices.Sorted(slices.Values(toolScopes[name]))) {
				t.Errorf("%s declares scopes %v, want %v", name, declared[name], toolScopes[name])
			}
		}

		// Arguments each tool accepts from bot (checked at the end), so a
		// refusal below is about the caller's rights, not the arguments.
		valid := map[string]map[string]any{
			"approvals_create":       prAsk(901, "abcdef7654321"),
			"approvals_get":          {"approval_id": ownID},
			"approvals_list":         {},
			"approvals_add_progress": {"approval_id": ownID, "step": "stale", "expected_state": "pending"},
			"approvals_request_auto_approve": {"until": time.Now().Add(time.Hour).UTC().Format(time.RFC3339),
				"scope": map[string]any{"ask_kinds": []string{"review"}}, "device": "mac"},
			"approvals_get_auto_approve_policy":    {},
			"approvals_revoke_auto_approve_policy": {"note": "the docs sprint is over"},
		}
		if len(valid) != len(toolScopes) {
			t.Fatalf("valid arguments for %d tools, want all %d", len(valid), len(toolScopes))
		}
		// The argument each tool takes an approval id in, and the refusal's field.
		approvalArg := map[string]string{
			"approvals_create":       "supersedes",
			"approvals_get":          "approval_id",
			"approvals_add_progress": "approval_id",
		}

		badTokens := []struct{ name, token string }{
			{"no token", ""},
			{"a wrong token", people.TokenPrefix + "notatokenofthisservicenotatokenofthisserv"},
			{"a disabled agent's token", goneToken},
		}

		for _, name := range names {
			t.Run(name, func(t *testing.T) {
				args := valid[name]
				for _, bt := range badTokens {
					t.Run("is refused with 401 for "+bt.name, func(t *testing.T) {
						before := snapshot(t, env)
						mustBe401(t, rawPost(t, env, bt.token, "", "", initializeBody()), "initialize")
						mustBe401(t, rawPost(t, env, bt.token, bot.Session.ID(), protocolOf(bot), toolCallBody(t, name, args)), "tools/call on bot's session")
						if bt.token == goneToken {
							mustBe401(t, rawPost(t, env, bt.token, gone.Session.ID(), protocolOf(gone), toolCallBody(t, name, args)), "tools/call on its own session")
						}
						before.mustEqual(t, snapshot(t, env), name+" with "+bt.name)
					})
				}

				for _, scope := range toolScopes[name] {
					t.Run("is hidden and refused without "+scope, func(t *testing.T) {
						c := lacking[scope]
						if slices.Contains(toolNames(t, c), name) {
							t.Errorf("tools/list without %s shows %s", scope, name)
						}
						before := snapshot(t, env)
						r := c.Call(name, args)
						if !r.IsError || r.Code != string(core.PermissionDenied) {
							t.Errorf("without %s: %s, want PERMISSION_DENIED", scope, r)
						}
						if !strings.Contains(r.Text, name) || !strings.Contains(r.Text, scope) {
							t.Errorf("refusal %q names neither the tool nor the scope %s", r.Text, scope)
						}
						before.mustEqual(t, snapshot(t, env), name+" without "+scope)
					})
				}

				for _, acct := range []struct{ name, id string }{{"another account's id", other.ID}, {"a made-up account id", madeUpAccountID}} {
					t.Run("refuses "+acct.name+" as account_id", func(t *testing.T) {
						before := snapshot(t, env)
						r := bot.Call(name, withArgs(args, "account_id", acct.id))
						if !r.IsError || r.Code != string(core.PermissionDenied) || r.Field != "account_id" {
							t.Errorf("account_id %s: %s, want PERMISSION_DENIED on account_id", acct.id, r)
						}
						before.mustEqual(t, snapshot(t, env), name+" with "+acct.name)
					})
				}

				if field, ok := approvalArg[name]; ok {
					t.Run("answers another account's approval id as one that does not exist", func(t *testing.T) {
						before := snapshot(t, env)
						theirs := bot.Call(name, withArgs(args, field, foreignID))
						none := bot.Call(name, withArgs(args, field, madeUpApprovalID))
						if !none.IsError || none.Code != string(core.NotFound) || none.Field != field {
							t.Errorf("made-up %s: %s, want NOT_FOUND on %s", field, none, field)
						}
						if theirs.IsError != none.IsError || theirs.Code != none.Code || theirs.Field != none.Field ||
							strings.ReplaceAll(theirs.Text, foreignID, "ID") != strings.ReplaceAll(none.Text, madeUpApprovalID, "ID") {
							t.Errorf("another account's approval differs from a missing one:\n theirs %s\n none   %s", theirs, none)
						}
						before.mustEqual(t, snapshot(t, env), name+" on another account's approval")
					})
				}
				if name == "approvals_list" {
					t.Run("finds nothing of another account by its payload hash", func(t *testing.T) {
						out := bot.OK(name, map[string]any{"payload_sha256": foreign["payload_sha256"]})
						if got := out["approvals"].([]any); len(got) != 0 {
							t.Errorf("list by another account's payload hash = %v, want none", got)
						}
					})
				}
			})
		}

		if st, v := approvalRow(t, env, foreignID); st != foreignStatus || v != foreignVersion {
			t.Errorf("foreign approval is %s v%d, was %s v%d", st, v, foreignStatus, foreignVersion)
		}
		if st, _ := approvalRow(t, env, ownID); st != asks.StatusPending {
			t.Errorf("bot's own approval is %s after the refusals, want pending", st)
		}

		// The arguments were good: with the rights, every call goes through.
		for _, name := range []string{"approvals_get", "approvals_list", "approvals_create", "approvals_add_progress",
			"approvals_request_auto_approve", "approvals_get_auto_approve_policy", "approvals_revoke_auto_approve_policy"} {
			r := bot.Call(name, valid[name])
			if r.IsError {
				t.Errorf("%s with every right: %s", name, r)
			}
			if name == "approvals_request_auto_approve" && (r.Out["kind"] != "auto_approve" || r.Out["status"] != "pending") {
				t.Errorf("%s filed %v, want a pending auto_approve ask", name, r.Out)
			}
		}
		if st, _ := approvalRow(t, env, ownID); st != asks.StatusStale {
			t.Errorf("bot's own approval is %s after its stale, want stale", st)
		}
	})
}

func TestToolsListShowsOnlyWhatTheScopesAllow(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		env := apptest.Start(t, db, nil)
		cases := []struct {
			name   string
			scopes []string
			want   []string
		}{
			{"read scopes show the read tools", []string{people.ScopeMCPRead, people.ScopeApprovalsRead},
				[]string{"approvals_get", "approvals_get_auto_approve_policy", "approvals_list"}},
			{"write scopes show the write tools", []string{people.ScopeMCPWrite, people.ScopeApprovalsWrite},
				[]string{"approvals_add_progress", "approvals_create", "approvals_request_auto_approve", "approvals_revoke_auto_approve_policy"}},
			{"mcp:write alone shows no approvals tool", []string{people.ScopeMCPWrite}, nil},
			// approvals:read alone, with no mcp scope, cannot open a session at all: see
			// TestATokenWithoutTheScopesOfAnHTTPOperationGets403InsufficientScope.
		}
		for i, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				_, token := env.Agent(env.Account.ID, fmt.Sprintf("agent%d", i), tc.scopes...)
				var got []string
				for _, n := range toolNames(t, env.Connect(token)) {
					if strings.HasPrefix(n, "approvals_") {
						got = append(got, n)
					}
				}
				if !slices.Equal(got, tc.want) {
					t.Errorf("scopes %v see %v, want %v", tc.scopes, got, tc.want)
				}
			})
		}
	})
}

// mustBeStopped checks a call on an SDK client's session whose agent lost
// its access: refused with 401, or never sent because the service ended the
// session and its stream at once (Server.AccessEnded), which closed the
// client.
func mustBeStopped(t *testing.T, what string, r apptest.Result, err error) {
	t.Helper()
	if err != nil && (strings.Contains(err.Error(), http.StatusText(http.StatusUnauthorized)) || strings.Contains(err.Error(), "standalone SSE stream")) {
		return
	}
	t.Errorf("%s: %s, err %v; want the request refused with 401, or the session ended", what, r, err)
}

func TestADisabledTokenStopsMidSession(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		env := apptest.Start(t, db, nil)
		_, token := env.Agent(env.Account.ID, "bot")
		c := env.Connect(token)
		c.OK("approvals_list", map[string]any{})

		if _, err := env.Store.DisableAgent(ctx, env.Account.ID, "bot", "leaked", "admin"); err != nil {
			t.Fatalf("disable: %v", err)
		}
		before := snapshot(t, env)
		r, err := apptest.CallTool(ctx, c.Session, "approvals_create", prAsk(900, "abcdef1234567"))
		mustBeStopped(t, "approvals_create after the token was disabled", r, err)
		mustBe401(t, rawPost(t, env, token, c.Session.ID(), protocolOf(c), toolCallBody(t, "approvals_list", map[string]any{})), "tools/call after disable")
		before.mustEqual(t, snapshot(t, env), "calls of a disabled agent")
	})
}

// TestATokenDisabledOnAnotherInstanceStopsThere runs two instances on one
// PostgreSQL: instance A authenticates a busy agent from what it remembers
// (no query per request), and when an admin disables the agent through B,
// A refuses the token's next request as soon as it hears the change.
func TestATokenDisabledOnAnotherInstanceStopsThere(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		if db == apptest.SQLite {
			t.Skip("SQLite serves one instance, and remembers no tokens")
		}
		var lookups atomic.Int32
		a := apptest.StartOpened(t, db, nil, func(app *app.App) {
			err := app.Store.DB().Callback().Query().After("gorm:query").Register("test:count_agent_lookups", func(tx *gorm.DB) {
				if tx.Statement.Table == "agents" {
					lookups.Add(1)
				}
			})
			if err != nil {
				t.Fatal(err)
			}
		})
		cfg := a.App.Config
		cfg.Data = t.TempDir()
		b := apptest.StartWith(t, cfg)
		for deadline := time.Now().Add(10 * time.Second); !a.Store.Changes().Listening(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("instance A's listener is not listening")
			}
		}
		_, token := b.Agent(b.Account.ID, "bot")
		c := a.Connect(token)
		c.OK("approvals_list", map[string]any{})
		before := lookups.Load()
		for range 5 {
			c.OK("approvals_list", map[string]any{})
		}
		if n := lookups.Load() - before; n != 0 {
			t.Errorf("five calls of a known token looked its agent up %d times, want 0", n)
		}

		heard := make(chan struct{}, 1)
		cancel := a.Store.Changes().Subscribe(func(c core.Change) {
			if c.Kind == core.AgentsChanged {
				select {
				case heard <- struct{}{}:
				default:
				}
			}
		})
		defer cancel()
		if _, err := b.Store.DisableAgent(context.Background(), b.Account.ID, "bot", "leaked", "admin"); err != nil {
			t.Fatalf("disable through B: %v", err)
		}
		select {
		case <-heard:
		case <-time.After(10 * time.Second):
			t.Fatal("instance A never heard that the agent was disabled")
		}
		r, err := apptest.CallTool(context.Background(), c.Session, "approvals_list", map[string]any{})
		mustBeStopped(t, "a call through A once it heard of the disable", r, err)
		mustBe401(t, rawPost(t, a, token, c.Session.ID(), protocolOf(c), toolCallBody(t, "approvals_list", map[string]any{})), "tools/call through A after the disable through B")
	})
}

// Only the requester moves its ask; any agent of the account may supersede
// one (seed 001: "an earlier approval of the same account"), and none of
// another account can (TestLifecycleSupersedesAnEarlierAsk).
func TestOnlyTheRequesterMovesItsAskButAnyAgentOfTheAccountSupersedesIt(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		env := apptest.Start(t, db, nil)
		owner := env.Member(env.Account.ID, "ada", core.RoleOwner)
		_, tokenA := env.Agent(env.Account.ID, "filer")
		_, tokenB := env.Agent(env.Account.ID, "bystander")
		a, b := env.Connect(tokenA), env.Connect(tokenB)
		pending := a.OK("approvals_create", prAsk(900, "abcdef1234567"))
		approved := a.OK("approvals_create", prAsk(901, "abcdef7654321"))
		if _, err := env.Store.Decide(ctx, env.Account.ID, approved["approval_id"].(string), owner, asks.Decision{Verdict: asks.VerdictApprove}); err != nil {
			t.Fatalf("decide: %v", err)
		}

		cases := []struct {
			name, tool, field string
			args              map[string]any
		}{
			{"withdrawing its open ask", "approvals_add_progress", "approval_id",
				map[string]any{"approval_id": pending["approval_id"], "step": "stale", "expected_state": "pending"}},
			{"withdrawing it without expected_state", "approvals_add_progress", "approval_id",
				map[string]any{"approval_id": pending["approval_id"], "step": "stale"}},
			{"starting its approved ask", "approvals_add_progress", "approval_id",
				map[string]any{"approval_id": approved["approval_id"], "step": "started", "expected_state": "approved", "observed": approved["payload"]}},
		}
		for _, tc := range cases {
			t.Run("another agent is refused "+tc.name, func(t *testing.T) {
				before := snapshot(t, env)
				r := b.Call(tc.tool, tc.args)
				if !r.IsError || r.Code != string(core.PermissionDenied) || r.Field != tc.field {
					t.Errorf("%s: %s, want PERMISSION_DENIED on %s", tc.tool, r, tc.field)
				}
				before.mustEqual(t, snapshot(t, env), tc.name)
			})
		}
		// The same calls from the requester go through.
		for _, i := range []int{2, 0} {
			if r := a.Call(cases[i].tool, cases[i].args); r.IsError {
				t.Errorf("requester %s: %s", cases[i].name, r)
			}
		}
		// Another agent of the account supersedes the approved ask (linked)
		// and a new open one (made stale).
		open := a.OK("approvals_create", prAsk(902, "abcdef1234569"))
		for i, earlier := range []map[string]any{approved, open} {
			r := b.Call("approvals_create", withArgs(prAsk(903+i, "abcdef7654329"), "supersedes", earlier["approval_id"]))
			if r.IsError || r.Out["requester"] != "agent:bystander" || r.Out["supersedes"] != earlier["approval_id"] {
				t.Errorf("bystander supersedes filer's %v ask: %s %v", earlier["status"], r, r.Out)
			}
		}
		if got := a.OK("approvals_get", map[string]any{"approval_id": open["approval_id"]}); got["status"] != "stale" {
			t.Errorf("filer's superseded open ask is %v, want stale", got["status"])
		}
	})
}

func TestASessionServesOnlyTheAgentThatOpenedIt(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		env := apptest.Start(t, db, nil)
		_, tokenA := env.Agent(env.Account.ID, "alpha")
		_, tokenB := env.Agent(env.Account.ID, "beta")
		a := env.Connect(tokenA)
		a.OK("approvals_list", map[string]any{})
		body := toolCallBody(t, "approvals_create", prAsk(900, "abcdef1234567"))

		before := snapshot(t, env)
		r := rawPost(t, env, tokenB, a.Session.ID(), protocolOf(a), body)
		if r.Status != http.StatusForbidden {
			t.Errorf("beta's token on alpha's session: HTTP %d, want 403: %s", r.Status, r.Body)
		}
		before.mustEqual(t, snapshot(t, env), "beta's call on alpha's session")

		// The same request with alpha's own token works, so the 403 was about the token.
		r = rawPost(t, env, tokenA, a.Session.ID(), protocolOf(a), body)
		if r.Status != http.StatusOK {
			t.Fatalf("alpha's token on its session: HTTP %d: %s", r.Status, r.Body)
		}
		res, _ := rpcResult(t, r)["result"].(map[string]any)
		out, _ := res["structuredContent"].(map[string]any)
		if res["isError"] == true || out["requester"] != "agent:alpha" {
			t.Errorf("alpha's raw create = %v", res)
		}
	})
}
