package browsertest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/proof"
)

// Ten asks approved with one passkey prompt from the inbox: the virtual
// authenticator's sign count goes up by exactly one, every ask is approved
// and its proof verifies on its own from the list it carries, and a proof
// whose list lost an item does not. A tool call, which needs the agent's
// check code, is not offered for the batch, says why, and stays pending.
func TestTenAsksAreApprovedWithOnePasskeyPrompt(t *testing.T) {
	s := start(t, apptest.SQLite)
	s.signUp("ada", core.RoleOwner)
	var ids, hashes []string
	for i := range 10 {
		id, sha := s.ask(map[string]any{
			"kind": "review", "title": fmt.Sprintf("Review chapter %d", i+1), "approve_means": "I mark it reviewed", "deny_means": "It waits",
			"payload": map[string]any{"review": map[string]any{"url": fmt.Sprintf("https://docs.example.com/book/%d", i+1)}},
		})
		ids, hashes = append(ids, id), append(hashes, sha)
	}
	tool, _ := s.ask(map[string]any{
		"kind": "tool_call", "title": "Call write_file on filesystem", "approve_means": "The call runs once", "deny_means": "Nothing runs",
		"payload": map[string]any{"tool_call": map[string]any{"server": "filesystem", "tool": "write_file", "arguments": map[string]any{"path": "/tmp/x", "content": "x"}}},
	})

	p := s.page
	p.Go("/")
	p.WaitVisible("[data-testid=batch-bar]")
	if n := p.Count("[data-testid=batch-pick]"); n != 10 {
		p.Fatalf("%d asks offer a pick for the batch, want the 10 reviews", n)
	}
	toolRow := fmt.Sprintf("[data-approval-row=%s]", jsString(tool))
	if p.Count(toolRow+" [data-testid=batch-pick]") != 0 || !strings.Contains(p.Text(toolRow+" [data-testid=row-one-by-one]"), "check code") {
		p.Fatalf("the tool call's card offers a pick, or does not say it needs the check code: %q", p.Text(toolRow))
	}
	before := p.Credentials()[0].SignCount

	Eval[bool](p, `(document.querySelectorAll("input[data-batch]").forEach((i) => { i.checked = true; i.dispatchEvent(new Event("change")); }), true)`)
	if got := p.Text("[data-batch-count]"); got != "10 picked" {
		p.Fatalf("the bar says %q, want 10 picked", got)
	}
	Eval[bool](p, `window.browsertestClickedHere = true`)
	p.Click("[data-testid=batch-approve]")
	p.WaitFor("the inbox again after the batch", `!window.browsertestClickedHere && document.readyState === "complete"`)

	if after := p.Credentials()[0].SignCount; after != before+1 {
		t.Errorf("the passkey signed %v times for the batch, want once (sign count %v → %v)", after-before, before, after)
	}
	for i, id := range ids {
		got := s.checkGet(id, "approved", "approve", "ada", "")
		s.checkProof(got["proof"], id, hashes[i], "approve", "ada")
		raw, _ := json.Marshal(got["proof"])
		var pr proof.Proof
		if err := json.Unmarshal(raw, &pr); err != nil {
			t.Fatal(err)
		}
		if len(pr.Batch) != 10 || pr.Domain != proof.DomainBatch {
			t.Fatalf("the proof of %s carries a batch of %d under %q, want the 10 under %s", id, len(pr.Batch), pr.Domain, proof.DomainBatch)
		}
		drop := 9
		if i == 9 {
			drop = 0
		}
		pr.Batch = append(pr.Batch[:drop:drop], pr.Batch[drop+1:]...)
		if _, err := proof.Verify(&pr, proof.Expect{RPID: "localhost", Origin: s.env.URL}); err == nil {
			t.Errorf("the proof of %s verifies with an item of its batch dropped", id)
		}
	}
	if got := s.get(tool); got["status"] != "pending" {
		t.Errorf("the tool call is %v, want still pending", got["status"])
	}
}
