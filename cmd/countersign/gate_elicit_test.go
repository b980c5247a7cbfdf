package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/apptest/gatetest"
	"github.com/countersign/countersign/mcp/gate"
	"github.com/countersign/countersign/models/asks"
)

// urlClientGate runs `countersign gate` over stdio in front of the npm
// filesystem server with rules, a 2 s hold, and connects a go-sdk client
// that declares URL-mode elicitation, asking for revision. Its automatic
// multi round-trip is off: the test retries by hand, as a host would after
// the person opened the page, and can retry what a host never would.
func urlClientGate(t *testing.T, env *apptest.Env, token, rules, root, auditLog, revision string, completed chan<- string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(binary, "gate", "--rules", rules, "--timeout", "2s", "--caller", "claude", "--audit-log", auditLog, "--", gatetest.FilesystemServer(t), root)
	cmd.Env = environ(map[string]string{"COUNTERSIGN_URL": env.URL, "COUNTERSIGN_TOKEN": token})
	cmd.Stderr = os.Stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "desktop", Version: "1"}, &mcp.ClientOptions{
		Capabilities:   &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
		ElicitationCompleteHandler: func(_ context.Context, r *mcp.ElicitationCompleteNotificationRequest) {
			if completed != nil {
				completed <- r.Params.ElicitationID
			}
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: revision})
	if err != nil {
		t.Fatalf("connect to countersign gate: %v", err)
	}
	t.Cleanup(func() { session.Close() })
	if got := session.InitializeResult().ProtocolVersion; got != revision {
		t.Fatalf("the gate negotiated %s, want %s", got, revision)
	}
	return session
}

// theElicitation reads the one URL elicitation of an input_required result.
func theElicitation(t *testing.T, res *mcp.CallToolResult) *mcp.ElicitParams {
	t.Helper()
	if res == nil || !res.NeedsInput() || len(res.InputRequests) != 1 {
		t.Fatalf("want input_required with one elicitation, got %+v", res)
	}
	for id, ir := range res.InputRequests {
		e, ok := ir.(*mcp.ElicitParams)
		if !ok || e.Mode != "url" || e.ElicitationID != id || res.RequestState == "" {
			t.Fatalf("input request %s = %#v (state %q), want a URL elicitation under its own id", id, ir, res.RequestState)
		}
		return e
	}
	return nil
}

// askOf is the approval id of an elicitation's URL, the ask's page.
func askOf(t *testing.T, env *apptest.Env, e *mcp.ElicitParams) string {
	t.Helper()
	id, ok := strings.CutPrefix(e.URL, env.URL+"/approvals/")
	if !ok || id == "" {
		t.Fatalf("elicitation URL %q is not an ask page of %s", e.URL, env.URL)
	}
	return id
}

// retry calls tool again as a 2026-07-28 host does after the person opened
// the page: the request state, and the elicitation accepted.
func retry(ctx context.Context, s *mcp.ClientSession, tool string, args map[string]any, state, elicitationID string) (*mcp.CallToolResult, error) {
	return s.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args, RequestState: state,
		InputResponses: mcp.InputResponseMap{elicitationID: &mcp.ElicitResult{Action: "accept"}}})
}

func isRefusal(res *mcp.CallToolResult) bool {
	if res == nil || !res.IsError || res.NeedsInput() || len(res.Content) != 1 {
		return false
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	return ok && tc.Text == gate.RefusalText
}

// A gated write_file through `countersign gate` from a client that takes
// URL elicitation is answered at once with the ask's page and holds no
// connection while the person decides; it runs exactly once, with the
// signed arguments, after an approve given later; never after a deny, after
// the ask's life, on a replayed elicitation or for other arguments.
func TestAGatedCallFromAURLElicitationClientWaitsWithoutHoldingTheCall(t *testing.T) {
	gatetest.FilesystemServer(t)
	env, ada := serviceWithAda(t)
	_, token := env.Agent(env.Account.ID, "gate")
	root := t.TempDir()
	rules := writeRules(t, `{"server": "filesystem", "ask_life": "10m", "tools": {"write_file": {"approval": true}}}`)
	decide := func(t *testing.T, id, answer string) {
		t.Helper()
		if r := ada.For(t).Decide(id, answer, ""); r.Status != 200 {
			t.Fatalf("ada answers %s: %s", answer, r)
		}
	}
	status := func(t *testing.T, id string) asks.Status {
		t.Helper()
		a, err := env.Store.GetApproval(context.Background(), env.Account.ID, id)
		if err != nil {
			t.Fatal(err)
		}
		return a.Status
	}

	t.Run("2026-07-28: the elicitation at once, the call runs once after an approve given later", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		session := urlClientGate(t, env, token, rules, root, filepath.Join(t.TempDir(), "audit.jsonl"), "2026-07-28", nil)
		path := filepath.Join(root, "later.txt")
		args := map[string]any{"path": path, "content": gatetest.Written}
		began := time.Now()
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "write_file", Arguments: args})
		if err != nil {
			t.Fatalf("call: %v", err)
		}
		t.Logf("time to elicitation (2026-07-28, stdio, SQLite): %s", time.Since(began).Round(time.Millisecond))
		e := theElicitation(t, res)
		id := askOf(t, env, e)
		if e.ElicitationID != id || res.RequestState != id || !strings.Contains(e.Message, "Approve in Countersign") {
			t.Errorf("elicitation %+v, state %q: want the ask %s's id, and the words to approve in Countersign", e, res.RequestState, id)
		}
		if _, err := os.Stat(path); err == nil {
			t.Fatal("the file was written before anybody approved")
		}

		// The host comes back before the person answered: held for the 2 s
		// hold, then the same elicitation again; the ask stays open.
		again, err := retry(ctx, session, "write_file", args, res.RequestState, e.ElicitationID)
		if err != nil {
			t.Fatalf("early retry: %v", err)
		}
		if e2 := theElicitation(t, again); e2.ElicitationID != e.ElicitationID || again.RequestState != res.RequestState {
			t.Errorf("the early retry got elicitation %s (state %s), want the same %s", e2.ElicitationID, again.RequestState, e.ElicitationID)
		}
		if got := status(t, id); got != asks.StatusPending {
			t.Fatalf("the ask is %s after the hold, want pending: the ask outlives the 2 s hold", got)
		}
		if _, err := os.Stat(path); err == nil {
			t.Fatal("the file was written before anybody approved")
		}

		decide(t, id, "approve")
		done, err := retry(ctx, session, "write_file", args, res.RequestState, e.ElicitationID)
		if err != nil || done.IsError || done.NeedsInput() {
			t.Fatalf("the retry after the approve: %v %+v", err, done)
		}
		if b, err := os.ReadFile(path); err != nil || string(b) != gatetest.Written {
			t.Fatalf("the file after the approve: %q %v", b, err)
		}
		if got := waitStatusOf(t, env, id, asks.StatusDone); got != asks.StatusDone {
			t.Errorf("the ask is %s after the call, want done", got)
		}

		// Replayed: the same elicitation answered again runs nothing.
		if err := os.WriteFile(path, []byte("changed since"), 0o600); err != nil {
			t.Fatal(err)
		}
		replay, err := retry(ctx, session, "write_file", args, res.RequestState, e.ElicitationID)
		if err != nil || !isRefusal(replay) {
			t.Fatalf("the replayed elicitation: %v %+v, want the refusal", err, replay)
		}
		if b, _ := os.ReadFile(path); string(b) != "changed since" {
			t.Errorf("the replay ran the call again: the file holds %q", b)
		}
	})

	t.Run("2026-07-28: an elicitation of one call cannot complete another", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		session := urlClientGate(t, env, token, rules, root, filepath.Join(t.TempDir(), "audit.jsonl"), "2026-07-28", nil)
		path := filepath.Join(root, "mine.txt")
		args := map[string]any{"path": path, "content": gatetest.Written}
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "write_file", Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		e := theElicitation(t, res)
		id := askOf(t, env, e)
		decide(t, id, "approve")

		other := map[string]any{"path": path, "content": "not what ada signed"}
		swapped, err := retry(ctx, session, "write_file", other, res.RequestState, e.ElicitationID)
		if err != nil {
			t.Fatal(err)
		}
		if e2 := theElicitation(t, swapped); e2.ElicitationID == e.ElicitationID {
			t.Fatalf("other arguments under the approved elicitation got it back, want a new ask")
		} else if newID := askOf(t, env, e2); newID == id || status(t, newID) != asks.StatusPending {
			t.Errorf("other arguments filed %s (%s), want a new pending ask", newID, status(t, newID))
		}
		if _, err := os.Stat(path); err == nil {
			t.Fatal("other arguments ran under the approved elicitation")
		}
		if got := status(t, id); got != asks.StatusApproved {
			t.Fatalf("the approved ask is %s after another call named it, want still approved", got)
		}
		done, err := retry(ctx, session, "write_file", args, res.RequestState, e.ElicitationID)
		if err != nil || done.IsError || done.NeedsInput() {
			t.Fatalf("the signed arguments after all: %v %+v", err, done)
		}
		if b, _ := os.ReadFile(path); string(b) != gatetest.Written {
			t.Errorf("the file holds %q, want the signed content", b)
		}
	})

	t.Run("2026-07-28: a deny refuses and nothing is written", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		auditLog := filepath.Join(t.TempDir(), "audit.jsonl")
		session := urlClientGate(t, env, token, rules, root, auditLog, "2026-07-28", nil)
		path := filepath.Join(root, "denied.txt")
		args := map[string]any{"path": path, "content": gatetest.Written}
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "write_file", Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		e := theElicitation(t, res)
		decide(t, askOf(t, env, e), "deny")
		refused, err := retry(ctx, session, "write_file", args, res.RequestState, e.ElicitationID)
		if err != nil || !isRefusal(refused) {
			t.Fatalf("after the deny: %v %+v, want the refusal", err, refused)
		}
		if _, err := os.Stat(path); err == nil {
			t.Fatal("written after a deny")
		}
		session.Close()
		gatetest.CheckAudit(t, gatetest.AuditLines(t, auditLog), map[string]any{"tool": "write_file", "caller": "claude", "approver": "ada", "phase": "refused", "decision": "deny"})
	})

	t.Run("2026-07-28: past the ask's life the call is refused and a late approve changes nothing", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		short := writeRules(t, `{"server": "filesystem", "ask_life": "3s", "tools": {"write_file": {"approval": true}}}`)
		session := urlClientGate(t, env, token, short, root, filepath.Join(t.TempDir(), "audit.jsonl"), "2026-07-28", nil)
		path := filepath.Join(root, "expired.txt")
		args := map[string]any{"path": path, "content": gatetest.Written}
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "write_file", Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		e := theElicitation(t, res)
		id := askOf(t, env, e)
		// Two holds of 2 s outlast the ask's 3 s life.
		var last *mcp.CallToolResult
		for range 3 {
			if last, err = retry(ctx, session, "write_file", args, res.RequestState, e.ElicitationID); err != nil {
				t.Fatal(err)
			}
			if !last.NeedsInput() {
				break
			}
		}
		if !isRefusal(last) {
			t.Fatalf("past the ask's life: %+v, want the refusal", last)
		}
		if r := ada.For(t).Decide(id, "approve", ""); r.Status == 200 {
			t.Errorf("ada approved an ask past its life: %s", r)
		}
		again, err := retry(ctx, session, "write_file", args, res.RequestState, e.ElicitationID)
		if err != nil || !isRefusal(again) {
			t.Fatalf("a retry after the late approve: %v %+v, want the refusal", err, again)
		}
		if _, err := os.Stat(path); err == nil {
			t.Fatal("written after the ask's life")
		}
	})

	t.Run("2025-11-25: URL mode, the call runs once after the elicitation completes", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		completed := make(chan string, 4)
		session := urlClientGate(t, env, token, rules, root, filepath.Join(t.TempDir(), "audit.jsonl"), "2025-11-25", completed)
		path := filepath.Join(root, "url-mode.txt")
		args := map[string]any{"path": path, "content": gatetest.Written}
		began := time.Now()
		_, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "write_file", Arguments: args})
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) || rpcErr.Code != mcp.CodeURLElicitationRequired {
			t.Fatalf("call: %v, want the URL elicitation required error", err)
		}
		t.Logf("time to elicitation (2025-11-25, stdio, SQLite): %s", time.Since(began).Round(time.Millisecond))
		var data struct {
			Elicitations []*mcp.ElicitParams `json:"elicitations"`
		}
		if err := json.Unmarshal(rpcErr.Data, &data); err != nil || len(data.Elicitations) != 1 || data.Elicitations[0].Mode != "url" {
			t.Fatalf("error data %s: %v", rpcErr.Data, err)
		}
		e := data.Elicitations[0]
		id := askOf(t, env, e)
		select {
		case got := <-completed:
			t.Fatalf("elicitation %s completed before anybody answered", got)
		case <-time.After(300 * time.Millisecond):
		}
		decide(t, id, "approve")
		select {
		case got := <-completed:
			if got != e.ElicitationID {
				t.Fatalf("completed %s, want %s", got, e.ElicitationID)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("no notifications/elicitation/complete within 20 s of the approve")
		}
		done, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "write_file", Arguments: args})
		if err != nil || done.IsError {
			t.Fatalf("the call again after the completion: %v %+v", err, done)
		}
		if b, _ := os.ReadFile(path); string(b) != gatetest.Written {
			t.Errorf("the file holds %q", b)
		}
		if got := waitStatusOf(t, env, id, asks.StatusDone); got != asks.StatusDone {
			t.Errorf("the ask is %s, want done", got)
		}
		// The same call once more is a new call: it asks again.
		if err := os.WriteFile(path, []byte("changed since"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err = session.CallTool(ctx, &mcp.CallToolParams{Name: "write_file", Arguments: args})
		if !errors.As(err, &rpcErr) || rpcErr.Code != mcp.CodeURLElicitationRequired || strings.Contains(string(rpcErr.Data), id) {
			t.Fatalf("the call once more: %v, want a new elicitation", err)
		}
		if b, _ := os.ReadFile(path); string(b) != "changed since" {
			t.Errorf("the call ran twice on one approve: the file holds %q", b)
		}
		// The client goes away: a 2025-11-25 call cannot come back to the
		// gate, so its open ask is withdrawn.
		if err := json.Unmarshal(rpcErr.Data, &data); err != nil || len(data.Elicitations) != 1 {
			t.Fatalf("error data %s: %v", rpcErr.Data, err)
		}
		again := askOf(t, env, data.Elicitations[0])
		session.Close()
		if got := waitStatusOf(t, env, again, asks.StatusStale); got != asks.StatusStale {
			t.Errorf("the open ask of a client that went away is %s, want stale", got)
		}
	})
}

// waitStatusOf waits up to 10 s for the ask id to reach want, and returns the
// status it has then.
func waitStatusOf(t *testing.T, env *apptest.Env, id string, want asks.Status) asks.Status {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		got, err := env.Store.GetApproval(context.Background(), env.Account.ID, id)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status == want || time.Now().After(deadline) {
			return got.Status
		}
	}
}
