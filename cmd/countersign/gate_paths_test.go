package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/apptest/gatetest"
	"github.com/countersign/countersign/mcp/gate"
	"github.com/countersign/countersign/mcp/gate/proxy"
	"github.com/countersign/countersign/models/asks"
)

// A rule that compares a path argument as a raw string is warned of at
// start, naming the rule and what to write instead; a rule with
// path.within is not.
func TestTheGateWarnsAtStartOfARuleThatComparesAPathAsARawString(t *testing.T) {
	rules := writeRules(t, `{"server": "files", "tools": {
		"write_file": {"approval": "args.path.startsWith('/srv/fs/secret')"},
		"move_file": {"approval": "path.within(args.destination, '/srv/fs/secret')"}}}`)
	var stderr strings.Builder
	// No COUNTERSIGN_URL: the start stops after the rules are read.
	err := gateCommand(context.Background(), []string{"--rules", rules, "--", "true"},
		func(string) string { return "" }, strings.NewReader(""), io.Discard, &stderr)
	if err == nil || !strings.Contains(err.Error(), "COUNTERSIGN_URL") {
		t.Fatalf("gate = %v, want the refusal for want of COUNTERSIGN_URL", err)
	}
	var warnings []string
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		if strings.Contains(line, "level=WARN") {
			warnings = append(warnings, line)
		}
	}
	if len(warnings) != 1 {
		t.Fatalf("warnings = %q, want one, for write_file", warnings)
	}
	for _, want := range []string{"a rule compares a path as a raw string", "tool=write_file", "rule=args.path.startsWith('/srv/fs/secret')",
		"argument=args.path", "function=startsWith", `use="path.within(args.path, '/the/folder')"`, "rules=" + rules} {
		if !strings.Contains(warnings[0], want) {
			t.Errorf("the warning %q does not say %q", warnings[0], want)
		}
	}
}

// With path.within in its rules, countersign gate in front of the npm
// filesystem server asks for every spelling of a path in the folder it
// guards that got through a startsWith rule (issue 20): .., //, /./, a
// capitalised folder left with .., ~/../../, a move_file destination with
// .., and a relative path. Nothing is written while the ask is open; ada
// approves, and the file lands in the guarded folder, so each spelling
// really names it. A path beside the folder with the same prefix, and one
// in another folder, are not asked about. Every audit line carries the
// hash of the call's arguments.
func TestTheGateAsksForEverySpellingOfAPathInTheFolderItGuards(t *testing.T) {
	gatetest.FilesystemServer(t)
	env, ada := serviceWithAda(t)
	_, token := env.Agent(env.Account.ID, "gate")
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root, home := filepath.Join(base, "fs"), filepath.Join(base, "home", "ada")
	secret := filepath.Join(root, "secret")
	for _, dir := range []string{secret, filepath.Join(root, "secretive"), filepath.Join(root, "public"), home} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "public", "m.txt"), []byte("moved"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The gate and the server it starts read ~ from HOME.
	t.Setenv("HOME", home)
	quoted := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	rules := writeRules(t, `{"server": "filesystem", "paths": {"roots": [`+quoted(root)+`]}, "tools": {
		"write_file": {"approval": `+quoted("path.within(args.path, '"+secret+"')")+`},
		"move_file": {"approval": `+quoted("path.within(args.source, '"+secret+"') || path.within(args.destination, '"+secret+"')")+`}}}`)
	auditLog := filepath.Join(t.TempDir(), "audit.jsonl")
	session := gatetest.Start(t, gatetest.Setup{Env: env, Binary: binary, Person: passkeyPerson{ada}}, token, rules, root, auditLog)

	tests := []struct {
		name, tool string
		args       map[string]any
		lands      string // the file the call writes, relative to root
		wantAsk    bool
	}{
		{"a .. from a sibling folder", "write_file", map[string]any{"path": root + "/public/../secret/dotdot.txt"}, "secret/dotdot.txt", true},
		{"a doubled slash", "write_file", map[string]any{"path": root + "//secret/slashes.txt"}, "secret/slashes.txt", true},
		{"a /./", "write_file", map[string]any{"path": root + "/./secret/dot.txt"}, "secret/dot.txt", true},
		{"a capitalised folder left with ..", "write_file", map[string]any{"path": root + "/SECRET/../secret/case.txt"}, "secret/case.txt", true},
		{"~/../../ from the home directory", "write_file", map[string]any{"path": "~/../../fs/secret/home.txt"}, "secret/home.txt", true},
		{"a move_file destination with ..", "move_file", map[string]any{"source": root + "/public/m.txt", "destination": root + "/public/../secret/m.txt"}, "secret/m.txt", true},
		{"a relative path, under the server's root", "write_file", map[string]any{"path": "secret/relative.txt"}, "secret/relative.txt", true},
		{"a sibling folder with the same prefix is not asked about", "write_file", map[string]any{"path": root + "/secretive/x.txt"}, "secretive/x.txt", false},
		{"another folder is not asked about", "write_file", map[string]any{"path": root + "/public/../public/ok.txt"}, "public/ok.txt", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.tool == "write_file" {
				tc.args["content"] = gatetest.Written
			}
			lands := filepath.Join(root, tc.lands)
			before := len(gatetest.AuditLines(t, auditLog))
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			done := make(chan *mcp.CallToolResult, 1)
			go func() {
				res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
				if err != nil {
					t.Errorf("call: %v", err)
				}
				done <- res
			}()
			approver := ""
			if tc.wantAsk {
				a := gatetest.OpenAsk(t, env)
				if _, err := os.Stat(lands); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("%s exists while the ask is open: %v", lands, err)
				}
				passkeyPerson{ada}.Answer(t, a, "approve")
				approver = "ada"
			}
			res := <-done
			if res == nil {
				return
			}
			if res.IsError {
				t.Fatalf("the call failed: %v", res.Content[0].(*mcp.TextContent).Text)
			}
			if _, err := os.Stat(lands); err != nil {
				t.Errorf("after the call %s is not there: %v", lands, err)
			}
			sent, err := json.Marshal(tc.args)
			if err != nil {
				t.Fatal(err)
			}
			hash, err := gate.ArgumentsHash(sent)
			if err != nil {
				t.Fatal(err)
			}
			gatetest.CheckAudit(t, gatetest.AuditLines(t, auditLog)[before:], map[string]any{
				"tool": tc.tool, "caller": "claude", "approver": approver, "phase": "allowed", "decision": "allow", "argumentsSha256": hash,
			})
			if !tc.wantAsk {
				list, _, err := env.Store.ListApprovals(context.Background(), env.Account.ID, asks.ListFilter{Status: "open"})
				if err != nil || len(list) != 0 {
					t.Errorf("open asks = %v, %v; want none", list, err)
				}
			}
		})
	}
}

// Every rules example we show, in docs/gate.md and in gate --help, reads, and
// compares paths only through path.within and path.clean: the gate warns of
// none of them.
func TestEveryRulesExampleComparesPathsWithThePathFunctions(t *testing.T) {
	page, err := os.ReadFile(filepath.Join("..", "..", "docs", "gate.md"))
	if err != nil {
		t.Fatal(err)
	}
	var help strings.Builder
	err = gateCommand(context.Background(), []string{"--help"}, func(string) string { return "" }, strings.NewReader(""), &help, io.Discard)
	if err != nil {
		help.WriteString(err.Error())
	}
	examples := map[string][]string{"docs/gate.md": nil, "gate --help": nil}
	for _, block := range strings.Split(string(page), "```json\n")[1:] {
		if block, _, _ = strings.Cut(block, "```"); strings.Contains(block, `"tools"`) {
			examples["docs/gate.md"] = append(examples["docs/gate.md"], block)
		}
	}
	if i := strings.Index(help.String(), `{"server"`); i >= 0 {
		var example json.RawMessage
		if err := json.NewDecoder(strings.NewReader(help.String()[i:])).Decode(&example); err != nil {
			t.Fatalf("the rules example of gate --help: %v", err)
		}
		examples["gate --help"] = []string{string(example)}
	}
	for where, blocks := range examples {
		if len(blocks) == 0 {
			t.Errorf("%s shows no rules example", where)
		}
		for _, block := range blocks {
			rules, err := proxy.ParseRules([]byte(block), "/Users/ada")
			if err != nil {
				t.Errorf("%s: %v\n%s", where, err, block)
				continue
			}
			if !strings.Contains(block, "path.within(") {
				t.Errorf("%s: the example uses no path.within:\n%s", where, block)
			}
			for _, w := range rules.Warnings {
				t.Errorf("%s: the example compares args.%s with %s: %s", where, w.Argument, w.Function, w.Expression)
			}
		}
	}
}
