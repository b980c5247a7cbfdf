package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/serviceworker"
	"github.com/chromedp/chromedp"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/outbox"
)

// Headless Chromium cannot complete PushManager.subscribe (no push service
// is reachable), so these tests feed the service worker's push handler
// through CDP ServiceWorker.deliverPushMessage and read back what it showed
// with registration.getNotifications(). Clicks on notifications are tested
// in web/test/sw.test.mjs: no automation can click a system notification.

// setNotifications grants or denies the notifications permission to the
// service's origin in the page's browser context.
func setNotifications(p *Page, setting cdpbrowser.PermissionSetting) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, StepTimeout)
	defer cancel()
	if _, err := chromedp.CallBrowser(ctx, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{
		Permission:       &cdpbrowser.PermissionDescriptor{Name: "notifications"},
		Setting:          setting,
		Origin:           p.Origin,
		BrowserContextID: chromedp.FromContext(p.ctx).BrowserContextID,
	}); err != nil {
		p.Fatalf("Browser.setPermission notifications %s: %v", setting, err)
	}
}

// activeServiceWorker waits until the service worker at /sw.js is activated
// for the origin, as CDP's ServiceWorker domain reports it, and returns its
// registration id.
func activeServiceWorker(p *Page) serviceworker.RegistrationID {
	p.t.Helper()
	ctx, cancel := context.WithCancel(p.ctx)
	defer cancel()
	var (
		mu     sync.Mutex
		scopes = map[serviceworker.RegistrationID]string{}
		active = map[serviceworker.RegistrationID]bool{}
	)
	if err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *serviceworker.EventWorkerRegistrationUpdated:
			for _, r := range ev.Registrations {
				if r.IsDeleted {
					delete(scopes, r.RegistrationID)
				} else {
					scopes[r.RegistrationID] = r.ScopeURL
				}
			}
		case *serviceworker.EventWorkerVersionUpdated:
			for _, v := range ev.Versions {
				if v.ScriptURL == p.Origin+"/sw.js" && v.Status == serviceworker.VersionStatusActivated {
					active[v.RegistrationID] = true
				}
			}
		}
	}); err != nil {
		p.Fatalf("listen for service worker events: %v", err)
	}
	call, cancelCall := context.WithTimeout(ctx, StepTimeout)
	defer cancelCall()
	if _, err := chromedp.Call(call, serviceworker.Enable, cdp.Empty{}); err != nil {
		p.Fatalf("ServiceWorker.enable: %v", err)
	}
	deadline := time.Now().Add(StepTimeout)
	for {
		mu.Lock()
		for id := range active {
			if scopes[id] == p.Origin+"/" {
				mu.Unlock()
				return id
			}
		}
		seen := fmt.Sprintf("registrations %v, activated %v", scopes, active)
		mu.Unlock()
		if time.Now().After(deadline) {
			p.Fatalf("no activated service worker for %s/ within %s (%s)", p.Origin, StepTimeout, seen)
		}
		time.Sleep(pollEvery)
	}
}

// deliverPush hands msg to the service worker's push handler, as the push
// service would after decryption.
func deliverPush(p *Page, registration serviceworker.RegistrationID, msg outbox.PushMessage) {
	p.t.Helper()
	data, err := json.Marshal(msg)
	if err != nil {
		p.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(p.ctx, StepTimeout)
	defer cancel()
	if _, err := chromedp.Call(ctx, serviceworker.DeliverPushMessage, serviceworker.DeliverPushMessageParams{
		Origin: p.Origin, RegistrationID: registration, Data: string(data),
	}); err != nil {
		p.Fatalf("ServiceWorker.deliverPushMessage: %v", err)
	}
}

// shownNotification is a notification the service worker shows, as
// registration.getNotifications() reads it back.
type shownNotification struct {
	Title              string `json:"title"`
	Tag                string `json:"tag"`
	Body               string `json:"body"`
	URL                string `json:"url"`
	RequireInteraction bool   `json:"requireInteraction"`
	Renotify           bool   `json:"renotify"`
}

// waitForNotification waits until the service worker shows a notification
// with tag for which ok is true, and returns it.
func waitForNotification(p *Page, tag string, ok func(shownNotification) bool) shownNotification {
	p.t.Helper()
	const read = `navigator.serviceWorker.ready.then(r => r.getNotifications()).then(ns => ns.map(n => ({
		title: n.title, tag: n.tag, body: n.body, url: (n.data && n.data.url) || "", requireInteraction: n.requireInteraction, renotify: n.renotify })))`
	deadline := time.Now().Add(StepTimeout)
	var shown []shownNotification
	for {
		ctx, cancel := context.WithTimeout(p.ctx, 2*time.Second)
		got, err := chromedp.Run(ctx, chromedp.Evaluate[[]shownNotification](read, chromedp.EvalAwaitPromise))
		cancel()
		if err == nil {
			shown = got
			for _, n := range shown {
				if n.Tag == tag && ok(n) {
					return n
				}
			}
		}
		if time.Now().After(deadline) {
			p.Fatalf("no notification tagged %q as expected within %s; shown: %+v (last error: %v)", tag, StepTimeout, shown, err)
		}
		time.Sleep(pollEvery)
	}
}

func TestAPushDeliveredToTheServiceWorkerShowsTheAsksNotification(t *testing.T) {
	s := start(t, apptest.SQLite)
	s.signUp("ada", core.RoleOwner)
	id, _ := s.ask(pullRequestAsk(900, "abcdef1234567"))
	p := s.page
	setNotifications(p, cdpbrowser.PermissionSettingGranted)
	registration := activeServiceWorker(p)

	title := "Merge acme/web#900"
	deliverPush(p, registration, outbox.PushMessage{Event: outbox.PushAsk, ApprovalID: id, Title: title, URL: "/approvals/" + id})
	n := waitForNotification(p, id, func(n shownNotification) bool { return n.Title == title })
	want := shownNotification{Title: title, Tag: id, Body: "Open to answer", URL: "/approvals/" + id, RequireInteraction: true, Renotify: true}
	if n != want {
		t.Errorf("the ask's notification is %+v, want %+v", n, want)
	}

	// Decided elsewhere: the follow-up replaces it under the same tag.
	deliverPush(p, registration, outbox.PushMessage{Event: outbox.PushDecided, ApprovalID: id, Title: title, Status: "approved", URL: "/approvals/" + id})
	n = waitForNotification(p, id, func(n shownNotification) bool { return n.Title == "Decided: approved" })
	if n.Body != title || n.URL != "/approvals/"+id {
		t.Errorf("the decided notification is %+v, want the ask's title as its body and its URL", n)
	}
	count := evalAwait[int](p, `navigator.serviceWorker.ready.then(r => r.getNotifications({tag: `+jsString(id)+`})).then(ns => ns.length)`)
	if count != 1 {
		t.Errorf("%d notifications are tagged with the ask, want 1: the decided one replaces the ask's", count)
	}

	// A push the worker cannot read still shows a notification.
	ctx, cancel := context.WithTimeout(p.ctx, StepTimeout)
	defer cancel()
	if _, err := chromedp.Call(ctx, serviceworker.DeliverPushMessage, serviceworker.DeliverPushMessageParams{
		Origin: p.Origin, RegistrationID: registration, Data: "not json",
	}); err != nil {
		p.Fatalf("ServiceWorker.deliverPushMessage: %v", err)
	}
	if n := waitForNotification(p, "countersign", func(shownNotification) bool { return true }); n.Title != "Countersign" || n.URL != "/" {
		t.Errorf("an unreadable push shows %+v, want the generic Countersign notification to the inbox", n)
	}
}

// evalAwait evaluates a JavaScript expression that gives a promise, and
// decodes what the promise resolves to.
func evalAwait[T any](p *Page, expr string) T {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, StepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		p.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// pushState waits until the notifications card has found this browser's
// state and returns it with the state's words and explanation.
func pushState(p *Page) (state, words, explain string) {
	p.t.Helper()
	p.WaitFor("the notifications card to find this browser's state",
		`document.readyState === "complete" && !!document.querySelector("#notifications")?.dataset.pushState`)
	return p.Attr("#notifications", "data-push-state"), p.Text("[data-testid=push-state]"),
		Eval[string](p, `(() => { const e = document.querySelector("[data-testid=push-explain]"); return e.hidden ? "" : e.textContent.trim(); })()`)
}

func TestTheNotificationsCardShowsThisBrowsersStateAndSendsATestPush(t *testing.T) {
	NeedChromium(t)
	ps := apptest.NewPushService(t)
	env := apptest.StartWeb(t, apptest.SQLite, map[string]string{"COUNTERSIGN_PUSH_ALLOWED_HOSTS": ps.Host(), "COUNTERSIGN_PUSH_RETRY": "10ms"})
	_, token := env.Agent(env.Account.ID, "bot")
	s := &service{t: t, env: env, page: browser.Open(t, env.URL), agent: env.Connect(token)}
	ada := s.signUp("ada", core.RoleOwner)
	p := s.page
	enabled := func() bool { return Eval[bool](p, `!document.querySelector("[data-testid=enable-push]").disabled`) }
	shown := func(sel string) bool {
		return Eval[bool](p, fmt.Sprintf(`document.querySelector(%s).checkVisibility()`, jsString(sel)))
	}

	p.Go("/devices")
	if state, words, explain := pushState(p); state != "off" || words != "off" || explain != "" {
		p.Fatalf("a browser with push and no subscription shows state %q (%q, %q), want off", state, words, explain)
	}
	if !enabled() || !shown("[data-testid=enable-push]") || shown("[data-testid=disable-push]") {
		p.Fatalf("with notifications off, enable-push is not offered or disable-push is")
	}
	if p.Count("[data-testid=test-push]") != 0 {
		p.Fatalf("with no device subscribed the page offers a test push")
	}

	// Blocked in the browser's settings: say so, and offer nothing to press.
	setNotifications(p, cdpbrowser.PermissionSettingDenied)
	p.Reload()
	if state, words, explain := pushState(p); state != "blocked" || words != "blocked" || !strings.Contains(explain, "blocked") {
		p.Fatalf("with notifications denied the card shows %q (%q, %q), want blocked with an explanation", state, words, explain)
	}
	if enabled() {
		p.Fatalf("with notifications blocked enable-push can still be pressed")
	}

	// An iPhone outside the Home Screen app: explain Add to Home Screen.
	ctx, cancel := context.WithTimeout(p.ctx, StepTimeout)
	defer cancel()
	if _, err := chromedp.Call(ctx, emulation.SetUserAgentOverride, emulation.SetUserAgentOverrideParams{
		UserAgent: "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1",
	}); err != nil {
		p.Fatalf("Emulation.setUserAgentOverride: %v", err)
	}
	p.Reload()
	state, words, explain := pushState(p)
	if state != "home-screen" || words != "needs the Home Screen" || !strings.Contains(explain, "Add to Home Screen") || !strings.Contains(explain, "Share") {
		p.Fatalf("on an iPhone in the browser the card shows %q (%q, %q), want the Add to Home Screen explanation", state, words, explain)
	}
	if enabled() {
		p.Fatalf("on an iPhone outside the Home Screen app enable-push can be pressed")
	}

	// A device subscribed elsewhere: the test button sends to it.
	endpoint, p256dh, auth := ps.Subscribe("mac")
	if _, err := env.Store.SavePushSubscription(context.Background(), ada.ID, outbox.PushSubscription{
		Endpoint: endpoint, P256dh: p256dh, Auth: auth, UserAgent: "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_4) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15",
	}); err != nil {
		t.Fatal(err)
	}
	p.Reload()
	pushState(p)
	if got := p.Text("[data-push-device]"); !strings.Contains(got, "Safari on macOS") || !strings.Contains(got, "never yet") {
		p.Fatalf("the subscribed device shows %q, want Safari on macOS, never delivered", got)
	}
	if p.Count("[data-this-browser]") != 0 {
		p.Fatalf("another device is marked as this browser")
	}
	p.Click("[data-testid=test-push]")
	p.WaitFor("the test push to be reported sent", `document.querySelector("[data-push-status]")?.textContent === "Test notification sent to 1 device."`)
	d, ok := ps.Next(10 * time.Second)
	if !ok {
		p.Fatalf("the test push did not reach the push service")
	}
	var m outbox.PushMessage
	if err := json.Unmarshal(d.Plaintext, &m); err != nil || d.Device != "mac" || m.Event != outbox.PushTest {
		t.Errorf("the push service got %s on %s, want a test push on mac", d.Plaintext, d.Device)
	}
	if errs := p.ConsoleErrors(); len(errs) != 0 {
		t.Errorf("the devices page logged errors: %q", errs)
	}
}
