package browsertest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
)

// waitArgs are approvals_create's arguments for a review ask, with wait: true.
func waitArgs(title string) map[string]any {
	return map[string]any{"kind": "review", "title": title, "approve_means": "I go ahead", "deny_means": "I stop",
		"payload": map[string]any{"review": map[string]any{"url": "https://example.com/release"}}, "wait": true}
}

// urlHost connects a go-sdk host that takes URL elicitation, for revision;
// it calls again by hand, as a host does once the person opened the page.
func (s *service) urlHost(t *testing.T, token, revision string, completed chan<- string) *sdk.ClientSession {
	t.Helper()
	client := sdk.NewClient(&sdk.Implementation{Name: "host", Version: "1"}, &sdk.ClientOptions{
		Capabilities:   &sdk.ClientCapabilities{Elicitation: &sdk.ElicitationCapabilities{URL: &sdk.URLElicitationCapabilities{}}},
		MultiRoundTrip: &sdk.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return &sdk.ElicitResult{Action: "accept"}, nil
		},
		ElicitationCompleteHandler: func(_ context.Context, r *sdk.ElicitationCompleteNotificationRequest) {
			if completed != nil {
				completed <- r.Params.ElicitationID
			}
		},
	})
	session, err := client.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: s.env.URL + "/mcp", HTTPClient: apptest.BearerClient(token), MaxRetries: -1},
		&sdk.ClientSessionOptions{ProtocolVersion: revision})
	if err != nil {
		t.Fatalf("connect (%s): %v", revision, err)
	}
	t.Cleanup(func() { session.Close() })
	return session
}

// approveFromTheLink is the person opening the elicitation's link in
// Chromium and approving with the passkey; it returns the ask's id.
func (s *service) approveFromTheLink(link, title string) string {
	s.t.Helper()
	id, ok := strings.CutPrefix(link, s.env.URL+"/approvals/")
	if !ok || id == "" {
		s.t.Fatalf("the elicitation's URL %q is not an ask page of %s", link, s.env.URL)
	}
	p := s.page
	p.Go("/approvals/" + id)
	p.WaitVisible("[data-testid=status]")
	if got := p.Text("h1"); !strings.Contains(got, title) {
		p.Fatalf("the page the elicitation opens is titled %q, want %q", got, title)
	}
	s.answer(id, "[data-testid=approve]")
	s.checkDecided("approved", "Approved", "ada")
	return id
}

// approvedWithProof checks an answered ask from approvals_create: approved by
// ada, with a proof countersign verify takes.
func (s *service) approvedWithProof(got map[string]any, id string) {
	s.t.Helper()
	if got["approval_id"] != id || got["status"] != "approved" || got["decided_by"] != "ada" {
		s.t.Fatalf("approvals_create returned %v, want the ask %s approved by ada", got, id)
	}
	s.checkProof(got["proof"], id, got["payload_sha256"].(string), "approve", "ada")
}

func structuredOf(t *testing.T, res *sdk.CallToolResult) map[string]any {
	t.Helper()
	if res == nil || res.IsError || res.NeedsInput() {
		t.Fatalf("want the answered ask, got %+v", res)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// approvals_create with wait: true from hosts that take URL elicitation:
// the host is sent to the ask's page at once, the person approves there in
// Chromium with the passkey, and the host's call gets the approved ask with
// a proof that verifies: the go-sdk on 2026-07-28 (input_required, then the
// call again with the request state) and on 2025-11-25 (the URL elicitation
// required error, notifications/elicitation/complete, the call again), and
// the TypeScript SDK, whose newest revision is 2025-11-25.
func TestCreateWithWaitReturnsTheAskApprovedInChromium(t *testing.T) {
	s := start(t, apptest.SQLite)
	s.signUp("ada", core.RoleOwner)
	_, token := s.env.Agent(s.env.Account.ID, "host")

	t.Run("go-sdk, 2026-07-28", func(t *testing.T) {
		s := s.For(t)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		session := s.urlHost(t, token, "2026-07-28", nil)
		args := waitArgs("Ship release 7")
		res, err := session.CallTool(ctx, &sdk.CallToolParams{Name: "approvals_create", Arguments: args})
		if err != nil || !res.NeedsInput() {
			t.Fatalf("approvals_create = %+v (%v), want input_required", res, err)
		}
		e, _ := res.InputRequests[res.RequestState].(*sdk.ElicitParams)
		if e == nil || e.Mode != "url" {
			t.Fatalf("no URL elicitation under the request state: %+v", res.InputRequests)
		}
		id := s.approveFromTheLink(e.URL, "Ship release 7")
		done, err := session.CallTool(ctx, &sdk.CallToolParams{Name: "approvals_create", Arguments: args, RequestState: res.RequestState,
			InputResponses: sdk.InputResponseMap{e.ElicitationID: &sdk.ElicitResult{Action: "accept"}}})
		if err != nil {
			t.Fatal(err)
		}
		s.approvedWithProof(structuredOf(t, done), id)
	})

	t.Run("go-sdk, 2025-11-25", func(t *testing.T) {
		s := s.For(t)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		completed := make(chan string, 2)
		session := s.urlHost(t, token, "2025-11-25", completed)
		args := waitArgs("Ship release 8")
		_, err := session.CallTool(ctx, &sdk.CallToolParams{Name: "approvals_create", Arguments: args})
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) || rpcErr.Code != sdk.CodeURLElicitationRequired {
			t.Fatalf("approvals_create: %v, want the URL elicitation required error", err)
		}
		var data struct {
			Elicitations []*sdk.ElicitParams `json:"elicitations"`
		}
		if err := json.Unmarshal(rpcErr.Data, &data); err != nil || len(data.Elicitations) != 1 {
			t.Fatalf("error data %s: %v", rpcErr.Data, err)
		}
		id := s.approveFromTheLink(data.Elicitations[0].URL, "Ship release 8")
		select {
		case got := <-completed:
			if got != id {
				t.Fatalf("elicitation %s completed, want %s", got, id)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("no notifications/elicitation/complete within 30 s of the approve")
		}
		done, err := session.CallTool(ctx, &sdk.CallToolParams{Name: "approvals_create", Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		s.approvedWithProof(structuredOf(t, done), id)
	})

	t.Run("TypeScript SDK, 2025-11-25", func(t *testing.T) {
		s := s.For(t)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "node", filepath.Join("..", "web", "test", "mcp-sdk-wait.mjs"), s.env.URL+"/mcp", token, "Ship release 9")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatalf("node: %v", err)
		}
		lines := bufio.NewScanner(out)
		lines.Buffer(nil, 1<<20)
		next := func(v any) {
			t.Helper()
			if !lines.Scan() {
				_ = cmd.Wait()
				t.Fatalf("mcp-sdk-wait.mjs printed nothing more: %s", stderr.String())
			}
			if err := json.Unmarshal(lines.Bytes(), v); err != nil {
				t.Fatalf("mcp-sdk-wait.mjs printed %q: %v", lines.Text(), err)
			}
		}
		var first struct {
			Elicitation sdk.ElicitParams `json:"elicitation"`
		}
		next(&first)
		id := s.approveFromTheLink(first.Elicitation.URL, "Ship release 9")
		var second struct {
			Ask map[string]any `json:"ask"`
		}
		next(&second)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("mcp-sdk-wait.mjs: %v: %s", err, stderr.String())
		}
		s.approvedWithProof(second.Ask, id)
	})
}
