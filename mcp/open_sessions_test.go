package mcp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
)

// sessionClient opens an MCP session with the go-sdk client. A listening
// client holds the session's GET stream open, as the SDK does by default;
// one that does not listen leaves its session idle between calls.
func sessionClient(env *apptest.Env, token string, listen bool) (*sdk.ClientSession, error) {
	client := sdk.NewClient(&sdk.Implementation{Name: "countersign-test", Version: "1"}, nil)
	return client.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: env.URL + "/mcp",
		HTTPClient: apptest.BearerClient(token), MaxRetries: -1, DisableStandaloneSSE: !listen}, &sdk.ClientSessionOptions{ProtocolVersion: apptest.SessionRevision})
}

func mustSessionClient(t *testing.T, env *apptest.Env, token string, listen bool) *sdk.ClientSession {
	t.Helper()
	cs, err := sessionClient(env, token, listen)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// touch pings a session, which must be alive, and returns once the server
// has finished the request: the answer is an event stream, whose end comes
// after the handler returns. The order in which sessions turn idle is then
// the order of the test's steps.
func touch(t *testing.T, env *apptest.Env, token string, cs *sdk.ClientSession) {
	t.Helper()
	if r := rawPing(t, env, token, cs.ID()); r.Status != http.StatusOK {
		t.Fatalf("ping: %d %s", r.Status, r.Body)
	}
}

func mustWork(t *testing.T, cs *sdk.ClientSession, what string) {
	t.Helper()
	if _, err := cs.ListTools(context.Background(), nil); err != nil {
		t.Errorf("%s: tools/list: %v, want its session alive", what, err)
	}
}

// rawSession opens a session over raw HTTP: initialize, then initialized.
func rawSession(t *testing.T, env *apptest.Env, token string) string {
	t.Helper()
	r := rawPost(t, env, token, "", "", initializeBody())
	id := r.Header.Get("Mcp-Session-Id")
	if r.Status != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d %s", r.Status, r.Body)
	}
	if r := rawPost(t, env, token, id, "2025-06-18", []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); r.Status != http.StatusAccepted {
		t.Fatalf("initialized: %d %s", r.Status, r.Body)
	}
	return id
}

func rawPing(t *testing.T, env *apptest.Env, token, session string) rawReply {
	t.Helper()
	return rawPost(t, env, token, session, "2025-06-18", []byte(`{"jsonrpc":"2.0","id":3,"method":"ping"}`))
}

// mustBeGone checks that a request on a session is answered as one of a
// session that ended: 404 with JSON-RPC error -32001.
func mustBeGone(t *testing.T, r rawReply, what string) {
	t.Helper()
	var reply struct {
		Error struct{ Code int } `json:"error"`
	}
	if r.Status != http.StatusNotFound || json.Unmarshal(r.Body, &reply) != nil || reply.Error.Code != -32001 {
		t.Errorf("%s: %d %s, want 404 with JSON-RPC error -32001, session not found", what, r.Status, r.Body)
	}
}

// openGETStream opens a session's GET stream and returns once the server
// holds it; stop closes it.
func openGETStream(t *testing.T, env *apptest.Env, token, session string) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, env.URL+"/mcp", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != http.StatusOK {
		cancel()
		t.Fatalf("GET stream: %v %v", res, err)
	}
	if _, err := bufio.NewReader(res.Body).ReadString('\n'); err != nil { // the SDK's ": ok"
		t.Fatalf("GET stream: %v", err)
	}
	stop = func() { cancel(); res.Body.Close() }
	t.Cleanup(stop)
	return stop
}

// callInFlight sends a ping on a session and returns once the server is
// handling it, its body not yet sent (Expect: 100-continue: the server asks
// for the body when it reads it); finish sends the body and reads the answer.
func callInFlight(t *testing.T, env *apptest.Env, token, session string) (finish func() int) {
	t.Helper()
	body, send := io.Pipe()
	continued := make(chan struct{})
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{Got100Continue: func() { close(continued) }})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, env.URL+"/mcp", body)
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Authorization": "Bearer " + token, "Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-06-18", "Expect": "100-continue"} {
		req.Header.Set(k, v)
	}
	status := make(chan int, 1)
	go func() {
		client := &http.Client{Transport: &http.Transport{ExpectContinueTimeout: time.Minute}}
		res, err := client.Do(req)
		if err != nil {
			status <- 0
			return
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		status <- res.StatusCode
	}()
	select {
	case <-continued:
	case <-time.After(10 * time.Second):
		t.Fatal("the server never read the call's body")
	}
	finished := false
	finish = func() int {
		if finished {
			return 0
		}
		finished = true
		send.Write([]byte(`{"jsonrpc":"2.0","id":9,"method":"ping"}`))
		send.Close()
		return <-status
	}
	t.Cleanup(func() { finish() })
	return finish
}

// eventually waits, up to 20 s, for cond: what the server does after it has
// answered (a request's end) or at a time (the idle life) is checked so.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 20 s", what)
		}
	}
}

// One token past its cap of open sessions closes its own session idle the
// longest (not the oldest made: the one unused the longest); a call on that
// session then fails as a session not found. Another token is untouched.
// Before the cap, 10,000 initialize calls of one mcp:read token held 10,000
// sessions, 500 MB.
func TestATokenPastItsSessionCapClosesItsSessionIdleTheLongest(t *testing.T) {
	env := apptest.Start(t, apptest.SQLite, map[string]string{"COUNTERSIGN_MCP_SESSIONS_PER_TOKEN": "3"})
	_, token := env.Agent(env.Account.ID, "leaky", "mcp:read")
	_, otherToken := env.Agent(env.Account.ID, "calm")
	other := mustSessionClient(t, env, otherToken, false)

	first := mustSessionClient(t, env, token, false)
	second := mustSessionClient(t, env, token, false)
	third := mustSessionClient(t, env, token, false)
	for _, cs := range []*sdk.ClientSession{second, third, first} { // second is now idle the longest
		touch(t, env, token, cs)
	}
	if n := env.App.MCP.OpenSessions(); n != 4 {
		t.Fatalf("open sessions: %d, want 4", n)
	}

	fourth := mustSessionClient(t, env, token, false)
	mustBeGone(t, rawPing(t, env, token, second.ID()), "the session idle the longest, past the cap of 3")
	if _, err := second.ListTools(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "Session not found") {
		t.Errorf("the go-sdk client's call on the closed session: %v, want Session not found", err)
	}
	for name, cs := range map[string]*sdk.ClientSession{"first": first, "third": third, "fourth": fourth, "another token's": other} {
		mustWork(t, cs, "the "+name+" session")
	}
	if n := env.App.MCP.OpenSessions(); n != 4 {
		t.Errorf("open sessions: %d, want 3 of the capped token and 1 of the other", n)
	}

	// The other token opens its own sessions at will: the cap is per token.
	for range 3 {
		mustSessionClient(t, env, otherToken, false)
	}
	for name, cs := range map[string]*sdk.ClientSession{"first": first, "third": third, "fourth": fourth} {
		mustWork(t, cs, "the capped token's "+name+" session, after another token opened three")
	}
}

// With every session of the token busy — a GET stream open, a call in
// flight — a new initialize is refused with 429, Retry-After and a JSON-RPC
// error naming the cap, and nothing is closed. Once a call ends, its session
// is idle and gives way.
func TestAnInitializeWithEverySessionBusyIsRefusedNamingTheCap(t *testing.T) {
	env := apptest.Start(t, apptest.SQLite, map[string]string{"COUNTERSIGN_MCP_SESSIONS_PER_TOKEN": "2"})
	_, token := env.Agent(env.Account.ID, "busy", "mcp:read", "approvals:read")
	listening := mustSessionClient(t, env, token, true) // holds its GET stream
	calling := rawSession(t, env, token)
	finish := callInFlight(t, env, token, calling)

	r := rawPost(t, env, token, "", "", initializeBody())
	if r.Status != http.StatusTooManyRequests || r.Header.Get("Retry-After") != "5" {
		t.Fatalf("initialize with both sessions busy: %d, Retry-After %q: %s; want 429 with Retry-After 5", r.Status, r.Header.Get("Retry-After"), r.Body)
	}
	var reply struct {
		JSONRPC string `json:"jsonrpc"`
		ID      any    `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Data    struct {
				Setting string `json:"setting"`
				Limit   int    `json:"limit"`
			} `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.Body, &reply); err != nil {
		t.Fatalf("not JSON-RPC: %v: %s", err, r.Body)
	}
	if reply.JSONRPC != "2.0" || reply.ID != 1.0 || reply.Error.Code != -32029 ||
		!strings.Contains(reply.Error.Message, "COUNTERSIGN_MCP_SESSIONS_PER_TOKEN=2") || !strings.Contains(reply.Error.Message, "none is idle") ||
		reply.Error.Data.Setting != "COUNTERSIGN_MCP_SESSIONS_PER_TOKEN" || reply.Error.Data.Limit != 2 {
		t.Errorf("refusal %s, want id 1, code -32029, naming COUNTERSIGN_MCP_SESSIONS_PER_TOKEN=2 in the message and the data", r.Body)
	}
	if _, err := sessionClient(env, token, false); err == nil || !strings.Contains(err.Error(), "Too Many Requests") {
		t.Errorf("the go-sdk client's connect: %v, want Too Many Requests", err)
	}
	mustWork(t, listening, "the listening session after the refusals")
	if n := env.App.MCP.OpenSessions(); n != 2 {
		t.Errorf("open sessions after the refusals: %d, want the 2 busy ones", n)
	}

	if status := finish(); status != http.StatusOK {
		t.Fatalf("the call in flight: %d", status)
	}
	eventually(t, "an initialize once the call ended", func() bool {
		return rawPost(t, env, token, "", "", initializeBody()).Status == http.StatusOK
	})
	mustBeGone(t, rawPing(t, env, token, calling), "the session whose call ended, past the cap")
	mustWork(t, listening, "the listening session")
}

// Past the instance's cap, a new session of any token closes the session
// of the instance idle the longest, whoever's; with none idle, initialize
// is refused naming COUNTERSIGN_MCP_SESSIONS.
func TestAnInstancePastItsSessionCapClosesItsSessionIdleTheLongest(t *testing.T) {
	env := apptest.Start(t, apptest.SQLite, map[string]string{"COUNTERSIGN_MCP_SESSIONS": "3"})
	_, a := env.Agent(env.Account.ID, "a")
	_, b := env.Agent(env.Account.ID, "b")
	a1 := mustSessionClient(t, env, a, false)
	touch(t, env, a, a1)
	a2 := mustSessionClient(t, env, a, true)
	b1 := mustSessionClient(t, env, b, false)
	touch(t, env, b, b1)

	b2 := mustSessionClient(t, env, b, true)
	mustBeGone(t, rawPing(t, env, a, a1.ID()), "the instance's session idle the longest (a's first), past the cap of 3")
	mustWork(t, a2, "a's listening session")
	mustWork(t, b1, "b's idle session, younger")
	mustWork(t, b2, "b's new session")

	finish := callInFlight(t, env, b, b1.ID())
	_, c := env.Agent(env.Account.ID, "c")
	r := rawPost(t, env, c, "", "", initializeBody())
	if r.Status != http.StatusTooManyRequests || !strings.Contains(string(r.Body), "COUNTERSIGN_MCP_SESSIONS=3") {
		t.Errorf("initialize with the instance's 3 sessions busy: %d %s, want 429 naming COUNTERSIGN_MCP_SESSIONS=3", r.Status, r.Body)
	}
	finish()
}

// An MCP session with nothing open ends after the idle life; one that holds
// its GET stream (an agent waiting on its ask's notice) lives on, and its
// idle life starts when the stream closes.
func TestAnIdleMCPSessionEndsAfterTheIdleLifeAndAListeningOneLivesOn(t *testing.T) {
	env := apptest.Start(t, apptest.SQLite, map[string]string{"COUNTERSIGN_MCP_SESSION_IDLE": "3s"})
	_, token := env.Agent(env.Account.ID, "waiter")
	idle := mustSessionClient(t, env, token, false)
	waiting := rawSession(t, env, token)
	stop := openGETStream(t, env, token, waiting)

	eventually(t, "the idle session's end", func() bool { return env.App.MCP.OpenSessions() == 1 })
	mustBeGone(t, rawPing(t, env, token, idle.ID()), "the idle session after its idle life")
	time.Sleep(3 * time.Second) // one more idle life: the listening session would have ended by now too
	if r := rawPing(t, env, token, waiting); r.Status != http.StatusOK {
		t.Fatalf("the session holding its GET stream: %d %s, want it alive", r.Status, r.Body)
	}

	stop()
	eventually(t, "the end of the session whose stream closed", func() bool { return env.App.MCP.OpenSessions() == 0 })
	mustBeGone(t, rawPing(t, env, token, waiting), "the session idle since its stream closed")
}

// A waiting agent's GET stream is served off net/http (package standing):
// it is counted there while it is open, the agent hears its ask's notice
// on it, and it leaves when the agent goes, ending the session's busy time.
func TestAWaitingAgentsStreamIsServedOffNetHTTPAndLeavesWithItsAgent(t *testing.T) {
	env := apptest.Start(t, apptest.SQLite, map[string]string{"COUNTERSIGN_MCP_SESSION_IDLE": "3s"})
	_, token := env.Agent(env.Account.ID, "waiter")
	owner := env.Member(env.Account.ID, "ada", core.RoleOwner)
	heard := make(chan string, 4)
	client := sdk.NewClient(&sdk.Implementation{Name: "waiter", Version: "1"}, &sdk.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *sdk.ResourceUpdatedNotificationRequest) { heard <- r.Params.URI },
	})
	session, err := client.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: env.URL + "/mcp", HTTPClient: apptest.BearerClient(token), MaxRetries: -1}, &sdk.ClientSessionOptions{ProtocolVersion: apptest.SessionRevision})
	if err != nil {
		t.Fatal(err)
	}
	id := fileAndSubscribe(t, session, 7)
	eventually(t, "the agent's GET stream served off net/http", func() bool { return env.App.MCP.StandingStreams() == 1 })
	hearDecision(t, env, owner, id, heard)
	session.Close()
	eventually(t, "the stream gone with its agent", func() bool { return env.App.MCP.StandingStreams() == 0 })
	eventually(t, "the session ended", func() bool { return env.App.MCP.OpenSessions() == 0 })
}
