package handlers_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/outbox"
)

// linkScene is a scene whose pushes reach a local push service: ada, the
// owner, has a phone subscribed; bob is another owner.
type linkScene struct {
	*scene
	ps  *apptest.PushService
	bob *apptest.Browser
}

func newLinkScene(t *testing.T, db apptest.Database) *linkScene {
	t.Helper()
	ps := apptest.NewPushService(t)
	s := &linkScene{scene: newScene(t, db, map[string]string{"COUNTERSIGN_PUSH_ALLOWED_HOSTS": ps.Host(), "COUNTERSIGN_PUSH_RETRY": "10ms"}), ps: ps}
	ada, err := s.env.Store.PersonBySubject(context.Background(), "ada")
	if err != nil {
		t.Fatal(err)
	}
	endpoint, p256dh, auth := ps.Subscribe("phone")
	if _, err := s.env.Store.SavePushSubscription(context.Background(), ada.ID, outbox.PushSubscription{Endpoint: endpoint, P256dh: p256dh, Auth: auth}); err != nil {
		t.Fatal(err)
	}
	s.bob = join(t, s.env, s.env.Account.ID, core.RoleOwner, "bob")
	return s
}

// pushedLink waits for the push of ask id and returns the link it carries.
func (s *linkScene) pushedLink(t *testing.T, id string) string {
	t.Helper()
	for {
		d, ok := s.ps.Next(10 * time.Second)
		if !ok {
			t.Fatalf("no push for %s arrived", id)
		}
		var m outbox.PushMessage
		if err := json.Unmarshal(d.Plaintext, &m); err != nil {
			t.Fatal(err)
		}
		if m.Event == outbox.PushAsk && m.ApprovalID == id {
			if !strings.HasPrefix(m.URL, "/link/"+id+"/pl_") {
				t.Fatalf("the push of %s opens %q, want its one-time link", id, m.URL)
			}
			return m.URL
		}
	}
}

// phoneOf is a browser that never signed in, holding the passkey of owner
// (synced), on the service at url.
func phoneOf(t *testing.T, url string, owner *apptest.Browser) *apptest.Browser {
	t.Helper()
	b := apptest.NewBrowser(t, url)
	b.Passkey = owner.Passkey
	return b
}

// openPage loads path as a person's browser does (a page, not JSON) and
// answers the status, the body and where a redirect goes.
func openPage(t *testing.T, b *apptest.Browser, path string) (int, string, string) {
	t.Helper()
	res, err := b.HTTP.Get(b.Origin + path)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(body), res.Header.Get("Location")
}

// linkDecide answers through the link b holds: challenge, signature, decide.
func linkDecide(t *testing.T, b *apptest.Browser, id, verdict string) apptest.Response {
	t.Helper()
	ch := b.Post("/link/"+id+"/challenge", map[string]string{"decision": verdict})
	if ch.Status != http.StatusOK {
		return ch
	}
	ceremony, options := ch.Ceremony()
	return b.Post("/link/"+id+"/decide", map[string]any{"ceremony": ceremony, "credential": b.Sign(options)})
}

func TestAPushLinkDecidesItsAskWithOnePasskeyPromptOnceAndNothingElse(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := newLinkScene(t, db)
		id := s.prAsk(t, "")
		link := s.pushedLink(t, id)
		other := s.prAsk(t, "")
		otherLink := s.pushedLink(t, other)
		phone := phoneOf(t, s.env.URL, s.owner)

		// The first open swaps the link for this browser's cookie and shows the ask.
		status, _, to := openPage(t, phone, link)
		if status != http.StatusSeeOther || to != "/link/"+id {
			t.Fatalf("opening the link answered %d to %q, want 303 to /link/%s", status, to, id)
		}
		status, body, _ := openPage(t, phone, "/link/"+id)
		if status != http.StatusOK || !strings.Contains(body, `data-decide="/link/`+id+`"`) || !strings.Contains(body, `data-testid="approve"`) {
			t.Fatalf("the ask under its link: HTTP %d, want its page with answers posting under the link:\n%s", status, body)
		}
		for _, leak := range []string{"data-live", `href="/history"`, other} {
			if strings.Contains(body, leak) {
				t.Errorf("the ask under its link shows %q: only that ask opens, with no session's pages or streams", leak)
			}
		}

		t.Run("the link is no session: the inbox, the ask page and the other ask stay closed", func(t *testing.T) {
			for _, path := range []string{"/", "/approvals/" + id, "/approvals/" + other, "/history"} {
				if status, _, to := openPage(t, phone, path); status != http.StatusSeeOther || !strings.HasPrefix(to, "/signin") {
					t.Errorf("GET %s with the link answered %d to %q, want the sign-in page", path, status, to)
				}
			}
			if r := phone.Get("/approvals/" + id + "/events"); r.Status != http.StatusUnauthorized {
				t.Errorf("the live timeline with only the link: %s, want 401", r)
			}
		})

		t.Run("the link's secret presented for another ask is refused", func(t *testing.T) {
			if status, body, _ := openPage(t, phone, "/link/"+other); status != http.StatusNotFound || !strings.Contains(body, `data-testid="link-refused"`) {
				t.Errorf("the other ask with no link: HTTP %d, want the 404 refusal page", status)
			}
			u, _ := url.Parse(s.env.URL + "/")
			phone.HTTP.Jar.SetCookies(u, []*http.Cookie{{Name: "cs_link_" + other, Value: phone.Cookie("cs_link_" + id), Path: "/"}})
			if status, body, _ := openPage(t, phone, "/link/"+other); status != http.StatusForbidden || !strings.Contains(body, "opens another ask") {
				t.Errorf("the other ask with this ask's link: HTTP %d, want 403 (another ask):\n%s", status, body)
			}
			before := s.state(t, other)
			refused(t, linkDecide(t, phone, other, "approve"), http.StatusForbidden, "PERMISSION_DENIED")
			s.unchanged(t, other, before)
			if status, _, _ := openPage(t, apptest.NewBrowser(t, s.env.URL), strings.Replace(otherLink, other, id, 1)); status != http.StatusForbidden {
				t.Errorf("the other ask's link opened for this ask: HTTP %d, want 403", status)
			}
		})

		t.Run("the opened link's URL opens nothing again", func(t *testing.T) {
			stranger := apptest.NewBrowser(t, s.env.URL)
			if status, body, _ := openPage(t, stranger, link); status != http.StatusNotFound || !strings.Contains(body, `data-testid="link-refused"`) {
				t.Errorf("the link's URL opened a second time: HTTP %d, want the 404 refusal page:\n%s", status, body)
			}
		})

		t.Run("a passkey of another person who may decide is refused, and the link survives", func(t *testing.T) {
			before := s.state(t, id)
			ch := phone.Post("/link/"+id+"/challenge", map[string]string{"decision": "approve"})
			if ch.Status != http.StatusOK {
				t.Fatalf("challenge: %s", ch)
			}
			ceremony, options := ch.Ceremony()
			var o map[string]any
			_ = json.Unmarshal(options, &o)
			delete(o, "allowCredentials") // bob's authenticator would refuse to answer otherwise
			loose, _ := json.Marshal(o)
			refused(t, phone.Post("/link/"+id+"/decide", map[string]any{"ceremony": ceremony, "credential": s.bob.Sign(loose)}), http.StatusForbidden, "PERMISSION_DENIED")
			s.unchanged(t, id, before)
		})

		t.Run("the sign-in page names the ask only for a browser holding its live link", func(t *testing.T) {
			_, body, _ := openPage(t, phone, "/signin?next="+url.QueryEscape("/approvals/"+id))
			if !strings.Contains(body, "Sign in to answer <strong>Merge acme/web#") {
				t.Errorf("the sign-in page of the link's browser does not name its ask:\n%s", body)
			}
			stranger := apptest.NewBrowser(t, s.env.URL)
			_, body, _ = openPage(t, stranger, "/signin?next="+url.QueryEscape("/approvals/"+id))
			if !strings.Contains(body, "Sign in to answer the ask you opened.") || strings.Contains(body, "Merge acme/web#") {
				t.Errorf("a stranger's sign-in page with the ask's id names more than an ask:\n%s", body)
			}
		})

		// One assertion decides, as ada, and spends the link.
		secret := phone.Cookie("cs_link_" + id)
		counter := phone.Passkey.Counter
		r := linkDecide(t, phone, id, "approve")
		if r.Status != http.StatusOK || r.Body["redirect"] != "/link/"+id+"/done" {
			t.Fatalf("deciding through the link: %s", r)
		}
		if phone.Passkey.Counter != counter+1 {
			t.Errorf("the passkey signed %d times, want once", phone.Passkey.Counter-counter)
		}
		got := s.agent.OK("approvals_get", map[string]any{"approval_id": id})
		if got["status"] != "approved" || got["decided_by"] != "ada" {
			t.Fatalf("approvals_get = %v %v, want approved by ada", got["status"], got["decided_by"])
		}
		s.checkProof(t, proofOf(t, got["proof"]), phone, id, got["payload_sha256"].(string), "approve", "ada")
		if phone.Session() != "" {
			t.Errorf("deciding through the link signed the browser in")
		}
		t.Run("the done page is the receipt to the browser that signed, and says nothing of the ask to another", func(t *testing.T) {
			status, body, _ := openPage(t, phone, "/link/"+id+"/done")
			if status != http.StatusOK || !strings.Contains(body, `data-testid="receipt"`) || !strings.Contains(body, "Approved") ||
				!strings.Contains(body, "Merge acme/web#") || !strings.Contains(body, "/signin?next=%2Fapprovals%2F"+id) {
				t.Errorf("the done page in the browser that signed: HTTP %d, want the receipt (Approved, the title, a sign-in to the ask):\n%s", status, body)
			}
			stranger := apptest.NewBrowser(t, s.env.URL)
			if status, body, _ := openPage(t, stranger, "/link/"+id+"/done"); status != http.StatusOK || strings.Contains(body, "Merge acme/web#") ||
				strings.Contains(body, `data-testid="receipt"`) {
				t.Errorf("the done page in another browser: HTTP %d, want 200 showing nothing of the ask", status)
			}
			s.clock.advance(outbox.PushLinkReceiptLife)
			if status, body, _ := openPage(t, phone, "/link/"+id+"/done"); status != http.StatusOK || strings.Contains(body, "Merge acme/web#") {
				t.Errorf("the done page %s after the answer: HTTP %d, want 200 showing nothing of the ask", outbox.PushLinkReceiptLife, status)
			}
		})

		t.Run("a spent link is refused", func(t *testing.T) {
			if phone.Cookie("cs_link_"+id) != "" {
				t.Errorf("the browser still holds the spent link")
			}
			// A thief with a copy of the cookie fares no better.
			u, _ := url.Parse(s.env.URL + "/")
			phone.HTTP.Jar.SetCookies(u, []*http.Cookie{{Name: "cs_link_" + id, Value: secret, Path: "/"}})
			if status, body, _ := openPage(t, phone, "/link/"+id); status != http.StatusConflict || !strings.Contains(body, "was used") {
				t.Errorf("the spent link: HTTP %d, want 409 (used):\n%s", status, body)
			}
			refused(t, linkDecide(t, phone, id, "deny"), http.StatusConflict, "FAILED_PRECONDITION")
			if status, _, _ := openPage(t, phone, link); status != http.StatusNotFound {
				t.Errorf("the push's URL after the decision: HTTP %d, want 404", status)
			}
		})
	})
}

func TestAPushLinkExpiresAfterFifteenMinutesAndNeverOutlivesItsAsk(t *testing.T) {
	s := newLinkScene(t, apptest.SQLite)
	id := s.prAsk(t, "")
	link := s.pushedLink(t, id)
	opened := s.prAsk(t, "")
	openedLink := s.pushedLink(t, opened)
	phone := phoneOf(t, s.env.URL, s.owner)
	if status, _, _ := openPage(t, phone, openedLink); status != http.StatusSeeOther {
		t.Fatalf("opening the link: HTTP %d", status)
	}

	s.clock.advance(outbox.PushLinkLife - time.Second)
	if status, _, _ := openPage(t, phone, "/link/"+opened); status != http.StatusOK {
		t.Fatalf("the link a second before its 15 minutes: HTTP %d, want 200", status)
	}
	s.clock.advance(time.Second)
	if status, body, _ := openPage(t, phone, "/link/"+opened); status != http.StatusConflict || !strings.Contains(body, "expired") {
		t.Errorf("the opened link after 15 minutes: HTTP %d, want 409 (expired):\n%s", status, body)
	}
	before := s.state(t, opened)
	refused(t, linkDecide(t, phone, opened, "approve"), http.StatusConflict, "FAILED_PRECONDITION")
	s.unchanged(t, opened, before)
	if status, body, _ := openPage(t, phoneOf(t, s.env.URL, s.owner), link); status != http.StatusConflict || !strings.Contains(body, "expired") {
		t.Errorf("an unopened link after 15 minutes: HTTP %d, want 409 (expired):\n%s", status, body)
	}

	// A tool call waits 45 s: its link lives as long as the ask.
	deadline := s.clock.now().Add(45 * time.Second).Unix()
	out := s.agent.OK("approvals_create", map[string]any{
		"kind": "tool_call", "title": "Call write_file on files", "approve_means": "it runs", "deny_means": "it does not",
		"payload": map[string]any{"tool_call": map[string]any{"server": "files", "tool": "write_file", "arguments": map[string]any{"path": "/a"}, "expires_at": deadline}},
	})
	call, _ := out["approval_id"].(string)
	s.pushedLink(t, call)
	var expires time.Time
	if err := s.env.Store.DB().Table("push_links").Where("approval_id = ?", call).Pluck("expires_at", &expires).Error; err != nil {
		t.Fatal(err)
	}
	if !expires.Equal(time.Unix(deadline, 0)) {
		t.Errorf("the tool call's link expires at %s, want the ask's expiry %s", expires, time.Unix(deadline, 0))
	}
}

func TestAPushLinkOpenedInASessionIsTheAskPageAndStaysUnused(t *testing.T) {
	s := newLinkScene(t, apptest.SQLite)
	id := s.prAsk(t, "")
	link := s.pushedLink(t, id)
	if status, _, to := openPage(t, s.owner, link); status != http.StatusSeeOther || to != "/approvals/"+id {
		t.Fatalf("ada, signed in, opening the link: %d to %q, want the ask page", status, to)
	}
	phone := phoneOf(t, s.env.URL, s.owner)
	if status, _, to := openPage(t, phone, link); status != http.StatusSeeOther || to != "/link/"+id {
		t.Errorf("the link after a signed-in open: %d to %q, want it still to open once", status, to)
	}
}

func TestSignOutEverywhereAndPushOffEndTheLinks(t *testing.T) {
	s := newLinkScene(t, apptest.SQLite)
	id := s.prAsk(t, "")
	phone := phoneOf(t, s.env.URL, s.owner)
	openPage(t, phone, s.pushedLink(t, id))
	unopened := s.prAsk(t, "")
	unopenedLink := s.pushedLink(t, unopened)

	if r := s.owner.Post("/signout/everywhere", map[string]string{}); r.Status >= 400 {
		t.Fatalf("sign out everywhere: %s", r)
	}
	if status, _, _ := openPage(t, phone, "/link/"+id); status != http.StatusNotFound {
		t.Errorf("an opened link after ada signed out everywhere: HTTP %d, want 404", status)
	}
	if status, _, _ := openPage(t, phone, unopenedLink); status != http.StatusNotFound {
		t.Errorf("an unopened link after ada signed out everywhere: HTTP %d, want 404", status)
	}

	// Push off on the phone: the link its push carried opens nothing.
	again := s.prAsk(t, "")
	link := s.pushedLink(t, again)
	person, err := s.env.Store.PersonBySubject(context.Background(), "ada")
	if err != nil {
		t.Fatal(err)
	}
	subs, err := s.env.Store.PushSubscriptions(context.Background(), person.ID)
	if err != nil || len(subs) != 1 {
		t.Fatalf("ada's subscriptions: %v %v", subs, err)
	}
	s.owner.LoadCSRF() // signed out: the sign-in page's token
	if r := s.owner.SignIn(); r.Status != http.StatusOK {
		t.Fatalf("ada signs in again: %s", r)
	}
	if r := s.owner.Post("/push/unsubscribe", map[string]string{"endpoint": subs[0].Endpoint}); r.Status != http.StatusOK {
		t.Fatalf("push off: %s", r)
	}
	if status, _, _ := openPage(t, phoneOf(t, s.env.URL, s.owner), link); status != http.StatusNotFound {
		t.Errorf("the link of a device whose push is off: HTTP %d, want 404", status)
	}
}
