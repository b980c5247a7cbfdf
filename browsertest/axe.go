package browsertest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// axeScript is where npm installs axe-core, from this package.
const axeScript = "../node_modules/axe-core/axe.min.js"

var axeSource = sync.OnceValues(func() (string, error) {
	b, err := os.ReadFile(axeScript)
	if err != nil {
		return "", fmt.Errorf("read axe-core (npm ci installs it): %w", err)
	}
	return string(b), nil
})

// Violation is one rule axe-core finds broken on a page, with where.
type Violation struct {
	ID     string   `json:"id"`
	Impact string   `json:"impact"`
	Help   string   `json:"help"`
	Nodes  []string `json:"nodes"` // each: the element's selector and what fails
}

func (v Violation) String() string {
	return fmt.Sprintf("%s (%s): %s\n      %s", v.ID, v.Impact, v.Help, strings.Join(v.Nodes, "\n      "))
}

// Axe runs axe-core on the page as it is now and returns its serious and
// critical violations. The script goes in through the DevTools protocol
// (Runtime.evaluate), which the page's Content-Security-Policy does not
// govern, so the page under test keeps its strict policy.
func (p *Page) Axe() []Violation {
	p.t.Helper()
	src, err := axeSource()
	if err != nil {
		p.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(p.ctx, 2*StepTimeout)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](src+";\ntrue")); err != nil {
		p.Fatalf("inject axe-core: %v", err)
	}
	found, err := chromedp.Run(ctx, chromedp.Evaluate[[]Violation](`axe.run(document, {resultTypes: ["violations"]}).then(r =>
		r.violations.filter(v => v.impact === "serious" || v.impact === "critical").map(v => ({
			id: v.id, impact: v.impact, help: v.help,
			nodes: v.nodes.slice(0, 6).map(n => n.target.join(" ") + ": " + (n.failureSummary || "").replace(/\s+/g, " ")),
		})))`, chromedp.EvalAwaitPromise))
	if err != nil {
		p.Fatalf("run axe-core: %v", err)
	}
	return found
}

// Emulate makes the tab a phone in portrait of width×height CSS px, with
// touch, as a person holds it.
func (p *Page) Emulate(width, height int64) {
	p.t.Helper()
	p.Do(fmt.Sprintf("emulate a %d×%d phone", width, height), chromedp.EmulateViewport(width, height,
		chromedp.EmulateScale(2), chromedp.EmulateMobile, chromedp.EmulateTouch, chromedp.EmulatePortrait))
}

// ColorScheme makes the pages prefer scheme, "light" or "dark", as the
// phone's setting does.
func (p *Page) ColorScheme(scheme string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, StepTimeout)
	defer cancel()
	if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}},
	}); err != nil {
		p.Fatalf("emulate prefers-color-scheme %s: %v", scheme, err)
	}
}
