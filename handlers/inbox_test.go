package handlers_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
)

func TestTheInboxShowsOnlyOpenAsksForTheViewer(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		f := newFixture(t, db)
		ctx := context.Background()
		forBobOld := f.ask(t, "For bob, older", "bob")
		forCy := f.ask(t, "For cy", "cy")
		forAnyAdmin := f.ask(t, "For the owners and admins", "")
		forBobDenied := f.ask(t, "For bob, denied", "bob")
		if _, err := f.env.Store.Decide(ctx, f.env.Account.ID, forBobDenied.ID, f.member, asks.Decision{Verdict: asks.VerdictDeny}); err != nil {
			t.Fatalf("deny: %v", err)
		}
		forBobNew := f.ask(t, "For bob, newer", "bob")
		// The older ask ends later: the inbox puts the sooner deadline first.
		for id, left := range map[string]time.Duration{forBobOld.ID: 2 * time.Hour, forBobNew.ID: time.Hour} {
			if err := f.env.Store.DB().Table("approvals").Where("id = ?", id).Update("expires_at", time.Now().UTC().Add(left)).Error; err != nil {
				t.Fatal(err)
			}
		}

		cases := []struct {
			who  string
			m    *people.Member
			want []string
		}{
			{"a member sees the open asks of their subject, soonest deadline first, and not those of nobody in particular", f.member, []string{forBobNew.ID, forBobOld.ID}},
			{"another member sees only theirs", f.other, []string{forCy.ID}},
			{"an owner sees the asks of nobody in particular", f.owner, []string{forAnyAdmin.ID}},
			{"an admin sees the asks of nobody in particular", f.admin, []string{forAnyAdmin.ID}},
		}
		for _, tc := range cases {
			t.Run(tc.who, func(t *testing.T) {
				b := signIn(t, f.env, tc.m)
				res, body := b.get("/")
				if res.StatusCode != http.StatusOK {
					t.Fatalf("GET /: %d\n%s", res.StatusCode, body)
				}
				if got := askLinks(t, body); !sameIDs(got, tc.want) {
					t.Fatalf("inbox links %v, want %v", got, tc.want)
				}
			})
		}

		t.Run("an empty inbox is the first-run checklist", func(t *testing.T) {
			lone := f.env.Member(f.env.Account.ID, "dee", core.RoleMember)
			_, body := signIn(t, f.env, lone).get("/")
			doc := parseHTML(t, body)
			empty := elements(doc, byAttr("data-testid", "inbox-empty"))
			if len(empty) != 1 {
				t.Fatalf("no empty state:\n%s", body)
			}
			if s := textOf(empty[0]); !strings.Contains(s, "Turn on notifications") || !strings.Contains(s, f.env.App.Config.BaseURL+"/mcp") {
				t.Fatalf("the empty state does not say how to get ready: %s", s)
			}
			for _, id := range []string{"enable-push", "send-test-ask", "home-screen-step"} {
				if len(elements(empty[0], byAttr("data-testid", id))) != 1 {
					t.Errorf("the checklist has no %s", id)
				}
			}
			if n := len(elements(empty[0], byAttr("data-testid", "make-agent-token"))); n != 0 {
				t.Errorf("a member's checklist offers to make an agent token, which only admins do")
			}
		})

		t.Run("a visitor who is not signed in is sent to sign in", func(t *testing.T) {
			client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			res, err := client.Get(f.env.URL + "/")
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/signin?next=%2F" {
				t.Fatalf("GET / signed out: %d to %q", res.StatusCode, res.Header.Get("Location"))
			}
		})
	})
}

func TestHistoryFiltersAndPages(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		f := newFixture(t, db)
		ctx := context.Background()
		var all []string // newest first
		for i := 0; i < 52; i++ {
			a := f.ask(t, "Ask", "bob")
			all = append([]string{a.ID}, all...)
		}
		denied := all[5]
		if _, err := f.env.Store.Decide(ctx, f.env.Account.ID, denied, f.member, asks.Decision{Verdict: asks.VerdictDeny}); err != nil {
			t.Fatalf("deny: %v", err)
		}
		b := signIn(t, f.env, f.member)

		_, body := b.get("/history")
		first := askLinks(t, body)
		if !sameIDs(first, all[:50]) {
			t.Fatalf("first page = %d asks, want the newest 50", len(first))
		}
		older := elements(parseHTML(t, body), byAttr("data-testid", "older"))
		if len(older) != 1 {
			t.Fatalf("no Older link on a full page")
		}
		_, body = b.get(attrOf(older[0], "href"))
		if got := askLinks(t, body); !sameIDs(got, all[50:]) {
			t.Fatalf("second page = %v, want %v", got, all[50:])
		}
		if len(elements(parseHTML(t, body), byAttr("data-testid", "older"))) != 0 {
			t.Fatalf("an Older link on the last page")
		}

		for _, tc := range []struct {
			query string
			want  []string
		}{
			{"status=denied", []string{denied}},
			{"status=closed", []string{denied}},
			{"status=closed&kind=review", []string{denied}},
			{"status=denied&kind=decision", nil},
		} {
			t.Run(tc.query, func(t *testing.T) {
				res, body := b.get("/history?" + tc.query)
				if res.StatusCode != http.StatusOK {
					t.Fatalf("GET /history?%s: %d", tc.query, res.StatusCode)
				}
				if got := askLinks(t, body); !sameIDs(got, tc.want) {
					t.Fatalf("history?%s = %v, want %v", tc.query, got, tc.want)
				}
			})
		}

		res, body := b.get("/history?" + url.Values{"status": {"bogus"}}.Encode())
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "must be a state") {
			t.Fatalf("an unknown status: %d", res.StatusCode)
		}
	})
}
