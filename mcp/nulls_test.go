package mcp_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
)

func TestNullIsAPlainCodedRefusalForEveryArgumentOfEveryTool(t *testing.T) {
	env := apptest.Start(t, apptest.SQLite, nil)
	_, token := env.Agent(env.Account.ID, "bot")
	c := env.Connect(token)
	list, err := c.Session.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	checked := 0
	for _, tool := range list.Tools {
		schema := tool.InputSchema.(map[string]any)
		props := schema["properties"].(map[string]any)
		var required []string
		req, _ := schema["required"].([]any)
		for _, r := range req {
			required = append(required, r.(string))
		}
		for name := range props {
			t.Run(tool.Name+" "+name+" null", func(t *testing.T) {
				args := map[string]any{name: nil}
				if tool.Name == "approvals_create" {
					args = withArgs(prAsk(900, "abcdef1234567"), name, nil)
				}
				r := c.Call(tool.Name, args)
				if !r.IsError || r.Code != string(core.InvalidArgument) || r.Field != name {
					t.Fatalf("%s with %s: null = %s, want INVALID_ARGUMENT on %s", tool.Name, name, r, name)
				}
				if !strings.Contains(r.Text, "not null") || strings.Contains(r.Text, "reflect") {
					t.Errorf("message %q, want a plain one saying null is not taken", r.Text)
				}
				if optional := !slices.Contains(required, name); optional != strings.Contains(r.Text, "leave an optional member out") {
					t.Errorf("message %q: an optional member's refusal says to leave it out, a required one's does not", r.Text)
				}
			})
			checked++
		}
	}
	if checked < 20 {
		t.Fatalf("checked %d arguments, want every argument of every tool", checked)
	}
	// The two the newcomer met.
	for _, name := range []string{"context", "payload"} {
		r := c.Call("approvals_create", withArgs(prAsk(900, "abcdef1234567"), name, nil))
		if want := name + ": must be an object, not null"; !strings.Contains(r.Text, want) {
			t.Errorf("%s: null answers %q, want it to say %q", name, r.Text, want)
		}
	}
}
