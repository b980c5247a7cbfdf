package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/apptest"
)

var update = flag.Bool("update", false, "rewrite testdata/tools.golden.json from the running tool surface")

// readTools are the tools that only read; every other tool writes.
var readTools = []string{"approvals_get", "approvals_list", "approvals_get_auto_approve_policy", "approval_status", "work_list"}

// imperativeVerbs are the words a tool description may start with.
var imperativeVerbs = []string{"Ask", "Read", "List", "Report", "Turn", "Start", "Send", "End"}

// toolNameInText finds what reads as a tool name in prose: a word that
// starts with "approvals_" (the prefix every tool name of seed 001 has). A
// word that only begins like one, such as the argument approval_id, or
// that is glued to a longer identifier, does not match.
var toolNameInText = regexp.MustCompile(`\bapprovals_[a-z][a-z0-9_]*`)

// unknownToolNames returns the tool names text mentions that are neither a
// tool nor an argument of one, in the order they appear.
func unknownToolNames(text string, tools, arguments []string) []string {
	var out []string
	for _, name := range toolNameInText.FindAllString(text, -1) {
		name = strings.TrimRight(name, "_")
		if !slices.Contains(tools, name) && !slices.Contains(arguments, name) {
			out = append(out, name)
		}
	}
	return out
}

// argumentNames lists every property name of the tools' input and output
// schemas, at any depth.
func argumentNames(tools []*sdk.Tool) []string {
	var names []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if props, ok := v["properties"].(map[string]any); ok {
				for k := range props {
					names = append(names, k)
				}
			}
			for _, sub := range v {
				walk(sub)
			}
		case []any:
			for _, sub := range v {
				walk(sub)
			}
		}
	}
	for _, tool := range tools {
		walk(tool.InputSchema)
		walk(tool.OutputSchema)
	}
	return names
}

// listedTools starts the service on SQLite and lists its tools as a client
// with every scope sees them, sorted by name, with the server's instructions.
func listedTools(t *testing.T) ([]*sdk.Tool, string) {
	t.Helper()
	env := apptest.Start(t, apptest.SQLite, nil)
	_, token := env.Agent(env.Account.ID, "bot")
	c := env.Connect(token)
	res, err := c.Session.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	tools := slices.Clone(res.Tools)
	slices.SortFunc(tools, func(a, b *sdk.Tool) int { return strings.Compare(a.Name, b.Name) })
	if len(tools) == 0 {
		t.Fatal("tools/list is empty")
	}
	return tools, c.Session.InitializeResult().Instructions
}

func TestEveryToolIsDescribedForAModel(t *testing.T) {
	tools, _ := listedTools(t)
	for _, tool := range tools {
		t.Run(tool.Name, func(t *testing.T) {
			if strings.TrimSpace(tool.Title) == "" {
				t.Error("has no title")
			}
			a := tool.Annotations
			if a == nil {
				t.Fatal("has no annotations")
			}
			if strings.TrimSpace(a.Title) == "" {
				t.Error("annotations have no title")
			}
			if readOnly := slices.Contains(readTools, tool.Name); a.ReadOnlyHint != readOnly {
				t.Errorf("readOnlyHint = %t, want %t", a.ReadOnlyHint, readOnly)
			} else if !readOnly && a.DestructiveHint == nil {
				t.Error("writes but leaves destructiveHint unset (clients then assume destructive)")
			}

			first, _, _ := strings.Cut(tool.Description, " ")
			if !slices.Contains(imperativeVerbs, first) {
				t.Errorf("description starts with %q, want an imperative verb of %v", first, imperativeVerbs)
			}
			if sentence, _, _ := strings.Cut(tool.Description, "."); strings.Contains(sentence, "\n") {
				t.Errorf("first sentence runs over lines: %q", sentence)
			}
			if !strings.Contains(tool.Description, "Do not use") {
				t.Error(`description does not say when not to use it ("Do not use …")`)
			}

			for name, schema := range map[string]any{"input": tool.InputSchema, "output": tool.OutputSchema} {
				s, ok := schema.(map[string]any)
				if !ok {
					t.Errorf("%s schema is %T, want a JSON object", name, schema)
					continue
				}
				if s["type"] != "object" {
					t.Errorf(`%s schema has type %v, want "object": MCP clients refuse any other top-level type`, name, s["type"])
				}
				if props, _ := s["properties"].(map[string]any); len(props) == 0 {
					t.Errorf("%s schema has no properties", name)
				}
			}
		})
	}
}

// descriptionsOf gathers every text a model reads about the tools: each
// tool's description, the descriptions inside its schemas, and the server's
// instructions, keyed by where they are.
func descriptionsOf(tools []*sdk.Tool, instructions string) map[string]string {
	texts := map[string]string{"instructions": instructions}
	var walk func(where string, v any)
	walk = func(where string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, sub := range v {
				if d, ok := sub.(string); ok && k == "description" {
					texts[where+".description"] = d
				} else {
					walk(where+"."+k, sub)
				}
			}
		case []any:
			for _, sub := range v {
				walk(where+"[]", sub)
			}
		}
	}
	for _, tool := range tools {
		texts[tool.Name] = tool.Description
		walk(tool.Name+".inputSchema", tool.InputSchema)
		walk(tool.Name+".outputSchema", tool.OutputSchema)
	}
	return texts
}

func TestTheToolNameCheckFindsOnlyNamesThatAreNoTool(t *testing.T) {
	tools := []string{"approvals_create", "approvals_get", "approvals_get_auto_approve_policy"}
	arguments := []string{"approval_id", "account_id", "approvals"}
	for _, tc := range []struct {
		text string
		want []string
	}{
		{"Read approvals_get on the returned approval_id.", nil},
		{"Then call approvals_get_auto_approve_policy, then approvals_create.", nil},
		{"Poll approvals_wait until it is decided.", []string{"approvals_wait"}},
		{"Next: approvals_get_policy (a name that is no tool).", []string{"approvals_get_policy"}},
		{"Filter the approvals by approval_id; approval_get is singular and no tool prefix.", nil},
		{"Use approvals_cancel or approvals_create_many.", []string{"approvals_cancel", "approvals_create_many"}},
		{"my_approvals_list and approvals_listing_2", []string{"approvals_listing_2"}},
		{"(approvals_create).", nil},
	} {
		got := unknownToolNames(tc.text, tools, arguments)
		if !slices.Equal(got, tc.want) {
			t.Errorf("unknownToolNames(%q) = %v, want %v", tc.text, got, tc.want)
		}
	}
}

func TestEveryToolADescriptionNamesExists(t *testing.T) {
	tools, instructions := listedTools(t)
	var known []string
	for _, tool := range tools {
		known = append(known, tool.Name)
	}
	arguments := argumentNames(tools)
	if !slices.Contains(arguments, "approval_id") || !slices.Contains(arguments, "account_id") {
		t.Fatalf("argument names %v lack approval_id or account_id: the gathering is broken", arguments)
	}
	mentioned := 0
	for where, text := range descriptionsOf(tools, instructions) {
		mentioned += len(toolNameInText.FindAllString(text, -1))
		for _, name := range unknownToolNames(text, known, arguments) {
			t.Errorf("%s mentions %s, which is no tool", where, name)
		}
	}
	if mentioned == 0 {
		t.Error("no description mentions any tool: the pattern or the gathering is broken")
	}
}

// toolSnapshot is what the golden file keeps of a tool.
type toolSnapshot struct {
	Name         string               `json:"name"`
	Description  string               `json:"description"`
	Annotations  *sdk.ToolAnnotations `json:"annotations"`
	InputSchema  any                  `json:"inputSchema"`
	OutputSchema any                  `json:"outputSchema"`
}

func TestToolSchemasSnapshot(t *testing.T) {
	tools, _ := listedTools(t)
	snap := make([]toolSnapshot, 0, len(tools))
	for _, tool := range tools {
		snap = append(snap, toolSnapshot{tool.Name, tool.Description, tool.Annotations, tool.InputSchema, tool.OutputSchema})
	}
	got, err := json.MarshalIndent(snap, "", "  ")
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	got = append(got, '\n')
	golden := filepath.Join("testdata", "tools.golden.json")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("read %s: %v (write it with: go test ./mcp -run TestToolSchemasSnapshot -update)", golden, err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the tool surface differs from %s; review the change, then rewrite it with: go test ./mcp -run TestToolSchemasSnapshot -update\n%s",
			golden, firstDifference(string(want), string(got)))
	}
}

// firstDifference shows the first line where two texts part, with its number.
func firstDifference(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("line %d:\n  golden: %s\n  now:    %s", i+1, wl, gl)
		}
	}
	return ""
}
