package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/countersign/countersign/ask"

	"golang.org/x/net/html"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/rules"
)

// answerIDs are the test ids of every way the ask page offers to answer.
var answerIDs = []string{"answer-bar", "approve", "deny", "not-mine", "check-codes", "question-text"}

// testIDText is the text of the one element with data-testid id, its runs
// of white space read as one space as a browser shows them, or "" when the
// page has none.
func testIDText(doc *html.Node, id string) string {
	if e := elements(doc, byAttr("data-testid", id)); len(e) == 1 {
		return strings.Join(strings.Fields(textOf(e[0])), " ")
	}
	return ""
}

// On an ask two people must sign, a person whose approval is in sees no way
// to answer again, but when they approved and whom it waits for; the others
// of the pool still see the answers, and someone outside the pool sees what
// they saw before: no answers, and why.
func TestTheAskPageShowsASignerTheirApprovalInPlaceOfTheAnswers(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		env := apptest.StartWeb(t, db, nil)
		ada := env.Join(env.Account.ID, core.RoleOwner, "ada")
		bob := env.Join(env.Account.ID, core.RoleAdmin, "bob")
		carol := env.Join(env.Account.ID, core.RoleMember, "carol")
		dan := env.Join(env.Account.ID, core.RoleMember, "dan")
		if _, err := env.Store.SetRule(ctx, env.Account.ID, "reviews", rules.RuleSpec{Name: "two reviewers merge a pull request",
			Kinds: []string{ask.KindPullRequest}, Count: 2,
			Pool: rules.Pool{Kind: rules.PoolGroup, Group: "reviewers", People: []string{"ada", "bob", "carol"}}}, "cli:test"); err != nil {
			t.Fatal(err)
		}
		_, token := env.Agent(env.Account.ID, "bot")
		agent := env.Connect(token)
		defer agent.Close()
		file := func(n int) string {
			id, _ := agent.OK("approvals_create", map[string]any{
				"kind": "pull_request", "title": fmt.Sprintf("Merge acme/web#%d", n), "approve_means": "I merge it", "deny_means": "it stays open",
				"payload": map[string]any{"pull_request": map[string]any{"repo": "acme/web", "number": n, "head": fmt.Sprintf("abcdef%07d", n), "title": "Fix"}},
				"context": map[string]any{"plan_id": "plan_1", "plan_item": "item_2"},
			})["approval_id"].(string)
			return id
		}
		other, id := file(899), file(900)

		// Once ada signed one, the page sends her on to the other, and from
		// there to her inbox: an ask she signed no longer waits for her.
		if r := ada.Decide(other, "approve", ""); r.Status != http.StatusOK || r.Body["redirect"] != "/approvals/"+id {
			t.Fatalf("ada signs the first ask: %s, want sent on to %s", r, id)
		}
		if r := ada.Decide(id, "approve", ""); r.Status != http.StatusOK || r.Body["redirect"] != "/" {
			t.Fatalf("ada signs the second ask: %s, want sent on to her inbox, not to the ask she signed", r)
		}
		sigs, err := env.Store.Signatures(ctx, env.Account.ID, id)
		if err != nil || len(sigs) != 1 {
			t.Fatalf("after ada signed: %d signatures (%v)", len(sigs), err)
		}
		signedAt := sigs[0].CreatedAt.UTC().Format("2006-01-02 15:04 UTC")

		cases := []struct {
			who       string
			b         *apptest.Browser
			answers   bool
			youSigned string // the you-signed line, "" for none
			why       string // why the page offers no answer, "" when it offers them
		}{
			{"ada, whose approval is in", ada, false, "Your approval is in · waiting for bob, carol", ""},
			{"bob, of the pool, who has not signed", bob, true, "", ""},
			{"carol, of the pool, who has not signed", carol, true, "", ""},
			{"dan, outside the pool", dan, false, "", "This ask's rule counts other people's signatures, not yours."},
		}
		for _, tc := range cases {
			t.Run(tc.who, func(t *testing.T) {
				_, doc := pageOf(t, tc.b.For(t), "/approvals/"+id)
				want := "1 of 2 approved (ada)"
				if tc.b == ada {
					want = "1 of 2 approved (you)" // her own name is not repeated to her
				}
				if got := testIDText(doc, "signed"); got != want {
					t.Errorf("the quorum reads %q, want %q", got, want)
				}
				shown := testIDs(doc, answerIDs...)
				for _, ans := range answerIDs {
					if ans == "check-codes" {
						continue // a pull request needs no check code
					}
					if shown[ans] != tc.answers {
						t.Errorf("%s shown: %t, want %t", ans, shown[ans], tc.answers)
					}
				}
				if got := testIDText(doc, "you-signed"); got != tc.youSigned {
					t.Errorf("the you-signed line reads %q, want %q", got, tc.youSigned)
				}
				if got := testIDText(doc, "why-no-answer"); got != tc.why {
					t.Errorf("why no answer reads %q, want %q", got, tc.why)
				}
			})
		}

		// A second signature is still refused, whatever a page offers.
		if r := ada.Decide(id, "deny", ""); r.Status == http.StatusOK {
			t.Fatalf("ada's deny after her approval was accepted: %s", r)
		}

		// Once bob completes the quorum, ada's page still says what she signed.
		if r := bob.Decide(id, "approve", ""); r.Status != http.StatusOK {
			t.Fatalf("bob signs: %s", r)
		}
		_, doc := pageOf(t, ada, "/approvals/"+id)
		if got := testIDText(doc, "you-signed"); got != "You approved at "+signedAt {
			t.Errorf("on the approved ask ada's line reads %q", got)
		}
		if ids := testIDs(doc, "answer-bar"); ids["answer-bar"] {
			t.Errorf("the approved ask offers answers")
		}
	})
}
