// Package proxy is `countersign gate`: an MCP server in front of somebody
// else's MCP server that offers the upstream's tools, resources and prompts
// under the same names and schemas, and holds the calls its rules name until
// a person approves them (package gate).
package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"cel.dev/cel-go/cel"

	"github.com/countersign/countersign/mcp/gate"
)

// RulesFile is the rules JSON: the upstream's name on asks, how long a call
// waits, and per tool either true (every call asks) or a CEL predicate over
// args.
//
//	{"server": "filesystem", "timeout": "45s",
//	 "tools": {"write_file": {"approval": true},
//	           "move_file": {"approval": "args.destination.startsWith('/etc')"}}}
type RulesFile struct {
	Server  string              `json:"server"`
	Timeout string              `json:"timeout"`
	Tools   map[string]ToolRule `json:"tools"`
}

// ToolRule is one tool's rule: approval is true, false, or a CEL expression.
type ToolRule struct {
	Approval json.RawMessage `json:"approval"`
}

// Rules are a rules file, compiled.
type Rules struct {
	Server   string
	Timeout  time.Duration // 0 when the file does not say
	Approval map[string]gate.Rule[gate.Args]
}

// ParseRules reads and compiles a rules file. A predicate that does not
// compile, or is not a bool, is refused naming its tool.
func ParseRules(b []byte) (*Rules, error) {
	var f RulesFile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("rules: %w", err)
	}
	r := &Rules{Server: f.Server, Approval: map[string]gate.Rule[gate.Args]{}}
	if f.Timeout != "" {
		d, err := time.ParseDuration(f.Timeout)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("rules: timeout %q is not a positive Go duration (45s, 2m)", f.Timeout)
		}
		r.Timeout = d
	}
	env, err := cel.NewEnv(cel.Variable("args", cel.MapType(cel.StringType, cel.DynType)))
	if err != nil {
		return nil, fmt.Errorf("rules: CEL environment: %w", err)
	}
	names := make([]string, 0, len(f.Tools))
	for name := range f.Tools {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		raw := bytes.TrimSpace(f.Tools[name].Approval)
		var always bool
		var expr string
		switch {
		case json.Unmarshal(raw, &always) == nil:
			if always {
				r.Approval[name] = gate.Always[gate.Args]()
			} else {
				r.Approval[name] = gate.Rule[gate.Args]{}
			}
		case json.Unmarshal(raw, &expr) == nil:
			pred, err := compile(env, expr)
			if err != nil {
				return nil, fmt.Errorf("rules: tool %s: approval predicate %q: %w", name, expr, err)
			}
			r.Approval[name] = gate.When(pred)
		default:
			return nil, fmt.Errorf("rules: tool %s: approval must be true, false or a CEL predicate over args, not %s", name, raw)
		}
	}
	return r, nil
}

// compile turns a CEL expression into a predicate over a call's arguments.
// A predicate that fails at run time (a missing argument, say) asks: when in
// doubt, a person decides.
func compile(env *cel.Env, expr string) (func(gate.Args) bool, error) {
	ast, iss := env.Compile(expr)
	if iss != nil && iss.Err() != nil {
		return nil, iss.Err()
	}
	if ast.OutputType() != cel.BoolType && ast.OutputType() != cel.DynType {
		return nil, fmt.Errorf("is a %s, not a bool", ast.OutputType())
	}
	prg, err := env.Program(ast)
	if err != nil {
		return nil, err
	}
	return func(args gate.Args) bool {
		if args == nil {
			args = gate.Args{}
		}
		out, _, err := prg.Eval(map[string]any{"args": args})
		if err != nil {
			return true
		}
		b, ok := out.Value().(bool)
		return !ok || b
	}, nil
}
