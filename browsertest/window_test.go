package browsertest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/ask"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/proof"
)

// toolCallAsk is a gated call of tool on the filesystem server, writing path.
func toolCallAsk(tool, path string) map[string]any {
	return map[string]any{
		"kind": "tool_call", "title": "Call " + tool + " on filesystem", "approve_means": "The call goes ahead once, as the gate asks it", "deny_means": "The call does not happen",
		"payload": map[string]any{"tool_call": map[string]any{"server": "filesystem", "tool": tool, "arguments": map[string]any{"path": path, "content": "hello"}}},
	}
}

// Ada approves a tool call "and the same for 30 minutes" with her passkey:
// the next call of the same tool on the same server is approved as it is
// filed, a call of another tool still asks, and the window shows on the
// Policies page until she turns it off there.
func TestAPersonApprovesAToolCallAndTheSameFor30Minutes(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := start(t, db)
		s.signUp("ada", core.RoleOwner)
		p := s.page
		id, sha := s.ask(toolCallAsk("write_file", "/tmp/notes.txt"))

		// The choice says whose asks of what it approves ahead, for 30
		// minutes unless she picks another length.
		s.openFromInbox(id, "Call write_file on filesystem")
		if got := p.Text("[data-window] [data-testid=window-what]"); !strings.Contains(got, "agent:bot's calls of write_file on filesystem") {
			t.Errorf("the window says it approves %q", got)
		}
		if got := Eval[string](p, `document.querySelector("[data-testid=window-minutes]").value`); got != "30" {
			t.Errorf("the length picked first is %q minutes, want 30", got)
		}
		if got := p.Text("[data-testid=window-minutes] option:checked"); got != "30 minutes" {
			t.Errorf("the length picked first reads %q", got)
		}
		accessible(p, "the ask page with its window")

		// A tool call is approved by the pick of its check code, here too.
		s.answer(id, "[data-testid=window-code-"+s.env.CheckCode(id)+"]")
		s.checkDecided("approved", "Approved", "ada")
		got := s.checkGet(id, "approved", "approve", "ada", "")
		window := ask.Window{Agent: "agent:bot", Kind: ask.KindToolCall, Minutes: 30, Target: ask.Target{Server: "filesystem", Tool: "write_file"}}.JSON()
		signed := s.checkProof(got["proof"], id, sha, proof.WindowDecision(window), "ada")
		if signed.Unsigned.ApproveFor != window {
			t.Errorf("the proof carries the window %q, want %q", signed.Unsigned.ApproveFor, window)
		}

		// The next call of write_file on filesystem, filed over MCP, is
		// approved as it is filed; a call of another tool still asks.
		same := s.fileAsk(toolCallAsk("write_file", "/tmp/more-notes.txt"), "approved")
		if same["decided_by"] != "ada" {
			t.Errorf("the call the window approved was decided by %v, want ada", same["decided_by"])
		}
		other := s.fileAsk(toolCallAsk("create_directory", "/tmp/notes"), "pending")

		// The window shows under Policies, with the ask it approved.
		p.Go("/")
		p.ClickToLoad("nav a[href='/policies']", "/policies", "[data-testid=windows]")
		if n := p.Count("[data-testid=window-row]"); n != 1 {
			p.Fatalf("the Policies page lists %d windows, want 1", n)
		}
		row := p.Text("[data-testid=window-row]")
		for _, want := range []string{"agent:bot's calls of write_file on filesystem", "Signed by ada", "Approved 1 ask"} {
			if !strings.Contains(row, want) {
				t.Errorf("the window's row leaves out %q:\n%s", want, row)
			}
		}
		if n := p.Count(fmt.Sprintf("[data-testid=window-row] a[href='/approvals/%s']", id)); n != 1 {
			t.Errorf("the window's row does not link to the ask it was opened from")
		}
		accessible(p, "the Policies page with a window")

		// Turned off, it approves nothing more.
		p.ClickToLoad("[data-testid=revoke-window]", "/policies", "[data-testid=no-windows]")
		s.fileAsk(toolCallAsk("write_file", "/tmp/last-notes.txt"), "pending")
		if got := s.get(other["approval_id"].(string)); got["status"] != "pending" {
			t.Errorf("the call of another tool is %v, want still pending", got["status"])
		}
		raw, _ := json.Marshal(s.get(id)["timeline"])
		if !strings.Contains(string(raw), "window turned off") {
			t.Errorf("the timeline of the ask the window was opened from does not say it was turned off: %s", raw)
		}
	})
}
