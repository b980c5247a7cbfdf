// Package browsertest drives the approver PWA in headless Chromium, with a
// CDP virtual authenticator standing in for Face ID / Touch ID, against the
// whole service running in the test process. The tests are in this package's
// _test files; this file is the harness they share.
package browsertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/webauthn"
	"github.com/chromedp/chromedp"
)

// ChromiumPath is Debian's Chromium binary (the /usr/bin/chromium wrapper
// only adds a shell warning).
const ChromiumPath = "/usr/lib/chromium/chromium"

// How long one step may take: a page load, a click, a passkey prompt, the
// wait for an element. A broken page fails after this, with what it shows.
const (
	StepTimeout = 10 * time.Second
	pollEvery   = 50 * time.Millisecond
)

// Browser is one Chromium process, started on first use and shared by every
// test of the package; each test gets a browser context of its own.
type Browser struct {
	once    sync.Once
	ctx     context.Context // a chromedp context whose browser is running
	cancels []context.CancelFunc
	err     error
}

// start launches Chromium headless and without the sandbox (CI runs as
// root). chromedp's defaults already turn off first-run, sync and background
// networking; component updates would reach out of a closed network too.
func (b *Browser) start() {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(ChromiumPath),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("hide-scrollbars", true),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	b.cancels = []context.CancelFunc{cancel, cancelAlloc}
	start, cancelStart := context.WithTimeout(ctx, 30*time.Second)
	defer cancelStart()
	// The first Do on ctx starts the browser, which lives as long as ctx;
	// the timeout bounds only the wait for it.
	done := make(chan error, 1)
	go func() { done <- chromedp.Do(ctx) }()
	select {
	case b.err = <-done:
	case <-start.Done():
		b.err = errors.New("chromium did not start within 30 s")
	}
	if b.err != nil {
		b.err = fmt.Errorf("start %s: %w", ChromiumPath, b.err)
	}
	b.ctx = ctx
}

// Close stops the browser, if it ran.
func (b *Browser) Close() {
	for _, cancel := range b.cancels {
		cancel()
	}
}

// NeedChromium skips the test when Debian's Chromium is not installed, or
// fails it under CI, where the browser tests must run.
func NeedChromium(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(ChromiumPath); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is missing: CI runs the browser tests (apt-get install -y chromium)", ChromiumPath)
		}
		t.Skipf("browser test skipped: %s is not installed (apt-get install -y chromium)", ChromiumPath)
	}
}

// AuthenticatorOptions is the virtual passkey of every page: a platform
// authenticator (Face ID / Touch ID) that holds discoverable credentials and
// verifies its user. AutomaticPresenceSimulation must be sent as true: the
// zero value leaves navigator.credentials.create waiting forever.
var AuthenticatorOptions = webauthn.VirtualAuthenticatorOptions{
	Protocol:                    webauthn.AuthenticatorProtocolCtap2,
	Transport:                   webauthn.AuthenticatorTransportInternal,
	HasResidentKey:              true,
	HasUserVerification:         true,
	IsUserVerified:              true,
	AutomaticPresenceSimulation: true,
}

// Page is one tab in a fresh browser context (its own cookies and storage,
// like an incognito window) with a virtual authenticator, on the service at
// Origin.
type Page struct {
	t             testing.TB
	ctx           context.Context
	Origin        string
	Authenticator webauthn.AuthenticatorID

	log *consoleLog
}

// consoleLog is what a page wrote to its console, shared by the Page values
// For makes.
type consoleLog struct {
	mu    sync.Mutex
	lines []string
}

// For returns the page reporting to t (a subtest): the same tab.
func (p *Page) For(t testing.TB) *Page {
	c := *p
	c.t = t
	return &c
}

// Open starts the browser if it is not running yet and opens a page on the
// service at origin (http://localhost:PORT: a WebAuthn RP ID cannot be an IP
// address). The page closes when the test ends.
func (b *Browser) Open(t testing.TB, origin string) *Page {
	t.Helper()
	NeedChromium(t)
	b.once.Do(b.start)
	if b.err != nil {
		t.Fatal(b.err)
	}
	ctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	p := &Page{t: t, ctx: ctx, Origin: strings.TrimRight(origin, "/"), log: &consoleLog{}}

	first, cancelFirst := context.WithTimeout(ctx, StepTimeout)
	defer cancelFirst()
	// The first Do opens the tab; a timeout on it would close the tab, so
	// it runs on ctx and the wait is bounded here.
	opened := make(chan error, 1)
	go func() { opened <- chromedp.Do(ctx) }()
	select {
	case err := <-opened:
		if err != nil {
			t.Fatalf("open a tab: %v", err)
		}
	case <-first.Done():
		t.Fatalf("open a tab: no tab within %s", StepTimeout)
	}

	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			line := m.String()
			if m.IsException() || m.Type == "error" {
				line = "!! " + line
			}
			if m.URL != "" {
				line += fmt.Sprintf(" (%s:%d)", m.URL, m.Line+1)
			}
			p.log.mu.Lock()
			p.log.lines = append(p.log.lines, line)
			p.log.mu.Unlock()
		}
	}()

	if _, err := chromedp.Call(first, webauthn.Enable, webauthn.EnableParams{}); err != nil {
		t.Fatalf("WebAuthn.enable: %v", err)
	}
	opts := AuthenticatorOptions
	res, err := chromedp.Call(first, webauthn.AddVirtualAuthenticator, webauthn.AddVirtualAuthenticatorParams{Options: &opts})
	if err != nil {
		t.Fatalf("WebAuthn.addVirtualAuthenticator: %v", err)
	}
	p.Authenticator = res.AuthenticatorID
	return p
}

// Console is what the page wrote to its console so far: console calls,
// uncaught exceptions and browser log entries such as a refused script.
func (p *Page) Console() []string {
	p.log.mu.Lock()
	defer p.log.mu.Unlock()
	return append([]string(nil), p.log.lines...)
}

// ConsoleErrors is what the page reported as an error so far: uncaught
// exceptions, console.error, and browser errors such as a Content-Security-
// Policy refusal or a failed load.
func (p *Page) ConsoleErrors() []string {
	var errs []string
	for _, line := range p.Console() {
		if strings.HasPrefix(line, "!! ") {
			errs = append(errs, strings.TrimPrefix(line, "!! "))
		}
	}
	return errs
}

// Do runs actions with the step timeout; a failure fails the test with what
// the page shows.
func (p *Page) Do(what string, actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, StepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		p.Fatalf("%s: %v", what, err)
	}
}

// Go loads path on the service and waits for the load event. Chromium
// reports a navigation it began as aborted (net::ERR_ABORTED) when the page
// it leaves starts one of its own at the same moment; the page then often
// lands at path all the same, which is what a person would see: Go waits
// for that, and fails only when the page is not at path.
func (p *Page) Go(path string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, StepTimeout)
	defer cancel()
	err := chromedp.Do(ctx, chromedp.Navigate(p.Origin+path))
	if err != nil && strings.Contains(err.Error(), "net::ERR_ABORTED") {
		p.WaitFor("the page at "+path+" after Chromium reported its navigation aborted",
			fmt.Sprintf(`location.pathname + location.search === %s && document.readyState === "complete"`, jsString(path)))
		return
	}
	if err != nil {
		p.Fatalf("open %s: %v", path, err)
	}
}

// Reload reloads the page and waits for the load event.
func (p *Page) Reload() {
	p.t.Helper()
	p.Do("reload", chromedp.Reload())
}

// Click clicks the first element sel matches, once it is visible; in an
// ask's answer bar, once the bar takes taps (it ignores them for a moment
// after the ask appears).
func (p *Page) Click(sel string) {
	p.t.Helper()
	p.WaitFor("the answer bar to take taps before a click on "+sel, fmt.Sprintf(
		`(() => { const e = document.querySelector(%s); const bar = e && e.closest("[data-actions]"); return !!e && (!bar || bar.dataset.armed !== undefined); })()`, jsString(sel)))
	p.Do("click "+sel, chromedp.Click(chromedp.CSS(sel)))
}

// ClickToLoad clicks the first element sel matches and waits until a new
// document (not the one clicked in: a script may change that one in place
// first) is loaded at path and shows an element ready matches.
func (p *Page) ClickToLoad(sel, path, ready string) {
	p.t.Helper()
	Eval[bool](p, `window.browsertestClickedHere = true`)
	p.Click(sel)
	p.WaitFor(fmt.Sprintf("a new page at %s with %s to show, after a click on %s", path, ready, sel), fmt.Sprintf(
		`(() => { if (window.browsertestClickedHere || location.pathname !== %s || document.readyState !== "complete") return false; const e = document.querySelector(%s); return !!e && e.checkVisibility(); })()`,
		jsString(path), jsString(ready)))
}

// Type focuses the field sel matches and types text into it, key by key.
func (p *Page) Type(sel, text string) {
	p.t.Helper()
	p.Do("type into "+sel, chromedp.SendKeys(chromedp.CSS(sel), text))
}

// Eval evaluates a JavaScript expression in the page and decodes its value.
func Eval[T any](p *Page, expr string) T {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, StepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		p.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// Text is the rendered text of the first element sel matches; the element
// must be there.
func (p *Page) Text(sel string) string {
	p.t.Helper()
	return Eval[string](p, fmt.Sprintf(`(() => { const e = document.querySelector(%s); if (!e) throw new Error("no element matches " + %[1]s); return e.innerText.trim(); })()`, jsString(sel)))
}

// Attr is the attribute name of the first element sel matches ("" when it
// has none); the element must be there.
func (p *Page) Attr(sel, name string) string {
	p.t.Helper()
	return Eval[string](p, fmt.Sprintf(`(() => { const e = document.querySelector(%s); if (!e) throw new Error("no element matches " + %[1]s); return e.getAttribute(%s) ?? ""; })()`, jsString(sel), jsString(name)))
}

// Count is how many elements sel matches.
func (p *Page) Count(sel string) int {
	p.t.Helper()
	return Eval[int](p, fmt.Sprintf(`document.querySelectorAll(%s).length`, jsString(sel)))
}

// Path is the page's location path.
func (p *Page) Path() string {
	p.t.Helper()
	return Eval[string](p, `location.pathname`)
}

// WaitFor waits until the JavaScript expression cond is true: across page
// loads, so that a click which navigates can be followed by the wait for
// what the next page shows. It fails after StepTimeout, naming what.
func (p *Page) WaitFor(what, cond string) {
	p.t.Helper()
	deadline := time.Now().Add(StepTimeout)
	var last error
	for {
		ctx, cancel := context.WithTimeout(p.ctx, 2*time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](cond))
		cancel()
		if err == nil && ok {
			return
		}
		if err != nil {
			last = err
		}
		if p.ctx.Err() != nil || time.Now().After(deadline) {
			msg := fmt.Sprintf("timed out after %s waiting for %s", StepTimeout, what)
			if last != nil {
				msg += fmt.Sprintf(" (last error: %v)", last)
			}
			p.Fatalf("%s", msg)
		}
		time.Sleep(pollEvery)
	}
}

// WaitVisible waits until an element sel matches is on the page and shown.
func (p *Page) WaitVisible(sel string) {
	p.t.Helper()
	p.WaitFor(sel+" to show", fmt.Sprintf(`(() => { const e = document.querySelector(%s); return !!e && e.checkVisibility(); })()`, jsString(sel)))
}

// WithoutPasskeyAutofill makes the pages loaded from now on report that the
// browser has no conditional mediation (passkey autofill), as browsers
// without it do, and returns the func that undoes it for later loads. The
// virtual authenticator answers a conditional request by itself, so a page
// that offers autofill signs in before a test can press its button.
func (p *Page) WithoutPasskeyAutofill() (undo func()) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, StepTimeout)
	defer cancel()
	res, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
		Source: `if (window.PublicKeyCredential) PublicKeyCredential.isConditionalMediationAvailable = async () => false;`,
	})
	if err != nil {
		p.Fatalf("Page.addScriptToEvaluateOnNewDocument: %v", err)
	}
	return func() {
		p.t.Helper()
		ctx, cancel := context.WithTimeout(p.ctx, StepTimeout)
		defer cancel()
		if _, err := chromedp.Call(ctx, page.RemoveScriptToEvaluateOnNewDocument, page.RemoveScriptToEvaluateOnNewDocumentParams{Identifier: res.Identifier}); err != nil {
			p.Fatalf("Page.removeScriptToEvaluateOnNewDocument: %v", err)
		}
	}
}

// Credentials is what the virtual authenticator holds.
func (p *Page) Credentials() []*webauthn.Credential {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, StepTimeout)
	defer cancel()
	res, err := chromedp.Call(ctx, webauthn.GetCredentials, webauthn.GetCredentialsParams{AuthenticatorID: p.Authenticator})
	if err != nil {
		p.Fatalf("WebAuthn.getCredentials: %v", err)
	}
	return res.Credentials
}

// Screenshot captures the viewport, or with full the whole page, as PNG.
func (p *Page) Screenshot(full bool) []byte {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, StepTimeout)
	defer cancel()
	shot := chromedp.CaptureScreenshot()
	if full {
		shot = chromedp.FullScreenshot(100)
	}
	png, err := chromedp.Run(ctx, shot)
	if err != nil {
		p.Fatalf("screenshot: %v", err)
	}
	return png
}

// Fatalf fails the test with the message and what the page shows: its
// address, its text, the [data-error] boxes and the console.
func (p *Page) Fatalf(format string, args ...any) {
	p.t.Helper()
	p.t.Fatalf("%s\n%s", fmt.Sprintf(format, args...), p.Dump())
}

// Dump describes the page for a failure message.
func (p *Page) Dump() string {
	var b strings.Builder
	ctx, cancel := context.WithTimeout(p.ctx, 3*time.Second)
	defer cancel()
	state, err := chromedp.Run(ctx, chromedp.Evaluate[struct {
		URL    string   `json:"url"`
		Text   string   `json:"text"`
		Errors []string `json:"errors"`
	}](`({
		url: location.href,
		text: document.body ? document.body.innerText : "(no body)",
		errors: [...document.querySelectorAll("[data-error]")].map(e => (e.hidden ? "(hidden) " : "") + e.textContent.trim()),
	})`))
	if err != nil {
		fmt.Fprintf(&b, "--- the page could not be read: %v\n", err)
	} else {
		const max = 4000
		text := state.Text
		if len(text) > max {
			text = text[:max] + "\n…(cut)"
		}
		fmt.Fprintf(&b, "--- page %s\n%s\n", state.URL, text)
		fmt.Fprintf(&b, "--- [data-error] boxes: %q\n", state.Errors)
	}
	console := p.Console()
	if len(console) == 0 {
		b.WriteString("--- console: (empty)\n")
	} else {
		fmt.Fprintf(&b, "--- console:\n  %s\n", strings.Join(console, "\n  "))
	}
	return b.String()
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
