package gate_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/mcp/gate"
)

// DeleteCase is the seed's delete_case input.
type DeleteCase struct {
	ID    string `json:"id"`
	Force bool   `json:"force,omitempty"`
}

// Release is a tool output whose schema the refusal object would break.
type Release struct {
	ReleaseID string `json:"release_id"`
}

// Loose is a tool output whose schema takes the refusal object.
type Loose struct {
	Error  string `json:"error,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// permissions are what each client (by its clientInfo.name) holds.
var permissions = map[string][]string{
	"alice": {"cases:delete", "cases:read", "releases:close"},
	"bob":   {"cases:read"},
}

func callerByClient(_ context.Context, req mcp.Request) gate.Caller {
	name := gate.ClientName(req)
	return gate.Caller{Name: name, Permissions: permissions[name]}
}

// fixture is a server of declared tools, what its handlers did, and the
// audit events and refusal errors it produced.
type fixture struct {
	srv      *mcp.Server
	ran      atomic.Int32 // handler runs
	mu       sync.Mutex
	events   []gate.AuditEvent
	refusals []error // GetError of every tool result, seen by outer middleware
}

func (f *fixture) audit(_ context.Context, e gate.AuditEvent) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, e)
}

func (f *fixture) lastEvent(t *testing.T) gate.AuditEvent {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.events) == 0 {
		t.Fatal("no audit event")
	}
	return f.events[len(f.events)-1]
}

func (f *fixture) lastRefusal() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.refusals) == 0 {
		return nil
	}
	return f.refusals[len(f.refusals)-1]
}

func newFixture(t *testing.T, sink gate.ApprovalFunc, timeout time.Duration) *fixture {
	t.Helper()
	f := &fixture{}
	deleteCase := func(ctx context.Context, req *mcp.CallToolRequest, in DeleteCase) (*mcp.CallToolResult, any, error) {
		f.ran.Add(1)
		if in.ID == "broken" {
			return nil, nil, errors.New("case store is down")
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "deleted " + in.ID}}}, nil, nil
	}
	listCases := func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
		f.ran.Add(1)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "42"}}}, nil, nil
	}
	closeRelease := func(ctx context.Context, req *mcp.CallToolRequest, in DeleteCase) (*mcp.CallToolResult, Release, error) {
		f.ran.Add(1)
		return nil, Release{ReleaseID: in.ID}, nil
	}
	loose := func(ctx context.Context, req *mcp.CallToolRequest, in DeleteCase) (*mcp.CallToolResult, Loose, error) {
		f.ran.Add(1)
		return nil, Loose{}, nil
	}
	srv, err := gate.NewServer(&mcp.Implementation{Name: "acme", Version: "1.0.0"}, nil,
		gate.Options{OnApproval: sink, ApprovalTimeout: timeout, Audit: f.audit, Caller: callerByClient},
		gate.Define(&mcp.Tool{Name: "delete_case", Description: "Delete a case."}, deleteCase, gate.Declaration[DeleteCase]{
			Permission: "cases:delete",
			Audit:      func(in DeleteCase) string { return "case:" + in.ID },
			// Only the destructive half of the argument space warrants a person.
			Approval: gate.When(func(in DeleteCase) bool { return in.Force }),
		}),
		gate.Define(&mcp.Tool{Name: "list_cases", Description: "List cases."}, listCases, gate.Declaration[struct{}]{Permission: "cases:read"}),
		gate.Define(&mcp.Tool{Name: "close_release", Description: "Close a release."}, closeRelease, gate.Declaration[DeleteCase]{
			Permission: "releases:close", Approval: gate.Always[DeleteCase](),
		}),
		gate.Define(&mcp.Tool{Name: "loose_output", Description: "A tool whose output takes any error object."}, loose, gate.Declaration[DeleteCase]{
			Approval: gate.Always[DeleteCase](),
		}),
	)
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if r, ok := res.(*mcp.CallToolResult); ok && r != nil && r.IsError {
				f.mu.Lock()
				f.refusals = append(f.refusals, r.GetError())
				f.mu.Unlock()
			}
			return res, err
		}
	})
	f.srv = srv
	return f
}

// connect opens a client session to srv as the client named name.
func connect(t *testing.T, srv *mcp.Server, name string) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Wait() })
	return cs
}

func text(res *mcp.CallToolResult) string {
	if len(res.Content) == 0 {
		return ""
	}
	tc, _ := res.Content[0].(*mcp.TextContent)
	if tc == nil {
		return ""
	}
	return tc.Text
}

// Sinks, one per way an answer can come back.
func approveBy(by string) gate.ApprovalFunc {
	return func(context.Context, gate.ApprovalRequest) (gate.Decision, error) { return gate.Approve(by), nil }
}

func decoded(reply string) gate.ApprovalFunc {
	return func(context.Context, gate.ApprovalRequest) (gate.Decision, error) {
		var d gate.Decision
		err := json.Unmarshal([]byte(reply), &d)
		return d, err
	}
}

func silent(ctx context.Context, _ gate.ApprovalRequest) (gate.Decision, error) {
	<-ctx.Done()
	return gate.Decision{}, ctx.Err()
}

func TestSeed002(t *testing.T) {
	const short = 150 * time.Millisecond
	lateReturned := make(chan struct{})
	tests := []struct {
		name         string
		sink         gate.ApprovalFunc
		client       string
		tool         string
		args         map[string]any
		wantRan      bool
		wantText     string // exact text content; "" skips
		wantError    bool
		wantPhase    string
		wantDecision string
		wantApprover string
		wantReason   string // prefix of the audit reason
		wantRefusal  *gate.ApprovalRefusedError
		wantMinWait  time.Duration // the audit duration covers at least this
		wantAsked    bool
		after        func(t *testing.T) // waits for a late answer before the last checks
	}{
		{
			name: "a named yes lets the call run and the audit event names caller and approver",
			sink: approveBy("carol"), client: "alice", tool: "delete_case", args: map[string]any{"id": "42", "force": true},
			wantRan: true, wantText: "deleted 42", wantPhase: "allowed", wantDecision: "allow", wantApprover: "carol", wantAsked: true,
		},
		{
			name: "the predicate lets a call it does not pick run without asking",
			sink: approveBy("carol"), client: "alice", tool: "delete_case", args: map[string]any{"id": "42"},
			wantRan: true, wantText: "deleted 42", wantPhase: "allowed", wantDecision: "allow", wantApprover: "",
		},
		{
			name: "a typed yes with an empty name is refused at run time",
			sink: approveBy(""), client: "alice", tool: "delete_case", args: map[string]any{"id": "42", "force": true},
			wantText: gate.RefusalText, wantError: true, wantPhase: "refused", wantDecision: "deny", wantReason: "anonymous_approval", wantAsked: true,
			wantRefusal: &gate.ApprovalRefusedError{Tool: "delete_case", Reason: gate.ReasonAnonymous},
		},
		{
			name: "a typed yes with a blank name is refused at run time",
			sink: approveBy("  "), client: "alice", tool: "delete_case", args: map[string]any{"id": "42", "force": true},
			wantText: gate.RefusalText, wantError: true, wantPhase: "refused", wantDecision: "deny", wantReason: "anonymous_approval", wantAsked: true,
			wantRefusal: &gate.ApprovalRefusedError{Tool: "delete_case", Reason: gate.ReasonAnonymous},
		},
		{
			name: "a typed yes naming only invisible characters is refused at run time",
			sink: approveBy("\u200b\u2060\ufeff"), client: "alice", tool: "delete_case", args: map[string]any{"id": "42", "force": true},
			wantText: gate.RefusalText, wantError: true, wantPhase: "refused", wantDecision: "deny", wantReason: "anonymous_approval", wantAsked: true,
			wantRefusal: &gate.ApprovalRefusedError{Tool: "delete_case", Reason: gate.ReasonAnonymous},
		},
		{
			name: "a yes decoded from a chat reply without by is refused",
			sink: decoded(`{"approved": true}`), client: "alice", tool: "delete_case", args: map[string]any{"id": "42", "force": true},
			wantText: gate.RefusalText, wantError: true, wantPhase: "refused", wantDecision: "deny", wantReason: "anonymous_approval", wantAsked: true,
			wantRefusal: &gate.ApprovalRefusedError{Tool: "delete_case", Reason: gate.ReasonAnonymous},
		},
		{
			name: "a yes decoded from a chat reply with by runs",
			sink: decoded(`{"approved": true, "by": "dave"}`), client: "alice", tool: "delete_case", args: map[string]any{"id": "7", "force": true},
			wantRan: true, wantText: "deleted 7", wantPhase: "allowed", wantDecision: "allow", wantApprover: "dave", wantAsked: true,
		},
		{
			name: "a no carries the person who declined and their reason",
			sink: func(context.Context, gate.ApprovalRequest) (gate.Decision, error) {
				return gate.Deny("erin", "not during the audit"), nil
			},
			client: "alice", tool: "delete_case", args: map[string]any{"id": "42", "force": true},
			wantText: gate.RefusalText, wantError: true, wantPhase: "refused", wantDecision: "deny", wantApprover: "erin", wantReason: "denied: not during the audit", wantAsked: true,
			wantRefusal: &gate.ApprovalRefusedError{Tool: "delete_case", By: "erin", Reason: gate.ReasonDenied, Detail: "not during the audit"},
		},
		{
			name: "a no with a ticket and no name is a refusal naming nobody",
			sink: decoded(`{"approved": false, "reason": "ticket appr_123"}`), client: "alice", tool: "delete_case", args: map[string]any{"id": "42", "force": true},
			wantText: gate.RefusalText, wantError: true, wantPhase: "refused", wantDecision: "deny", wantReason: "denied: ticket appr_123", wantAsked: true,
			wantRefusal: &gate.ApprovalRefusedError{Tool: "delete_case", Reason: gate.ReasonDenied, Detail: "ticket appr_123"},
		},
		{
			name: "an error from the sink refuses rather than letting the call through",
			sink: func(context.Context, gate.ApprovalRequest) (gate.Decision, error) {
				return gate.Approve("carol"), errors.New("slack is down")
			},
			client: "alice", tool: "delete_case", args: map[string]any{"id": "42", "force": true},
			wantText: gate.RefusalText, wantError: true, wantPhase: "refused", wantDecision: "deny", wantReason: "sink_error: slack is down", wantAsked: true,
			wantRefusal: &gate.ApprovalRefusedError{Tool: "delete_case", Reason: gate.ReasonSinkError, Detail: "slack is down"},
		},
		{
			name:   "a sink that panics refuses",
			sink:   func(context.Context, gate.ApprovalRequest) (gate.Decision, error) { panic("adapter bug") },
			client: "alice", tool: "delete_case", args: map[string]any{"id": "42", "force": true},
			wantText: gate.RefusalText, wantError: true, wantPhase: "refused", wantDecision: "deny", wantReason: "sink_error: OnApproval panicked", wantAsked: true,
			wantRefusal: &gate.ApprovalRefusedError{Tool: "delete_case", Reason: gate.ReasonSinkError, Detail: "OnApproval panicked: adapter bug"},
		},
		{
			name: "silence past the timeout is a refusal and the duration covers the wait",
			sink: silent, client: "alice", tool: "delete_case", args: map[string]any{"id": "42", "force": true},
			wantText: gate.RefusalText, wantError: true, wantPhase: "refused", wantDecision: "deny", wantReason: "timeout", wantAsked: true,
			wantRefusal: &gate.ApprovalRefusedError{Tool: "delete_case", Reason: gate.ReasonTimeout, Detail: "no answer within 150ms"},
			wantMinWait: short,
		},
		{
			name: "a yes after the deadline changes nothing: refused, and the handler never runs",
			sink: func(ctx context.Context, _ gate.ApprovalRequest) (gate.Decision, error) {
				defer close(lateReturned)
				<-ctx.Done()
				time.Sleep(50 * time.Millisecond)
				return gate.Approve("carol"), nil
			},
			client: "alice", tool: "delete_case", args: map[string]any{"id": "42", "force": true},
			wantText: gate.RefusalText, wantError: true, wantPhase: "refused", wantDecision: "deny", wantReason: "timeout", wantAsked: true,
			wantRefusal: &gate.ApprovalRefusedError{Tool: "delete_case", Reason: gate.ReasonTimeout, Detail: "no answer within 150ms"},
			wantMinWait: short,
			after:       func(*testing.T) { <-lateReturned; time.Sleep(20 * time.Millisecond) },
		},
		{
			name: "a tool without an approval rule needs only the permission",
			sink: approveBy("carol"), client: "bob", tool: "list_cases", args: map[string]any{},
			wantRan: true, wantText: "42", wantPhase: "allowed", wantDecision: "allow",
		},
		{
			name: "a handler error after an approval is phase error with the approver",
			sink: approveBy("carol"), client: "alice", tool: "delete_case", args: map[string]any{"id": "broken", "force": true},
			wantRan: true, wantText: "case store is down", wantError: true, wantPhase: "error", wantDecision: "allow", wantApprover: "carol", wantReason: "tool_error: case store is down", wantAsked: true,
		},
		{
			name: "arguments that do not match the schema are refused before anybody is asked",
			sink: approveBy("carol"), client: "alice", tool: "delete_case", args: map[string]any{"id": 42, "force": true},
			wantError: true, wantPhase: "refused", wantDecision: "deny", wantReason: "invalid_arguments",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var asked atomic.Int32
			var asking atomic.Pointer[gate.ApprovalRequest] // the sink may still run when the call has been answered
			sink := func(ctx context.Context, req gate.ApprovalRequest) (gate.Decision, error) {
				asking.Store(&req)
				asked.Add(1)
				return tc.sink(ctx, req)
			}
			f := newFixture(t, sink, short)
			cs := connect(t, f.srv, tc.client)
			arrived := time.Now()
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
			if err != nil {
				t.Fatalf("call: %v", err)
			}
			if tc.after != nil {
				tc.after(t)
			}
			if got := f.ran.Load() == 1; got != tc.wantRan {
				t.Errorf("handler ran = %t, want %t", got, tc.wantRan)
			}
			if res.IsError != tc.wantError {
				t.Errorf("isError = %t, want %t (%s)", res.IsError, tc.wantError, text(res))
			}
			if tc.wantText != "" && text(res) != tc.wantText {
				t.Errorf("text = %q, want %q", text(res), tc.wantText)
			}
			if got := asked.Load() == 1; got != tc.wantAsked {
				t.Errorf("asked = %t, want %t", got, tc.wantAsked)
			}
			if tc.wantAsked {
				request := asking.Load()
				if request == nil {
					t.Fatal("asked, and no request was kept")
				}
				if request.Caller != tc.client || request.Tool != tc.tool || request.Server != "acme" || request.Label != "case:"+tc.args["id"].(string) {
					t.Errorf("request = %+v, want caller %s, tool %s, server acme, its label", request, tc.client, tc.tool)
				}
				var sent map[string]any
				if err := json.Unmarshal(request.Arguments, &sent); err != nil || sent["id"] != tc.args["id"] {
					t.Errorf("request arguments = %s, want the call's", request.Arguments)
				}
				if d := request.Deadline.Sub(arrived); d < short || d > short+time.Second {
					t.Errorf("deadline is %s after arrival, want %s", d, short)
				}
			}
			ev := f.lastEvent(t)
			if ev.Tool != tc.tool || ev.Caller != tc.client || ev.Phase != tc.wantPhase || ev.Decision != tc.wantDecision || ev.Approver != tc.wantApprover {
				t.Errorf("audit event = %+v, want tool %s caller %s phase %s decision %s approver %q", ev, tc.tool, tc.client, tc.wantPhase, tc.wantDecision, tc.wantApprover)
			}
			if !strings.HasPrefix(ev.Reason, tc.wantReason) || (tc.wantReason == "") != (ev.Reason == "") {
				t.Errorf("audit reason = %q, want %q", ev.Reason, tc.wantReason)
			}
			if id, ok := tc.args["id"].(string); ok && tc.tool == "delete_case" && ev.Label != "case:"+id {
				t.Errorf("audit label = %q", ev.Label)
			}
			if time.Duration(ev.DurationMs)*time.Millisecond < tc.wantMinWait {
				t.Errorf("durationMs = %d, want at least the wait, %s", ev.DurationMs, tc.wantMinWait)
			}
			if ev.Time.Before(arrived.Add(-time.Second)) || ev.Time.After(time.Now()) {
				t.Errorf("audit time = %s, want the call's arrival", ev.Time)
			}
			var refused *gate.ApprovalRefusedError
			got := errors.As(f.lastRefusal(), &refused)
			if got != (tc.wantRefusal != nil) {
				t.Fatalf("ApprovalRefusedError found = %t, want %t (%v)", got, tc.wantRefusal != nil, f.lastRefusal())
			}
			if tc.wantRefusal != nil && *refused != *tc.wantRefusal {
				t.Errorf("refusal = %+v, want %+v", *refused, *tc.wantRefusal)
			}
			if tc.wantText == gate.RefusalText {
				if b, _ := json.Marshal(res.StructuredContent); string(b) != gate.RefusalText {
					t.Errorf("structured content = %s, want the refusal object", b)
				}
			}
		})
	}
}

func TestRefusalStructuredContentRespectsOutputSchema(t *testing.T) {
	tests := []struct {
		name, tool     string
		wantStructured bool
	}{
		{"a tool without an output schema gets the refusal object as structured content", "delete_case", true},
		{"a tool whose output schema takes the object gets it as structured content", "loose_output", true},
		{"a tool whose output schema it would break gets no structured content", "close_release", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, approveBy(""), time.Second)
			cs := connect(t, f.srv, "alice")
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tc.tool, Arguments: map[string]any{"id": "1", "force": true}})
			if err != nil {
				t.Fatal(err)
			}
			if !res.IsError || text(res) != gate.RefusalText {
				t.Fatalf("result = %v %q, want the refusal", res.IsError, text(res))
			}
			b, _ := json.Marshal(res.StructuredContent)
			if got := res.StructuredContent != nil; got != tc.wantStructured {
				t.Fatalf("structured content = %s, want present %t", b, tc.wantStructured)
			}
			if tc.wantStructured && string(b) != gate.RefusalText {
				t.Errorf("structured content = %s, want %s", b, gate.RefusalText)
			}
			if f.ran.Load() != 0 {
				t.Error("the handler ran")
			}
		})
	}
}

func TestToolsList(t *testing.T) {
	tests := []struct {
		client string
		want   []string
	}{
		{"alice", []string{"close_release", "delete_case", "list_cases", "loose_output"}},
		{"bob", []string{"list_cases", "loose_output"}},
		{"mallory", []string{"loose_output"}},
	}
	for _, tc := range tests {
		t.Run(tc.client+" sees gated tools she may use and none she may not", func(t *testing.T) {
			f := newFixture(t, approveBy("carol"), time.Second)
			cs := connect(t, f.srv, tc.client)
			res, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range res.Tools {
				names = append(names, tool.Name)
			}
			slices.Sort(names)
			if !slices.Equal(names, tc.want) {
				t.Errorf("tools = %v, want %v", names, tc.want)
			}
		})
	}
}

// tracker records what the gate told it, with how many times the handler
// had run by then.
type tracker struct {
	startErr error
	ran      *atomic.Int32
	log      *[]string
}

func (tr tracker) Started(context.Context) error {
	*tr.log = append(*tr.log, fmt.Sprintf("started (handler ran %d)", tr.ran.Load()))
	return tr.startErr
}

func (tr tracker) Finished(_ context.Context, err error) {
	state := "done"
	if err != nil {
		state = "failed: " + err.Error()
	}
	*tr.log = append(*tr.log, fmt.Sprintf("%s (handler ran %d)", state, tr.ran.Load()))
}

func TestTrackerHearsTheCallStartAndEnd(t *testing.T) {
	tests := []struct {
		name     string
		id       string
		startErr error
		want     []string
	}{
		{"started before the handler runs, done after", "42", nil, []string{"started (handler ran 0)", "done (handler ran 1)"}},
		{"failed with the tool's error text", "broken", nil, []string{"started (handler ran 0)", "failed: case store is down (handler ran 1)"}},
		{"a start the sink refuses stops the call", "42", errors.New("the ask went stale"), []string{"started (handler ran 0)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var log []string
			var f *fixture
			sink := func(context.Context, gate.ApprovalRequest) (gate.Decision, error) {
				return gate.Approve("carol").WithTracker(tracker{startErr: tc.startErr, ran: &f.ran, log: &log}), nil
			}
			f = newFixture(t, sink, time.Second)
			cs := connect(t, f.srv, "alice")
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "delete_case", Arguments: map[string]any{"id": tc.id, "force": true}})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(log, tc.want) {
				t.Errorf("log = %q, want %q", log, tc.want)
			}
			if tc.startErr != nil {
				if text(res) != gate.RefusalText || f.ran.Load() != 0 {
					t.Errorf("text = %q, handler ran %d; want the refusal and no run", text(res), f.ran.Load())
				}
				if ev := f.lastEvent(t); ev.Phase != "refused" || ev.Reason != "start_refused: the ask went stale" {
					t.Errorf("audit event = %+v", ev)
				}
			}
		})
	}
}

// A predicate rule with no predicate would ask for nothing while the tool
// declares an approval: it panics where the tool is declared, at boot.
func TestAWhenRuleWithoutAPredicateFailsAtItsDeclaration(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "nil predicate") {
			t.Fatalf("gate.When(nil) recovered %v, want a panic naming the nil predicate", r)
		}
	}()
	gate.When[DeleteCase](nil)
}

func TestConstructionFailsWithNowhereToAsk(t *testing.T) {
	noop := func(ctx context.Context, req *mcp.CallToolRequest, in DeleteCase) (*mcp.CallToolResult, any, error) {
		return nil, nil, nil
	}
	tests := []struct {
		name    string
		opts    gate.Options
		rule    gate.Rule[DeleteCase]
		wantErr string
	}{
		{"an approval rule with no sink fails", gate.Options{}, gate.Always[DeleteCase](), "delete_case need approval but no OnApproval sink is wired"},
		{"a predicate with no sink fails", gate.Options{}, gate.When(func(in DeleteCase) bool { return in.Force }), "no OnApproval sink"},
		{"no rule needs no sink", gate.Options{}, gate.Rule[DeleteCase]{}, ""},
		{"a negative timeout fails", gate.Options{OnApproval: approveBy("carol"), ApprovalTimeout: -time.Second}, gate.Always[DeleteCase](), "negative"},
		{"a negative ask life fails", gate.Options{OnApproval: approveBy("carol"), AskLife: -time.Minute}, gate.Always[DeleteCase](), "AskLife -1m0s is negative"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := gate.NewServer(&mcp.Implementation{Name: "acme", Version: "1"}, nil, tc.opts,
				gate.Define(&mcp.Tool{Name: "delete_case"}, noop, gate.Declaration[DeleteCase]{Permission: "cases:delete", Approval: tc.rule}))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("NewServer: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("NewServer error = %v, want one saying %q", err, tc.wantErr)
			}
		})
	}
}
