package mcp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
)

// getStream sends a session's GET with extra headers and returns the reply
// (its body open while the stream is).
func getStream(t *testing.T, env *apptest.Env, token, session string, extra map[string]string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, env.URL+"/mcp", nil)
	for k, v := range map[string]string{"Accept": "text/event-stream", "Authorization": "Bearer " + token,
		"Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-06-18"} {
		req.Header.Set(k, v)
	}
	for k, v := range extra {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET /mcp: %v", err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}

// rpcErrorOf reads the JSON-RPC error of a refused request.
func rpcErrorOf(t *testing.T, res *http.Response) (int, string) {
	t.Helper()
	var reply struct {
		Error struct {
			Code    int
			Message string
		} `json:"error"`
	}
	body, _ := io.ReadAll(res.Body)
	if err := json.Unmarshal(body, &reply); err != nil {
		t.Fatalf("HTTP %d %s: not a JSON-RPC error: %v", res.StatusCode, body, err)
	}
	return reply.Error.Code, reply.Error.Message
}

// A session has one GET stream at a time: a second is refused with 409 and
// the first goes on; a resume with Last-Event-ID is refused (no notice is
// kept to replay); a DELETE ends the session and its stream with it.
func TestASessionHoldsOneStreamUntilItIsDeleted(t *testing.T) {
	env := apptest.Start(t, apptest.SQLite, nil)
	_, token := env.Agent(env.Account.ID, "waiter")
	session := rawSession(t, env, token)
	filer := mustSessionClient(t, env, token, false)
	filed, err := apptest.CallTool(context.Background(), filer, "approvals_create", specAsk("pull_request", specPR()))
	if err != nil || filed.IsError {
		t.Fatalf("file: %v %s", err, filed.Text)
	}
	filer.Close()
	ask := filed.Out["approval_id"].(string)
	sub := rawPost(t, env, token, session, "2025-06-18", []byte(`{"jsonrpc":"2.0","id":5,"method":"resources/subscribe","params":{"uri":"countersign://approvals/`+ask+`"}}`))
	if sub.Status != http.StatusOK || !strings.Contains(string(sub.Body), `"result":{"_meta":{}}`) {
		t.Fatalf("subscribe: %d %s, want an empty result with no null in it (the TypeScript SDK refuses null)", sub.Status, sub.Body)
	}
	first := getStream(t, env, token, session, nil)
	lines := bufio.NewReader(first.Body)
	if line, err := lines.ReadString('\n'); first.StatusCode != http.StatusOK || err != nil || line != ": ok\n" {
		t.Fatalf("the first GET: %d %q %v, want 200 and the stream's first line", first.StatusCode, line, err)
	}
	eventually(t, "the stream held off net/http", func() bool { return env.App.MCP.StandingStreams() == 1 })

	second := getStream(t, env, token, session, nil)
	if code, msg := rpcErrorOf(t, second); second.StatusCode != http.StatusConflict || !strings.Contains(msg, "already open") {
		t.Errorf("a second GET: %d %d %q, want 409 saying the stream is already open", second.StatusCode, code, msg)
	}
	resumed := getStream(t, env, token, session, map[string]string{"Last-Event-ID": "0_3"})
	if _, msg := rpcErrorOf(t, resumed); resumed.StatusCode != http.StatusBadRequest || !strings.Contains(msg, "replay unsupported") {
		t.Errorf("a GET with Last-Event-ID: %d %q, want 400 saying replay is unsupported", resumed.StatusCode, msg)
	}
	if r := rawPing(t, env, token, session); r.Status != http.StatusOK {
		t.Fatalf("the session after the refused GETs: %d %s", r.Status, r.Body)
	}

	req, _ := http.NewRequest(http.MethodDelete, env.URL+"/mcp", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Mcp-Session-Id", session)
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %v %v, want 204", res, err)
	}
	ended := make(chan error, 1)
	go func() { _, err := io.Copy(io.Discard, lines); ended <- err }()
	select {
	case err := <-ended:
		if err != nil {
			t.Errorf("the stream of the deleted session: %v, want its end", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stream of the deleted session is still open")
	}
	mustBeGone(t, rawPing(t, env, token, session), "the deleted session")
	eventually(t, "no stream and no session left", func() bool {
		return env.App.MCP.StandingStreams() == 0 && env.App.MCP.OpenSessions() == 0
	})
}

// Over HTTP/2 (Countersign's own TLS) a connection cannot be taken off
// net/http: the stream is held there instead, and the agent hears its
// decision the same way.
func TestAWaitingAgentOverHTTP2HearsItsDecision(t *testing.T) {
	env := apptest.Start(t, apptest.SQLite, nil)
	_, token := env.Agent(env.Account.ID, "waiter")
	owner := env.Member(env.Account.ID, "ada", core.RoleOwner)
	srv := httptest.NewUnstartedServer(env.App.MCP)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	httpClient := srv.Client()
	protos := make(chan string, 16)
	httpClient.Transport = bearerOver{token: token, next: httpClient.Transport, protos: protos}

	heard := make(chan string, 4)
	client := sdk.NewClient(&sdk.Implementation{Name: "waiter", Version: "1"}, &sdk.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *sdk.ResourceUpdatedNotificationRequest) { heard <- r.Params.URI },
	})
	session, err := client.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: httpClient, MaxRetries: -1},
		&sdk.ClientSessionOptions{ProtocolVersion: apptest.SessionRevision})
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	id := fileAndSubscribe(t, session, 8)
	if proto := <-protos; proto != "HTTP/2.0" {
		t.Fatalf("the client spoke %s, want HTTP/2.0", proto)
	}
	hearDecision(t, env, owner, id, heard)
	if n := env.App.MCP.StandingStreams(); n != 0 {
		t.Errorf("streams taken off net/http over HTTP/2: %d, want 0", n)
	}
	session.Close()
	eventually(t, "the session ended", func() bool { return env.App.MCP.OpenSessions() == 0 })
}

// fileAndSubscribe files a pull-request ask over session and subscribes to
// it; it returns the ask's id.
func fileAndSubscribe(t *testing.T, session *sdk.ClientSession, number int) string {
	t.Helper()
	filed, err := apptest.CallTool(context.Background(), session, "approvals_create", specAsk("pull_request", specPR("number", number)))
	if err != nil || filed.IsError {
		t.Fatalf("file: %v %s", err, filed.Text)
	}
	id := filed.Out["approval_id"].(string)
	if err := session.Subscribe(context.Background(), &sdk.SubscribeParams{URI: "countersign://approvals/" + id}); err != nil {
		t.Fatal(err)
	}
	return id
}

// hearDecision denies the ask id as owner and waits for its notice to
// reach the agent (heard is fed by its ResourceUpdatedHandler).
func hearDecision(t *testing.T, env *apptest.Env, owner *people.Member, id string, heard <-chan string) {
	t.Helper()
	if _, err := env.Store.Decide(context.Background(), env.Account.ID, id, owner, asks.Decision{Verdict: asks.VerdictDeny}); err != nil {
		t.Fatal(err)
	}
	select {
	case uri := <-heard:
		if uri != "countersign://approvals/"+id {
			t.Fatalf("heard of %s, want the ask", uri)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the agent heard nothing of the decision on its stream")
	}
}

// bearerOver adds the agent's token to each request and reports the
// protocol of each response.
type bearerOver struct {
	token  string
	next   http.RoundTripper
	protos chan string
}

func (b bearerOver) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	res, err := b.next.RoundTrip(r)
	if err == nil {
		select {
		case b.protos <- res.Proto:
		default:
		}
	}
	return res, err
}

// A disabled agent's waiting streams close at once, on every instance: its
// session's GET stream and its 2026-07-28 subscriptions/listen are held by
// instance A, and an admin disables it through instance B (on SQLite, one
// instance does both). They close too when the agent is disabled while A's
// PostgreSQL listener is away: A checks, once back, the agents it holds
// streams for. A stream of another agent stays open throughout.
func TestADisabledAgentsStreamsCloseOnEveryInstance(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		a := apptest.Start(t, db, nil)
		b := a
		if db != apptest.SQLite {
			cfg := a.App.Config
			cfg.Data = t.TempDir()
			b = apptest.StartWith(t, cfg)
		}
		listening := func() {
			t.Helper()
			if db != apptest.SQLite {
				eventually(t, "instance A listening", a.Store.Changes().Listening)
			}
		}
		_, other := a.Agent(a.Account.ID, "bystander")
		bystander := apptest.OpenGETStream(t, a.URL+"/mcp", other)
		ctx := context.Background()
		for _, tc := range []struct{ how, name string }{{"while A listens", "heard"}, {"while A's listener is away", "missed"}} {
			how, name := tc.how, tc.name
			t.Run(how, func(t *testing.T) {
				if name == "missed" && db == apptest.SQLite {
					t.Skip("SQLite has no listener")
				}
				_, token := a.Agent(a.Account.ID, name)
				filed := a.Connect(token).OK("approvals_create", specAsk("pull_request", specPR()))
				stream := apptest.OpenGETStream(t, a.URL+"/mcp", token)
				listen := apptest.OpenListen(t, a.URL+"/mcp", token, "countersign://approvals/"+filed["approval_id"].(string))
				listening()
				if name == "missed" {
					if err := a.Store.DB().Exec(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = ?`, core.ListenerName(a.Store.Changes())).Error; err != nil {
						t.Fatal(err)
					}
				}
				if _, err := b.Store.DisableAgent(ctx, b.Account.ID, name, "leaked", "admin"); err != nil {
					t.Fatalf("disable through B: %v", err)
				}
				stream.MustEnd("the agent was disabled through B " + how)
				listen.MustEnd("the agent was disabled through B " + how)
				listening()
			})
		}
		if n := a.App.MCP.OpenSessions(); n != 1 {
			t.Errorf("instance A holds %d sessions, want the bystander's alone", n)
		}
		bystander.MustBeOpen()
	})
}
