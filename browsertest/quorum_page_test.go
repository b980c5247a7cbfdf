package browsertest

import (
	"context"
	"strings"
	"testing"

	"github.com/countersign/countersign/ask"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/rules"
)

// At phone width, the page of an ask an approval rule covers shows the rule
// by name, who has signed and who may still sign; after ada signs, "Your
// approval is in · waiting for bob, carol" takes the place of the answers
// and of "If you approve", on the first screen, and no name repeats. The
// Rules page passes axe-core and holds on the phone.
func TestTheAskPageShowsTheRuleTheSignersAndWhoMayStillSignOnThePhone(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := start(t, db)
		s.page.Emulate(phoneWidth, phoneHeight)
		s.signUp("ada", core.RoleOwner)
		s.env.Member(s.env.Account.ID, "bob", core.RoleAdmin)
		s.env.Member(s.env.Account.ID, "carol", core.RoleMember)
		if _, err := s.env.Store.SetRule(context.Background(), s.env.Account.ID, "reviews", rules.RuleSpec{Name: "two reviewers merge a pull request",
			Kinds: []string{ask.KindPullRequest}, Count: 2,
			Pool: rules.Pool{Kind: rules.PoolGroup, Group: "reviewers", People: []string{"ada", "bob", "carol"}}}, "cli:browsertest"); err != nil {
			t.Fatal(err)
		}
		id, _ := s.ask(pullRequestAsk(900, "abcdef1234567"))

		s.openFromInbox(id, "Merge acme/web#900")
		s.page.WaitVisible("[data-testid=quorum]")
		if got := s.page.Text("[data-testid=rule]"); got != "two reviewers merge a pull request" {
			t.Errorf("the rule reads %q", got)
		}
		if got := s.page.Text("[data-testid=signed]"); got != "0 of 2 approved" {
			t.Errorf("before any signature the page says %q", got)
		}
		if got := s.page.Text("[data-testid=waiting-for]"); got != "waiting for ada, bob, carol" {
			t.Errorf("before any signature it waits for %q", got)
		}

		s.answer(id, "[data-testid=approve]")
		s.page.WaitVisible("[data-testid=quorum]")
		if got := s.page.Attr("[data-testid=status]", "data-status"); got != "pending" {
			t.Fatalf("after one signature of two the ask is %s", got)
		}
		if got := s.page.Text("[data-testid=you-signed]"); got != "Your approval is in · waiting for bob, carol" {
			t.Errorf("after ada signed her page says %q, want Your approval is in · waiting for bob, carol", got)
		}
		inView(s.page, "[data-testid=you-signed]", "your approval is in")
		if got := s.page.Text("[data-testid=signed]"); got != "1 of 2 approved (you)" {
			t.Errorf("after ada signed the quorum reads %q to her", got)
		}
		if got := s.page.Text("[data-testid=you-signed-note]"); !youApproved.MatchString(got) || !strings.Contains(got, "counts once") {
			t.Errorf("ada is told %q, want when she approved and that it counts once", got)
		}
		if n := s.page.Count("[data-testid=answer-bar], [data-testid=means], [data-testid=why-no-answer], [data-testid=waiting-for]"); n != 0 {
			t.Errorf("ada, whose approval is in, is still shown %d of the answer bar, If you approve, why she cannot answer and a second waiting line", n)
		}
		head := s.page.Text(".ask-head")
		for _, name := range []string{"bob", "carol"} {
			if n := strings.Count(head, name); n != 1 {
				t.Errorf("the head of ada's page names %s %d times, want once:\n%s", name, n, head)
			}
		}
		if b, w := s.page.box("[data-testid=quorum]"), Eval[float64](s.page, `document.documentElement.clientWidth`); b == nil || b.Right > w {
			t.Errorf("the quorum does not fit the phone's width (%v, width %v)", b, w)
		}
		accessible(s.page, "the ask page with its quorum")
		holdsNarrowAndLarge(s.page, "the ask page with its quorum")

		s.page.Go("/")
		s.page.WaitVisible("[data-testid=waiting-for-others]")
		if got := s.page.Text("[data-testid=waiting-for-others] [data-testid=row-quorum]"); got != "1 of 2 approved (ada)" {
			t.Errorf("the inbox lists the signed ask under waiting for others as %q", got)
		}
		accessible(s.page, "the inbox split")

		s.page.Go("/admin/rules")
		s.page.WaitVisible("[data-rule=reviews]")
		accessible(s.page, "the Rules page")
		holdsNarrowAndLarge(s.page, "the Rules page")
	})
}
