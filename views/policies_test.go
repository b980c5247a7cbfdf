package views_test

import (
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/countersign/countersign/views"
)

// autoApproveAsk is a pending auto_approve ask with payload.
func autoApproveAsk(t *testing.T, payload map[string]any) views.Ask {
	t.Helper()
	a := baseAsk(t)
	p, err := views.DecodePayload("auto_approve", mustJSON(t, map[string]any{"auto_approve": payload}))
	if err != nil {
		t.Fatal(err)
	}
	if p.AutoApprove == nil {
		t.Fatal("an auto_approve payload did not decode into its view")
	}
	a.Kind, a.Payload = "auto_approve", p
	return a
}

func TestTheAutoApproveAskSaysInWordsWhatTurnsOn(t *testing.T) {
	until := now.Add(6 * time.Hour)
	for _, tc := range []struct {
		name              string
		scope             map[string]any
		kinds, requesters string
	}{
		{"an empty scope reads every kind and anyone", map[string]any{"ask_kinds": []string{}, "max_priority": 0, "requesters": []string{}},
			"New asks of every kind a policy may cover", "Asks filed by anyone: every agent of this account"},
		{"a narrow scope names its kinds and requesters", map[string]any{"ask_kinds": []string{"review", "document"}, "max_priority": 0, "requesters": []string{"agent:docs", "agent:bot"}},
			"New asks of kind review, document", "Asks filed by agent:docs, agent:bot"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := autoApproveAsk(t, map[string]any{"scope": tc.scope, "until": until.Format(time.RFC3339), "requester": "agent:bot", "device": "mac"})
			_, doc := render(t, views.Approval(views.Page{Title: "ask"}, a))
			terms := findAll(doc, hasAttr("data-testid", "auto-approve-terms"))
			if len(terms) != 1 {
				t.Fatalf("%d auto-approve terms sections, want 1", len(terms))
			}
			read := func(id string) string {
				n := findAll(terms[0], hasAttr("data-testid", id))
				if len(n) != 1 {
					t.Fatalf("%d %s in the terms, want 1", len(n), id)
				}
				return strings.Join(strings.Fields(text(n[0])), " ")
			}
			if got := read("policy-kinds"); !strings.HasPrefix(got, tc.kinds) || !strings.Contains(got, "Priority at most 0") {
				t.Errorf("kinds read %q, want %q and the priority", got, tc.kinds)
			}
			if got := read("policy-requesters"); got != tc.requesters {
				t.Errorf("requesters read %q, want %q", got, tc.requesters)
			}
			if got := read("policy-until"); !strings.Contains(got, "2026-05-01 18:00 UTC") || !strings.Contains(got, "6h 0m left") {
				t.Errorf("until reads %q, want the time and a countdown of 6 hours", got)
			}
			items := findAll(terms[0], func(n *html.Node) bool { return n.Data == "li" })
			if len(items) != len(views.AlwaysAsking) {
				t.Errorf("%d always-ask items, want %d", len(items), len(views.AlwaysAsking))
			}
			if shown := text(doc); strings.Contains(shown, "canonical payload") {
				t.Errorf("the auto_approve payload fell back to its canonical text")
			}
		})
	}
}

func TestPolicyTextIsRenderedAsText(t *testing.T) {
	revoked := now.Add(-time.Minute)
	pol := views.PolicyView{ID: "pol_1", ApprovalID: "appr_1", Requester: xss, Device: xss, SignedBy: xss, CredentialID: xss,
		Scope: views.PolicyScope{AskKinds: []string{xss}, Requesters: []string{xss}}, SignedAt: now.Add(-time.Hour), ExpiresAt: now.Add(time.Hour),
		State: "revoked", Why: "revoked", RevokedAt: &revoked, RevokedBy: xss, RevokeNote: xss}
	pages := map[string]string{}
	pages["policies"], _ = render(t, views.Policies(views.Page{Title: "p"}, views.PoliciesView{Policy: &pol, Now: now,
		Approved: []views.PolicyAskRow{{ID: "appr_2", Title: xss, Kind: "review", Requester: xss, Status: "approved", At: now}}}))
	pages["admin"], _ = render(t, views.Policies(views.Page{Title: "p"}, views.PoliciesView{Now: now, IsAdmin: true,
		All: &views.AdminPoliciesView{Policies: []views.PolicyView{pol}, Now: now}}))
	for name, src := range pages {
		if strings.Contains(src, "<script>alert(1)</script>") {
			t.Errorf("the %s page renders a policy's text as markup", name)
		}
		if !strings.Contains(src, escapedXSS) {
			t.Errorf("the %s page does not show the escaped text", name)
		}
		if strings.Contains(src, `data-testid="revoke-policy"`) {
			t.Errorf("the %s page offers to revoke a revoked policy", name)
		}
	}
}
