// Package proxy is `countersign gate`: an MCP server in front of somebody
// else's MCP server that offers the upstream's tools, resources and prompts
// under the same names and schemas, and holds the calls its rules name until
// a person approves them (package gate).
package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	"cel.dev/cel-go/cel"

	"github.com/countersign/countersign/ask"
	"github.com/countersign/countersign/mcp/gate"
)

// RulesFile is the rules JSON: the upstream's name on asks, how long a call
// waits, what a path means on the upstream, and per tool either true (every
// call asks) or a CEL predicate over args, with the path functions of
// PathLibrary.
//
// ask_life is how long the ask of a call lives when the caller's client
// takes URL elicitation and the call does not wait on its connection
// (gate.Options.AskLife; 10 minutes when not said).
//
//	{"server": "filesystem", "timeout": "45s", "ask_life": "10m",
//	 "paths": {"roots": ["/srv/fs"]},
//	 "tools": {"write_file": {"approval": "path.within(args.path, '/srv/fs/secret')"},
//	           "move_file": {"approval": "!path.within(args.destination, '/srv/fs/public')"},
//	           "edit_file": {"approval": true, "editable": ["edits"]}}}
//
// editable names the arguments of a tool the person may change before
// they approve: the call runs with their values.
type RulesFile struct {
	Server  string              `json:"server"`
	Timeout string              `json:"timeout"`
	AskLife string              `json:"ask_life"`
	Paths   PathsFile           `json:"paths"`
	Tools   map[string]ToolRule `json:"tools"`
}

// PathsFile says what a path means on the upstream, for path.clean and
// path.within: its allowed directories, absolute and in the order it was
// given them, against which it resolves relative paths, and the home
// directory `~` names there when it is not the gate's own (an upstream over
// HTTP on another host).
type PathsFile struct {
	Roots []string `json:"roots"`
	Home  string   `json:"home"`
}

// ToolRule is one tool's rule: approval is true, false, or a CEL
// expression; editable names the arguments a person may change.
type ToolRule struct {
	Approval json.RawMessage `json:"approval"`
	Editable []string        `json:"editable"`
}

// Rules are a rules file, compiled.
type Rules struct {
	Server   string
	Timeout  time.Duration // 0 when the file does not say
	AskLife  time.Duration // 0 when the file does not say
	Paths    PathOptions
	Approval map[string]gate.Rule[gate.Args]
	// Editable names, per tool, the arguments a person may change.
	Editable map[string][]string
	// Warnings are the rules that compare a path argument as a raw
	// string, in the order of their tools' names.
	Warnings []RuleWarning
}

// ParseRules reads and compiles a rules file; home is the directory `~`
// names when the file names none (the gate's own, which an upstream it
// starts inherits), or "" (a relative home counts as none). A predicate that does not compile, or is not a
// bool, is refused naming its tool, and so is a root or home that is not
// absolute.
func ParseRules(b []byte, home string) (*Rules, error) {
	var f RulesFile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("rules: %w", err)
	}
	r := &Rules{Server: f.Server, Approval: map[string]gate.Rule[gate.Args]{}, Editable: map[string][]string{}}
	var err error
	if f.Timeout != "" {
		d, err := time.ParseDuration(f.Timeout)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("rules: timeout %q is not a positive Go duration (45s, 2m)", f.Timeout)
		}
		r.Timeout = d
	}
	if f.AskLife != "" {
		d, err := time.ParseDuration(f.AskLife)
		if err != nil || d <= 0 || d > ask.MaxToolCallWait {
			return nil, fmt.Errorf("rules: ask_life %q is not a positive Go duration of at most %s (10m, 1h)", f.AskLife, ask.MaxToolCallWait)
		}
		r.AskLife = d
	}
	if r.Paths, err = readPaths(f.Paths, home); err != nil {
		return nil, err
	}
	env, err := cel.NewEnv(cel.Variable("args", cel.MapType(cel.StringType, cel.DynType)), PathLibrary(r.Paths))
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
			pred, ast, err := compile(env, expr)
			if err != nil {
				return nil, fmt.Errorf("rules: tool %s: approval predicate %q: %w", name, expr, err)
			}
			r.Approval[name] = gate.When(pred)
			r.Warnings = append(r.Warnings, rawPathComparisons(name, expr, ast)...)
		default:
			return nil, fmt.Errorf("rules: tool %s: approval must be true, false or a CEL predicate over args, not %s", name, raw)
		}
		if editable := f.Tools[name].Editable; len(editable) > 0 {
			if !r.Approval[name].Asks() {
				return nil, fmt.Errorf("rules: tool %s: editable arguments need approval: a call nobody approves has nobody to edit it", name)
			}
			for i, arg := range editable {
				if strings.TrimSpace(arg) == "" || slices.Contains(editable[:i], arg) {
					return nil, fmt.Errorf("rules: tool %s: editable[%d] %q is empty or named twice", name, i, arg)
				}
			}
			if len(editable) > ask.MaxEditable {
				return nil, fmt.Errorf("rules: tool %s: at most %d editable arguments", name, ask.MaxEditable)
			}
			r.Editable[name] = editable
		}
	}
	return r, nil
}

// readPaths checks the paths section, with home as the default home: the
// file's home, and each root once `~` is expanded, must be absolute; roots
// are kept clean, as the upstream keeps its allowed directories.
func readPaths(f PathsFile, home string) (PathOptions, error) {
	var o PathOptions
	switch {
	case f.Home != "" && !strings.HasPrefix(f.Home, "/"):
		return PathOptions{}, fmt.Errorf("rules: paths.home %q is not an absolute path", f.Home)
	case f.Home != "":
		o.Home = path.Clean(f.Home)
	case strings.HasPrefix(home, "/"):
		// A relative HOME names no folder: ~ paths then fail, and ask.
		o.Home = path.Clean(home)
	}
	for _, root := range f.Roots {
		// Clean with no roots reads only absolute paths and ~/….
		clean, err := PathOptions{Home: o.Home}.Clean(root)
		if err != nil {
			return PathOptions{}, fmt.Errorf("rules: paths.roots: %q is not an absolute path or one under the home directory", root)
		}
		o.Roots = append(o.Roots, clean)
	}
	return o, nil
}

// compile turns a CEL expression into a predicate over a call's arguments,
// and returns its checked AST. A predicate that fails at run time (a missing
// argument, a path that cannot be read) asks: when in doubt, a person
// decides.
func compile(env *cel.Env, expr string) (func(gate.Args) bool, *cel.Ast, error) {
	ast, iss := env.Compile(expr)
	if iss != nil && iss.Err() != nil {
		return nil, nil, iss.Err()
	}
	if ast.OutputType() != cel.BoolType && ast.OutputType() != cel.DynType {
		return nil, nil, fmt.Errorf("is a %s, not a bool", ast.OutputType())
	}
	prg, err := env.Program(ast)
	if err != nil {
		return nil, nil, err
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
	}, ast, nil
}
