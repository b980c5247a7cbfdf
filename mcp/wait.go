package mcp

import (
	"context"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/ask"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/people"
)

// approvals_create with wait: true files the ask and answers with it once a
// person has answered, as the gate does for a tool call:
//
//   - A client that declared URL elicitation is sent to the ask's page at
//     once, and holds no connection while the person decides; the ask waits
//     as long as it lives. On 2026-07-28 the answer is an input_required
//     result whose request state is the ask's id; the client calls again
//     with it, and gets the ask once it is answered (a call while it is open
//     is held plainWait at most, then answered with the same elicitation; a
//     call whose host declined the elicitation gets the ask as it stands).
//     On 2025-11-25 the answer is the URLElicitationRequired error (-32042);
//     once the ask is answered or ends, the session hears
//     notifications/elicitation/complete, and the same call again gets the
//     ask.
//   - Any other client is held plainWait at most and gets the ask as it then
//     stands: answered, or still pending (then it subscribes to the ask, or
//     polls approvals_get).
//
// An ask a policy approves as it is filed comes back at once, to any client.
//
// A call that comes back is matched to its ask by what only it can know: on
// 2026-07-28 the request state names an ask this agent filed with exactly
// these kind and payload; on 2025-11-25 the same session sends the same
// arguments. Anything else is a new call, which files a new ask.

// plainWait is how long a call with wait: true is held for an answer.
const plainWait = 45 * time.Second

// answered says whether an ask no longer waits for a person: anything but
// pending (a question waits for its agent).
func answered(a *asks.Approval) bool { return a.Status != asks.StatusPending }

// answer is a tool's reply that is not its typed output: an input_required
// result or a protocol error. A handler returns it as its error.
type answer struct {
	result *sdk.CallToolResult
	err    error
}

func (a *answer) Error() string { return "the tool answers outside its output" }

// askWaiters wakes the calls that wait for an ask whenever it changes.
type askWaiters struct {
	mu    sync.Mutex
	byAsk map[string]map[chan struct{}]struct{}
}

// add returns a channel that is told of the ask's next change, and the
// function that stops listening.
func (w *askWaiters) add(id string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.byAsk == nil {
		w.byAsk = map[string]map[chan struct{}]struct{}{}
	}
	set := w.byAsk[id]
	if set == nil {
		set = map[chan struct{}]struct{}{}
		w.byAsk[id] = set
	}
	set[ch] = struct{}{}
	return ch, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.byAsk[id], ch)
		if len(w.byAsk[id]) == 0 {
			delete(w.byAsk, id)
		}
	}
}

// wake tells every call waiting for id that it changed.
func (w *askWaiters) wake(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for ch := range w.byAsk[id] {
		select {
		case ch <- struct{}{}:
		default: // already told
		}
	}
}

// awaitAnswer holds until the ask is answered or ctx ends, and returns it as
// it then stands.
func (s *Server) awaitAnswer(ctx context.Context, accountID, id string) (*asks.Approval, error) {
	for {
		changed, stop := s.waiters.add(id)
		a, err := s.store.GetApproval(context.WithoutCancel(ctx), accountID, id)
		if err != nil || answered(a) {
			stop()
			return a, err
		}
		select {
		case <-changed:
			stop()
		case <-ctx.Done():
			stop()
			return a, nil
		}
	}
}

// elicited are the asks 2025-11-25 sessions were sent to with a URL
// elicitation: by session and the call's arguments, to find the ask when the
// call comes back, and by ask, to tell each session when it is answered.
type elicited struct {
	mu     sync.Mutex
	byCall map[elicitedCall]elicitedFor
	byAsk  map[string]*elicitedAsk
}

// elicitedFor is the ask a call waits for, kept until a while after the ask's
// life ends: a call that never comes back is forgotten then.
type elicitedFor struct {
	id    string
	until time.Time
}

// elicitedGrace is how long after its ask's life a call may still come back.
const elicitedGrace = time.Hour

type elicitedCall struct {
	session *openSession
	args    string // the canonical SHA-256 of the call's arguments
}

type elicitedAsk struct {
	account string
	calls   []elicitedCall
}

func (e *elicited) put(c elicitedCall, a *asks.Approval) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.byCall == nil {
		e.byCall, e.byAsk = map[elicitedCall]elicitedFor{}, map[string]*elicitedAsk{}
	}
	now := time.Now()
	for k, f := range e.byCall {
		if now.After(f.until) {
			delete(e.byCall, k)
		}
	}
	e.byCall[c] = elicitedFor{id: a.ID, until: a.ExpiresAt.Add(elicitedGrace)}
	w := e.byAsk[a.ID]
	if w == nil {
		w = &elicitedAsk{account: a.AccountID}
		e.byAsk[a.ID] = w
	}
	w.calls = append(w.calls, c)
}

func (e *elicited) get(c elicitedCall) (string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	f, ok := e.byCall[c]
	return f.id, ok
}

// forget drops the call c, which came back and got its ask.
func (e *elicited) forget(c elicitedCall) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.byCall, c)
}

// account is the account of the ask a session waits to hear of, or "".
func (e *elicited) account(id string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if w := e.byAsk[id]; w != nil {
		return w.account
	}
	return ""
}

// take returns the sessions that wait to hear of the ask, and forgets them.
func (e *elicited) take(id string) []*openSession {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []*openSession
	if w := e.byAsk[id]; w != nil {
		for _, c := range w.calls {
			out = append(out, c.session)
		}
	}
	delete(e.byAsk, id)
	return out
}

// completeElicitations tells the 2025-11-25 sessions sent to the ask's page
// that their elicitation is complete, once the ask is answered or has ended.
// A session without a stream open then misses it; its call, made again,
// still gets the ask.
func (s *Server) completeElicitations(id string) {
	account := s.elicited.account(id)
	if account == "" {
		return
	}
	a, err := s.store.GetApproval(context.Background(), account, id)
	if err != nil || !answered(a) {
		return
	}
	event := sseEvent(&jsonrpc.Request{Method: "notifications/elicitation/complete"}, &sdk.ElicitationCompleteParams{ElicitationID: id})
	for _, sess := range s.elicited.take(id) {
		if st := s.sessions.streamOf(sess); st != nil {
			st.send(event)
		}
	}
}

// Elicitation modes of a caller's client.
const (
	elicitNone      = ""
	elicitRoundTrip = "input_required" // 2026-07-28
	elicitURL       = "url"            // 2025-11-25
)

// elicitationMode says how the client of call can be sent to a page: by a
// multi round-trip (2026-07-28 on), by a URL elicitation (a client that
// declared the URL mode), or not at all. A 2026-07-28 request says its
// revision and capabilities itself; an older one's are what its session's
// initialize said.
func (s *Server) elicitationMode(ctx context.Context, call *sdk.CallToolRequest) string {
	version, caps := call.ProtocolVersion(), call.ClientCapabilities()
	if sess := sessionFrom(ctx); sess != nil { // the SDK serves sessions statelessly: it knows no initialize
		if init := s.sessions.clientOf(sess); init != nil {
			version, caps = init.ProtocolVersion, init.Capabilities
		}
	}
	if caps == nil || caps.Elicitation == nil || caps.Elicitation.URL == nil {
		return elicitNone
	}
	if version >= "2026-07-28" {
		return elicitRoundTrip
	}
	return elicitURL
}

// elicitation sends the person to the ask's page.
func (s *Server) elicitation(a *asks.Approval) *sdk.ElicitParams {
	msg := "Approve in Countersign: " + a.Title
	if code := checkCode(a); code != "" {
		msg += " (check code " + code + ")"
	}
	return &sdk.ElicitParams{Mode: "url", Message: msg, URL: s.askPage(a.ID), ElicitationID: a.ID}
}

// askPage is the ask's page, where the person answers.
func (s *Server) askPage(id string) string { return s.baseURL + "/approvals/" + id }

// createWaiting is approvals_create with wait: true; file files the ask.
func (s *Server) createWaiting(ctx context.Context, agent *people.Agent, in CreateInput, file func() (*asks.Approval, error)) (*ApprovalOut, error) {
	call := callFrom(ctx)
	mode := elicitNone
	if call != nil {
		mode = s.elicitationMode(ctx, call)
	}
	var key elicitedCall
	if mode == elicitURL {
		if key.session = sessionFrom(ctx); key.session == nil {
			mode = elicitNone // no session to tell: wait as for a plain client
		} else {
			_, key.args, _ = ask.CanonicalHash(call.Params.Arguments)
		}
	}
	var (
		a   *asks.Approval
		err error
	)
	switch mode {
	case elicitRoundTrip:
		if state := call.Params.RequestState; state != "" {
			a = s.askOfRetry(ctx, agent, state, in)
			if r, ok := call.Params.InputResponses[state].(*sdk.ElicitResult); a != nil && (!ok || r.Action != "accept") {
				// The host did not open the page: the ask stays open for the
				// person, and the call answers with it as it stands.
				return s.approvalWithTimeline(ctx, a)
			}
		}
	case elicitURL:
		if id, ok := s.elicited.get(key); ok {
			a = s.askOfRetry(ctx, agent, id, in)
		}
	}
	if a == nil { // a new call
		if a, err = file(); err != nil {
			return nil, err
		}
		if answered(a) { // a policy approved it as it was filed: nobody needs the page
			return s.approvalWithTimeline(ctx, a)
		}
		switch mode {
		case elicitRoundTrip:
			return nil, &answer{result: s.inputRequired(a)}
		case elicitURL:
			s.elicited.put(key, a)
			return nil, &answer{err: sdk.URLElicitationRequiredError([]*sdk.ElicitParams{s.elicitation(a)})}
		}
	}
	hold, cancel := context.WithTimeout(ctx, plainWait)
	defer cancel()
	if a, err = s.awaitAnswer(hold, agent.AccountID, a.ID); err != nil {
		return nil, err
	}
	if !answered(a) && ctx.Err() == nil {
		switch mode {
		case elicitRoundTrip:
			return nil, &answer{result: s.inputRequired(a)}
		case elicitURL:
			return nil, &answer{err: sdk.URLElicitationRequiredError([]*sdk.ElicitParams{s.elicitation(a)})}
		}
	}
	if mode == elicitURL {
		s.elicited.forget(key)
	}
	return s.approvalWithTimeline(context.WithoutCancel(ctx), a)
}

// askOfRetry is the ask a call that came back waits for: one this agent
// filed with exactly this kind and payload. nil: the call is a new one.
func (s *Server) askOfRetry(ctx context.Context, agent *people.Agent, id string, in CreateInput) *asks.Approval {
	a, err := s.store.GetApproval(ctx, agent.AccountID, id)
	if err != nil || a.RequesterID != agent.ID || a.Kind != in.Kind {
		return nil
	}
	if _, sum, err := ask.CanonicalHash(in.Payload); err != nil || sum != a.PayloadSHA256 {
		return nil
	}
	return a
}

// inputRequired is the 2026-07-28 answer that sends the client to the ask's
// page, to call again with the ask's id as the request state.
func (s *Server) inputRequired(a *asks.Approval) *sdk.CallToolResult {
	return &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{a.ID: s.elicitation(a)}, RequestState: a.ID}
}

type callKey struct{}

// withCall carries the tool call in ctx, for a tool body that reads more of
// it than its arguments.
func withCall(ctx context.Context, call *sdk.CallToolRequest) context.Context {
	return context.WithValue(ctx, callKey{}, call)
}

func callFrom(ctx context.Context) *sdk.CallToolRequest {
	c, _ := ctx.Value(callKey{}).(*sdk.CallToolRequest)
	return c
}
