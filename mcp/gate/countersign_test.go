package gate_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/mcp/gate"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/people"
)

// service is a running Countersign with an owner, ada, signed in with a
// passkey, and an agent token for the gate.
type service struct {
	env   *apptest.Env
	ada   *apptest.Browser
	token string
}

func startService(t *testing.T, db apptest.Database) *service {
	t.Helper()
	env := apptest.StartWeb(t, db, nil)
	_, token := env.Agent(env.Account.ID, "gate")
	return &service{env: env, ada: env.Owner("ada"), token: token}
}

// openAsk waits for the one open ask and returns it.
func (s *service) openAsk(t *testing.T) asks.Approval {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		list, _, err := s.env.Store.ListApprovals(context.Background(), s.env.Account.ID, asks.ListFilter{Status: "open"})
		if err != nil {
			t.Fatal(err)
		}
		if len(list) == 1 {
			return list[0]
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no ask was filed")
	return asks.Approval{}
}

func (s *service) steps(t *testing.T, id string) []string {
	t.Helper()
	events, err := s.env.Store.Timeline(context.Background(), s.env.Account.ID, id)
	if err != nil {
		t.Fatal(err)
	}
	var steps []string
	for _, e := range events {
		steps = append(steps, e.Step)
	}
	return steps
}

func TestTheCountersignSink(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := startService(t, db)
		sink, err := gate.NewCountersign(context.Background(), gate.CountersignOptions{URL: s.env.URL, Token: s.token, Server: "filesystem"})
		if err != nil {
			t.Fatalf("NewCountersign: %v", err)
		}
		t.Cleanup(func() { sink.Close() })
		tests := []struct {
			name        string
			path        string
			answer      string // approve, deny, or "" for silence
			timeout     time.Duration
			wantText    string
			wantWritten int32
			wantStatus  asks.Status
			wantSteps   []string // after created
			// orExpired: the ask may end expired instead. Its life ends at the
			// gate's deadline rounded up to the second, so on a loaded
			// machine its expiry can land before the withdrawal; either
			// closes it, and the call never runs.
			orExpired   bool
			wantEvent   gate.AuditEvent
			wantRefusal *gate.ApprovalRefusedError
		}{
			{
				name: "the person approves: the call runs, the ask says started then done, the audit names both",
				path: "/srv/a.txt", answer: "approve", timeout: 30 * time.Second,
				wantText: "wrote /srv/a.txt", wantWritten: 1, wantStatus: asks.StatusDone,
				wantSteps: []string{"approved", "started", "done"},
				wantEvent: gate.AuditEvent{Tool: "write_file", Caller: "alice", Approver: "ada", Phase: "allowed", Decision: "allow"},
			},
			{
				name: "the call fails after the approve: the ask says failed with the tool's error",
				path: "/broken", answer: "approve", timeout: 30 * time.Second,
				wantText: "disk full", wantWritten: 1, wantStatus: asks.StatusFailed,
				wantSteps: []string{"approved", "started", "failed"},
				wantEvent: gate.AuditEvent{Tool: "write_file", Caller: "alice", Approver: "ada", Phase: "error", Decision: "allow", Reason: "tool_error: disk full"},
			},
			{
				name: "the person denies: refused, nothing runs, the refusal names her",
				path: "/srv/b.txt", answer: "deny", timeout: 30 * time.Second,
				wantText: gate.RefusalText, wantStatus: asks.StatusDenied, wantSteps: []string{"denied"},
				wantEvent:   gate.AuditEvent{Tool: "write_file", Caller: "alice", Approver: "ada", Phase: "refused", Decision: "deny", Reason: "denied"},
				wantRefusal: &gate.ApprovalRefusedError{Tool: "write_file", By: "ada", Reason: gate.ReasonDenied},
			},
			{
				name: "silence: refused at the timeout and the ask is withdrawn",
				path: "/srv/c.txt", timeout: 1500 * time.Millisecond,
				wantText: gate.RefusalText, wantStatus: asks.StatusStale, wantSteps: []string{"stale"}, orExpired: true,
				wantEvent:   gate.AuditEvent{Tool: "write_file", Caller: "alice", Phase: "refused", Decision: "deny", Reason: "timeout: no answer within 1.5s"},
				wantRefusal: &gate.ApprovalRefusedError{Tool: "write_file", Reason: gate.ReasonTimeout, Detail: "no answer within 1.5s"},
			},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				var written atomic.Int32
				srv := mcp.NewServer(&mcp.Implementation{Name: "filesystem", Version: "1"}, nil)
				mcp.AddTool(srv, &mcp.Tool{Name: "write_file"}, func(ctx context.Context, req *mcp.CallToolRequest, in writeFile) (*mcp.CallToolResult, any, error) {
					written.Add(1)
					if in.Path == "/broken" {
						return nil, nil, errors.New("disk full")
					}
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "wrote " + in.Path}}}, nil, nil
				})
				var mu sync.Mutex
				var events []gate.AuditEvent
				var refusal error
				var decision gate.Decision
				err := gate.Gate(context.Background(), srv, gate.Options{
					Server: "filesystem", ApprovalTimeout: tc.timeout,
					OnApproval: func(ctx context.Context, req gate.ApprovalRequest) (gate.Decision, error) {
						d, err := sink.RequestApproval(ctx, req)
						mu.Lock()
						decision = d
						mu.Unlock()
						return d, err
					},
					Audit:  func(_ context.Context, e gate.AuditEvent) { mu.Lock(); events = append(events, e); mu.Unlock() },
					Caller: func(context.Context, mcp.Request) gate.Caller { return gate.Caller{Name: "alice"} },
				}, gate.Rules{Approval: map[string]gate.Rule[gate.Args]{"write_file": gate.Always[gate.Args]()}})
				if err != nil {
					t.Fatal(err)
				}
				srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
					return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
						res, err := next(ctx, method, req)
						if r, ok := res.(*mcp.CallToolResult); ok {
							mu.Lock()
							refusal = r.GetError()
							mu.Unlock()
						}
						return res, err
					}
				})
				cs := connect(t, srv, "alice")
				type result struct {
					res *mcp.CallToolResult
					err error
				}
				done := make(chan result, 1)
				go func() {
					res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": tc.path, "content": "x"}})
					done <- result{res, err}
				}()
				a := s.openAsk(t)
				if a.Kind != "tool_call" || !strings.Contains(a.Payload, `"tool":"write_file"`) || !strings.Contains(a.Payload, `"path":"`+tc.path+`"`) || !strings.Contains(a.Payload, `"server":"filesystem"`) {
					t.Errorf("filed %s %s, want a tool_call of write_file on filesystem with the call's arguments", a.Kind, a.Payload)
				}
				if tc.answer != "" {
					if r := s.ada.Decide(a.ID, tc.answer, ""); r.Status != http.StatusOK {
						t.Fatalf("ada answers %s: %s", tc.answer, r)
					}
				}
				r := <-done
				if r.err != nil {
					t.Fatal(r.err)
				}
				if text(r.res) != tc.wantText || written.Load() != tc.wantWritten {
					t.Errorf("result %q, written %d; want %q, %d", text(r.res), written.Load(), tc.wantText, tc.wantWritten)
				}
				mu.Lock()
				defer mu.Unlock()
				// The caller is told no at the deadline; the withdrawal follows.
				var got *asks.Approval
				for wait := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
					if got, err = s.env.Store.GetApproval(context.Background(), s.env.Account.ID, a.ID); err != nil {
						t.Fatal(err)
					}
					if got.Status == tc.wantStatus || (tc.orExpired && got.Status == asks.StatusExpired) || time.Now().After(wait) {
						break
					}
				}
				wantStatus, wantSteps := tc.wantStatus, tc.wantSteps
				if tc.orExpired && got.Status == asks.StatusExpired {
					wantStatus, wantSteps = asks.StatusExpired, []string{"expired"}
				}
				if got.Status != wantStatus {
					t.Errorf("the ask is %s, want %s", got.Status, wantStatus)
				}
				if steps := s.steps(t, a.ID); !slices.Equal(steps[1:], wantSteps) {
					t.Errorf("timeline = %v, want created then %v", steps, wantSteps)
				}
				if len(events) != 1 {
					t.Fatalf("%d audit events, want 1", len(events))
				}
				ev := events[0]
				if ev.Tool != tc.wantEvent.Tool || ev.Caller != tc.wantEvent.Caller || ev.Approver != tc.wantEvent.Approver ||
					ev.Phase != tc.wantEvent.Phase || ev.Decision != tc.wantEvent.Decision || !strings.HasPrefix(ev.Reason, tc.wantEvent.Reason) {
					t.Errorf("audit event = %+v, want %+v", ev, tc.wantEvent)
				}
				if tc.answer == "" {
					// An approve after the timeout changes nothing: the ask is withdrawn.
					if r := s.ada.Decide(a.ID, "approve", ""); r.Status == http.StatusOK {
						t.Errorf("ada approved the withdrawn ask: %s", r)
					}
					if written.Load() != 0 {
						t.Error("the call ran after a late approve")
					}
				}
				if tc.answer == "approve" && (decision.By() != "ada" || len(decision.Proof()) == 0) {
					t.Errorf("decision by %q with proof %s, want ada and her signed proof", decision.By(), decision.Proof())
				}
				var refused *gate.ApprovalRefusedError
				if errors.As(refusal, &refused) != (tc.wantRefusal != nil) {
					t.Fatalf("refusal = %v, want %v", refusal, tc.wantRefusal)
				}
				if tc.wantRefusal != nil && (refused.Tool != tc.wantRefusal.Tool || refused.By != tc.wantRefusal.By || refused.Reason != tc.wantRefusal.Reason) {
					t.Errorf("refusal = %+v, want %+v", *refused, *tc.wantRefusal)
				}
			})
		}
	})
}

func TestNewCountersignFailsAtStart(t *testing.T) {
	s := startService(t, apptest.SQLite)
	_, readOnly := s.env.Agent(s.env.Account.ID, "reader", people.ScopeMCPRead, people.ScopeApprovalsRead)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	unreachable := "http://" + closed.Addr().String()
	closed.Close()
	tests := []struct {
		name, url, token, wantErr string
	}{
		{"a server that does not answer", unreachable, s.token, "does not answer"},
		{"a token the server refuses, with its reason", s.env.URL, "cs_not_a_token", "refused this token: the token is not an agent token of this service"},
		{"a token that may not file asks", s.env.URL, readOnly, "may not file asks"},
		{"no token", s.env.URL, "", "no agent token"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			c, err := gate.NewCountersign(ctx, gate.CountersignOptions{URL: tc.url, Token: tc.token})
			if err == nil {
				c.Close()
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("NewCountersign = %v, want an error saying %q", err, tc.wantErr)
			}
		})
	}
}

// The sink's own words (what approving and denying mean) are what any call
// of any tool says; they must not read as a run, a delete or anything else
// that keeps asking, or a policy naming tool_call would never approve one.
func TestAPolicyNamingToolCallsApprovesTheSinksAsk(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := startService(t, db)
		ctx := context.Background()
		agent := s.env.Connect(s.token)
		req := agent.OK("approvals_request_auto_approve", map[string]any{
			"until": time.Now().Add(2 * time.Hour).UTC().Format(time.RFC3339), "scope": map[string]any{"ask_kinds": []string{"tool_call"}}})
		if r := s.ada.Decide(req["approval_id"].(string), "approve", ""); r.Status != http.StatusOK {
			t.Fatalf("ada turns the policy on: %s", r)
		}
		sink, err := gate.NewCountersign(ctx, gate.CountersignOptions{URL: s.env.URL, Token: s.token, Server: "filesystem"})
		if err != nil {
			t.Fatalf("NewCountersign: %v", err)
		}
		t.Cleanup(func() { sink.Close() })
		// Nobody answers: only the policy can approve it before the deadline.
		deadline := time.Now().Add(20 * time.Second)
		wait, cancel := context.WithDeadline(ctx, deadline)
		defer cancel()
		d, err := sink.RequestApproval(wait, gate.ApprovalRequest{Caller: "alice", Tool: "write_file",
			Arguments: []byte(`{"path":"/srv/notes.txt","content":"hi"}`), Deadline: deadline})
		if err != nil || !d.Approved() || d.By() != "ada" {
			t.Fatalf("the sink's ask under a tool_call policy = approved %t by %q (%v), want approved by ada's policy", d.Approved(), d.By(), err)
		}
		list, _, err := s.env.Store.ListApprovals(ctx, s.env.Account.ID, asks.ListFilter{Kind: "tool_call"})
		if err != nil || len(list) != 1 {
			t.Fatalf("%d tool_call asks (%v), want 1", len(list), err)
		}
		if steps := s.steps(t, list[0].ID); !slices.Contains(steps, "auto_approved") || slices.Contains(steps, "policy_skipped") {
			t.Errorf("the ask's timeline = %v, want it auto_approved, never skipped", steps)
		}
	})
}
