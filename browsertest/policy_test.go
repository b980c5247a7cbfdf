package browsertest

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
)

// reviewAsk is a review ask for the owners and admins with title.
func reviewAsk(title string) map[string]any {
	return map[string]any{
		"kind": "review", "title": title, "summary": "A short read of a docs page.",
		"approve_means": "I mark the review done", "deny_means": "The review waits",
		"payload": map[string]any{"review": map[string]any{"url": "https://docs.example.com/" + strings.ReplaceAll(strings.ToLower(title), " ", "-")}},
	}
}

// fileAsk files an ask over MCP and returns the answer, checking its status.
func (s *service) fileAsk(args map[string]any, status string) map[string]any {
	s.t.Helper()
	out := s.agent.OK("approvals_create", args)
	if out["status"] != status {
		s.t.Fatalf("%q came back %v, want %s", args["title"], out["status"], status)
	}
	return out
}

func TestAPersonTurnsAutoApproveOnWithAPasskeyAndOffOnThePolicyPage(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := start(t, db)
		s.signUp("ada", core.RoleOwner)
		p := s.page

		// The agent asks; the request waits in ada's inbox like any ask.
		end := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Second)
		req := s.agent.OK("approvals_request_auto_approve", map[string]any{
			"until": end.Format(time.RFC3339), "device": "mac", "scope": map[string]any{"ask_kinds": []string{"review"}},
		})
		id, _ := req["approval_id"].(string)
		sha, _ := req["payload_sha256"].(string)
		title, _ := req["title"].(string)
		if id == "" || req["status"] != "pending" || req["kind"] != "auto_approve" {
			t.Fatalf("approvals_request_auto_approve answered %v", req)
		}

		// She reads what it turns on before she signs.
		s.openFromInbox(id, title)
		if got := p.Text("[data-testid=policy-kinds]"); !strings.Contains(got, "New asks of kind review") {
			t.Errorf("what is approved reads %q", got)
		}
		if got := p.Text("[data-testid=policy-requesters]"); !strings.Contains(got, "anyone") {
			t.Errorf("for whom reads %q", got)
		}
		if got := p.Attr("[data-testid=policy-until] time[data-countdown]", "datetime"); got != end.Format(time.RFC3339) {
			t.Errorf("the countdown runs to %q, want %s", got, end.Format(time.RFC3339))
		}
		if got := p.Text("[data-testid=policy-until] time[data-countdown]"); !strings.HasSuffix(got, "left") {
			t.Errorf("the countdown shows %q", got)
		}
		always := p.Text("[data-testid=policy-always-asks]")
		for _, w := range []string{"merges", "releases", "runs", "security", "finance", "legal", "deletes", "classified material", "permission or policy changes", "decision asks"} {
			if !strings.Contains(always, w) {
				t.Errorf("what always keeps asking leaves out %q:\n%s", w, always)
			}
		}
		if got := shownHash(p); got != sha {
			t.Errorf("the page shows payload hash %q, want %q", got, sha)
		}

		// Face ID: the virtual authenticator signs the approval.
		s.answer(id, "[data-testid=approve]")
		s.checkDecided("approved", "Approved", "ada")
		signed := s.checkGet(id, "approved", "approve", "ada", "")
		s.checkProof(signed["proof"], id, sha, "approve", "ada")
		policy := s.agent.OK("approvals_get_auto_approve_policy", map[string]any{})["policy"].(map[string]any)
		policyID, _ := policy["policy_id"].(string)
		creds := p.Credentials()
		if len(creds) != 1 || policy["active"] != true || policy["signed_by"] != "ada" || policy["approval_id"] != id ||
			policy["credential_id"] != base64.RawURLEncoding.EncodeToString(creds[0].CredentialID) || !strings.HasPrefix(policyID, "pol_") {
			t.Fatalf("the policy after ada signed: %v", policy)
		}

		// A matching ask is approved at once, in ada's name, by the policy.
		matching := s.fileAsk(reviewAsk("Read the onboarding doc"), "approved")
		got := s.get(matching["approval_id"].(string))
		if got["status"] != "approved" || got["decided_by"] != "ada" {
			t.Fatalf("approvals_get of the matching ask = %v by %v", got["status"], got["decided_by"])
		}
		found := false
		for _, e := range got["timeline"].([]any) {
			ev := e.(map[string]any)
			if ev["step"] == "auto_approved" && ev["by"] == "policy" && ev["actor"] == policyID && strings.Contains(ev["note"].(string), "ada") {
				found = true
			}
		}
		if !found {
			t.Errorf("the matching ask's timeline does not show the policy %s and its signer: %v", policyID, got["timeline"])
		}
		// An always-ask ask keeps asking.
		kept := s.fileAsk(reviewAsk("Delete the old bucket"), "pending")

		// The policy page, from the nav: on, with its count and the ask it approved.
		p.Go("/")
		p.ClickToLoad("nav a[href='/policies']", "/policies", "[data-testid=policy]")
		if state := p.Attr("[data-testid=policy]", "data-policy-state"); state != "active" {
			p.Fatalf("the policy page shows the policy %q, want active", state)
		}
		if n := p.Text("[data-testid=approved-count]"); n != "1" {
			t.Errorf("approved count %q, want 1", n)
		}
		if n := p.Count(fmt.Sprintf("[data-testid=policy-approved] a[href='/approvals/%s']", matching["approval_id"])); n != 1 {
			t.Errorf("the asks it approved do not link to %s", matching["approval_id"])
		}
		if n := p.Count(fmt.Sprintf("[data-testid=policy-approved] a[href='/approvals/%s']", kept["approval_id"])); n != 0 {
			t.Errorf("the asks it approved list the ask that kept asking")
		}

		// Revoke, with a note.
		p.Type("[data-testid=revoke-note]", "done for today")
		p.ClickToLoad("[data-testid=revoke-policy]", "/policies", "[data-testid=policy]")
		if state := p.Attr("[data-testid=policy]", "data-policy-state"); state != "revoked" {
			p.Fatalf("after the revoke the page shows the policy %q, want revoked", state)
		}
		if got := p.Text("[data-testid=policy-revoked]"); !strings.Contains(got, "by ada") || !strings.Contains(got, "done for today") {
			t.Errorf("the page says it was turned off: %q", got)
		}
		if n := p.Count("[data-testid=revoke-policy]"); n != 0 {
			t.Errorf("a revoked policy still offers a revoke button")
		}
		off := s.agent.OK("approvals_get_auto_approve_policy", map[string]any{})["policy"].(map[string]any)
		if off["active"] != false || off["inactive_reason"] != "revoked" || off["revoked_by"] != "ada" {
			t.Errorf("approvals_get_auto_approve_policy after the revoke: %v", off)
		}
		s.fileAsk(reviewAsk("Read the glossary"), "pending")
	})
}
