package browsertest

import (
	"context"
	"net/url"
	"slices"
	"testing"

	"github.com/chromedp/cdproto/domdebugger"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
)

// cpuSlowdown is how much slower than this machine's the benchmark's CPU
// is (CDP Emulation.setCPUThrottlingRate): a mid-range phone's, as
// Lighthouse's mobile profile assumes.
const cpuSlowdown = 4

// interactiveMs is the time to interactive of the page just loaded, in
// milliseconds from the start of its navigation: the later of the end of
// DOMContentLoaded and the mark the page script sets once every handler
// is attached (web/app.js: performance.mark("countersign:interactive")).
// -1 when the script did not get there.
const interactiveMs = `(() => {
	const nav = performance.getEntriesByType("navigation")[0];
	const ready = performance.getEntriesByName("countersign:interactive")[0];
	if (!nav || !ready || nav.domContentLoadedEventEnd === 0) return -1;
	return Math.max(nav.domContentLoadedEventEnd, ready.startTime);
})()`

// BenchmarkAskPageInteractive measures the time to interactive of an ask
// page with an explanation and evidence, as a signed-in owner's phone
// (390×844) with a CPU cpuSlowdown times slower opens it: from the start
// of the navigation until the page script has wired the Approve button.
// Each load is a navigation from the inbox, as a person opens an ask. It
// reports the mean (ms/op), the median and the slowest in ms. "repeat"
// is the usual case, a visit with the browser's cache and service worker
// from an earlier one; "cold" disables the cache, so every file comes
// over the (loopback) network. It is a benchmark, not a test: the figures
// depend on the machine (docs/perf.md).
//
//	go test ./browsertest -run '^$' -bench AskPageInteractive -benchtime 30x
func BenchmarkAskPageInteractive(b *testing.B) {
	NeedChromium(b)
	env := apptest.StartWeb(b, apptest.SQLite, nil)
	if err := env.Store.SetAllowPrivateEvidence(context.Background(), env.Account.ID, true); err != nil {
		b.Fatal(err)
	}
	_, token := env.Agent(env.Account.ID, "bot")
	out := env.Connect(token).OK("approvals_create", apptest.ExplainedPullRequestAsk())
	id, _ := out["approval_id"].(string)
	if id == "" {
		b.Fatalf("approvals_create answered %v", out)
	}
	owner := env.Join(env.Account.ID, core.RoleOwner, "ada")
	origin, _ := url.Parse(env.URL)

	for _, visit := range []struct {
		name         string
		cacheDisable bool
	}{{"repeat", false}, {"cold", true}} {
		b.Run(visit.name, func(b *testing.B) {
			p := browser.Open(b, env.URL)
			httpOnly := true
			if _, err := chromedp.Call(p.ctx, network.SetCookie, network.SetCookieParams{
				Name: "cs_session", Value: owner.Session(), URL: origin.String(), Path: "/", HTTPOnly: &httpOnly, SameSite: network.CookieSameSiteLax,
			}); err != nil {
				b.Fatalf("Network.setCookie: %v", err)
			}
			p.Do("emulate a phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(3), chromedp.EmulateMobile, chromedp.EmulateTouch))
			// The first visit registers the service worker and fills the
			// cache; it is not measured.
			p.Go("/approvals/" + id)
			p.WaitFor("the service worker to control the page", `!!navigator.serviceWorker.controller`)
			p.Go("/approvals/" + id)
			checkAnswerWired(p)
			if _, err := chromedp.Call(p.ctx, network.SetCacheDisabled, network.SetCacheDisabledParams{CacheDisabled: visit.cacheDisable}); err != nil {
				b.Fatalf("Network.setCacheDisabled: %v", err)
			}
			if _, err := chromedp.Call(p.ctx, emulation.SetCPUThrottlingRate, emulation.SetCPUThrottlingRateParams{Rate: cpuSlowdown}); err != nil {
				b.Fatalf("Emulation.setCPUThrottlingRate: %v", err)
			}

			var times []float64
			for b.Loop() {
				b.StopTimer()
				p.Go("/") // from the inbox, as a person opens an ask
				b.StartTimer()
				p.Go("/approvals/" + id)
				ms := Eval[float64](p, interactiveMs)
				if ms < 0 {
					p.Fatalf("the page script never marked the page interactive")
				}
				times = append(times, ms)
			}
			if len(times) == 0 {
				return
			}
			slices.Sort(times)
			var sum float64
			for _, ms := range times {
				sum += ms
			}
			b.ReportMetric(sum/float64(len(times)), "ms/op")
			b.ReportMetric(times[len(times)/2], "p50-ms")
			b.ReportMetric(times[len(times)-1], "max-ms")
		})
	}
}

// checkAnswerWired fails unless the ask page's Approve button is there and
// has the page script's click handler, which is what the benchmark's mark
// stands for.
func checkAnswerWired(p *Page) {
	p.t.Helper()
	res, err := chromedp.Call(p.ctx, runtime.Evaluate, runtime.EvaluateParams{Expression: `document.querySelector('[data-decision="approve"]')`})
	if err != nil || res.Result == nil || res.Result.ObjectID == "" {
		p.Fatalf("no Approve button on the ask page (%v)", err)
	}
	listeners, err := chromedp.Call(p.ctx, domdebugger.GetEventListeners, domdebugger.GetEventListenersParams{ObjectID: res.Result.ObjectID})
	if err != nil {
		p.Fatalf("DOMDebugger.getEventListeners: %v", err)
	}
	if !slices.ContainsFunc(listeners.Listeners, func(l *domdebugger.EventListener) bool { return l.Type == "click" }) {
		p.Fatalf("the Approve button has no click handler: the page script did not wire it")
	}
}
