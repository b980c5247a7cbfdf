// Package gate puts a named person's answer in front of MCP tools (seed 002).
//
// A tool is declared with a permission, an audit label and an approval rule:
// always, or a predicate over the call's arguments when only some of them
// warrant a person. A call the rule names waits for OnApproval's decision
// before it runs. Silence past ApprovalTimeout, an error from the sink, a yes
// naming nobody and an answer after the deadline are refusals, and the
// handler never runs; the caller reads
// {"error":"forbidden","reason":"approval_refused"}. A gated tool the caller
// may use stays in tools/list; a tool the caller lacks the permission for does
// not, and a call of it is answered exactly as a call of a tool that does not
// exist, so that the caller learns no more than tools/list told them. Every
// governed call ends in one audit event, which says what was refused and why.
//
// NewServer builds a server of tools declared with Define; Gate puts the same
// rules in front of the tools of a server somebody else wrote. Nothing here is
// durable: a process that dies mid-question takes the request with it, and
// the call did not happen.
//
// Every audit event carries the SHA-256 of the call's canonical arguments.
//
// The package depends on the MCP go-sdk, the standard library and two small
// packages of this module (ask for the canonical hash, bearer for the
// Countersign sink's token), so any Go MCP server can import it.
package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultApprovalTimeout is how long a call waits for an answer: under the
// 60 s idle timeout most proxies ship with.
const DefaultApprovalTimeout = 45 * time.Second

// RefusalText is exactly what a caller reads when a call needing approval is
// refused: the text content of the result, and its structured content unless
// the tool's output schema would not take it.
const RefusalText = `{"error":"forbidden","reason":"approval_refused"}`

// Options configure the gate: where approvals are asked, how long a call
// waits, where audit events go and how a caller is known.
type Options struct {
	// OnApproval asks for a decision. Required when any tool has an
	// approval rule: construction fails without it.
	OnApproval ApprovalFunc
	// ApprovalTimeout counts from the call's arrival; 0 means 45 s.
	ApprovalTimeout time.Duration
	// Audit receives every audit event; nil means SlogAudit(slog.Default()).
	Audit AuditFunc
	// Caller says who is calling and what they may do; nil means
	// TokenCaller (the bearer token's user and scopes).
	Caller func(ctx context.Context, req mcp.Request) Caller
	// Server names the server in approval requests; "" means the
	// implementation's name.
	Server string
	// Deferred, when set, answers a call whose client takes URL
	// elicitation at once with the ask's page, and completes it on the
	// client's retry (see DeferredSink): such a call waits AskLife, not
	// ApprovalTimeout. Callers without URL elicitation use OnApproval.
	Deferred DeferredSink
	// AskLife is how long a deferred call's ask lives; 0 means 10 minutes.
	AskLife time.Duration
	// Finishing, when set, counts the gate's own work that must end before
	// Deferred is closed: a 2025-11-25 client that goes away has its open
	// ask withdrawn, and a process that exits first would leave it open.
	// Wait on it (with a bound) before closing the sink.
	Finishing *sync.WaitGroup
}

// Caller is who is calling, with the permissions they hold.
type Caller struct {
	Name        string
	Permissions []string
}

// may says whether the caller holds permission ("" is no permission at all).
func (c Caller) may(permission string) bool {
	return permission == "" || slices.Contains(c.Permissions, permission)
}

// TokenCaller is the default Caller: the user and scopes of the bearer token
// the go-sdk's auth middleware verified, or, without a token, the client's
// name with no permissions.
func TokenCaller(_ context.Context, req mcp.Request) Caller {
	if extra := req.GetExtra(); extra != nil && extra.TokenInfo != nil {
		return Caller{Name: extra.TokenInfo.UserID, Permissions: extra.TokenInfo.Scopes}
	}
	return Caller{Name: ClientName(req)}
}

// ClientName is the clientInfo.name the caller's session introduced itself
// with, or "".
func ClientName(req mcp.Request) string {
	ss, ok := req.GetSession().(*mcp.ServerSession)
	if !ok || ss == nil {
		return ""
	}
	if p := ss.InitializeParams(); p != nil && p.ClientInfo != nil {
		return p.ClientInfo.Name
	}
	return ""
}

// Rule says which calls of a tool need a person's approval: none (the zero
// Rule), all (Always), or those whose arguments a predicate picks (When).
type Rule[In any] struct {
	always bool
	when   func(In) bool
}

// Always is a rule that asks for every call.
func Always[In any]() Rule[In] { return Rule[In]{always: true} }

// When is a rule that asks for the calls whose arguments pred picks: only
// the destructive half of the argument space warrants a person. A nil pred
// panics, at the tool's declaration: it would silently ask for nothing.
func When[In any](pred func(In) bool) Rule[In] {
	if pred == nil {
		panic("gate.When: nil predicate; use gate.Always for every call, or no rule for none")
	}
	return Rule[In]{when: pred}
}

// Asks says whether the rule asks a person for any call at all: whether it
// needs a sink.
func (r Rule[In]) Asks() bool { return r.always || r.when != nil }

// need says whether the call with args needs a person, reading args as the
// typed handler will (validated against input, defaults applied).
func (r Rule[In]) need(args json.RawMessage, input *jsonschema.Resolved) (bool, error) {
	if !r.Asks() {
		return false, nil
	}
	in, err := decodeArgs[In](args, input)
	if err != nil {
		return false, err
	}
	return r.always || r.when(in), nil
}

// labeller makes the audit label of a call from its raw arguments with
// label; arguments that do not read as In get no label.
func labeller[In any](label func(In) string) func(json.RawMessage) string {
	return func(args json.RawMessage) string {
		in, err := decodeArgs[In](args, nil)
		if err != nil {
			return ""
		}
		return label(in)
	}
}

// Args are a tool's arguments as a generic JSON object, for the rules of
// tools somebody else wrote.
type Args = map[string]any

// governed is what the gate knows of one tool.
type governed struct {
	name       string
	permission string
	label      func(args json.RawMessage) string
	// needsApproval says whether these arguments need a person; an error
	// means they do not read against the tool's input schema.
	needsApproval func(args json.RawMessage, input *jsonschema.Resolved) (bool, error)
	asks          bool
	editable      []string // arguments a person may change before they approve
}

// governor applies the rules to calls on one server.
type governor struct {
	opts    Options
	tools   map[string]*governed
	mu      sync.Mutex
	schemas map[string]toolSchemas // learnt from tools/list
	waiting deferredCalls          // deferred calls of 2025-11-25 clients
}

type toolSchemas struct {
	input, output *jsonschema.Resolved
}

func newGovernor(server string, opts Options, tools map[string]*governed) (*governor, error) {
	var asking []string
	for name, t := range tools {
		if t.asks {
			asking = append(asking, name)
		}
	}
	sort.Strings(asking)
	if len(asking) > 0 && opts.OnApproval == nil {
		return nil, fmt.Errorf("gate: %s need approval but no OnApproval sink is wired: a call would have nowhere to ask", strings.Join(asking, ", "))
	}
	if opts.ApprovalTimeout < 0 {
		return nil, fmt.Errorf("gate: ApprovalTimeout %s is negative", opts.ApprovalTimeout)
	}
	if opts.ApprovalTimeout == 0 {
		opts.ApprovalTimeout = DefaultApprovalTimeout
	}
	if opts.AskLife < 0 {
		return nil, fmt.Errorf("gate: AskLife %s is negative", opts.AskLife)
	}
	if opts.AskLife == 0 {
		opts.AskLife = DefaultAskLife
	}
	if opts.Audit == nil {
		opts.Audit = SlogAudit(slog.Default())
	}
	if opts.Caller == nil {
		opts.Caller = TokenCaller
	}
	if opts.Server == "" {
		opts.Server = server
	}
	return &governor{opts: opts, tools: tools, schemas: map[string]toolSchemas{}}, nil
}

// learn reads the schemas of a list of tools, for the rules over typed
// arguments and the refusal's structured content.
func (g *governor) learn(tools []*mcp.Tool) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, t := range tools {
		var s toolSchemas
		var err error
		if s.input, err = resolve(t.InputSchema); err != nil {
			return fmt.Errorf("gate: input schema of %s: %w", t.Name, err)
		}
		if s.output, err = resolve(t.OutputSchema); err != nil {
			return fmt.Errorf("gate: output schema of %s: %w", t.Name, err)
		}
		g.schemas[t.Name] = s
	}
	return nil
}

func (g *governor) schemasOf(tool string) toolSchemas {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.schemas[tool]
}

// resolve reads a schema in any of the forms a tool may carry it.
func resolve(schema any) (*jsonschema.Resolved, error) {
	if schema == nil {
		return nil, nil
	}
	s, ok := schema.(*jsonschema.Schema)
	if !ok {
		b, err := json.Marshal(schema)
		if err != nil {
			return nil, err
		}
		if string(b) == "null" {
			return nil, nil
		}
		s = new(jsonschema.Schema)
		if err := json.Unmarshal(b, s); err != nil {
			return nil, err
		}
	} else if s == nil {
		return nil, nil
	}
	return s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: false})
}

// middleware hides the tools a caller may not use from tools/list and
// governs every call of a tool the gate knows.
func (g *governor) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/list":
			res, err := next(ctx, method, req)
			list, ok := res.(*mcp.ListToolsResult)
			if err != nil || !ok {
				return res, err
			}
			if err := g.learn(list.Tools); err != nil {
				return nil, err
			}
			caller := g.opts.Caller(ctx, req)
			list.Tools = slices.DeleteFunc(slices.Clone(list.Tools), func(t *mcp.Tool) bool {
				gt := g.tools[t.Name]
				return gt != nil && !caller.may(gt.permission)
			})
			return list, nil
		case "tools/call":
			call, ok := req.(*mcp.CallToolRequest)
			if !ok || g.tools[call.Params.Name] == nil {
				return next(ctx, method, req)
			}
			res, err := g.call(ctx, call, func(ctx context.Context) (*mcp.CallToolResult, error) {
				res, err := next(ctx, method, req)
				if err != nil {
					return nil, err
				}
				r, ok := res.(*mcp.CallToolResult)
				if !ok {
					return nil, fmt.Errorf("gate: tools/call answered %T", res)
				}
				return r, nil
			})
			if err != nil {
				return nil, err
			}
			return res, nil
		}
		return next(ctx, method, req)
	}
}

// call governs one call: the permission, then the approval when the rule
// asks for one, then the handler, then the audit event.
func (g *governor) call(ctx context.Context, req *mcp.CallToolRequest, run func(context.Context) (*mcp.CallToolResult, error)) (*mcp.CallToolResult, error) {
	start := time.Now()
	t := g.tools[req.Params.Name]
	args := req.Params.Arguments
	caller := g.opts.Caller(ctx, req)
	argsHash, argsErr := ArgumentsHash(args)
	ev := AuditEvent{Time: start.UTC(), Tool: t.name, Caller: caller.Name, ArgumentsSHA256: argsHash}
	finish := func(phase, decision, approver, reason string) {
		ev.Phase, ev.Decision, ev.Approver, ev.Reason = phase, decision, approver, reason
		ev.DurationMs = time.Since(start).Milliseconds()
		g.opts.Audit(ctx, ev)
	}
	// allowed runs a call let through (by d, or by the rule when d is the
	// zero Decision), tells d's tracker how it ended and audits it.
	allowed := func(d Decision) (*mcp.CallToolResult, error) {
		if d.edited != nil {
			req.Params.Arguments = d.edited
			ev.EditedArgumentsSHA256, _ = ArgumentsHash(d.edited)
		}
		res, err := run(ctx)
		failed := callError(res, err)
		if d.tracker != nil {
			d.tracker.Finished(context.WithoutCancel(ctx), failed)
		}
		if failed != nil {
			finish(PhaseError, DecisionAllow, d.by, ReasonToolError+": "+failed.Error())
		} else {
			finish(PhaseAllowed, DecisionAllow, d.by, "")
		}
		return res, err
	}
	if t.label != nil {
		ev.Label = t.label(args)
	}
	if !caller.may(t.permission) {
		// The operator reads the refusal in the audit event; the caller
		// reads what a tool that does not exist answers.
		finish(PhaseRefused, DecisionDeny, "", ReasonPermissionDenied)
		return nil, unknownTool(t.name)
	}
	schemas := g.schemasOf(t.name)
	needs, err := needsApproval(t, args, schemas.input)
	if argsErr != nil {
		// The audit could not say what would run, and the rule and the
		// tool could read the arguments two ways.
		err = fmt.Errorf("the arguments have no canonical form to hash for the audit: %w", argsErr)
	}
	if err != nil {
		finish(PhaseRefused, DecisionDeny, "", ReasonInvalidArguments+": "+err.Error())
		var res mcp.CallToolResult
		res.SetError(fmt.Errorf("validating \"arguments\": %w", err))
		return &res, nil
	}
	if !needs {
		return allowed(Decision{})
	}
	if mode := elicitationMode(req); g.opts.Deferred != nil && mode != elicitNone {
		ar := ApprovalRequest{Server: g.opts.Server, Caller: caller.Name, Tool: t.name, Label: ev.Label, Arguments: args, ShownIn: shownIn(req, true), Editable: t.editable}
		refuse := func(refused *ApprovalRefusedError, since time.Time) *mcp.CallToolResult {
			start = since
			finish(PhaseRefused, DecisionDeny, refused.By, refused.auditReason())
			return refusal(refused, schemas.output)
		}
		allow := func(d Decision, since time.Time) (*mcp.CallToolResult, error) {
			start = since
			if refused := checkEdit(t, args, d, schemas.input); refused != nil {
				finish(PhaseRefused, DecisionDeny, d.by, refused.auditReason())
				return refusal(refused, schemas.output), nil
			}
			return allowed(d)
		}
		return g.deferred(ctx, req, mode, ar, argsHash, refuse, allow)
	}
	d, refused := g.ask(ctx, ApprovalRequest{
		Server: g.opts.Server, Caller: caller.Name, Tool: t.name, Label: ev.Label,
		Arguments: args, Deadline: start.Add(g.opts.ApprovalTimeout),
		ShownIn: shownIn(req, false), Filed: func(tk Ticket) { showTicket(ctx, req, tk) }, Editable: t.editable,
	})
	if refused == nil {
		if refused = checkEdit(t, args, d, schemas.input); refused != nil {
			if w, ok := d.tracker.(withdrawer); ok {
				w.Withdraw(context.WithoutCancel(ctx)) // a yes the gate refuses: the approver sees it did not run
			}
		}
	}
	if refused == nil && d.tracker != nil {
		if err := d.tracker.Started(ctx); err != nil {
			refused = &ApprovalRefusedError{Tool: t.name, Reason: ReasonStartRefused, Detail: err.Error()}
		}
	}
	if refused != nil {
		finish(PhaseRefused, DecisionDeny, refused.By, refused.auditReason())
		return refusal(refused, schemas.output), nil
	}
	return allowed(d)
}

// refusal is the result of a call the gate did not run: the person's reply
// in place of the tool's result, as an answer and not an error, when they
// gave one with their no; otherwise RefusalText as an error.
func refusal(refused *ApprovalRefusedError, output *jsonschema.Resolved) *mcp.CallToolResult {
	if refused.Reply == "" {
		return forbidden(RefusalText, refused, output)
	}
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: refused.Reply}}}
	var obj map[string]any
	if json.Unmarshal([]byte(refused.Reply), &obj) == nil && (output == nil || output.Validate(obj) == nil) {
		res.StructuredContent = json.RawMessage(refused.Reply)
	}
	return res
}

// needsApproval applies a tool's rule; a rule that panics asks, since when
// in doubt a person decides.
func needsApproval(t *governed, args json.RawMessage, input *jsonschema.Resolved) (need bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			need, err = true, nil
		}
	}()
	return t.needsApproval(args, input)
}

// ask waits for the sink's decision until the deadline. Only a named yes
// that arrives in time lets the call through; everything else is a refusal.
func (g *governor) ask(ctx context.Context, req ApprovalRequest) (Decision, *ApprovalRefusedError) {
	actx, cancel := context.WithDeadline(ctx, req.Deadline)
	defer cancel()
	type answer struct {
		d   Decision
		err error
	}
	answers := make(chan answer, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				answers <- answer{err: fmt.Errorf("OnApproval panicked: %v", p)}
			}
		}()
		d, err := g.opts.OnApproval(actx, req)
		answers <- answer{d, err}
	}()
	refuse := func(by, reason, detail string) (Decision, *ApprovalRefusedError) {
		return Decision{}, &ApprovalRefusedError{Tool: req.Tool, By: by, Reason: reason, Detail: detail}
	}
	select {
	case a := <-answers:
		if w, ok := a.d.tracker.(withdrawer); ok && a.d.approved && (!time.Now().Before(req.Deadline) || ctx.Err() != nil || !a.d.named()) {
			w.Withdraw(context.WithoutCancel(ctx)) // a yes the gate refuses: the approver sees it did not run
		}
		switch {
		case !time.Now().Before(req.Deadline):
			return refuse("", ReasonLate, "")
		case ctx.Err() != nil:
			return refuse("", ReasonCancelled, "")
		case a.err != nil:
			return refuse("", ReasonSinkError, a.err.Error())
		case !a.d.approved:
			d, refused := refuse(a.d.by, ReasonDenied, a.d.reason)
			refused.Reply = a.d.reply
			return d, refused
		case !a.d.named():
			return refuse("", ReasonAnonymous, "") // an approval that names nobody is not a second pair of eyes
		}
		return a.d, nil
	case <-actx.Done():
		if ctx.Err() != nil {
			return refuse("", ReasonCancelled, "")
		}
		return refuse("", ReasonTimeout, fmt.Sprintf("no answer within %s", g.opts.ApprovalTimeout))
	}
}

// withdrawer is a tracker that can mark an approval the gate refused after
// all (too late, or naming nobody) as not acted on.
type withdrawer interface {
	Withdraw(ctx context.Context)
}

// callError is the failure of a call that ran: a protocol error or an
// isError result, or nil.
func callError(res *mcp.CallToolResult, err error) error {
	if err != nil {
		return err
	}
	if res == nil || !res.IsError {
		return nil
	}
	if e := res.GetError(); e != nil {
		return e
	}
	var texts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	return errors.New(strings.Join(texts, "\n"))
}

// forbidden is a refusal result: text exactly as given, the same object as
// structured content unless the output schema would not take it, and err
// for server middleware (GetError).
func forbidden(text string, err error, output *jsonschema.Resolved) *mcp.CallToolResult {
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
	var obj map[string]any
	if json.Unmarshal([]byte(text), &obj) == nil && (output == nil || output.Validate(obj) == nil) {
		res.StructuredContent = json.RawMessage(text)
	}
	res.SetError(err)
	return res
}

// unknownTool is the go-sdk's own answer to a call of a tool its server does
// not have (mcp.Server's callTool): a protocol error, invalid params,
// "unknown tool <name>". A caller who lacks a tool's permission gets exactly
// this, so a call cannot tell a hidden tool from one that does not exist.
func unknownTool(name string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", name)}
}

// shownIn is where the gate shows the caller of req an ask's check code, as
// the ask page names it. The caller's host is named by the name its client
// gave (clientInfo.name, printable characters only, at most 64), or "this
// chat": it shows the code in its elicitation or beside the running call
// (progress). Without either, the code goes as a log message, which a host
// shows in its log: "the log of" the host.
func shownIn(req *mcp.CallToolRequest, elicited bool) string {
	name := strings.Map(func(r rune) rune {
		if unicode.IsGraphic(r) {
			return r
		}
		return -1
	}, ClientName(req))
	if name = strings.TrimSpace(name); utf8.RuneCountInString(name) > 64 {
		name = ""
	}
	switch {
	case elicited || req.Params.GetProgressToken() != nil:
		if name == "" {
			return "this chat"
		}
		return name
	case name == "":
		return "the host's log"
	}
	return "the log of " + name
}

// showTicket tells the caller of req, while its call waits, the ask's check
// code and page: the person picks the code there before they approve, and a
// caller whose client takes no URL elicitation has no other way to see it.
// It goes as a progress notification when the call carries a progress token
// (hosts show it beside the running call), else as a log message
// (notifications/message, level warning: the call is held until a person
// acts; the go-sdk sends it only once the client has set a log level).
func showTicket(ctx context.Context, req *mcp.CallToolRequest, t Ticket) {
	ss := req.Session
	if ss == nil {
		return
	}
	msg := req.Params.Name + " waits for a person's approval at " + t.URL
	if t.CheckCode != "" {
		msg = req.Params.Name + " waits for a person's approval: check code " + t.CheckCode + ", which they pick at " + t.URL
	}
	if token := req.Params.GetProgressToken(); token != nil {
		if err := ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Message: msg}); err != nil {
			slog.Warn("gate: tell the caller the check code", "err", err)
		}
		return
	}
	data := map[string]string{"message": msg, "approval": t.ID, "url": t.URL}
	if t.CheckCode != "" {
		data["check_code"] = t.CheckCode
	}
	if err := ss.Log(ctx, &mcp.LoggingMessageParams{Level: "warning", Logger: "countersign-gate", Data: data}); err != nil {
		slog.Warn("gate: tell the caller the check code", "err", err)
	}
}
