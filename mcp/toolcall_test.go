package mcp_test

import (
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
)

// toolCallAsk is an approvals_create argument set for a tool_call.
func toolCallAsk(tool string, arguments map[string]any) map[string]any {
	return map[string]any{
		"kind": "tool_call", "title": "Call " + tool + " on filesystem",
		"approve_means": "The call goes ahead once, with exactly these arguments", "deny_means": "The call is refused",
		"payload": map[string]any{"tool_call": map[string]any{"server": "filesystem", "tool": tool, "arguments": arguments}},
	}
}

func TestCreateAcceptsAToolCallWithCodedRefusals(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		env := apptest.Start(t, db, nil)
		_, token := env.Agent(env.Account.ID, "gate")
		c := env.Connect(token)
		out := c.OK("approvals_create", toolCallAsk("write_file", map[string]any{"path": "/srv/a.txt", "content": "hi"}))
		if out["kind"] != "tool_call" || out["status"] != "pending" {
			t.Fatalf("filed %v %v, want a pending tool_call", out["kind"], out["status"])
		}
		want := `{"tool_call":{"arguments":{"content":"hi","path":"/srv/a.txt"},"server":"filesystem","tool":"write_file"}}`
		if got := string(mustMarshal(t, out["payload"])); got != want {
			t.Errorf("payload = %s, want %s", got, want)
		}
		tests := []struct {
			name  string
			args  map[string]any
			field string
		}{
			{"a server of two lines", map[string]any{"server": "a\nb", "tool": "write_file", "arguments": map[string]any{}}, "payload.tool_call.server"},
			{"a tool that is not an MCP tool name", map[string]any{"server": "fs", "tool": "write file", "arguments": map[string]any{}}, "payload.tool_call.tool"},
			{"arguments that are a list", map[string]any{"server": "fs", "tool": "write_file", "arguments": []any{}}, "payload.tool_call.arguments"},
			{"arguments over 64 KiB", map[string]any{"server": "fs", "tool": "write_file", "arguments": map[string]any{"content": strings.Repeat("a", 64<<10)}}, "payload.tool_call.arguments"},
		}
		for _, tc := range tests {
			t.Run(tc.name+" is refused naming "+tc.field, func(t *testing.T) {
				args := toolCallAsk("write_file", nil)
				args["payload"] = map[string]any{"tool_call": tc.args}
				r := c.Call("approvals_create", args)
				if !r.IsError || r.Code != "INVALID_ARGUMENT" || r.Field != tc.field {
					t.Errorf("%s, want INVALID_ARGUMENT on %s", r, tc.field)
				}
			})
		}
	})
}

func TestAPolicyMayNameToolCallsAndADeleteToolKeepsAsking(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		w := newPolicyWorld(t, db)
		w.enable(t, map[string]any{"until": until(2 * time.Hour), "device": "mac", "scope": map[string]any{"ask_kinds": []string{"tool_call"}}})
		if p := w.policy(t); !strings.Contains(string(mustMarshal(t, p["scope"])), "tool_call") {
			t.Fatalf("the policy's scope = %v, want tool_call in it", p["scope"])
		}
		write := w.bot.OK("approvals_create", toolCallAsk("write_file", map[string]any{"path": "/srv/notes.txt", "content": "hi"}))
		if write["status"] != "approved" || write["decided_by"] != "ada" {
			t.Errorf("a write_file call under a tool_call policy = %v by %v, want approved by ada", write["status"], write["decided_by"])
		}
		for _, tool := range []string{"delete_case", "remove_file", "drop_table"} {
			ask := toolCallAsk(tool, map[string]any{"id": "42"})
			ask["title"] = "Call a tool" // the title alone says nothing of a delete
			kept := mustStayPending(t, w.bot, ask, tool+" keeps asking")
			if e := eventWith(t, timelineOf(t, kept), "policy_skipped"); e["note"] != "keeps asking: a delete" {
				t.Errorf("%s: policy_skipped note = %v, want a delete", tool, e["note"])
			}
		}
	})
}
