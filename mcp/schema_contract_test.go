package mcp_test

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
)

// schemaOf is a tool's input schema as tools/list sends it, decoded.
func schemaOf(t *testing.T, c *apptest.Client, tool string) map[string]any {
	t.Helper()
	list, err := c.Session.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	for _, tl := range list.Tools {
		if tl.Name == tool {
			b, _ := json.Marshal(tl.InputSchema)
			var s map[string]any
			if err := json.Unmarshal(b, &s); err != nil {
				t.Fatal(err)
			}
			return s
		}
	}
	t.Fatalf("tools/list has no %s", tool)
	return nil
}

func asSlice(v any) []any { s, _ := v.([]any); return s }

func asMap(v any) map[string]any { m, _ := v.(map[string]any); return m }

// requiredFor is what a host that reads approvals_create's schema takes as
// required for an ask of kind: the top-level required members, plus those
// of every if/then whose if names the kind; and for each member an object
// schema under then says must match one of several (anyOf), the members of
// the first of them.
func requiredFor(schema map[string]any, kind string) (top []string, nested map[string][]string) {
	top, nested = strs(schema["required"]), map[string][]string{}
	for _, cond := range asSlice(schema["allOf"]) {
		kinds := asSlice(asMap(asMap(asMap(asMap(cond)["if"])["properties"])["kind"])["enum"])
		if !slices.Contains(kinds, any(kind)) {
			continue
		}
		then := asMap(asMap(cond)["then"])
		top = append(top, strs(then["required"])...)
		for name, p := range asMap(then["properties"]) {
			if branches := asSlice(asMap(p)["anyOf"]); len(branches) > 0 {
				nested[name] = strs(asMap(branches[0])["required"])
			}
		}
	}
	return top, nested
}

// An agent that fills in exactly the members approvals_create's schema
// requires for a pull request, and no other, files its ask on the first try;
// and each of those members is one the server does require.
func TestAnAgentThatFillsExactlyTheSchemasRequiredMembersFilesAPullRequestAsk(t *testing.T) {
	env := apptest.Start(t, apptest.SQLite, nil)
	_, token := env.Agent(env.Account.ID, "newcomer")
	c := env.Connect(token)
	schema := schemaOf(t, c, "approvals_create")

	// What the agent would write for each member it knows it must send.
	values := map[string]any{
		"kind": "pull_request", "title": "Merge acme/web#910",
		"approve_means": "I merge #910; nothing rolls", "deny_means": "#910 stays open",
		"payload": map[string]any{"pull_request": map[string]any{"repo": "acme/web", "number": 910, "head": "4f1c2a9e0b7d3c5a8e6f1b2d4c9a7e3f5b8d0c1a", "title": "Fix logout"}},
		"plan_id": "plan_7", "plan_item": "item_3",
		"documents":         []any{map[string]any{"document_id": "doc_1", "space_id": "space_1", "version": 1}},
		"no_context_reason": "a one-line fix found in review",
	}
	top, nested := requiredFor(schema, "pull_request")
	for _, want := range []string{"kind", "title", "payload", "approve_means", "deny_means", "context"} {
		if !slices.Contains(top, want) {
			t.Errorf("a pull request's required members %v lack %s, which the server requires", top, want)
		}
	}
	args := map[string]any{}
	for _, name := range top {
		if members, ok := nested[name]; ok {
			obj := map[string]any{}
			for _, m := range members {
				obj[m] = values[m]
			}
			args[name] = obj
			continue
		}
		v, ok := values[name]
		if !ok {
			t.Fatalf("the schema requires %s, which no agent filing a pull request would know to send", name)
		}
		args[name] = v
	}
	if r := c.Call("approvals_create", args); r.IsError {
		t.Fatalf("an ask with exactly the schema's required members %v was refused: %s", slices.Sorted(maps.Keys(args)), r)
	}

	// And none of them is required by the schema alone.
	for _, name := range top {
		t.Run("without "+name, func(t *testing.T) {
			less := maps.Clone(args)
			delete(less, name)
			r := c.Call("approvals_create", less)
			if !r.IsError || r.Code != string(core.InvalidArgument) || r.Field != name {
				t.Errorf("without %s: %s, want INVALID_ARGUMENT on %s", name, r, name)
			}
		})
	}

	// A review needs no context, and the schema does not ask for it.
	if top, _ := requiredFor(schema, "review"); slices.Contains(top, "context") {
		t.Errorf("a review's required members %v hold context, which the server does not require", top)
	}
}

// No input schema takes null anywhere, and the server refuses null wherever
// a schema names a member, in depth too (scope.ask_kinds took null).
func TestNullIsRefusedWhereverAnInputSchemaNamesAMember(t *testing.T) {
	env := apptest.Start(t, apptest.SQLite, nil)
	_, token := env.Agent(env.Account.ID, "bot")
	c := env.Connect(token)
	list, err := c.Session.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	nested := 0
	for _, tool := range list.Tools {
		b, _ := json.Marshal(tool.InputSchema)
		if strings.Contains(string(b), `"null"`) {
			t.Errorf("%s's input schema takes null: %s", tool.Name, b)
		}
		schema := schemaOf(t, c, tool.Name)
		for parent, p := range asMap(schema["properties"]) {
			for child := range asMap(asMap(p)["properties"]) {
				field := parent + "." + child
				t.Run(tool.Name+" "+field+" null", func(t *testing.T) {
					args := map[string]any{parent: map[string]any{child: nil}}
					if tool.Name == "approvals_request_auto_approve" {
						args["until"] = "2099-01-01T00:00:00Z"
					}
					r := c.Call(tool.Name, args)
					if !r.IsError || r.Code != string(core.InvalidArgument) || r.Field != field || !strings.Contains(r.Text, "not null") {
						t.Errorf("%s with %s: null = %s, want INVALID_ARGUMENT on %s saying null is not taken", tool.Name, field, r, field)
					}
				})
				nested++
			}
		}
	}
	if nested < 3 {
		t.Fatalf("checked %d members in depth, want at least scope's three", nested)
	}
}
