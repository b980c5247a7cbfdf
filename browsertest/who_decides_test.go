package browsertest

import (
	"context"
	"strings"
	"testing"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
)

// Ada, the owner, removes bob, an admin, on the Members page: the page
// files an ask and shows it; her passkey's signature leaves bob a member;
// only bob's own passkey, in his own browser, completes it, and his session
// ends with it.
func TestARemovalNeedsTheSecondPersonsPasskey(t *testing.T) {
	s := start(t, apptest.SQLite)
	s.signUp("ada", core.RoleOwner)
	bob := s.For(t)
	bob.page = browser.Open(t, s.env.URL)
	bobMember := bob.signUp("bob", core.RoleAdmin)
	ctx := context.Background()

	p := s.page
	p.Go("/admin/members")
	p.WaitVisible("[data-member=bob]")
	Eval[bool](p, `(window.confirm = () => true, window.browsertestClickedHere = true)`)
	p.Click(`[data-member=bob] form[action$="/remove"] button`)
	p.WaitFor("the page of the removal's ask", `!window.browsertestClickedHere && location.pathname.startsWith("/approvals/appr_") && document.readyState === "complete"`)
	id := strings.TrimPrefix(p.Path(), "/approvals/")
	p.WaitVisible("[data-testid=status]")
	if title := p.Text("main h1"); !strings.Contains(title, "Remove bob") {
		t.Errorf("the ask's page is headed %q, want the removal of bob", title)
	}
	s.answer(id, "[data-testid=approve]")
	p.WaitFor("the removal still pending after ada's signature", statusIs("pending"))
	if _, err := s.env.Store.MemberByID(ctx, s.env.Account.ID, bobMember.ID); err != nil {
		t.Fatalf("ada's signature alone removed bob: %v", err)
	}

	bob.openFromInbox(id, "Remove bob (admin) from the account")
	Eval[bool](bob.page, `window.browsertestClickedHere = true`)
	bob.page.Click("[data-testid=approve]")
	bob.page.WaitFor("a new page after bob's signature", `!window.browsertestClickedHere && document.readyState === "complete"`)
	if _, err := s.env.Store.MemberByID(ctx, s.env.Account.ID, bobMember.ID); core.CodeOf(err) != core.NotFound {
		t.Fatalf("bob is still a member after both signed his removal: %v", err)
	}
	a, err := s.env.Store.GetApproval(ctx, s.env.Account.ID, id)
	if err != nil || a.Status != asks.StatusApproved || a.DecidedBy != "bob" {
		t.Fatalf("the removal's ask: %+v %v; want approved, completed by bob", a, err)
	}
	bob.page.Go("/")
	if path := bob.page.Path(); path != "/signin" {
		t.Errorf("bob's browser is at %s after his removal, want the sign-in page", path)
	}
}
