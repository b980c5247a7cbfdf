package browsertest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/serviceworker"
	"github.com/chromedp/chromedp"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/outbox"
)

// startWithPush is start with a local push service the service may send to,
// and ada, an owner, signed up in the page with a device subscribed there.
func startWithPush(t *testing.T) (*service, *apptest.PushService) {
	t.Helper()
	NeedChromium(t)
	ps := apptest.NewPushService(t)
	env := apptest.StartWeb(t, apptest.SQLite, map[string]string{"COUNTERSIGN_PUSH_ALLOWED_HOSTS": ps.Host(), "COUNTERSIGN_PUSH_RETRY": "10ms"})
	_, token := env.Agent(env.Account.ID, "bot")
	s := &service{t: t, env: env, page: browser.Open(t, env.URL), agent: env.Connect(token)}
	ada := s.signUp("ada", core.RoleOwner)
	endpoint, p256dh, auth := ps.Subscribe("phone")
	if _, err := env.Store.SavePushSubscription(context.Background(), ada.ID, outbox.PushSubscription{Endpoint: endpoint, P256dh: p256dh, Auth: auth}); err != nil {
		t.Fatal(err)
	}
	return s, ps
}

// pushOf waits for the ask push of id and returns it decrypted, as the phone
// reads it, with its plaintext.
func pushOf(t *testing.T, ps *apptest.PushService, id string) (outbox.PushMessage, string) {
	t.Helper()
	for {
		d, ok := ps.Next(10 * time.Second)
		if !ok {
			t.Fatalf("no push of %s reached the push service", id)
		}
		var m outbox.PushMessage
		if err := json.Unmarshal(d.Plaintext, &m); err != nil {
			t.Fatalf("the push %q is not JSON: %v", d.Plaintext, err)
		}
		if m.Event == outbox.PushAsk && m.ApprovalID == id {
			return m, string(d.Plaintext)
		}
	}
}

// phoneWith opens a fresh browser context that never signed in, whose
// authenticator holds the passkey of from's (a passkey synced to the phone).
func phoneWith(t *testing.T, s *service, from *Page) *Page {
	t.Helper()
	phone := browser.Open(t, s.env.URL)
	ctx, cancel := context.WithTimeout(phone.ctx, StepTimeout)
	defer cancel()
	for _, c := range from.Credentials() {
		// Only the members a credential needs: Chromium refuses the CMTG
		// members cdproto's struct always sends.
		credential := map[string]any{"credentialId": c.CredentialID, "isResidentCredential": c.IsResidentCredential, "rpId": c.RpID,
			"privateKey": c.PrivateKey, "userHandle": c.UserHandle, "signCount": c.SignCount}
		if _, err := chromedp.Call(ctx, addCredential, map[string]any{"authenticatorId": phone.Authenticator, "credential": credential}); err != nil {
			phone.Fatalf("WebAuthn.addCredential: %v", err)
		}
	}
	return phone
}

// addCredential is WebAuthn.addCredential with a credential of our making.
var addCredential = cdp.Command[map[string]any, cdp.Empty]{Method: "WebAuthn.addCredential"}

// statusOf is the HTTP status a page of the service answers this browser
// (its cookies), without following a redirect.
func statusOf(p *Page, path string) int {
	p.t.Helper()
	return evalAwait[int](p, `fetch(`+jsString(path)+`, {redirect: "manual"}).then(r => r.type === "opaqueredirect" ? 303 : r.status)`)
}

func TestAPushLinkOpenedInABrowserThatNeverSignedInDecidesWithOnePasskeyPrompt(t *testing.T) {
	s, ps := startWithPush(t)
	id, sha := s.ask(pullRequestAsk(900, "abcdef1234567"))
	msg, _ := pushOf(t, ps, id)
	link := msg.URL
	if !strings.HasPrefix(link, "/link/"+id+"/pl_") {
		t.Fatalf("the push opens %q, want the ask's one-time link", link)
	}

	phone := phoneWith(t, s, s.page)
	phone.Go(link)
	phone.WaitVisible("[data-testid=approve]")
	if got := phone.Path(); got != "/link/"+id {
		t.Errorf("the link landed on %s, want /link/%s", got, id)
	}
	if got := shownHash(phone); got != sha {
		t.Errorf("the page shows payload hash %q, want %q", got, sha)
	}
	if n := phone.Count("nav, [data-testid=sign-out], [data-live]"); n != 0 {
		t.Errorf("the page under the link shows %d of a session's navigation, sign-out or live stream", n)
	}
	if statusOf(phone, "/") != 303 || statusOf(phone, "/approvals/"+id) != 303 {
		t.Errorf("the link made a session: the inbox or the ask page opens without signing in")
	}

	before := signCount(t, phone)
	phone.ClickToLoad("[data-testid=approve]", "/link/"+id+"/done", "[data-testid=receipt]")
	if v, line := phone.Text("[data-testid=receipt-verdict]"), phone.Text("[data-testid=receipt-line]"); v != "Approved" || !strings.HasPrefix(line, "Approved · Merge acme/web#900 · ") {
		t.Errorf("the done page's receipt says %q / %q, want Approved, the ask's title and the time", v, line)
	}
	if after := signCount(t, phone); after != before+1 {
		t.Errorf("the passkey signed %v times, want exactly once (no separate sign-in)", after-before)
	}
	got := s.checkGet(id, "approved", "approve", "ada", "")
	s.checkProof(got["proof"], id, sha, "approve", "ada")

	t.Run("the link is refused when reused", func(t *testing.T) {
		p := phone.For(t)
		if st := statusOf(p, link); st != 404 {
			t.Errorf("the push's link opened again: HTTP %d, want 404", st)
		}
		if st := statusOf(p, "/link/"+id); st != 404 {
			t.Errorf("the ask after its link was spent: HTTP %d, want 404 (the browser forgot the spent link)", st)
		}
		p.Go(link)
		p.WaitVisible("[data-testid=link-refused]")
		if href := p.Attr("[data-testid=link-sign-in]", "href"); href != "/signin?next=%2Fapprovals%2F"+id {
			t.Errorf("the refusal offers %q, want the sign-in that lands on the ask", href)
		}
	})

	t.Run("the link is refused for another ask", func(t *testing.T) {
		p := phone.For(t)
		other, _ := s.ask(pullRequestAsk(901, "0123456789abc"))
		otherMsg, _ := pushOf(t, ps, other)
		third, _ := s.ask(pullRequestAsk(902, "0123456789abd"))
		pushOf(t, ps, third)
		if st := statusOf(p, strings.Replace(otherMsg.URL, other, third, 1)); st != 403 {
			t.Errorf("another ask's link opened for this one: HTTP %d, want 403", st)
		}
		if st := statusOf(p, "/link/"+third); st != 404 {
			t.Errorf("an ask this browser holds no link to: HTTP %d, want 404", st)
		}
		// The refusals opened nothing: the other ask's link still opens it, once.
		p.Go(otherMsg.URL)
		p.WaitVisible("[data-testid=approve]")
	})

	t.Run("the link is refused after it expires", func(t *testing.T) {
		p := phone.For(t)
		late, _ := s.ask(pullRequestAsk(903, "0123456789abe"))
		lateMsg, _ := pushOf(t, ps, late)
		p.Go(lateMsg.URL)
		p.WaitVisible("[data-testid=approve]")
		s.env.Store.SetClock(func() time.Time { return time.Now().Add(outbox.PushLinkLife) })
		defer s.env.Store.SetClock(time.Now)
		if st := statusOf(p, "/link/"+late); st != 409 {
			t.Errorf("the link 15 minutes after it was sent: HTTP %d, want 409", st)
		}
		p.Reload()
		p.WaitVisible("[data-testid=link-refused]")
		if text := p.Text("[data-testid=link-refusal]"); !strings.Contains(text, "expired") {
			t.Errorf("the refusal says %q, want that the link expired", text)
		}
	})

	if errs := consoleErrorsBut(phone, "the server responded with a status of 40"); len(errs) != 0 {
		t.Errorf("the phone's pages logged errors: %q", errs)
	}
}

// consoleErrorsBut is the page's console errors, less those containing expected.
func consoleErrorsBut(p *Page, expected string) []string {
	var out []string
	for _, e := range p.ConsoleErrors() {
		if !strings.Contains(e, expected) {
			out = append(out, e)
		}
	}
	return out
}

// The service worker shows the push as it now arrives (with its one-time
// link and its declarative form) as it did before, and the notification is
// the one the declarative form describes: the same title, words and tag,
// opening the same link.
func TestTheServiceWorkerShowsThePushWithItsDeclarativeFormAndLink(t *testing.T) {
	s, ps := startWithPush(t)
	id, _ := s.ask(pullRequestAsk(900, "abcdef1234567"))
	msg, plaintext := pushOf(t, ps, id)
	p := s.page
	setNotifications(p, cdpbrowser.PermissionSettingGranted)
	registration := activeServiceWorker(p)
	ctx, cancel := context.WithTimeout(p.ctx, StepTimeout)
	defer cancel()
	if _, err := chromedp.Call(ctx, serviceworker.DeliverPushMessage, serviceworker.DeliverPushMessageParams{
		Origin: p.Origin, RegistrationID: registration, Data: plaintext,
	}); err != nil {
		p.Fatalf("ServiceWorker.deliverPushMessage: %v", err)
	}
	d := msg.Notification
	if msg.WebPush != outbox.DeclarativeWebPush || d == nil {
		t.Fatalf("the push %s carries no declarative form", plaintext)
	}
	n := waitForNotification(p, id, func(n shownNotification) bool { return n.Title == "Merge acme/web#900" })
	want := shownNotification{Title: d.Title, Tag: d.Tag, Body: d.Body, URL: strings.TrimPrefix(d.Navigate, s.env.App.Config.BaseURL), RequireInteraction: true, Renotify: true}
	if n != want || n.URL != msg.URL {
		t.Errorf("the service worker shows %+v, want the declarative form's %+v opening %s", n, want, msg.URL)
	}
}

// Without a link (an old notification, a bookmark), the sign-in page says it
// leads to an ask, without naming it, and signing in lands on the ask.
func TestSigningInFromAnAsksAddressLandsOnTheAsk(t *testing.T) {
	s, _ := startWithPush(t)
	id, _ := s.ask(pullRequestAsk(900, "abcdef1234567"))
	phone := phoneWith(t, s, s.page)
	phone.WithoutPasskeyAutofill()
	phone.Go("/approvals/" + id)
	phone.WaitVisible("[data-testid=sign-in]")
	if got := phone.Text("[data-testid=signin-ask]"); got != "Sign in to answer the ask you opened." {
		t.Errorf("the sign-in page says %q, want that it leads to an ask, unnamed", got)
	}
	phone.ClickToLoad("[data-testid=sign-in]", "/approvals/"+id, "[data-testid=approve]")
}
