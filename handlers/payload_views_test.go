package handlers_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/countersign/countersign/ask"

	"github.com/countersign/countersign/views"
)

// TestEveryAcceptedPayloadHasAView checks that every payload the validator
// accepts, with every member it knows, decodes into the ask page's view (the
// views use the validator's own payload types), and that a member the page
// does not know is refused, so the page falls back to the canonical text
// rather than hide it.
func TestEveryAcceptedPayloadHasAView(t *testing.T) {
	now := time.Now()
	sha := "0123456789abcdef0123456789abcdef01234567"
	roll := map[string]any{
		"deployments": []string{"web"}, "main_commit": sha, "running_commit": sha,
		"prs":        []any{map[string]any{"number": 1, "title": "Fix"}},
		"migrations": []string{"0042_add_index"}, "other_commits": []any{map[string]any{"sha": sha, "subject": "Tidy"}},
		"behind": 3, "gate_tree": "main", "gate": "ci green", "steps": []string{"canary", "all"}, "rollback": "redeploy previous",
	}
	for _, tc := range []struct {
		kind    string
		payload map[string]any
	}{
		{ask.KindPullRequest, map[string]any{"repo": "acme/web", "number": 900, "head": sha, "title": "Fix login"}},
		{ask.KindRoll, roll},
		{ask.KindReview, map[string]any{"url": "https://example.com/doc"}},
		{ask.KindDocument, map[string]any{"document_id": "doc_1", "space_id": "space_1", "version": 3}},
		{ask.KindDecision, map[string]any{"options": []string{"Ship Friday", "Ship Monday"}}},
		{ask.KindRun, map[string]any{
			"cmd": "./deploy.sh", "script_sha256": "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			"runner_id": "run_1", "argv": []string{"scripts/deploy.sh", "--fast"}, "effect": "remote",
			"runner_public_key": "ed25519:AAAA", "expires_at": now.Add(30 * time.Minute).Unix(), "asked_of": "ada", "roll": roll,
		}},
		{ask.KindToolCall, map[string]any{"server": "filesystem", "tool": "write_file", "arguments": map[string]any{"path": "/a", "content": "b"}}},
		{ask.KindAuthorization, map[string]any{"client": map[string]any{"id": "cli_1", "name": "Shop"}, "scope": "openid", "binding_message": "4711",
			"authorization_details": []any{map[string]any{"type": "countersign_action", "action": "Restart", "target": "db"}}}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			raw, _ := json.Marshal(map[string]any{tc.kind: tc.payload})
			p, err := ask.ParsePayload(tc.kind, raw, now)
			if err != nil {
				t.Fatalf("the validator refuses the full payload: %v", err)
			}
			view, err := views.DecodePayload(tc.kind, string(p.Canonical))
			if err != nil {
				t.Fatalf("the page cannot show a payload the validator accepts: %v", err)
			}
			if fmt.Sprint(view.PullRequest, view.Roll, view.Review, view.Document, view.Decision, view.Run, view.ToolCall, view.Authorization) == "<nil> <nil> <nil> <nil> <nil> <nil> <nil> <nil>" {
				t.Fatal("no view was filled")
			}
		})
	}
	if _, err := views.DecodePayload(ask.KindReview, `{"review":{"url":"https://example.com","hidden":"x"}}`); err == nil {
		t.Error("a member the page does not know decoded without error")
	}
}
