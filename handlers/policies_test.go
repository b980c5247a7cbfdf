package handlers_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/policy"
)

// requestPolicy has the scene's agent ask for auto-approve until d from now
// and returns the request's id and its until.
func (s *scene) requestPolicy(t *testing.T, d time.Duration, scope map[string]any) (string, time.Time) {
	t.Helper()
	end := s.clock.now().Add(d).UTC().Truncate(time.Second)
	args := map[string]any{"until": end.Format(time.RFC3339), "device": "mac"}
	if scope != nil {
		args["scope"] = scope
	}
	out := s.agent.OK("approvals_request_auto_approve", args)
	id, _ := out["approval_id"].(string)
	if id == "" || out["status"] != "pending" {
		t.Fatalf("approvals_request_auto_approve answered %v", out)
	}
	return id, end
}

// enablePolicy requests a policy and has ada sign it with her passkey; it
// returns the enabling ask and the policy's id.
func (s *scene) enablePolicy(t *testing.T, d time.Duration, scope map[string]any) (string, string) {
	t.Helper()
	id, _ := s.requestPolicy(t, d, scope)
	if r := s.owner.Decide(id, "approve", ""); r.Status != http.StatusOK || r.Body["status"] != "approved" {
		t.Fatalf("ada signs the request: %s", r)
	}
	st, err := s.env.Store.CurrentPolicy(context.Background(), s.env.Account.ID)
	if err != nil || st == nil || st.ApprovalID != id || !st.Active {
		t.Fatalf("after ada signed %s the policy is %+v (%v)", id, st, err)
	}
	return id, st.ID
}

// reviewAsk files a review ask over MCP and returns its id and status.
func (s *scene) reviewAsk(t *testing.T, title string) (string, string) {
	t.Helper()
	out := s.agent.OK("approvals_create", map[string]any{
		"kind": "review", "title": title, "approve_means": "I mark the review done", "deny_means": "The review waits",
		"payload": map[string]any{"review": map[string]any{"url": "https://docs.example.com/" + url.PathEscape(title)}},
	})
	return out["approval_id"].(string), out["status"].(string)
}

// page fetches a page as a browser does (no JSON Accept header).
func page(t *testing.T, b *apptest.Browser, path string) (int, *html.Node, string) {
	t.Helper()
	res, err := b.HTTP.Get(b.Origin + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	body := readAll(t, res)
	return res.StatusCode, parseHTML(t, body), body
}

func readAll(t *testing.T, res *http.Response) string {
	t.Helper()
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("read %s: %v", res.Request.URL.Path, err)
	}
	return string(b)
}

// postForm posts a form as a page does, with csrf as its _csrf field ("" sends none).
func postForm(t *testing.T, b *apptest.Browser, path string, form url.Values, csrf string) (int, string, string) {
	t.Helper()
	if csrf != "" {
		form.Set("_csrf", csrf)
	}
	req, _ := http.NewRequest(http.MethodPost, b.Origin+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", b.Origin)
	res, err := b.HTTP.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	return res.StatusCode, res.Header.Get("Location"), readAll(t, res)
}

// one returns the one element of doc that has data-testid id.
func one(t *testing.T, doc *html.Node, id string) *html.Node {
	t.Helper()
	found := elements(doc, byAttr("data-testid", id))
	if len(found) != 1 {
		t.Fatalf("%d elements with data-testid=%s, want 1", len(found), id)
	}
	return found[0]
}

// squash collapses the white space of a text.
func squash(s string) string { return strings.Join(strings.Fields(s), " ") }

func TestTheAutoApproveAskPageSaysWhatTurnsOn(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := newScene(t, db, nil)
		cases := []struct {
			name             string
			scope            map[string]any
			kinds, requester string
		}{
			{"every kind, anyone", nil, "every kind a policy may cover", "anyone: every agent of this account"},
			{"named kinds and requesters", map[string]any{"ask_kinds": []string{"review", "document"}, "requesters": []string{"agent:bot"}},
				"review, document", "agent:bot"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				id, end := s.requestPolicy(t, 8*time.Hour, tc.scope)
				status, doc, _ := page(t, s.owner, "/approvals/"+id)
				if status != http.StatusOK {
					t.Fatalf("GET the ask page: %d", status)
				}
				terms := one(t, doc, "auto-approve-terms")
				if got := squash(textOf(one(t, terms, "policy-kinds"))); !strings.Contains(got, tc.kinds) {
					t.Errorf("what is approved reads %q, want it to name %q", got, tc.kinds)
				}
				if got := squash(textOf(one(t, terms, "policy-requesters"))); !strings.Contains(got, tc.requester) {
					t.Errorf("for whom reads %q, want %q", got, tc.requester)
				}
				until := one(t, terms, "policy-until")
				countdowns := elements(until, func(n *html.Node) bool { _, ok := attrIs(n, "data-countdown"); return n.Data == "time" && ok })
				if len(countdowns) != 1 || attrOf(countdowns[0], "datetime") != end.Format(time.RFC3339) {
					t.Errorf("the until has %d countdowns (datetime %v), want one to %s", len(countdowns), attrs(countdowns, "datetime"), end.Format(time.RFC3339))
				}
				if got := textOf(countdowns[0]); !strings.HasPrefix(got, "7h 59m") && !strings.HasPrefix(got, "8h 0m") {
					t.Errorf("the countdown starts at %q, want about 8 hours", got)
				}
				always := squash(textOf(one(t, terms, "policy-always-asks")))
				for _, w := range []string{"merges", "rolls", "releases", "runs", "security", "finance", "legal", "deletes",
					"classified material", "permission or policy changes", "decision asks"} {
					if !strings.Contains(always, w) {
						t.Errorf("what always keeps asking (%q) leaves out %q", always, w)
					}
				}
				if n := len(elements(doc, byAttr("data-testid", "approve"))); n != 1 {
					t.Errorf("%d approve buttons for ada, want 1", n)
				}
				if r := s.owner.Decide(id, "deny", ""); r.Status != http.StatusOK {
					t.Fatalf("deny %s: %s", id, r)
				}
			})
		}
	})
}

// attrIs returns the value of an attribute and whether the element has it.
func attrIs(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

func attrs(ns []*html.Node, key string) []string {
	var out []string
	for _, n := range ns {
		out = append(out, attrOf(n, key))
	}
	return out
}

func TestThePoliciesPageShowsThePolicyWhatItApprovedAndTheRequests(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := newScene(t, db, nil)
		status, doc, body := page(t, s.owner, "/policies")
		if status != http.StatusOK {
			t.Fatalf("GET /policies: %d", status)
		}
		one(t, doc, "no-policy")
		if !strings.Contains(body, `href="/policies" aria-current="page"`) {
			t.Errorf("the nav does not mark Policies as the current page")
		}

		reqID, _ := s.requestPolicy(t, 2*time.Hour, map[string]any{"ask_kinds": []string{"review"}})
		_, doc, _ = page(t, s.owner, "/policies")
		if got := askLinks(t, renderNode(one(t, doc, "policy-requests"))); !slices.Equal(got, []string{reqID}) {
			t.Errorf("pending requests link to %v, want [%s]", got, reqID)
		}

		if r := s.owner.Decide(reqID, "approve", ""); r.Status != http.StatusOK {
			t.Fatalf("approve the request: %s", r)
		}
		approvedID, st := s.reviewAsk(t, "Read the onboarding doc")
		if st != "approved" {
			t.Fatalf("the matching ask is %s, want approved", st)
		}
		if _, st := s.reviewAsk(t, "Delete the old bucket"); st != "pending" {
			t.Fatalf("the always-ask ask is %s, want pending", st)
		}
		pol, err := s.env.Store.CurrentPolicy(context.Background(), s.env.Account.ID)
		if err != nil || pol == nil {
			t.Fatal(err)
		}

		status, doc, _ = page(t, s.owner, "/policies")
		if status != http.StatusOK {
			t.Fatalf("GET /policies: %d", status)
		}
		card := one(t, doc, "policy")
		if attrOf(card, "data-policy") != pol.ID || attrOf(card, "data-policy-state") != "active" {
			t.Errorf("the policy card is %s in state %s, want %s active", attrOf(card, "data-policy"), attrOf(card, "data-policy-state"), pol.ID)
		}
		if got := textOf(one(t, card, "approved-count")); got != "1" {
			t.Errorf("approved count %q, want 1", got)
		}
		countdowns := elements(card, func(n *html.Node) bool { _, ok := attrIs(n, "data-countdown"); return ok })
		if len(countdowns) != 1 || attrOf(countdowns[0], "datetime") != pol.ExpiresAt.UTC().Format(time.RFC3339) {
			t.Errorf("countdowns %v, want one to %s", attrs(countdowns, "datetime"), pol.ExpiresAt.UTC().Format(time.RFC3339))
		}
		if got := squash(textOf(one(t, card, "policy-kinds"))); got != "review" {
			t.Errorf("kinds %q, want review", got)
		}
		if got := squash(textOf(one(t, card, "policy-signer"))); !strings.Contains(got, "ada") || !strings.Contains(got, s.owner.Passkey.CredentialIDString()) {
			t.Errorf("signer %q, want ada and her passkey", got)
		}
		if got := askLinks(t, renderNode(one(t, doc, "policy-approved"))); !slices.Equal(got, []string{approvedID}) {
			t.Errorf("the asks it approved link to %v, want [%s]", got, approvedID)
		}
		form := one(t, card, "revoke-form")
		if attrOf(form, "action") != "/policies/revoke" || attrOf(form, "method") != "post" {
			t.Errorf("revoke form posts to %s %s", attrOf(form, "method"), attrOf(form, "action"))
		}
		if hidden := elements(form, byAttr("name", "_csrf")); len(hidden) != 1 || attrOf(hidden[0], "value") != s.owner.CSRF {
			t.Errorf("the revoke form does not carry the CSRF token")
		}
		one(t, form, "revoke-policy")
		if got := askLinks(t, renderNode(one(t, doc, "policy-requests"))); len(got) != 0 {
			t.Errorf("no request waits any more, yet the page links to %v", got)
		}
	})
}

// renderNode renders an element back to HTML, for helpers that read HTML.
func renderNode(n *html.Node) string {
	var b strings.Builder
	_ = html.Render(&b, n)
	return b.String()
}

func TestRevokingOnThePolicyPage(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		s := newScene(t, db, nil)
		reqID, polID := s.enablePolicy(t, time.Hour, nil)
		bob := join(t, s.env, s.env.Account.ID, core.RoleMember, "bob")
		active := func(t *testing.T) {
			t.Helper()
			st, err := s.env.Store.CurrentPolicy(ctx, s.env.Account.ID)
			if err != nil || st.ID != polID || !st.Active || st.RevokedAt != nil {
				t.Fatalf("the policy changed: %+v (%v)", st, err)
			}
		}

		t.Run("without the CSRF token it is refused and the policy stays on", func(t *testing.T) {
			if status, _, _ := postForm(t, bob, "/policies/revoke", url.Values{"note": {"x"}}, ""); status != http.StatusForbidden {
				t.Fatalf("POST without CSRF: %d", status)
			}
			active(t)
		})
		t.Run("with a wrong CSRF token it is refused and the policy stays on", func(t *testing.T) {
			if status, _, _ := postForm(t, bob, "/policies/revoke", url.Values{}, strings.Repeat("x", 43)); status != http.StatusForbidden {
				t.Fatalf("POST with a wrong CSRF token: %d", status)
			}
			active(t)
		})
		t.Run("a note over 500 characters is refused on the page and the policy stays on", func(t *testing.T) {
			status, _, body := postForm(t, bob, "/policies/revoke", url.Values{"note": {strings.Repeat("n", 501)}}, bob.CSRF)
			if status != http.StatusBadRequest {
				t.Fatalf("POST with a long note: %d", status)
			}
			if got := textOf(one(t, parseHTML(t, body), "refusal")); !strings.Contains(got, "at most 500") {
				t.Errorf("the refusal says %q", got)
			}
			active(t)
		})
		t.Run("without a session it is refused", func(t *testing.T) {
			stranger := apptest.NewBrowser(t, s.env.URL)
			if status, _, _ := postForm(t, stranger, "/policies/revoke", url.Values{}, stranger.CSRF); status != http.StatusUnauthorized {
				t.Fatalf("POST signed out: %d", status)
			}
			active(t)
		})
		t.Run("a member turns it off at once, with the note on the enabling ask", func(t *testing.T) {
			status, location, _ := postForm(t, bob, "/policies/revoke", url.Values{"note": {"the docs sprint is over"}}, bob.CSRF)
			if status != http.StatusSeeOther || location != "/policies" {
				t.Fatalf("POST /policies/revoke: %d to %q", status, location)
			}
			st, err := s.env.Store.CurrentPolicy(ctx, s.env.Account.ID)
			if err != nil || st.ID != polID || st.Active || st.RevokedAt == nil || st.RevokedBy != "bob" || st.RevokeNote != "the docs sprint is over" {
				t.Fatalf("after the revoke: %+v (%v)", st, err)
			}
			events, err := s.env.Store.Timeline(ctx, s.env.Account.ID, reqID)
			if err != nil {
				t.Fatal(err)
			}
			last := events[len(events)-1]
			if last.Step != policy.StepPolicyRevoked || last.Actor != "bob" || last.ActorKind != asks.ActorPerson || !strings.Contains(last.Note, "the docs sprint is over") {
				t.Errorf("last event of the enabling ask = %+v", last)
			}
			_, doc, _ := page(t, bob, "/policies")
			card := one(t, doc, "policy")
			if attrOf(card, "data-policy-state") != "revoked" {
				t.Errorf("the page shows the policy %s, want revoked", attrOf(card, "data-policy-state"))
			}
			if got := squash(textOf(one(t, card, "policy-revoked"))); !strings.Contains(got, "by bob") || !strings.Contains(got, "the docs sprint is over") {
				t.Errorf("the page says it was turned off: %q", got)
			}
			if n := len(elements(card, byAttr("data-testid", "revoke-policy"))); n != 0 {
				t.Errorf("a revoked policy still offers %d revoke buttons", n)
			}
			if _, st := s.reviewAsk(t, "Read the onboarding doc"); st != "pending" {
				t.Errorf("an ask after the revoke is %s, want pending", st)
			}
		})
		t.Run("turning it off twice changes nothing", func(t *testing.T) {
			before, _ := s.env.Store.Timeline(ctx, s.env.Account.ID, reqID)
			if status, _, _ := postForm(t, s.owner, "/policies/revoke", url.Values{"note": {"again"}}, s.owner.CSRF); status != http.StatusSeeOther {
				t.Fatalf("second revoke: %d", status)
			}
			st, _ := s.env.Store.CurrentPolicy(ctx, s.env.Account.ID)
			after, _ := s.env.Store.Timeline(ctx, s.env.Account.ID, reqID)
			if st.RevokedBy != "bob" || st.RevokeNote != "the docs sprint is over" || len(after) != len(before) {
				t.Errorf("the second revoke changed it: revoked by %s (%q), %d events, was %d", st.RevokedBy, st.RevokeNote, len(after), len(before))
			}
		})
	})
}

func TestTheAdminPolicyListIsForAdminsAndFilters(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := newScene(t, db, nil)
		_, olderID := s.enablePolicy(t, time.Hour, nil)
		newerReq, newerID := s.enablePolicy(t, 2*time.Hour, map[string]any{"ask_kinds": []string{"review"}, "requesters": []string{"agent:bot"}})
		if _, st := s.reviewAsk(t, "Read the onboarding doc"); st != "approved" {
			t.Fatalf("the matching ask is %s", st)
		}
		bob := join(t, s.env, s.env.Account.ID, core.RoleMember, "bob")

		t.Run("a member's Policies page has the pending requests and not the list of every policy", func(t *testing.T) {
			status, _, _ := page(t, bob, "/admin/policies")
			if status != http.StatusForbidden {
				t.Fatalf("GET /admin/policies as a member: %d", status)
			}
			_, doc, body := page(t, bob, "/policies")
			if strings.Contains(body, `href="/admin/policies"`) || !strings.Contains(body, `href="/policies"`) {
				t.Errorf("a member's policy page links to the admin list, or the nav has no Policies")
			}
			if len(elements(doc, byAttr("data-testid", "all-policies"))) != 0 || len(elements(doc, byAttr("data-testid", "policy-requests"))) != 1 {
				t.Errorf("a member's Policies page shows every policy, or no pending requests")
			}
		})

		t.Run("the admin's old address leads to the one Policies page, with its filter", func(t *testing.T) {
			res, err := s.owner.HTTP.Get(s.owner.Origin + "/admin/policies?state=revoked")
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/policies?state=revoked" {
				t.Errorf("GET /admin/policies?state=revoked: %d to %q, want 303 to /policies?state=revoked", res.StatusCode, res.Header.Get("Location"))
			}
			_, doc, body := page(t, s.owner, "/policies")
			if len(elements(doc, byAttr("data-testid", "policy-requests"))) != 1 || len(elements(doc, byAttr("data-testid", "all-policies"))) != 1 {
				t.Errorf("the owner's Policies page lacks the pending requests or every policy:\n%s", body)
			}
			if strings.Count(body, `href="/admin/policies"`) != 0 {
				t.Errorf("a page still links to a second Policies page")
			}
		})

		listed := func(t *testing.T, query string) map[string]*html.Node {
			t.Helper()
			status, doc, _ := page(t, s.owner, "/policies"+query)
			if status != http.StatusOK {
				t.Fatalf("GET /policies%s: %d", query, status)
			}
			doc = one(t, doc, "all-policies")
			rows := map[string]*html.Node{}
			for _, li := range elements(doc, func(n *html.Node) bool { _, ok := attrIs(n, "data-policy"); return n.Data == "li" && ok }) {
				rows[attrOf(li, "data-policy")] = li
			}
			return rows
		}
		t.Run("an admin sees every policy with who signed it, its scope, counts and replacement", func(t *testing.T) {
			rows := listed(t, "")
			if len(rows) != 2 || rows[olderID] == nil || rows[newerID] == nil {
				t.Fatalf("listed %v, want %s and %s", keys(rows), olderID, newerID)
			}
			newer, older := rows[newerID], rows[olderID]
			if attrOf(newer, "data-policy-state") != "active" || attrOf(older, "data-policy-state") != "revoked" {
				t.Errorf("states: newer %s, older %s; want active, revoked", attrOf(newer, "data-policy-state"), attrOf(older, "data-policy-state"))
			}
			if got := textOf(one(t, newer, "approved-count")); got != "1" {
				t.Errorf("newer approved count %q, want 1", got)
			}
			if got := squash(textOf(newer)); !strings.Contains(got, "review") || !strings.Contains(got, "agent:bot") || !strings.Contains(got, "ada") || !strings.Contains(got, olderID) {
				t.Errorf("the newer row reads %q: want its kinds, requesters, signer and the policy it replaces", got)
			}
			if got := squash(textOf(one(t, older, "policy-revoked"))); !strings.Contains(got, "by ada") {
				t.Errorf("the older row's revocation reads %q", got)
			}
			if got := squash(textOf(older)); !strings.Contains(got, "replaced by a newer policy") || !strings.Contains(got, newerID) {
				t.Errorf("the older row does not say it was replaced by %s: %q", newerID, got)
			}
			if links := askLinks(t, renderNode(newer)); !slices.Contains(links, newerReq) {
				t.Errorf("the newer row links to %v, want its request %s", links, newerReq)
			}
		})
		t.Run("the state filter narrows the list", func(t *testing.T) {
			for state, want := range map[string][]string{"active": {newerID}, "revoked": {olderID}, "expired": nil, "inactive": nil} {
				if got := keys(listed(t, "?state="+state)); !slices.Equal(got, want) {
					t.Errorf("state %s lists %v, want %v", state, got, want)
				}
			}
			s.clock.advance(3 * time.Hour)
			for state, want := range map[string][]string{"active": nil, "expired": {newerID}, "revoked": {olderID}} {
				if got := keys(listed(t, "?state="+state)); !slices.Equal(got, want) {
					t.Errorf("after 3 hours state %s lists %v, want %v", state, got, want)
				}
			}
		})
		t.Run("an unknown state is refused on the page", func(t *testing.T) {
			status, doc, _ := page(t, s.owner, "/policies?state=bogus")
			if status != http.StatusBadRequest {
				t.Fatalf("GET ?state=bogus: %d", status)
			}
			if errs := elements(doc, byAttr("role", "alert")); len(errs) != 1 || !strings.Contains(textOf(errs[0]), "bogus") {
				t.Errorf("no refusal naming the state on the page")
			}
		})
	})
}

func keys(m map[string]*html.Node) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
