package gate

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A call that needs a person need not hold its connection while it waits.
// When the caller's client takes URL-mode elicitation, the gate files the ask
// and answers at once with an elicitation whose URL is the ask's page ("open
// this link to continue"); the call completes on a later request, and waits
// as long as the ask lives (AskLife), not ApprovalTimeout:
//
//   - 2026-07-28 (multi round-trip, SEP-2322): the answer is an
//     input_required result carrying the elicitation, and the ask's id as its
//     requestState; the client retries the call with both.
//   - 2025-11-25 (URL mode): the answer is the URLElicitationRequired error;
//     the gate tells the client notifications/elicitation/complete when the
//     ask is decided, and the client calls again with the same arguments.
//
// A retry is checked against the ask the sink holds, not against anything the
// client says: the ask must be of this tool with exactly these arguments (a
// retry with other arguments is a new call, which asks again), and the call
// runs only after its sink claims the approved ask (DeferredSink.Await's
// tracker), which succeeds once: an elicitation answered twice runs nothing
// twice. While the ask is open, a retry is held for ApprovalTimeout at most and
// then answered with the same elicitation again.

// DeferredSink is a sink that files an ask without waiting for its answer,
// for callers whose clients take URL elicitation.
type DeferredSink interface {
	// File files req's ask, living until req.Deadline, and returns its ticket.
	File(ctx context.Context, req ApprovalRequest) (Ticket, error)
	// Find reads back the ticket of the ask id filed for req. It fails
	// when there is no such ask, or when the ask is of another call: another
	// server or tool, or other arguments.
	Find(ctx context.Context, id string, req ApprovalRequest) (Ticket, error)
	// Await waits until ctx ends for the ticket's ask to be decided, and
	// returns the decision, or open when it is still undecided. A yes
	// carries a tracker whose Started claims the ask, once.
	Await(ctx context.Context, t Ticket) (d Decision, open bool, err error)
	// Withdraw marks the ticket's open ask stale: the caller will not wait.
	Withdraw(ctx context.Context, t Ticket)
}

// Ticket is an ask filed for a deferred call.
type Ticket struct {
	ID        string    // the ask's id: the elicitation's id and the request state
	URL       string    // the ask's page, where the person answers
	CheckCode string    // the check code the page shows, or ""
	FiledAt   time.Time // when the ask was filed
	ExpiresAt time.Time // when it expires
}

// DefaultAskLife is how long a deferred call's ask lives.
const DefaultAskLife = 10 * time.Minute

// Elicitation modes of a caller's client.
const (
	elicitNone      = ""
	elicitRoundTrip = "input_required" // 2026-07-28
	elicitURL       = "url"            // 2025-11-25
)

// elicitationMode says how the client of call can be asked to open a page:
// by multi round-trip (2026-07-28 on), by a URL elicitation (a client that
// declared the URL mode), or not at all.
func elicitationMode(call *mcp.CallToolRequest) string {
	caps := call.ClientCapabilities()
	if caps == nil || caps.Elicitation == nil || caps.Elicitation.URL == nil {
		return elicitNone
	}
	if call.ProtocolVersion() >= "2026-07-28" {
		return elicitRoundTrip
	}
	return elicitURL
}

// elicitation is the URL elicitation that sends the person to t's page.
func elicitation(t Ticket, tool string) *mcp.ElicitParams {
	msg := "Approve in Countersign: " + tool + " waits for a person's answer on this page"
	if t.CheckCode != "" {
		msg += " (check code " + t.CheckCode + ")"
	}
	return &mcp.ElicitParams{Mode: "url", Message: msg, URL: t.URL, ElicitationID: t.ID}
}

// inputRequired is the 2026-07-28 answer that asks the client to open t's
// page and call again with t's id as the request state. The go-sdk marks a
// result input_required only for its own tool handlers, so the gate reads
// this one from its wire form.
func inputRequired(t Ticket, tool string) (*mcp.CallToolResult, error) {
	var res mcp.CallToolResult
	if err := json.Unmarshal([]byte(`{"resultType":"input_required","content":[]}`), &res); err != nil {
		return nil, fmt.Errorf("gate: input_required result: %w", err)
	}
	res.Content = nil
	res.InputRequests = mcp.InputRequestMap{t.ID: elicitation(t, tool)}
	res.RequestState = t.ID
	return &res, nil
}

// urlRequired is the 2025-11-25 answer: the URLElicitationRequired error.
func urlRequired(t Ticket, tool string) error {
	return mcp.URLElicitationRequiredError([]*mcp.ElicitParams{elicitation(t, tool)})
}

// deferredCalls are the open deferred calls of 2025-11-25 clients, whose
// retries carry no request state: by session and by the call's hash
// (server, tool and canonical arguments). They live in memory: a gate that
// restarts has lost its stdio client's session with them, and the call it
// answered was never run.
type deferredCalls struct {
	mu       sync.Mutex
	calls    map[deferredKey]Ticket
	sessions map[*mcp.ServerSession]context.Context // ends with the session
}

// sessionContext is a context that ends when ss ends; the session's
// deferred calls are forgotten then.
func (d *deferredCalls) sessionContext(ss *mcp.ServerSession) context.Context {
	d.mu.Lock()
	defer d.mu.Unlock()
	if ctx, ok := d.sessions[ss]; ok {
		return ctx
	}
	if d.sessions == nil {
		d.sessions = map[*mcp.ServerSession]context.Context{}
	}
	ctx, cancel := context.WithCancel(context.Background())
	d.sessions[ss] = ctx
	go func() {
		_ = ss.Wait()
		cancel()
		d.mu.Lock()
		defer d.mu.Unlock()
		delete(d.sessions, ss)
		for k := range d.calls {
			if k.session == mcp.Session(ss) {
				delete(d.calls, k)
			}
		}
	}()
	return ctx
}

type deferredKey struct {
	session mcp.Session
	call    string
}

func (d *deferredCalls) get(k deferredKey) (Ticket, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	t, ok := d.calls[k]
	return t, ok
}

func (d *deferredCalls) put(k deferredKey, t Ticket) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.calls == nil {
		d.calls = map[deferredKey]Ticket{}
	}
	d.calls[k] = t
}

// drop forgets k's ticket, if it is still t.
func (d *deferredCalls) drop(k deferredKey, t Ticket) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.calls[k].ID == t.ID {
		delete(d.calls, k)
	}
}

// deferredOutcome is what a deferred round ended in: a result, an
// elicitation to send again (open), or a refusal.
type deferredOutcome struct {
	decision Decision
	open     bool
	refused  *ApprovalRefusedError
}

// deferred governs a call whose client takes URL elicitation (mode): it
// files the ask and answers with the elicitation, or settles a retry. refuse
// and allow end the call (its audit event counts from since, the filing).
func (g *governor) deferred(ctx context.Context, call *mcp.CallToolRequest, mode string, req ApprovalRequest, argsHash string,
	refuse func(*ApprovalRefusedError, time.Time) *mcp.CallToolResult, allow func(Decision, time.Time) (*mcp.CallToolResult, error)) (*mcp.CallToolResult, error) {
	sink := g.opts.Deferred
	key := deferredKey{session: call.GetSession(), call: req.Server + "\x00" + req.Tool + "\x00" + argsHash}
	var (
		t     Ticket
		found bool
	)
	switch mode {
	case elicitRoundTrip:
		if state := call.Params.RequestState; state != "" {
			got, err := sink.Find(ctx, state, req)
			found = err == nil
			if found {
				t = got
				if a, ok := call.Params.InputResponses[t.ID].(*mcp.ElicitResult); !ok || a.Action != "accept" {
					// The person's host declined to open the page, or sent no answer to it.
					sink.Withdraw(context.WithoutCancel(ctx), t)
					return refuse(&ApprovalRefusedError{Tool: req.Tool, Reason: ReasonDenied, Detail: "the caller did not open the approval page"}, t.FiledAt), nil
				}
			}
			// Otherwise the state is of another call (other arguments), or
			// of none: this is a new call, which asks again.
		}
	case elicitURL:
		t, found = g.waiting.get(key)
	}
	if !found {
		req.Deadline = time.Now().Add(g.opts.AskLife)
		filed, err := sink.File(ctx, req)
		if err != nil {
			return refuse(&ApprovalRefusedError{Tool: req.Tool, Reason: ReasonSinkError, Detail: err.Error()}, time.Now()), nil
		}
		if mode == elicitURL {
			g.waiting.put(key, filed)
			if g.opts.Finishing != nil {
				g.opts.Finishing.Add(1)
			}
			go func() {
				if g.opts.Finishing != nil {
					defer g.opts.Finishing.Done()
				}
				g.completeWhenDecided(call.GetSession(), key, filed)
			}()
			return nil, urlRequired(filed, req.Tool)
		}
		return inputRequired(filed, req.Tool)
	}
	out := g.settle(ctx, t, req.Tool)
	switch {
	case out.open && mode == elicitURL:
		return nil, urlRequired(t, req.Tool)
	case out.open:
		return inputRequired(t, req.Tool)
	}
	g.waiting.drop(key, t)
	if out.refused != nil {
		return refuse(out.refused, t.FiledAt), nil
	}
	return allow(out.decision, t.FiledAt)
}

// settle holds a retry for ApprovalTimeout at most for t's answer. Only a
// named yes whose ask is still alive, claimed once, lets the call through.
func (g *governor) settle(ctx context.Context, t Ticket, tool string) deferredOutcome {
	refuse := func(by, reason, detail string) deferredOutcome {
		return deferredOutcome{refused: &ApprovalRefusedError{Tool: tool, By: by, Reason: reason, Detail: detail}}
	}
	hold, cancel := context.WithTimeout(ctx, g.opts.ApprovalTimeout)
	defer cancel()
	d, open, err := g.opts.Deferred.Await(hold, t)
	switch {
	case ctx.Err() != nil:
		return refuse("", ReasonCancelled, "")
	case err != nil && hold.Err() != nil:
		open = true
	case err != nil:
		return refuse("", ReasonSinkError, err.Error())
	}
	expired := !time.Now().Before(t.ExpiresAt)
	if open {
		if expired {
			g.opts.Deferred.Withdraw(context.WithoutCancel(ctx), t)
			return refuse("", ReasonTimeout, fmt.Sprintf("no answer within the ask's life (%s)", t.ExpiresAt.Sub(t.FiledAt).Round(time.Second)))
		}
		return deferredOutcome{open: true}
	}
	if w, ok := d.tracker.(withdrawer); ok && d.approved && (expired || !d.named()) {
		w.Withdraw(context.WithoutCancel(ctx))
	}
	switch {
	case !d.approved:
		out := refuse(d.by, ReasonDenied, d.reason)
		out.refused.Reply = d.reply
		return out
	case expired:
		return refuse("", ReasonLate, "the ask's life ran out before the call came back")
	case !d.named():
		return refuse("", ReasonAnonymous, "")
	}
	if d.tracker != nil {
		if err := d.tracker.Started(ctx); err != nil {
			return refuse("", ReasonStartRefused, err.Error())
		}
	}
	return deferredOutcome{decision: d}
}

// completeWhenDecided tells a 2025-11-25 client that t's elicitation is
// complete once its ask is decided, so it calls again; when the ask expires
// or the session ends first, it withdraws the ask.
func (g *governor) completeWhenDecided(session mcp.Session, key deferredKey, t Ticket) {
	ss, ok := session.(*mcp.ServerSession)
	if !ok {
		return
	}
	ctx, cancel := context.WithDeadline(g.waiting.sessionContext(ss), t.ExpiresAt) // a session that ends stops the wait
	defer cancel()
	for {
		_, open, err := g.opts.Deferred.Await(ctx, t)
		if err != nil && ctx.Err() == nil {
			select { // the service is unreachable for a moment: try again
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		if open || err != nil || ctx.Err() != nil {
			// The ask's life ran out, or the client went away: a 2025-11-25
			// call has no state to come back with, so nobody waits for it.
			g.waiting.drop(key, t)
			g.opts.Deferred.Withdraw(context.Background(), t)
			return
		}
		nctx, ncancel := context.WithTimeout(context.Background(), 10*time.Second)
		// A client gone misses it, and its call was never run.
		_ = ss.NotifyElicitationComplete(nctx, &mcp.ElicitationCompleteParams{ElicitationID: t.ID})
		ncancel()
		return
	}
}
