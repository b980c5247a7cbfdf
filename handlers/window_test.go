package handlers_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/policy"
)

// approveFor has b approve the ask id and the same for minutes: the
// challenge, the passkey's signature, the decision. The answer is that of
// the decide call, or of the challenge when it refused.
func approveFor(b *apptest.Browser, id string, minutes int) apptest.Response {
	ch := b.Post("/approvals/"+id+"/challenge", map[string]any{"decision": "approve_for", "minutes": minutes})
	if ch.Status != http.StatusOK {
		return ch
	}
	ceremony, options := ch.Ceremony()
	return b.DecideWith(id, ceremony, b.Sign(options))
}

// The ask page offers "Approve, and the same for…" where a window may
// cover the ask; the server checks the length and the kind before any
// passkey prompt; the signed window approves the next ask of the same URL.
func TestAWindowIsOpenedFromTheAskPageWithAPasskey(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := newScene(t, db, nil)
		id, _ := s.reviewAsk(t, "Read the onboarding doc")
		_, doc, _ := page(t, s.owner, "/approvals/"+id)
		if got := squash(textOf(one(t, one(t, doc, "window"), "window-what"))); !strings.Contains(got, "agent:bot's reviews of https://docs.example.com/Read%20the%20onboarding%20doc") {
			t.Errorf("the window says it approves %q", got)
		}
		pr := s.agent.OK("approvals_create", map[string]any{
			"kind": "pull_request", "title": "Merge acme/web#900", "approve_means": "I merge it", "deny_means": "It stays open",
			"payload": map[string]any{"pull_request": map[string]any{"repo": "acme/web", "number": 900, "head": "abcdef1234567", "title": "Fix"}},
			"context": map[string]any{"no_context_reason": "a test"},
		})["approval_id"].(string)
		if _, doc, _ := page(t, s.owner, "/approvals/"+pr); len(elements(doc, byAttr("data-testid", "window"))) != 0 {
			t.Errorf("a pull request's page offers a window")
		}

		for _, tc := range []struct {
			name, id string
			minutes  int
			field    string
		}{
			{"a length not on the menu", id, 45, "minutes"},
			{"no length", id, 0, "minutes"},
			{"a pull request", pr, 30, "decision"},
		} {
			r := s.owner.Post("/approvals/"+tc.id+"/challenge", map[string]any{"decision": "approve_for", "minutes": tc.minutes})
			if r.Status != http.StatusBadRequest || r.Code() != string(core.InvalidArgument) || r.Field() != tc.field {
				t.Errorf("%s: challenge = %s, want 400 INVALID_ARGUMENT on %s", tc.name, r, tc.field)
			}
		}

		if r := approveFor(s.owner, id, 60); r.Status != http.StatusOK || r.Body["status"] != "approved" {
			t.Fatalf("ada approves for an hour: %s", r)
		}
		rows, _, err := s.env.Store.PolicyList(context.Background(), s.env.Account.ID, policy.PolicyFilter{Covers: policy.CoversWindow})
		if err != nil || len(rows) != 1 || rows[0].ApprovalID != id || !rows[0].Active || !rows[0].ExpiresAt.Equal(rows[0].SignedAt.Add(time.Hour)) {
			t.Fatalf("the windows = %+v (%v), want one from %s, on for an hour", rows, err, id)
		}
		if _, st := s.reviewAsk(t, "Read the onboarding doc"); st != "approved" {
			t.Errorf("the next review of the same URL is %s, want approved", st)
		}
		if _, st := s.reviewAsk(t, "Read the glossary"); st != "pending" {
			t.Errorf("a review of another URL is %s, want pending", st)
		}
	})
}

// The Policies page lists the windows on now; any member turns one off
// with the form's CSRF token, and nothing without it.
func TestAWindowIsTurnedOffOnThePoliciesPage(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := newScene(t, db, nil)
		ctx := context.Background()
		id, _ := s.reviewAsk(t, "Read the onboarding doc")
		if r := approveFor(s.owner, id, 30); r.Status != http.StatusOK {
			t.Fatalf("ada approves for 30 minutes: %s", r)
		}
		rows, _, err := s.env.Store.PolicyList(ctx, s.env.Account.ID, policy.PolicyFilter{Covers: policy.CoversWindow})
		if err != nil || len(rows) != 1 {
			t.Fatalf("the windows = %+v (%v)", rows, err)
		}
		winID := rows[0].ID
		bob := join(t, s.env, s.env.Account.ID, core.RoleMember, "bob")
		_, doc, _ := page(t, bob, "/policies")
		row := one(t, doc, "window-row")
		if attrOf(row, "data-window") != winID || !strings.Contains(squash(textOf(row)), "Signed by ada") {
			t.Errorf("the window's row is %q (%s)", squash(textOf(row)), attrOf(row, "data-window"))
		}
		if n := len(elements(doc, byAttr("data-testid", "no-policy"))); n != 1 {
			t.Errorf("a window shows as the account's auto-approve policy")
		}
		on := func(t *testing.T) bool {
			t.Helper()
			rows, _, err := s.env.Store.PolicyList(ctx, s.env.Account.ID, policy.PolicyFilter{Covers: policy.CoversWindow, State: policy.PolicyActive})
			if err != nil {
				t.Fatal(err)
			}
			return len(rows) == 1
		}
		path := "/policies/" + winID + "/revoke"
		if status, _, _ := postForm(t, bob, path, url.Values{}, ""); status != http.StatusForbidden || !on(t) {
			t.Fatalf("POST %s without CSRF: %d; the window must stay on", path, status)
		}
		if status, _, _ := postForm(t, bob, "/policies/pol_nope/revoke", url.Values{}, bob.CSRF); status != http.StatusNotFound || !on(t) {
			t.Fatalf("POST for no window: %d, want 404 and the window on", status)
		}
		if status, location, _ := postForm(t, bob, path, url.Values{}, bob.CSRF); status != http.StatusSeeOther || location != "/policies" || on(t) {
			t.Fatalf("POST %s: %d to %q; want 303 to /policies and the window off", path, status, location)
		}
		if _, doc, _ := page(t, bob, "/policies"); len(elements(doc, byAttr("data-testid", "no-windows"))) != 1 {
			t.Errorf("the Policies page still lists a window after it was turned off")
		}
		if _, st := s.reviewAsk(t, "Read the onboarding doc"); st != "pending" {
			t.Errorf("a review of the window's URL after it was turned off is %s, want pending", st)
		}
	})
}
