package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/mcp/gate"
)

// Proxy is the server the caller talks to, in front of one upstream session.
type Proxy struct {
	// Server is what the caller connects to: the upstream's tools,
	// resources and prompts, gated.
	Server   *mcp.Server
	upstream *mcp.ClientSession
	log      *slog.Logger

	mu       sync.Mutex
	calls    uint64                    // calls forwarded with a progress token so far
	progress map[string]progressWaiter // the token sent upstream → who waits on it
	tools    map[string]bool
	prompts  map[string]bool
}

// progressWaiter is the caller's call, session and own progress token for
// one forwarded call. Each call goes upstream with a token of the proxy's, so
// that callers on different sessions who picked the same token do not hear
// each other's progress; the call's context puts the relayed progress on
// the call's own response stream over Streamable HTTP.
type progressWaiter struct {
	call    context.Context
	session *mcp.ServerSession
	token   any
}

// Options configure a proxy: its rules and the gate's options (the sink,
// the timeout, the audit sink, how a caller is known).
type Options struct {
	Rules *Rules
	Gate  gate.Options
	// Logger hears the proxy's warnings (slog.Default() when nil); the
	// SDK's server logs to it at WARN and above only (sdkLogger).
	Logger *slog.Logger
}

// Start connects to the upstream over t and builds the proxy in front of it.
// It fails when the upstream does not answer, or a rule names a tool the
// upstream does not offer.
func Start(ctx context.Context, t mcp.Transport, opts Options) (*Proxy, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	p := &Proxy{log: opts.Logger, progress: map[string]progressWaiter{}, tools: map[string]bool{}, prompts: map[string]bool{}}
	client := mcp.NewClient(&mcp.Implementation{Name: "countersign-gate", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: p.relayProgress,
		ToolListChangedHandler:      func(ctx context.Context, _ *mcp.ToolListChangedRequest) { p.logErr("sync tools", p.syncTools(ctx)) },
		PromptListChangedHandler: func(ctx context.Context, _ *mcp.PromptListChangedRequest) {
			p.logErr("sync prompts", p.syncPrompts(ctx))
		},
		ResourceListChangedHandler: func(ctx context.Context, _ *mcp.ResourceListChangedRequest) {
			p.logErr("sync resources", p.syncResources(ctx))
		},
		ResourceUpdatedHandler: func(ctx context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			p.logErr("relay a resource update", p.Server.ResourceUpdated(ctx, req.Params))
		},
	})
	session, err := client.Connect(ctx, t, nil)
	if err != nil {
		return nil, fmt.Errorf("the upstream MCP server does not answer: %w", err)
	}
	p.upstream = session
	init := session.InitializeResult()
	impl := &mcp.Implementation{Name: "upstream", Version: "0"}
	if init.ServerInfo != nil {
		impl = init.ServerInfo
	}
	caps := init.Capabilities
	if caps == nil {
		caps = &mcp.ServerCapabilities{}
	}
	serverOpts := &mcp.ServerOptions{Instructions: init.Instructions, Logger: sdkLogger(opts.Logger)}
	if caps.Resources != nil && caps.Resources.Subscribe {
		serverOpts.SubscribeHandler = func(ctx context.Context, req *mcp.SubscribeRequest) error {
			return session.Subscribe(ctx, req.Params)
		}
		serverOpts.UnsubscribeHandler = func(ctx context.Context, req *mcp.UnsubscribeRequest) error {
			return session.Unsubscribe(ctx, req.Params)
		}
	}
	p.Server = mcp.NewServer(impl, serverOpts)
	fail := func(err error) (*Proxy, error) {
		session.Close()
		return nil, err
	}
	if caps.Tools != nil {
		if err := p.syncTools(ctx); err != nil {
			return fail(err)
		}
	}
	if caps.Prompts != nil {
		if err := p.syncPrompts(ctx); err != nil {
			return fail(err)
		}
	}
	if caps.Resources != nil {
		if err := p.syncResources(ctx); err != nil {
			return fail(err)
		}
	}
	g := opts.Gate
	if opts.Rules != nil {
		if g.Server == "" {
			g.Server = opts.Rules.Server
		}
		if g.Server == "" {
			g.Server = impl.Name
		}
		if g.ApprovalTimeout == 0 {
			g.ApprovalTimeout = opts.Rules.Timeout
		}
		if g.AskLife == 0 {
			g.AskLife = opts.Rules.AskLife
		}
		if err := gate.Gate(ctx, p.Server, g, gate.Rules{Approval: opts.Rules.Approval, Editable: opts.Rules.Editable}); err != nil {
			return fail(err)
		}
	}
	return p, nil
}

// Close ends the upstream session (and stops a stdio upstream).
func (p *Proxy) Close() error { return p.upstream.Close() }

// Upstream is the session to the upstream server.
func (p *Proxy) Upstream() *mcp.ClientSession { return p.upstream }

func (p *Proxy) logErr(what string, err error) {
	if err != nil {
		p.log.Warn(what, "err", err)
	}
}

// syncTools offers the upstream's tools under the same names, descriptions
// and schemas, and drops those it no longer has.
func (p *Proxy) syncTools(ctx context.Context) error {
	seen := map[string]bool{}
	for t, err := range p.upstream.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("list the upstream's tools: %w", err)
		}
		seen[t.Name] = true
		p.Server.AddTool(t, p.callTool)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for name := range p.tools {
		if !seen[name] {
			p.Server.RemoveTools(name)
		}
	}
	p.tools = seen
	return nil
}

func (p *Proxy) syncPrompts(ctx context.Context) error {
	seen := map[string]bool{}
	for pr, err := range p.upstream.Prompts(ctx, nil) {
		if err != nil {
			return fmt.Errorf("list the upstream's prompts: %w", err)
		}
		seen[pr.Name] = true
		p.Server.AddPrompt(pr, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return p.upstream.GetPrompt(ctx, req.Params)
		})
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for name := range p.prompts {
		if !seen[name] {
			p.Server.RemovePrompts(name)
		}
	}
	p.prompts = seen
	return nil
}

func (p *Proxy) syncResources(ctx context.Context) error {
	read := func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return p.upstream.ReadResource(ctx, req.Params)
	}
	for r, err := range p.upstream.Resources(ctx, nil) {
		if err != nil {
			return fmt.Errorf("list the upstream's resources: %w", err)
		}
		p.Server.AddResource(r, read)
	}
	for rt, err := range p.upstream.ResourceTemplates(ctx, nil) {
		if err != nil {
			return fmt.Errorf("list the upstream's resource templates: %w", err)
		}
		p.Server.AddResourceTemplate(rt, read)
	}
	return nil
}

// callTool forwards a call upstream, with a progress token of its own in
// place of the caller's, and hands the upstream's result back as it is. A
// cancelled call cancels the upstream one.
func (p *Proxy) callTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	params := &mcp.CallToolParams{Meta: forwardedMeta(req.Params.Meta), Name: req.Params.Name, Arguments: req.Params.Arguments}
	if token := req.Params.GetProgressToken(); token != nil && req.Session != nil {
		p.mu.Lock()
		p.calls++
		upToken := fmt.Sprintf("countersign-gate-%d", p.calls)
		p.progress[upToken] = progressWaiter{call: ctx, session: req.Session, token: token}
		p.mu.Unlock()
		defer func() {
			p.mu.Lock()
			delete(p.progress, upToken)
			p.mu.Unlock()
		}()
		params.Meta = maps.Clone(params.Meta)
		params.SetProgressToken(upToken)
	}
	res, err := p.upstream.CallTool(ctx, params)
	if err != nil {
		if errors.Is(err, context.Canceled) && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	return res, nil
}

// forwardedMeta is the _meta of a caller's call as the gate sends it
// upstream: without the members of the protocol itself
// (io.modelcontextprotocol/…, which a 2026-07-28 caller sends on every
// request), which describe the caller's call to the gate, not the gate's
// upstream, whose own session speaks its own revision.
func forwardedMeta(meta mcp.Meta) mcp.Meta {
	var out mcp.Meta
	for k, v := range meta {
		if strings.HasPrefix(k, "io.modelcontextprotocol/") {
			continue
		}
		if out == nil {
			out = mcp.Meta{}
		}
		out[k] = v
	}
	return out
}

// relayProgress hands an upstream progress notification to the caller
// waiting on its token, under the caller's own token. Progress that comes in
// once the call has answered is dropped (the SDK may hand the client a
// notification after the response it preceded): nothing may follow a
// result.
func (p *Proxy) relayProgress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	upToken, _ := req.Params.ProgressToken.(string)
	p.mu.Lock()
	w, ok := p.progress[upToken]
	p.mu.Unlock()
	if !ok {
		return
	}
	params := *req.Params
	params.ProgressToken = w.token
	if err := w.session.NotifyProgress(w.call, &params); err != nil && w.call.Err() == nil {
		p.log.Warn("relay progress", "err", err)
	}
}
