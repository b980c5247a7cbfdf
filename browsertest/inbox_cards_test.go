package browsertest

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
)

// On the phone (390×844) the inbox is a list of cards: each carries its
// badges (PRODUCTION, needs code, 2 people), names the verified agent once,
// not what it calls itself beside it, and says the time left. A bottom tab
// bar (Inbox, History, Devices, More) takes the header's menu, says that
// notifications are off in this browser, and covers no card; the page of an
// ask gives the bottom of the screen to its answer bar.
func TestTheInboxShowsCardsWithBadgesAndATabBarOnThePhone(t *testing.T) {
	s := start(t, apptest.SQLite)
	p := s.page
	p.Emulate(phoneWidth, phoneHeight)
	s.signUp("ada", core.RoleOwner)
	s.env.Member(s.env.Account.ID, "bob", core.RoleAdmin) // two people: a production run needs both (built-in rule)

	runner := s.env.EnrollRunner(s.env.Account.ID, "deploy-eu-west-1")
	run, _ := s.ask(runner.Ask("ada", strings.Repeat("ab", 32), []string{"migrate.sh", "--target", "production-eu-west-1"}, "production", 10*time.Minute))
	pr, _ := s.ask(pullRequestAsk(900, "abcdef1234567"))
	tool, _ := s.ask(map[string]any{
		"kind": "tool_call", "title": "Call write_file on filesystem", "agent": "gate: filesystem",
		"approve_means": "The call runs once", "deny_means": "Nothing runs",
		"payload": map[string]any{"tool_call": map[string]any{"server": "filesystem", "tool": "write_file", "arguments": map[string]any{"path": "/tmp/x", "content": "x"}}},
	})
	for i := range 4 { // enough cards to reach the tab bar
		s.ask(pullRequestAsk(910+i, fmt.Sprintf("%013d", i)))
	}

	p.Go("/")
	p.WaitFor("seven cards", `document.querySelectorAll("[data-approval-row]").length === 7`)
	badges := func(id string) []string {
		return Eval[[]string](p, fmt.Sprintf(`[...document.querySelectorAll(%s)].map(b => b.innerText.trim())`, jsString("[data-approval-row="+id+"] .badge")))
	}
	for _, tc := range []struct {
		name, id    string
		want, never []string
	}{
		{"the production run", run, []string{"run", "PRODUCTION", "needs code", "2 people"}, nil},
		{"the tool call", tool, []string{"tool call", "needs code"}, []string{"PRODUCTION", "2 people"}},
		{"the pull request", pr, []string{"pull request"}, []string{"PRODUCTION", "needs code", "2 people"}},
	} {
		got := badges(tc.id)
		for _, w := range tc.want {
			if !slices.Contains(got, w) {
				t.Errorf("the card of %s has the badges %q, missing %q", tc.name, got, w)
			}
		}
		for _, n := range tc.never {
			if slices.Contains(got, n) {
				t.Errorf("the card of %s has the badges %q, among them %q", tc.name, got, n)
			}
		}
	}
	row := fmt.Sprintf("[data-approval-row=%s]", jsString(tool))
	if got := p.Text(row + " [data-testid=row-requester]"); got != "agent:bot" {
		t.Errorf("the tool call's card names %q as its agent, want agent:bot", got)
	}
	if text := p.Text(row); strings.Count(text, "bot") != 1 || strings.Contains(text, "gate: filesystem") {
		t.Errorf("the tool call's card reads %q: want the verified agent once, and not what it calls itself", text)
	}
	if got := p.Text(row + " time[data-countdown]"); !regexp.MustCompile(`^\d+[dhms].* left$`).MatchString(got) {
		t.Errorf("the card's time left reads %q", got)
	}

	// The tab bar.
	tabs := Eval[[]string](p, `[...document.querySelectorAll("[data-testid=tabbar] > a, [data-testid=tabbar] > details > summary")].filter(e => e.checkVisibility()).map(e => e.innerText.replace(/\s+/g, " ").trim())`)
	if want := []string{"Inbox", "History", "Devices notifications off", "More"}; !slices.Equal(tabs, want) {
		t.Errorf("the tab bar reads %q, want %q", tabs, want)
	}
	inView(p, "[data-testid=tabbar]", "the tab bar")
	if got := p.Attr("[data-testid=tabbar] a[href='/']", "aria-current"); got != "page" {
		t.Errorf("the Inbox tab is not marked current (%q)", got)
	}
	if p.Attr("[data-testid=tab-devices] [data-push-tab]", "data-push-tab") != "off" {
		t.Errorf("the Devices tab does not say that notifications are off")
	}
	if n := Eval[int](p, `[...document.querySelectorAll("header nav a")].filter(a => a.checkVisibility()).length`); n != 0 {
		t.Errorf("the header still shows %d menu links beside the tab bar", n)
	}
	Eval[bool](p, `window.scrollTo(0, document.documentElement.scrollHeight), true`)
	if last, bar := p.box("[data-approval-row]:last-child"), p.box("[data-testid=tabbar]"); last.Bottom > bar.Top+0.5 {
		t.Errorf("at the bottom of the inbox the tab bar (from %.0f px) covers the last card (to %.0f px)", bar.Top, last.Bottom)
	}
	Eval[bool](p, `window.scrollTo(0, 0), true`)
	accessible(p, "the inbox's cards and the tab bar")
	p.Click("[data-testid=tabbar] details summary")
	p.WaitVisible("[data-testid=tabbar] a[href='/work']")
	inView(p, "[data-testid=tabbar] a[href='/admin/members']", "Admin under More")
	p.ClickToLoad("[data-testid=tab-devices]", "/devices", "main h1")
	if got := p.Attr("[data-testid=tab-devices]", "aria-current"); got != "page" {
		t.Errorf("on /devices the Devices tab is not marked current (%q)", got)
	}

	p.Go("/approvals/" + run)
	p.WaitVisible("[data-testid=answer-bar]")
	if Eval[bool](p, `document.querySelector("[data-testid=tabbar]").checkVisibility()`) {
		t.Errorf("the page of an ask shows the tab bar over its answer bar")
	}
	inView(p, "[data-testid=answer-bar]", "the answer bar")
}
