package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/ask"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/proof"
)

// stubPushSubscribe makes the pages loaded from now on subscribe to push at
// endpoint with the device keys p256dh and auth, which a local push service
// holds: headless Chromium cannot complete PushManager.subscribe (no push
// service is reachable), so the subscription the page's own code asks for
// is given, and everything after it (the POST, the pushes) is real.
func stubPushSubscribe(p *Page, endpoint, p256dh, auth string) {
	p.t.Helper()
	sub, err := json.Marshal(map[string]any{"endpoint": endpoint, "expirationTime": nil, "keys": map[string]string{"p256dh": p256dh, "auth": auth}})
	if err != nil {
		p.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(p.ctx, StepTimeout)
	defer cancel()
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: fmt.Sprintf(`(() => {
		if (!window.PushManager) return;
		const json = %s, saved = "browsertest-push-subscription";
		const made = () => ({ endpoint: json.endpoint, options: { applicationServerKey: null }, toJSON: () => json,
			unsubscribe: async () => { localStorage.removeItem(saved); return true; } });
		PushManager.prototype.subscribe = async function () { localStorage.setItem(saved, "1"); return made(); };
		PushManager.prototype.getSubscription = async function () { return localStorage.getItem(saved) ? made() : null; };
	})();`, sub)}); err != nil {
		p.Fatalf("Page.addScriptToEvaluateOnNewDocument: %v", err)
	}
}

// downloadsTo makes the page's downloads land in dir under their own names.
func downloadsTo(p *Page, dir string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, StepTimeout)
	defer cancel()
	if _, err := chromedp.CallBrowser(ctx, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{
		Behavior: cdpbrowser.SetDownloadBehaviorBehaviorAllow, DownloadPath: dir, BrowserContextID: chromedp.FromContext(p.ctx).BrowserContextID,
	}); err != nil {
		p.Fatalf("Browser.setDownloadBehavior: %v", err)
	}
}

// waitForFile waits until the file at path is there, complete.
func waitForFile(t *testing.T, path string) []byte {
	t.Helper()
	deadline := time.Now().Add(StepTimeout)
	for {
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 && json.Valid(b) {
			return b
		}
		if time.Now().After(deadline) {
			entries, _ := os.ReadDir(filepath.Dir(path))
			t.Fatalf("no complete download at %s within %s (the folder holds %v)", path, StepTimeout, entries)
		}
		time.Sleep(pollEvery)
	}
}

// accessibleInBothSchemes fails on every serious or critical axe-core
// violation of the page, light and dark.
func accessibleInBothSchemes(p *Page, what string) {
	p.t.Helper()
	for _, scheme := range []string{"light", "dark"} {
		p.ColorScheme(scheme)
		for _, v := range p.Axe() {
			p.t.Errorf("axe-core on %s in the %s scheme: %s", what, scheme, v)
		}
	}
	p.ColorScheme("light")
}

// The first five minutes, in Chromium: the owner registers from the setup
// link that serve prints, turns notifications on from the empty inbox,
// sends a test ask, feels its push, approves it, sees the receipt, goes
// back to the inbox and downloads a proof that countersign verify accepts.
func TestANewOwnerGoesFromTheSetupLinkToAVerifiedProofOfATestAsk(t *testing.T) {
	NeedChromium(t)
	ctx := context.Background()
	ps := apptest.NewPushService(t)
	env := apptest.StartWeb(t, apptest.SQLite, map[string]string{"COUNTERSIGN_PUSH_ALLOWED_HOSTS": ps.Host(), "COUNTERSIGN_PUSH_RETRY": "10ms"})
	setup, err := env.App.SetupURL(ctx)
	if err != nil || !strings.HasPrefix(setup, env.URL+"/invite/") {
		t.Fatalf("the setup link is %q (%v), want an invite of %s", setup, err, env.URL)
	}
	p := browser.Open(t, env.URL)
	s := &service{t: t, env: env, page: p}
	t.Cleanup(func() {
		for _, e := range p.ConsoleErrors() {
			if s.expected == nil || !s.expected(e) {
				t.Errorf("the pages reported an error in the browser console: %s", e)
			}
		}
	})
	endpoint, p256dh, auth := ps.Subscribe("phone")
	stubPushSubscribe(p, endpoint, p256dh, auth)
	setNotifications(p, cdpbrowser.PermissionSettingGranted)

	p.Go(strings.TrimPrefix(setup, env.URL))
	if n := p.Count("#register input[placeholder]"); n != 0 {
		t.Errorf("the setup page has %d placeholders, which read as filled-in values", n)
	}
	accessibleInBothSchemes(p, "the setup page")
	// A refusal shows at the field it is about.
	p.Type("#subject", "agent:ada")
	p.Click("[data-testid=register-passkey]")
	p.WaitVisible("#subject-error")
	if msg, inv := p.Text("#subject-error"), p.Attr("#subject", "aria-invalid"); !strings.Contains(msg, "agent:") || inv != "true" {
		t.Errorf("the refused name shows %q at its field (aria-invalid %q), want the refusal there", msg, inv)
	}
	s.expected = func(e string) bool { return strings.Contains(e, "400") }
	Eval[string](p, `document.getElementById("subject").value = ""`)
	p.Type("#subject", "ada")
	p.ClickToLoad("[data-testid=register-passkey]", "/", "[data-testid=sign-out]")
	s.checkInbox()
	ada, err := env.Store.MemberBySubject(ctx, env.Account.ID, "ada")
	if err != nil || ada.Role != core.RoleOwner {
		t.Fatalf("ada after the setup link: %+v, %v; want an owner", ada, err)
	}

	// The empty inbox is the checklist; notifications turn on right there.
	p.WaitVisible("[data-testid=inbox-empty] [data-testid=enable-push]")
	p.WaitFor("the notifications step to show this browser's state", `document.querySelector("[data-testid=push-state]").textContent === "off"`)
	if p.Count("[data-testid=home-screen-step]:not([hidden])") != 0 {
		t.Errorf("the Add to Home Screen step shows in a desktop browser")
	}
	if !strings.Contains(p.Text("[data-testid=agent-step]"), env.URL+"/mcp") || p.Count("[data-testid=make-agent-token]") != 1 {
		t.Errorf("the agent step says %q, want the MCP URL and a way to make a token", p.Text("[data-testid=agent-step]"))
	}
	accessibleInBothSchemes(p, "the empty inbox")
	Eval[bool](p, `window.browsertestClickedHere = true`)
	p.Click("[data-testid=enable-push]")
	p.WaitFor("the inbox to show notifications on after a reload",
		`!window.browsertestClickedHere && document.readyState === "complete" && document.querySelector("[data-testid=push-state]")?.textContent === "on"`)
	subs, err := env.Store.PushSubscriptions(ctx, ada.ID)
	if err != nil || len(subs) != 1 || subs[0].Endpoint != endpoint {
		t.Fatalf("ada's push subscriptions after the button: %+v (%v), want the one at %s", subs, err, endpoint)
	}

	// A test ask, from the service's own agent, to ada's phone.
	Eval[bool](p, `window.browsertestClickedHere = true`)
	p.Click("[data-testid=send-test-ask]")
	p.WaitFor("the test ask's page", `!window.browsertestClickedHere && document.readyState === "complete" && location.pathname.startsWith("/approvals/") && !!document.querySelector("[data-testid=choice-0]")`)
	id := strings.TrimPrefix(p.Path(), "/approvals/")
	a, err := env.Store.GetApproval(ctx, env.Account.ID, id)
	if err != nil || a.Title != models.TestAskTitle || a.RequesterSubject != "agent:"+models.ServiceAgentName || a.AskedOf != "ada" || a.Kind != ask.KindDecision {
		t.Fatalf("the test ask is %+v (%v), want a decision titled as a test, from %s, asked of ada", a, err, models.ServiceAgentName)
	}
	if m, _ := pushOf(t, ps, id); m.Title != models.TestAskTitle {
		t.Errorf("the test ask's push is titled %q, want %q", m.Title, models.TestAskTitle)
	}

	// A tap that lands while the ask just appeared is ignored: the button
	// starts nothing until the answer bar takes taps.
	p.Reload()
	if got := Eval[string](p, `(() => { const b = document.querySelector("[data-testid=choice-0]");
		if (b.closest("[data-actions]").dataset.armed !== undefined) return "armed already";
		b.click(); return b.getAttribute("aria-busy") || "ignored"; })()`); got != "ignored" && got != "armed already" {
		t.Errorf("a tap as the ask appears gives %q, want it ignored", got)
	}

	// Approve: the receipt, then the way on.
	Eval[bool](p, `window.browsertestClickedHere = true`)
	p.Click("[data-testid=choice-0]")
	p.WaitFor("the receipt", `!window.browsertestClickedHere && document.readyState === "complete" && location.pathname === `+jsString("/approvals/"+id+"/receipt"))
	if v, line := p.Text("[data-testid=receipt-verdict]"), p.Text("[data-testid=receipt-line]"); v != "Approved: Yes, it reached me" ||
		!strings.HasPrefix(line, "Approved: Yes, it reached me · "+models.TestAskTitle+" · ") {
		t.Errorf("the receipt says %q / %q, want the verdict, the title and the time", v, line)
	}
	if check := p.Text("[data-testid=receipt-check]"); !strings.Contains(check, "passkey") || !strings.Contains(check, a.PayloadSHA256[:12]) {
		t.Errorf("the receipt's check says %q, want the passkey and the payload hash", check)
	}
	p.WaitFor("the way on after the receipt", `getComputedStyle(document.querySelector("[data-testid=receipt-next]")).visibility === "visible"`)
	if got := p.Text("[data-testid=receipt-go-on]"); got != "Back to the inbox →" {
		t.Errorf("the receipt leads on with %q, want back to the inbox (nothing else waits)", got)
	}
	accessibleInBothSchemes(p, "the receipt")

	dir := t.TempDir()
	downloadsTo(p, dir)
	p.Click("[data-testid=receipt-proof]")
	raw := waitForFile(t, filepath.Join(dir, id+".proof.json"))
	// countersign verify's checks, on the file downloaded.
	parsed, err := proof.Parse(raw)
	if err != nil {
		t.Fatalf("the downloaded proof does not parse: %v\n%s", err, raw)
	}
	res, err := proof.Verify(parsed, proof.Expect{RPID: "localhost", Origin: env.URL, Keys: s.keys()})
	if err != nil || !res.PayloadTold || !res.KeyRegistered || res.KeyPerson != "ada" {
		t.Fatalf("countersign verify --keys on the downloaded proof: %+v, %v; want valid, with its payload, ada's registered key", res, err)
	}
	var any map[string]any
	if err := json.Unmarshal(raw, &any); err != nil {
		t.Fatal(err)
	}
	s.checkProof(any, id, a.PayloadSHA256, "option:0", "ada")

	p.ClickToLoad("[data-testid=receipt-go-on]", "/", "[data-testid=inbox-empty]")
}
