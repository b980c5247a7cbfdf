package mcp_test

import (
	"context"
	"testing"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
)

func prAsk(number int, head string) map[string]any {
	return map[string]any{
		"kind":          "pull_request",
		"title":         "Merge acme/web#900",
		"summary":       "Fixes the login redirect.",
		"approve_means": "I merge #900; nothing rolls",
		"deny_means":    "#900 stays open",
		"payload": map[string]any{"pull_request": map[string]any{
			"repo": "Acme/Web", "number": number, "head": head, "title": "Fix login redirect",
		}},
		"context": map[string]any{"plan_id": "plan_1", "plan_item": "item_2", "job_id": "job_42"},
	}
}

func TestAnAskGoesFromCreateToDone(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		env := apptest.Start(t, db, nil)
		_, token := env.Agent(env.Account.ID, "bot")
		owner := env.Member(env.Account.ID, "ada", core.RoleOwner)
		c := env.Connect(token)

		created := c.OK("approvals_create", prAsk(900, "abcdef1234567"))
		id := created["approval_id"].(string)
		if created["status"] != "pending" || created["requester"] != "agent:bot" {
			t.Fatalf("created = %v", created)
		}

		if _, err := env.Store.Decide(context.Background(), env.Account.ID, id, owner, asks.Decision{Verdict: asks.VerdictApprove}); err != nil {
			t.Fatalf("decide: %v", err)
		}
		got := c.OK("approvals_get", map[string]any{"approval_id": id})
		if got["status"] != "approved" || got["decided_by"] != "ada" || got["decision"] != "approve" {
			t.Fatalf("after approve: %v", got)
		}
		started := c.OK("approvals_add_progress", map[string]any{
			"approval_id": id, "step": "started", "expected_state": "approved", "observed": created["payload"],
		})
		if started["status"] != "in_progress" {
			t.Fatalf("after started: %v", started["status"])
		}
		c.OK("approvals_add_progress", map[string]any{"approval_id": id, "step": "step", "note": "merging"})
		done := c.OK("approvals_add_progress", map[string]any{"approval_id": id, "step": "done", "expected_state": "in_progress"})
		if done["status"] != "done" {
			t.Fatalf("after done: %v", done["status"])
		}
		steps := []string{}
		for _, e := range done["timeline"].([]any) {
			steps = append(steps, e.(map[string]any)["step"].(string))
		}
		want := []string{"created", "approved", "started", "step", "done"}
		if len(steps) != len(want) {
			t.Fatalf("timeline steps = %v, want %v", steps, want)
		}
		for i := range want {
			if steps[i] != want[i] {
				t.Fatalf("timeline steps = %v, want %v", steps, want)
			}
		}
		list := c.OK("approvals_list", map[string]any{"repo": " acme/WEB ", "number": 900, "head": "abcdef1234567", "job_id": "job_42"})
		if n := len(list["approvals"].([]any)); n != 1 {
			t.Fatalf("list by binding found %d, want 1", n)
		}
	})
}
