package browsertest

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
)

// ScreenshotsEnv names the variable that, set to 1, makes
// TestEveryAskAnswersOnThePhoneFirstScreen write the README's screenshots.
const ScreenshotsEnv = "COUNTERSIGN_SCREENSHOTS"

// screenshotDir is where the README's screenshots live, from this package.
const screenshotDir = "../docs/screenshots"

// fitsThePhone fails when the page is wider than the viewport (at 375 px
// nothing may need a sideways scroll) or when a label squeezes the value
// beside it into a column too narrow to read (under a third of the list).
func fitsThePhone(p *Page, what string) {
	p.t.Helper()
	squeezed := Eval[[]string](p, `[...document.querySelectorAll("dl.fields > dd")].filter(dd => {
		const list = dd.parentElement.getBoundingClientRect().width;
		return dd.checkVisibility() && dd.getBoundingClientRect().width < list / 3;
	}).map(dd => (dd.previousElementSibling?.innerText ?? "?") + ": " + Math.round(dd.getBoundingClientRect().width) + " px of " + Math.round(dd.parentElement.getBoundingClientRect().width))`)
	if len(squeezed) > 0 {
		p.t.Errorf("%s squeezes field values beside long labels at phone width (they wrap letter by letter): %q", what, squeezed)
	}
	width := Eval[int](p, `document.documentElement.scrollWidth`)
	inner := Eval[int](p, `window.innerWidth`)
	if width > inner {
		wide := Eval[[]string](p, `[...document.querySelectorAll("body *")].filter(e => e.getBoundingClientRect().right > window.innerWidth + 0.5).slice(0, 8).map(e => e.tagName.toLowerCase() + (e.className ? "." + String(e.className).replace(/ /g, ".") : "") + " (right edge " + Math.round(e.getBoundingClientRect().right) + " px)")`)
		p.t.Errorf("%s is %d px wide in a %d px viewport: it scrolls sideways on a phone; too wide: %q", what, width, inner, wide)
	}
}

// shoot writes the viewport (or with full the whole page) as
// docs/screenshots/name.png, only when COUNTERSIGN_SCREENSHOTS=1, so that
// test runs leave committed files alone.
func shoot(p *Page, name string, full bool) {
	p.t.Helper()
	png := p.Screenshot(full)
	if os.Getenv(ScreenshotsEnv) != "1" {
		return
	}
	if err := os.MkdirAll(screenshotDir, 0o755); err != nil {
		p.t.Fatal(err)
	}
	file := filepath.Join(screenshotDir, name+".png")
	if err := os.WriteFile(file, png, 0o644); err != nil {
		p.t.Fatal(err)
	}
	p.t.Logf("wrote %s (%d bytes)", file, len(png))
}

// The inbox and the pages of two asks at phone width (375×812, as an iPhone 13 mini
// shows them): nothing scrolls sideways, and no label squeezes its value.
func TestTheInboxAndAnAskFitAPhone(t *testing.T) {
	s := start(t, apptest.SQLite)
	p := s.page
	if err := s.env.Store.SetAllowPrivateEvidence(context.Background(), s.env.Account.ID, true); err != nil {
		t.Fatal(err)
	}
	p.Do("emulate a phone", chromedp.EmulateViewport(375, 812, chromedp.EmulateScale(2), chromedp.EmulateMobile, chromedp.EmulateTouch))
	s.signUp("ada", core.RoleOwner)

	decision, _ := s.ask(map[string]any{
		"kind":          "decision",
		"title":         "When do we ship 2.4?",
		"agent":         "release planner",
		"approve_means": "I schedule the release on the day you pick",
		"deny_means":    "No release is scheduled",
		"payload":       map[string]any{"decision": map[string]any{"options": []string{"Friday", "Monday", "Hold until the audit"}}},
		"context":       map[string]any{"no_context_reason": "a release date, nothing planned yet"},
	})
	pr, _ := s.ask(apptest.ExplainedPullRequestAsk())

	p.Go("/")
	p.WaitFor("two asks in the inbox", `document.querySelectorAll("[data-approval-row]").length === 2`)
	fitsThePhone(p, "the inbox")

	p.Go("/approvals/" + pr)
	p.WaitVisible("[data-testid=evidence]")
	for _, sel := range []string{"[data-testid=explanation]", "[data-testid=risk]", "[data-evidence=diff] summary", "[data-testid=approve]"} {
		p.WaitVisible(sel)
	}
	p.Click("[data-evidence=diff] summary") // the folded diff opens on a tap
	p.WaitVisible("[data-evidence=diff] .diff")
	fitsThePhone(p, "the ask page")

	p.Go("/approvals/" + decision)
	p.WaitVisible("[data-testid=choice-2]")
	fitsThePhone(p, "the page of a decision ask")
}
