package gate

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Declaration is what a tool declares besides its schema and handler: the
// permission a caller must hold, the audit label of a call, and which calls
// need a person's approval.
type Declaration[In any] struct {
	// Permission a caller must hold to see and call the tool; "" is none.
	Permission string
	// Audit labels a call for the audit log ("case:42"); nil labels none.
	Audit func(In) string
	// Approval says which calls wait for a person; the zero Rule, none.
	Approval Rule[In]
	// Editable names the arguments the person may change before they
	// approve (see ApprovalRequest.Editable).
	Editable []string
}

// Tool is a tool declared with Define, ready for NewServer.
type Tool struct {
	gov *governed
	add func(*mcp.Server)
}

// Define declares a typed tool: t and h as mcp.AddTool takes them, with d's
// permission, audit label and approval rule. The approval rule sees the
// arguments exactly as the handler will: validated against the input schema,
// with its defaults applied.
func Define[In, Out any](t *mcp.Tool, h mcp.ToolHandlerFor[In, Out], d Declaration[In]) Tool {
	gov := &governed{name: t.Name, permission: d.Permission, asks: d.Approval.Asks(), needsApproval: d.Approval.need, editable: d.Editable}
	if d.Audit != nil {
		gov.label = labeller(d.Audit)
	}
	return Tool{gov: gov, add: func(s *mcp.Server) { mcp.AddTool(s, t, h) }}
}

// decodeArgs reads arguments as the go-sdk hands them to a typed handler:
// into a JSON object, with the schema's defaults applied and validated, then
// into In.
func decodeArgs[In any](args json.RawMessage, input *jsonschema.Resolved) (In, error) {
	var in In
	m := map[string]any{}
	if len(args) > 0 {
		if err := json.Unmarshal(args, &m); err != nil {
			return in, fmt.Errorf("the arguments must be a JSON object: %w", err)
		}
		if m == nil {
			m = map[string]any{}
		}
	}
	if input != nil {
		if err := input.ApplyDefaults(&m); err != nil {
			return in, err
		}
		if err := input.Validate(m); err != nil {
			return in, err
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return in, err
	}
	if err := json.Unmarshal(b, &in); err != nil {
		return in, err
	}
	return in, nil
}

// NewServer builds an MCP server of tools declared with Define, governed by
// opts. It fails, before serving anything, when a tool needs approval and
// opts has no OnApproval.
func NewServer(impl *mcp.Implementation, serverOpts *mcp.ServerOptions, opts Options, tools ...Tool) (*mcp.Server, error) {
	srv := mcp.NewServer(impl, serverOpts)
	byName := map[string]*governed{}
	for _, t := range tools {
		if _, dup := byName[t.gov.name]; dup {
			return nil, fmt.Errorf("gate: tool %s is declared twice", t.gov.name)
		}
		byName[t.gov.name] = t.gov
		t.add(srv)
	}
	g, err := newGovernor(impl.Name, opts, byName)
	if err != nil {
		return nil, err
	}
	if err := install(context.Background(), srv, g); err != nil {
		return nil, err
	}
	return srv, nil
}

// Rules are what Gate puts in front of tools somebody else wrote, keyed by
// tool name: the permission each needs, which calls need a person, and how a
// call is labelled in the audit log. The approval map is keyed exactly like
// the permissions.
type Rules struct {
	Permissions map[string]string
	Approval    map[string]Rule[Args]
	Labels      map[string]func(Args) string
	// Editable names, per tool, the arguments a person may change before
	// they approve.
	Editable map[string][]string
}

// Gate puts rules and opts in front of the tools srv already has: putting a
// person in front of somebody else's destructive tool. It fails when a rule
// names a tool srv does not offer, or a rule needs approval and opts has no
// OnApproval. Call it after the tools are added and before serving; set
// opts.Server to name the server in approval requests.
func Gate(ctx context.Context, srv *mcp.Server, opts Options, rules Rules) error {
	byName := map[string]*governed{}
	entry := func(name string) *governed {
		if byName[name] == nil {
			byName[name] = &governed{name: name, needsApproval: func(json.RawMessage, *jsonschema.Resolved) (bool, error) { return false, nil }}
		}
		return byName[name]
	}
	for name, p := range rules.Permissions {
		entry(name).permission = p
	}
	for name, label := range rules.Labels {
		entry(name).label = labeller(label)
	}
	for name, rule := range rules.Approval {
		e := entry(name)
		e.asks, e.needsApproval = rule.Asks(), rule.need
	}
	for name, args := range rules.Editable {
		entry(name).editable = args
	}
	g, err := newGovernor("", opts, byName)
	if err != nil {
		return err
	}
	return install(ctx, srv, g)
}

// install lists srv's tools over an in-memory session, so the gate knows
// their schemas from the first call, checks that every rule names one of
// them, and puts the gate's middleware in front of them.
func install(ctx context.Context, srv *mcp.Server, g *governor) error {
	tools, err := listTools(ctx, srv)
	if err != nil {
		return fmt.Errorf("gate: list the server's tools: %w", err)
	}
	offered := map[string]bool{}
	for _, t := range tools {
		offered[t.Name] = true
	}
	var missing []string
	for name := range g.tools {
		if !offered[name] {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return fmt.Errorf("gate: the rules name %s, which the server does not offer", strings.Join(missing, ", "))
	}
	if err := g.learn(tools); err != nil {
		return err
	}
	srv.AddReceivingMiddleware(g.middleware)
	return nil
}

func listTools(ctx context.Context, srv *mcp.Server) ([]*mcp.Tool, error) {
	clientSide, serverSide := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, serverSide, nil)
	if err != nil {
		return nil, err
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "gate", Version: "1"}, nil).Connect(ctx, clientSide, nil)
	if err != nil {
		return nil, err
	}
	defer cs.Close()
	var tools []*mcp.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		tools = append(tools, t)
	}
	return tools, nil
}
