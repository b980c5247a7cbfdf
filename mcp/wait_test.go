package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/apptest"
)

// waitWorld is a service with ada, an owner who answers with her passkey
// through the web API, and an agent's token.
type waitWorld struct {
	env   *apptest.Env
	ada   *apptest.Browser
	token string
}

func newWaitWorld(t *testing.T, db apptest.Database) *waitWorld {
	t.Helper()
	env := apptest.StartWeb(t, db, nil)
	_, token := env.Agent(env.Account.ID, "bot")
	return &waitWorld{env: env, ada: env.Owner("ada"), token: token}
}

// approve has ada approve the ask with her passkey.
func (w *waitWorld) approve(t *testing.T, id string) {
	t.Helper()
	if r := w.ada.For(t).Decide(id, "approve", ""); r.Status != http.StatusOK {
		t.Fatalf("ada approves %s: %s", id, r)
	}
}

// connect opens an MCP connection for revision; with url the client
// declares URL elicitation, and its automatic multi round-trip is off, so
// the test calls again by hand, as a host does once the person opened the
// page. completed hears each notifications/elicitation/complete.
func (w *waitWorld) connect(t *testing.T, revision string, url bool, completed chan<- string) *sdk.ClientSession {
	t.Helper()
	opts := &sdk.ClientOptions{MultiRoundTrip: &sdk.MultiRoundTripOptions{Disabled: true}}
	if url {
		opts.Capabilities = &sdk.ClientCapabilities{Elicitation: &sdk.ElicitationCapabilities{URL: &sdk.URLElicitationCapabilities{}}}
		opts.ElicitationHandler = func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return &sdk.ElicitResult{Action: "accept"}, nil
		}
		opts.ElicitationCompleteHandler = func(_ context.Context, r *sdk.ElicitationCompleteNotificationRequest) {
			if completed != nil {
				completed <- r.Params.ElicitationID
			}
		}
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "host", Version: "1"}, opts)
	session, err := client.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: w.env.URL + "/mcp", HTTPClient: apptest.BearerClient(w.token), MaxRetries: -1},
		&sdk.ClientSessionOptions{ProtocolVersion: revision})
	if err != nil {
		t.Fatalf("connect (%s): %v", revision, err)
	}
	t.Cleanup(func() { session.Close() })
	return session
}

// waitingAsk is a review ask filed with wait: true.
func waitingAsk(title string) map[string]any {
	return map[string]any{
		"kind": "review", "title": title, "approve_means": "I go ahead", "deny_means": "I stop",
		"payload": map[string]any{"review": map[string]any{"url": "https://example.com/release"}}, "wait": true,
	}
}

// structured reads a tool result's structured content.
func structured(t *testing.T, res *sdk.CallToolResult) map[string]any {
	t.Helper()
	if res == nil || res.IsError || res.NeedsInput() {
		t.Fatalf("want the ask, got %+v", res)
	}
	var out map[string]any
	raw, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// theURLElicitation checks that e sends the person to an ask's page of w's
// service, and returns the ask's id.
func (w *waitWorld) theURLElicitation(t *testing.T, e *sdk.ElicitParams, title string) string {
	t.Helper()
	id, ok := strings.CutPrefix(e.URL, w.env.URL+"/approvals/")
	if e.Mode != "url" || !ok || id == "" || e.ElicitationID != id || !strings.Contains(e.Message, title) {
		t.Fatalf("elicitation %+v: want the URL of the ask's page, under the ask's id, naming %q", e, title)
	}
	return id
}

// approvals_create with wait: true on a 2026-07-28 client that takes URL
// elicitation answers at once with input_required, the ask's page to open;
// the same call with the ask's id as its request state gets the answered
// ask with its proof. A request state of no ask of this call files anew.
func TestCreateWithWaitSendsA20260728URLClientToTheAsksPage(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		w := newWaitWorld(t, db)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		session := w.connect(t, "2026-07-28", true, nil)
		args := waitingAsk("Ship the release")
		res, err := session.CallTool(ctx, &sdk.CallToolParams{Name: "approvals_create", Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		if !res.NeedsInput() || len(res.InputRequests) != 1 {
			t.Fatalf("want input_required with one elicitation, got %+v", res)
		}
		e, _ := res.InputRequests[res.RequestState].(*sdk.ElicitParams)
		if e == nil {
			t.Fatalf("no elicitation under the request state %q: %+v", res.RequestState, res.InputRequests)
		}
		id := w.theURLElicitation(t, e, "Ship the release")
		w.approve(t, id)
		done, err := session.CallTool(ctx, &sdk.CallToolParams{Name: "approvals_create", Arguments: args, RequestState: id,
			InputResponses: sdk.InputResponseMap{id: &sdk.ElicitResult{Action: "accept"}}})
		if err != nil {
			t.Fatal(err)
		}
		got := structured(t, done)
		if got["approval_id"] != id || got["status"] != "approved" || got["decided_by"] != "ada" || got["proof"] == nil {
			t.Fatalf("the call again = %v, want the ask approved by ada with its proof", got)
		}
		var n int64
		if err := w.env.Store.DB().Table("approvals").Count(&n).Error; err != nil || n != 1 {
			t.Fatalf("%d asks filed (%v), want 1: the call again files nothing", n, err)
		}

		declined := waitingAsk("Declined on the host")
		res, err = session.CallTool(ctx, &sdk.CallToolParams{Name: "approvals_create", Arguments: declined})
		if err != nil || !res.NeedsInput() {
			t.Fatalf("approvals_create = %+v (%v), want input_required", res, err)
		}
		state := res.RequestState
		back, err := session.CallTool(ctx, &sdk.CallToolParams{Name: "approvals_create", Arguments: declined, RequestState: state,
			InputResponses: sdk.InputResponseMap{state: &sdk.ElicitResult{Action: "decline"}}})
		if err != nil {
			t.Fatal(err)
		}
		if got := structured(t, back); got["approval_id"] != state || got["status"] != "pending" {
			t.Fatalf("a declined elicitation = %v, want the ask %s as it stands, pending", got, state)
		}

		other := waitingAsk("Ship the release")
		other["payload"] = map[string]any{"review": map[string]any{"url": "https://example.com/other"}}
		res, err = session.CallTool(ctx, &sdk.CallToolParams{Name: "approvals_create", Arguments: other, RequestState: id,
			InputResponses: sdk.InputResponseMap{id: &sdk.ElicitResult{Action: "accept"}}})
		if err != nil || !res.NeedsInput() || res.RequestState == id || res.RequestState == "" {
			t.Fatalf("another payload with the first ask's state = %+v (%v), want a new ask's elicitation", res, err)
		}
	})
}

// With the client's own multi round-trip on, the host opens the page (here
// the person approves as it does) and the one call returns the approved ask.
func TestCreateWithWaitReturnsTheApprovedAskToAnAutomaticHost(t *testing.T) {
	w := newWaitWorld(t, apptest.SQLite)
	opened := make(chan string, 1)
	client := sdk.NewClient(&sdk.Implementation{Name: "host", Version: "1"}, &sdk.ClientOptions{
		Capabilities: &sdk.ClientCapabilities{Elicitation: &sdk.ElicitationCapabilities{URL: &sdk.URLElicitationCapabilities{}}},
		// The host opens the page and the person approves there; this runs
		// on the client's goroutine, so it reports by its error, not t.Fatal.
		ElicitationHandler: func(_ context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			id, ok := strings.CutPrefix(r.Params.URL, w.env.URL+"/approvals/")
			if r.Params.Mode != "url" || !ok || id != r.Params.ElicitationID {
				return nil, fmt.Errorf("elicitation %+v is not the URL of the ask's page", r.Params)
			}
			if resp := w.ada.For(t).Decide(id, "approve", ""); resp.Status != http.StatusOK {
				return nil, fmt.Errorf("ada approves %s: %s", id, resp)
			}
			opened <- id
			return &sdk.ElicitResult{Action: "accept"}, nil
		},
	})
	session, err := client.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: w.env.URL + "/mcp", HTTPClient: apptest.BearerClient(w.token), MaxRetries: -1},
		&sdk.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := session.CallTool(ctx, &sdk.CallToolParams{Name: "approvals_create", Arguments: waitingAsk("Ship the release")})
	if err != nil {
		t.Fatal(err)
	}
	got := structured(t, res)
	if id := <-opened; got["approval_id"] != id || got["status"] != "approved" {
		t.Fatalf("the call returned %v, want the ask %s approved", got, id)
	}
}

// On 2025-11-25 the answer is the URL elicitation required error; the
// session hears notifications/elicitation/complete once the ask is answered,
// and the same call again gets the approved ask.
func TestCreateWithWaitCompletesA20251125URLElicitation(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		w := newWaitWorld(t, db)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		completed := make(chan string, 4)
		session := w.connect(t, "2025-11-25", true, completed)
		args := waitingAsk("Roll the payments service")
		_, err := session.CallTool(ctx, &sdk.CallToolParams{Name: "approvals_create", Arguments: args})
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) || rpcErr.Code != sdk.CodeURLElicitationRequired {
			t.Fatalf("call: %v, want the URL elicitation required error", err)
		}
		var data struct {
			Elicitations []*sdk.ElicitParams `json:"elicitations"`
		}
		if err := json.Unmarshal(rpcErr.Data, &data); err != nil || len(data.Elicitations) != 1 {
			t.Fatalf("error data %s: %v", rpcErr.Data, err)
		}
		id := w.theURLElicitation(t, data.Elicitations[0], "Roll the payments service")
		select {
		case got := <-completed:
			t.Fatalf("elicitation %s completed before anybody answered", got)
		case <-time.After(300 * time.Millisecond):
		}
		w.approve(t, id)
		select {
		case got := <-completed:
			if got != id {
				t.Fatalf("completed %s, want %s", got, id)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("no notifications/elicitation/complete within 20 s of the approve")
		}
		res, err := session.CallTool(ctx, &sdk.CallToolParams{Name: "approvals_create", Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		if got := structured(t, res); got["approval_id"] != id || got["status"] != "approved" || got["proof"] == nil {
			t.Fatalf("the call again = %v, want the ask %s approved with its proof", got, id)
		}
	})
}

// A client without URL elicitation is held until the ask is answered, 45 s
// at most: an approve within that returns the approved ask, and silence
// returns the ask still pending after 45 s.
func TestCreateWithWaitHoldsAPlainClient45Seconds(t *testing.T) {
	w := newWaitWorld(t, apptest.SQLite)
	// The two revisions run at once, and ada has one passkey: her answers
	// go one at a time, so the passkey's counter reaches the service in the
	// order it signed (two signatures crossing on the way look like a
	// cloned passkey, and the second is refused).
	var answering sync.Mutex
	for _, revision := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(revision, func(t *testing.T) {
			t.Parallel()
			session := w.connect(t, revision, false, nil)
			ctx := context.Background()
			t.Run("answered", func(t *testing.T) {
				title := "Answered on " + revision
				go func() { // the person answers once the ask is filed, while the call is held
					for range 400 {
						var ids []string
						w.env.Store.DB().Table("approvals").Where("title = ?", title).Pluck("id", &ids)
						if len(ids) == 1 {
							answering.Lock()
							defer answering.Unlock()
							if r := w.ada.For(t).Decide(ids[0], "approve", ""); r.Status != http.StatusOK {
								t.Errorf("ada approves %s: %s", ids[0], r)
							}
							return
						}
						time.Sleep(50 * time.Millisecond)
					}
					t.Errorf("no ask titled %q was filed within 20 s", title)
				}()
				res, err := session.CallTool(ctx, &sdk.CallToolParams{Name: "approvals_create", Arguments: waitingAsk(title)})
				if err != nil {
					t.Fatal(err)
				}
				if got := structured(t, res); got["status"] != "approved" || got["decided_by"] != "ada" {
					t.Fatalf("got %v, want the ask approved", got)
				}
			})
			t.Run("silence", func(t *testing.T) {
				began := time.Now()
				res, err := session.CallTool(ctx, &sdk.CallToolParams{Name: "approvals_create", Arguments: waitingAsk("Nobody answers on " + revision)})
				if err != nil {
					t.Fatal(err)
				}
				if got := structured(t, res); got["status"] != "pending" {
					t.Fatalf("got %v, want the ask still pending", got)
				}
				if held := time.Since(began); held < 44*time.Second {
					t.Errorf("held %s, want 45 s", held.Round(time.Second))
				}
			})
		})
	}
}

// An ask a policy approves as it is filed comes back at once, approved by the
// policy: a host that takes URL elicitation is not sent to a page nobody
// needs to open.
func TestCreateWithWaitReturnsAnAskAPolicyApprovedAtOnce(t *testing.T) {
	w := newPolicyWorld(t, apptest.SQLite)
	w.enable(t, map[string]any{"until": until(3 * time.Hour)})
	_, token := w.env.Agent(w.env.Account.ID, "waiter")
	for _, revision := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(revision, func(t *testing.T) {
			host := (&waitWorld{env: w.env, token: token}).connect(t, revision, true, nil)
			args := harmless("Read the onboarding doc on " + revision)
			args["wait"] = true
			res, err := host.CallTool(context.Background(), &sdk.CallToolParams{Name: "approvals_create", Arguments: args})
			if err != nil {
				t.Fatalf("approvals_create: %v, want the approved ask", err)
			}
			if got := structured(t, res); got["status"] != "approved" || got["decision"] != "approve" {
				t.Fatalf("got %v, want the ask approved by the policy", got)
			}
		})
	}
}
