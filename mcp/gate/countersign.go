package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/ask"
	"github.com/countersign/countersign/mcp/bearer"
)

// CountersignOptions say how the Countersign sink reaches the service.
type CountersignOptions struct {
	// URL is the service's base URL, as people open it; the sink talks to
	// its /mcp endpoint.
	URL string
	// Token is an agent token with the approvals read and write scopes.
	Token string
	// Server names the gated server on every ask ("filesystem"); "" uses
	// the gate's server name.
	Server string
	// AskedOf is the subject of the person to ask; "" asks the account's
	// owners and admins.
	AskedOf string
	// HTTPClient sends the requests; nil means http.DefaultClient. The token
	// is added to every request.
	HTTPClient *http.Client
}

// Countersign is a sink that asks a person through a Countersign service:
// each call becomes an ask of kind tool_call, whose payload (server, tool,
// arguments, and expires_at, when the gate stops waiting) is frozen and
// hashed, so the person signs the exact arguments and the ask lives as long
// as the caller waits.
// The answer arrives through the ask's resource subscription; the sink
// returns the decider's subject as By with the signed proof. A call not
// answered in time has its ask withdrawn, and an approved call reports
// started, then done or failed, on the ask's timeline.
type Countersign struct {
	opts    CountersignOptions
	session *mcp.ClientSession

	mu      sync.Mutex
	waiters map[string][]chan struct{} // approval resource URI → woken on change
}

const approvalURIPrefix = "countersign://approvals/"

// NewCountersign connects to the service and checks that it answers and
// that the token may file asks and read their answers, so that a gate
// wired to it fails at start, never at the first destructive call.
func NewCountersign(ctx context.Context, opts CountersignOptions) (*Countersign, error) {
	if opts.URL == "" {
		return nil, errors.New("countersign sink: no service URL")
	}
	if opts.Token == "" {
		return nil, errors.New("countersign sink: no agent token")
	}
	base := opts.HTTPClient
	if base == nil {
		base = http.DefaultClient
	}
	transport := base.Transport
	if transport == nil {
		transport = http.DefaultTransport
	}
	client := *base
	refusal := &tokenRefusal{next: transport}
	client.Transport = bearer.Transport{Token: opts.Token, Base: refusal}
	c := &Countersign{opts: opts, waiters: map[string][]chan struct{}{}}
	endpoint := strings.TrimRight(opts.URL, "/") + "/mcp"
	cli := mcp.NewClient(&mcp.Implementation{Name: "countersign-gate", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: c.updated,
	})
	// A session (2025-11-25): its resources/subscribe is answered once the
	// subscription holds, so the read that follows it misses no answer; the
	// SDK's 2026-07-28 Subscribe returns before the service has it.
	session, err := cli.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &client, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if reason := refusal.last(); err != nil && reason != "" {
		return nil, fmt.Errorf("countersign sink: %s refused this token: %s (%w)", endpoint, reason, err)
	}
	if err != nil {
		return nil, fmt.Errorf("countersign sink: %s does not answer with this token: %w", endpoint, err)
	}
	c.session = session
	if err := c.check(ctx); err != nil {
		session.Close()
		return nil, err
	}
	return c, nil
}

// check makes sure the token sees the tools the sink calls and may read
// approvals as resources.
func (c *Countersign) check(ctx context.Context) error {
	seen := map[string]bool{}
	for t, err := range c.session.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("countersign sink: list tools: %w", err)
		}
		seen[t.Name] = true
	}
	for _, need := range []string{"approvals_create", "approvals_get", "approvals_add_progress"} {
		if !seen[need] {
			return fmt.Errorf("countersign sink: this token may not file asks and read their answers (%s is not among its tools): it needs the scopes mcp:read, mcp:write, approvals:read and approvals:write", need)
		}
	}
	if _, err := c.session.ListResourceTemplates(ctx, nil); err != nil {
		return fmt.Errorf("countersign sink: this token may not subscribe to asks: %w", err)
	}
	return nil
}

// Close ends the sink's session.
func (c *Countersign) Close() error { return c.session.Close() }

func (c *Countersign) updated(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, w := range c.waiters[req.Params.URI] {
		select {
		case w <- struct{}{}:
		default: // a wake-up is already pending
		}
	}
}

// approval is what the sink reads of an ask.
type approval struct {
	ApprovalID string          `json:"approval_id"`
	CheckCode  string          `json:"check_code"`
	Status     string          `json:"status"`
	Decision   string          `json:"decision"`
	DecidedBy  string          `json:"decided_by"`
	Note       string          `json:"note"`
	Proof      json.RawMessage `json:"proof"`
	Payload    json.RawMessage `json:"payload"`
	// EditedPayload is the payload as the person edited it, on approve_edited.
	EditedPayload json.RawMessage `json:"edited_payload"`
	CreatedAt     time.Time       `json:"created_at"`
	ExpiresAt     time.Time       `json:"expires_at"`
}

// RequestApproval files the call as a tool_call ask and waits for the
// person's answer until ctx ends; it is an ApprovalFunc. An ask nobody waits
// for any more is withdrawn.
func (c *Countersign) RequestApproval(ctx context.Context, req ApprovalRequest) (Decision, error) {
	filed, err := c.file(ctx, req)
	if err != nil {
		return Decision{}, err
	}
	if req.Filed != nil {
		req.Filed(c.ticket(filed))
	}
	d, open, last, err := c.await(ctx, filed.ApprovalID, true)
	switch {
	case err != nil && ctx.Err() == nil:
		return Decision{}, err
	case open || ctx.Err() != nil:
		c.withdraw(ctx, filed.ApprovalID, last)
		if err == nil {
			err = ctx.Err()
		}
		return Decision{}, err
	}
	return d, nil
}

// File files the call as a tool_call ask living until req.Deadline, for a
// caller whose client opens its page; it is the DeferredSink's File.
func (c *Countersign) File(ctx context.Context, req ApprovalRequest) (Ticket, error) {
	filed, err := c.file(ctx, req)
	if err != nil {
		return Ticket{}, err
	}
	return c.ticket(filed), nil
}

// Find reads back the ask id as the ticket of req: it must be a tool_call
// ask of this service's account whose payload names exactly req's server,
// tool and arguments (their canonical hash).
func (c *Countersign) Find(ctx context.Context, id string, req ApprovalRequest) (Ticket, error) {
	if !strings.HasPrefix(id, "appr_") || strings.ContainsAny(id, "/?#") {
		return Ticket{}, fmt.Errorf("countersign sink: %q is no ask id", id)
	}
	var a approval
	if err := c.call(ctx, "approvals_get", map[string]any{"approval_id": id}, &a); err != nil {
		return Ticket{}, err
	}
	var p struct {
		ToolCall *struct {
			Server    string          `json:"server"`
			Tool      string          `json:"tool"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"tool_call"`
	}
	if err := json.Unmarshal(a.Payload, &p); err != nil || p.ToolCall == nil {
		return Ticket{}, fmt.Errorf("countersign sink: ask %s is not a tool call", id)
	}
	stored, err1 := ArgumentsHash(p.ToolCall.Arguments)
	asked, err2 := ArgumentsHash(callArguments(req.Arguments))
	if err1 != nil || err2 != nil || stored != asked || p.ToolCall.Server != c.serverOf(req) || p.ToolCall.Tool != req.Tool {
		return Ticket{}, fmt.Errorf("countersign sink: ask %s is of another call", id)
	}
	return c.ticket(a), nil
}

// Await waits until ctx ends for the ticket's ask to be decided; it is the
// DeferredSink's Await. An ask still open then is left as it is.
func (c *Countersign) Await(ctx context.Context, t Ticket) (Decision, bool, error) {
	d, open, _, err := c.await(ctx, t.ID, false)
	if err != nil && ctx.Err() != nil {
		return Decision{}, true, nil
	}
	return d, open, err
}

// Withdraw marks the ticket's ask stale if it is still open.
func (c *Countersign) Withdraw(ctx context.Context, t Ticket) { c.withdraw(ctx, t.ID, "pending") }

func (c *Countersign) ticket(a approval) Ticket {
	return Ticket{ID: a.ApprovalID, URL: strings.TrimRight(c.opts.URL, "/") + "/approvals/" + a.ApprovalID,
		CheckCode: a.CheckCode, FiledAt: a.CreatedAt, ExpiresAt: a.ExpiresAt}
}

// serverOf is the server name an ask of req names.
func (c *Countersign) serverOf(req ApprovalRequest) string {
	switch {
	case c.opts.Server != "":
		return c.opts.Server
	case req.Server != "":
		return req.Server
	}
	return "mcp"
}

// callArguments are the arguments an ask names: an empty call's are {}.
func callArguments(args json.RawMessage) json.RawMessage {
	if len(strings.TrimSpace(string(args))) == 0 || string(args) == "null" {
		return json.RawMessage("{}")
	}
	return args
}

// file files req as a tool_call ask.
func (c *Countersign) file(ctx context.Context, req ApprovalRequest) (approval, error) {
	server := c.serverOf(req)
	call := map[string]any{"server": server, "tool": req.Tool, "arguments": callArguments(req.Arguments)}
	if at, ok := askDeadline(req.Deadline, time.Now()); ok {
		call["expires_at"] = at
	}
	payload, err := json.Marshal(map[string]any{"tool_call": call})
	if err != nil {
		return approval{}, fmt.Errorf("countersign sink: payload: %w", err)
	}
	caller := req.Caller
	if caller == "" {
		caller = "A caller"
	}
	summary := caller + " calls " + req.Tool + " on " + server
	if req.Label != "" {
		summary += " (" + req.Label + ")"
	}
	summary += "; the call waits for your answer until " + req.Deadline.UTC().Format("15:04:05 MST") + ", then is refused."
	create := map[string]any{
		"kind":    "tool_call",
		"title":   clipText("Call "+req.Tool+" on "+server, 120),
		"summary": clipText(summary, 500),
		// Words every call shares: none that the always-ask classifier reads
		// as a run, a delete or the like, or a policy naming tool_call would
		// never approve a call. The tool and its arguments speak for the call.
		"approve_means": clipText("The call goes ahead once, with exactly these arguments, and "+caller+" gets its result", 300),
		"deny_means":    "The call is refused; nothing happens",
		"agent":         clipText("gate: "+server, 64),
		"payload":       json.RawMessage(payload),
	}
	if c.opts.AskedOf != "" {
		create["asked_of"] = c.opts.AskedOf
	}
	if len(req.Editable) > 0 {
		var editable []string
		for _, name := range req.Editable {
			// Only a string, number or boolean the call has: the ask refuses
			// a member its payload lacks, or a list or an object.
			if v, ok := askedArgument(req.Arguments, name); ok && !bytes.HasPrefix(v, []byte("{")) && !bytes.HasPrefix(v, []byte("[")) && string(v) != "null" {
				editable = append(editable, "/tool_call/arguments/"+strings.NewReplacer("~", "~0", "/", "~1").Replace(name))
			}
		}
		if len(editable) > 0 {
			create["editable"] = editable
		}
	}
	if req.ShownIn != "" {
		create["check_code_shown_in"] = req.ShownIn
	}
	var filed approval
	if err := c.call(ctx, "approvals_create", create, &filed); err != nil {
		return approval{}, err
	}
	// The person picks this code on the ask page before they approve: it is
	// shown where the gate runs, so that they look at both.
	slog.Info("countersign: a person is asked to approve the call", "tool", req.Tool, "server", server,
		"approval", filed.ApprovalID, "check_code", filed.CheckCode)
	return filed, nil
}

// editedArguments reads the arguments out of the tool_call payload a
// person edited.
func editedArguments(payload json.RawMessage) (json.RawMessage, error) {
	var p struct {
		ToolCall *struct {
			Arguments json.RawMessage `json:"arguments"`
		} `json:"tool_call"`
	}
	if err := json.Unmarshal(payload, &p); err != nil || p.ToolCall == nil || len(p.ToolCall.Arguments) == 0 {
		return nil, errors.New("countersign sink: an approve_edited ask without an edited tool call")
	}
	return p.ToolCall.Arguments, nil
}

// await waits until ctx ends for the ask id to be decided, through its
// resource subscription. It returns the decision, or open with the state
// last read when ctx ends first (with ctx's error). A yes decided after ctx
// ended is not taken when late says so (the caller was told no).
func (c *Countersign) await(ctx context.Context, id string, late bool) (d Decision, open bool, last string, err error) {
	a, err := c.watch(ctx, id)
	if err != nil {
		return Decision{}, true, a.Status, err
	}
	switch a.Status {
	case "approved":
		if late && ctx.Err() != nil { // decided, but after the caller was told no
			return Decision{}, true, a.Status, ctx.Err()
		}
		if a.Decision == "approve_edited" { // the call runs with the arguments as the person edited them
			edited, err := editedArguments(a.EditedPayload)
			if err != nil {
				return Decision{}, false, a.Status, err
			}
			tr := &askTracker{c: c, id: a.ApprovalID, payload: a.EditedPayload}
			return Approve(a.DecidedBy).WithArguments(edited).WithProof(a.Proof).WithTracker(tr), false, a.Status, nil
		}
		tr := &askTracker{c: c, id: a.ApprovalID, payload: a.Payload}
		return Approve(a.DecidedBy).WithProof(a.Proof).WithTracker(tr), false, a.Status, nil
	case "denied":
		if a.Decision == "reply" { // denied with a reply in place of the tool's result
			return Reply(a.DecidedBy, a.Note), false, a.Status, nil
		}
		return Deny(a.DecidedBy, a.Note), false, a.Status, nil
	case "in_progress", "done", "failed":
		return Deny("", "the ask was already acted on (its call ran, or runs, once)"), false, a.Status, nil
	default:
		return Deny("", "the ask is "+a.Status), false, a.Status, nil
	}
}

// watch reads the ask id after subscribing to its resource, and again on
// every change, until it no longer waits for a person (pending or
// question) or ctx ends; it returns the ask as last read, and an error when
// it still waits (ctx's error when ctx ended).
func (c *Countersign) watch(ctx context.Context, id string) (approval, error) {
	uri := approvalURIPrefix + id
	wake := make(chan struct{}, 1)
	c.mu.Lock()
	c.waiters[uri] = append(c.waiters[uri], wake)
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		rest := slices.DeleteFunc(c.waiters[uri], func(w chan struct{}) bool { return w == wake })
		if len(rest) == 0 {
			delete(c.waiters, uri)
		} else {
			c.waiters[uri] = rest
		}
		c.mu.Unlock()
		if len(rest) == 0 {
			uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			_ = c.session.Unsubscribe(uctx, &mcp.UnsubscribeParams{URI: uri}) // nobody waits on it here any more
		}
	}()
	a := approval{Status: "pending"}
	if err := c.session.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		return a, fmt.Errorf("countersign sink: subscribe to %s: %w", uri, err)
	}
	for {
		// Read after subscribing: an answer given before the subscription
		// took is seen here, later ones wake the loop.
		if err := c.call(ctx, "approvals_get", map[string]any{"approval_id": id}, &a); err != nil {
			return a, err
		}
		if a.Status != "pending" && a.Status != "question" {
			return a, nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return a, ctx.Err()
		}
	}
}

// Answer is an ask of any kind as it stood when a wait for it ended: what
// `countersign ask` reports.
type Answer struct {
	ID        string
	Status    string          // approved, denied, expired, stale…; pending or question when the wait ended first
	Decision  string          // what the person signed: approve, deny, option:N…
	DecidedBy string          // the person's subject
	Note      string          // the person's note, or a decision ask's chosen option
	Proof     json.RawMessage // the signed proof, as countersign verify reads it
}

// FileAsk files an ask of any kind with approvals_create's arguments as
// given, for a caller that is not a gated tool call (a shell or CI step).
func (c *Countersign) FileAsk(ctx context.Context, create map[string]any) (Ticket, error) {
	var filed approval
	if err := c.call(ctx, "approvals_create", create, &filed); err != nil {
		return Ticket{}, err
	}
	return c.ticket(filed), nil
}

// AwaitAnswer waits until ctx ends for the ask id to be answered or to end
// unanswered (expired, withdrawn); it returns the ask as last read, with an
// error when it still waits (ctx's error when ctx ended first).
func (c *Countersign) AwaitAnswer(ctx context.Context, id string) (Answer, error) {
	a, err := c.watch(ctx, id)
	return Answer{ID: id, Status: a.Status, Decision: a.Decision, DecidedBy: a.DecidedBy, Note: a.Note, Proof: a.Proof}, err
}

// askDeadline is the tool_call's expires_at for a gate that stops waiting at
// deadline: unix seconds, rounded up, and one second more, so the ask lives
// until the gate gives up and one to two seconds after (the sink withdraws it
// at the deadline, and that withdrawal, not the service's expiry, must end
// it: rounded up alone, a deadline just short of a whole second left the
// withdrawal a millisecond to win the race). The page, the inbox and the
// push's lifetime then show about the time the caller really waits. A
// deadline further than ask.MaxToolCallWait ahead, less those two seconds,
// is not sent, and the ask lives the service's usual life.
func askDeadline(deadline, now time.Time) (int64, bool) {
	if deadline.IsZero() || deadline.Sub(now) > ask.MaxToolCallWait-2*time.Second {
		return 0, false
	}
	secs := deadline.Unix()
	if deadline.After(time.Unix(secs, 0)) {
		secs++
	}
	return secs + 1, true
}

// withdraw marks an ask nobody waits for any more stale, only from the state
// last read, so an answer that landed in between is seen and withdrawn too.
func (c *Countersign) withdraw(ctx context.Context, id, last string) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	note := "withdrawn: the caller was told no (no answer in time); the call did not run"
	for range 3 {
		if last != "pending" && last != "question" && last != "approved" {
			return
		}
		err := c.call(wctx, "approvals_add_progress", map[string]any{"approval_id": id, "step": "stale", "expected_state": last, "note": note}, nil)
		if err == nil {
			return
		}
		var a approval
		if c.call(wctx, "approvals_get", map[string]any{"approval_id": id}, &a) != nil || a.Status == last {
			return
		}
		last = a.Status
	}
}

// call calls a tool of the service and decodes its structured content into out.
func (c *Countersign) call(ctx context.Context, tool string, args any, out any) error {
	res, err := c.session.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return fmt.Errorf("countersign sink: %s: %w", tool, err)
	}
	if res.IsError {
		msg := ""
		if len(res.Content) > 0 {
			if tc, ok := res.Content[0].(*mcp.TextContent); ok {
				msg = tc.Text
			}
		}
		return fmt.Errorf("countersign sink: %s refused: %s", tool, msg)
	}
	if out == nil {
		return nil
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return fmt.Errorf("countersign sink: %s result: %w", tool, err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("countersign sink: %s result: %w", tool, err)
	}
	return nil
}

// askTracker reports an approved call's start and end on its ask.
type askTracker struct {
	c       *Countersign
	id      string
	payload json.RawMessage
}

// Started reports step started with the payload as the gate sees it: the
// exact payload approved, so the ask moves to in_progress. It is the claim
// of the approval: only from approved (a compare-and-set on the service), so
// of two retries of one approved call only one runs.
func (t *askTracker) Started(ctx context.Context) error {
	return t.c.call(ctx, "approvals_add_progress", map[string]any{"approval_id": t.id, "step": "started", "observed": t.payload, "expected_state": "approved"}, nil)
}

// Finished reports done, or failed with the tool's error text.
func (t *askTracker) Finished(ctx context.Context, callErr error) {
	args := map[string]any{"approval_id": t.id, "step": "done"}
	if callErr != nil {
		args["step"], args["note"] = "failed", clipText(callErr.Error(), 500)
	}
	fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_ = t.c.call(fctx, "approvals_add_progress", args, nil) // the call is over; the timeline misses one step at worst
}

// Withdraw marks an approved ask stale when the gate refused its yes after all.
func (t *askTracker) Withdraw(ctx context.Context) { t.c.withdraw(ctx, t.id, "approved") }

// clipText cuts s to at most n runes.
func clipText(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// askedArgument reads the argument name of a call, and whether the call
// has it.
func askedArgument(args json.RawMessage, name string) (json.RawMessage, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil {
		return nil, false
	}
	v, ok := m[name]
	return bytes.TrimSpace(v), ok
}
