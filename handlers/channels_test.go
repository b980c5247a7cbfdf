package handlers_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/channels"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/outbox"
)

// withEmail sets email up on the service, through an SMTP server that is
// not there: a message tried waits for a retry, and nothing leaves the machine.
var withEmail = map[string]string{
	"COUNTERSIGN_SMTP_URL":  "smtp://127.0.0.1:9?security=none",
	"COUNTERSIGN_SMTP_FROM": "Countersign <approvals@example.com>",
}

// within is the part of a page inside the one element with data-testid.
func within(t *testing.T, doc *html.Node, testid string) *html.Node {
	t.Helper()
	el := elements(doc, byAttr("data-testid", testid))
	if len(el) != 1 {
		t.Fatalf("%d elements with data-testid=%s, want 1", len(el), testid)
	}
	return el[0]
}

// testMessages counts the person's test messages queued on kind.
func testMessages(t *testing.T, env *apptest.Env, personID, kind string) int64 {
	t.Helper()
	var n int64
	if err := env.Store.DB().Table("channel_messages").Where("person_id = ? AND kind = ? AND event = ?", personID, kind, outbox.MessageTest).Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

func TestAPersonTurnsEmailOnAtAGoodAddressSendsATestAndTurnsItOff(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		env := apptest.StartWeb(t, db, withEmail)
		ada := env.Join(env.Account.ID, core.RoleMember, "ada")
		me, err := env.Store.MemberBySubject(ctx, env.Account.ID, "ada")
		if err != nil {
			t.Fatal(err)
		}
		chosen := func() []outbox.PersonChannel {
			t.Helper()
			out, err := env.Store.PersonChannels(ctx, env.Account.ID, me.ID)
			if err != nil {
				t.Fatal(err)
			}
			return out
		}

		_, doc := pageOf(t, ada, "/devices")
		within(t, within(t, doc, "notifications"), "person-channels")
		if got := testIDs(within(t, doc, "channel-email"), "channel-form-email", "test-email"); !got["channel-form-email"] || got["test-email"] {
			t.Errorf("email is set up and off: want its form and no test button, got %v", got)
		}
		slack := textOf(within(t, doc, "channel-slack"))
		if !strings.Contains(slack, "an admin sets it up (COUNTERSIGN_SLACK_BOT_TOKEN)") || testIDs(doc, "channel-form-slack")["channel-form-slack"] {
			t.Errorf("Slack is not set up: want one line saying who sets it up and no form, got %q", slack)
		}

		t.Run("a bad address is refused at its field and nothing is stored", func(t *testing.T) {
			r := ada.PostForm("/devices/channels/email", url.Values{"address": {"ada at example"}})
			if r.Status != http.StatusBadRequest {
				t.Fatalf("a bad address: %s", r)
			}
			doc := parseHTML(t, string(r.Raw))
			field := within(t, within(t, doc, "channel-email"), "field-error")
			if attrOf(field, "id") != "address-email-error" || !strings.Contains(textOf(field), "is not an email address") {
				t.Errorf("the refusal is %q at #%s, want it at the address", textOf(field), attrOf(field, "id"))
			}
			input := elements(doc, byAttr("id", "address-email"))
			if len(input) != 1 || attrOf(input[0], "aria-invalid") != "true" || attrOf(input[0], "value") != "ada at example" {
				t.Errorf("the address field is not marked invalid with the typed address kept")
			}
			if got := chosen(); len(got) != 0 {
				t.Errorf("a refused address was stored: %+v", got)
			}
		})

		t.Run("a post without the CSRF token is refused and stores nothing", func(t *testing.T) {
			if r := ada.PostForm("/devices/channels/email", url.Values{"address": {"ada@example.com"}, "_csrf": {""}}); r.Status != http.StatusForbidden {
				t.Fatalf("no CSRF token: %s", r)
			}
			if got := chosen(); len(got) != 0 {
				t.Errorf("stored without the CSRF token: %+v", got)
			}
		})

		t.Run("a good address is stored and shown, with a test button", func(t *testing.T) {
			r := ada.PostForm("/devices/channels/email", url.Values{"address": {" ada@example.com "}})
			if r.Status != http.StatusSeeOther || r.Header.Get("Location") != "/devices#channel-email" {
				t.Fatalf("a good address: %s %s", r, r.Header.Get("Location"))
			}
			if got := chosen(); len(got) != 1 || got[0].Kind != outbox.ChannelEmail || got[0].Address != "ada@example.com" {
				t.Fatalf("stored %+v, want email at ada@example.com", got)
			}
			_, doc := pageOf(t, ada, "/devices")
			card := within(t, doc, "channel-email")
			if got := textOf(within(t, card, "channel-address")); got != "ada@example.com" {
				t.Errorf("the page shows the address %q", got)
			}
			if got := testIDs(card, "test-email", "off-email"); !got["test-email"] || !got["off-email"] {
				t.Errorf("email is on: want its test and off buttons, got %v", got)
			}
		})

		t.Run("send me a test queues one test message to the address", func(t *testing.T) {
			r := ada.PostForm("/devices/channels/email/test", nil)
			if r.Status != http.StatusSeeOther || r.Header.Get("Location") != "/devices#channel-email" {
				t.Fatalf("test: %s", r)
			}
			var msgs []outbox.ChannelMessage
			if err := env.Store.DB().Table("channel_messages").Where("person_id = ?", me.ID).Find(&msgs).Error; err != nil {
				t.Fatal(err)
			}
			if len(msgs) != 1 || msgs[0].Event != outbox.MessageTest || msgs[0].Kind != outbox.ChannelEmail || msgs[0].Address != "ada@example.com" || msgs[0].AccountID != env.Account.ID {
				t.Fatalf("queued %+v, want one test message to ada@example.com", msgs)
			}
			if r := ada.PostForm("/devices/channels/slack/test", nil); r.Status != http.StatusConflict || testMessages(t, env, me.ID, outbox.ChannelSlack) != 0 {
				t.Errorf("a test on Slack, which is not set up: %s", r)
			}
		})

		t.Run("turning it off removes it and drops what still waits", func(t *testing.T) {
			r := ada.PostForm("/devices/channels/email/remove", nil)
			if r.Status != http.StatusSeeOther {
				t.Fatalf("off: %s", r)
			}
			if got := chosen(); len(got) != 0 {
				t.Fatalf("still on after turning it off: %+v", got)
			}
			var waiting int64
			if err := env.Store.DB().Table("channel_messages").Where("person_id = ? AND done_at IS NULL", me.ID).Count(&waiting).Error; err != nil {
				t.Fatal(err)
			}
			if waiting != 0 {
				t.Errorf("%d messages still wait for a channel turned off", waiting)
			}
			_, doc := pageOf(t, ada, "/devices")
			if got := testIDs(within(t, doc, "channel-email"), "channel-address", "test-email"); got["channel-address"] || got["test-email"] {
				t.Errorf("the page still shows email on: %v", got)
			}
			if r := ada.PostForm("/devices/channels/email/test", nil); r.Status != http.StatusNotFound || testMessages(t, env, me.ID, outbox.ChannelEmail) != 1 {
				t.Errorf("a test on a channel turned off: %s", r)
			}
		})
	})
}

func TestOnlyTheChannelsTheServiceSendsAreOffered(t *testing.T) {
	ctx := context.Background()
	t.Run("with neither, each says in one line who sets it up, and a post is refused", func(t *testing.T) {
		env := apptest.StartWeb(t, apptest.SQLite, nil)
		ada := env.Join(env.Account.ID, core.RoleMember, "ada")
		_, doc := pageOf(t, ada, "/devices")
		for kind, setting := range map[string]string{"email": "COUNTERSIGN_SMTP_URL", "slack": "COUNTERSIGN_SLACK_BOT_TOKEN"} {
			line := within(t, within(t, doc, "channel-"+kind), "channel-not-set-up")
			if !strings.Contains(textOf(line), "an admin sets it up ("+setting+")") {
				t.Errorf("%s says %q", kind, textOf(line))
			}
			if testIDs(doc, "channel-form-"+kind)["channel-form-"+kind] {
				t.Errorf("%s is offered though the service does not send it", kind)
			}
		}
		r := ada.PostForm("/devices/channels/email", url.Values{"address": {"ada@example.com"}})
		if r.Status != http.StatusConflict || !strings.Contains(string(r.Raw), "COUNTERSIGN_SMTP_URL") {
			t.Errorf("turning on email the service does not send: %s", r)
		}
		if r := ada.PostForm("/devices/channels/teams", url.Values{"address": {"https://example.com"}}); r.Status != http.StatusNotFound {
			t.Errorf("a kind a person does not choose: %s", r)
		}
		me, _ := env.Store.MemberBySubject(ctx, env.Account.ID, "ada")
		if got, _ := env.Store.PersonChannels(ctx, env.Account.ID, me.ID); len(got) != 0 {
			t.Errorf("stored %+v", got)
		}
	})
	t.Run("with Slack, a member id is checked at its field, and none needs an email address", func(t *testing.T) {
		env := apptest.StartWeb(t, apptest.SQLite, map[string]string{"COUNTERSIGN_SLACK_BOT_TOKEN": "xoxb-test", "COUNTERSIGN_SLACK_API_URL": "http://127.0.0.1:9/api/"})
		ada := env.Join(env.Account.ID, core.RoleMember, "ada")
		_, doc := pageOf(t, ada, "/devices")
		if !testIDs(doc, "channel-form-slack")["channel-form-slack"] {
			t.Fatalf("Slack is set up but not offered")
		}
		for _, c := range []struct{ address, says string }{
			{"alice", "is not a Slack member id"},
			{"", "turn email on first"},
		} {
			r := ada.PostForm("/devices/channels/slack", url.Values{"address": {c.address}})
			field := elements(within(t, parseHTML(t, string(r.Raw)), "channel-slack"), byAttr("data-testid", "field-error"))
			if r.Status != http.StatusBadRequest || len(field) != 1 || !strings.Contains(textOf(field[0]), c.says) {
				t.Errorf("Slack member id %q: %d, want 400 saying %q at the field", c.address, r.Status, c.says)
			}
		}
		if r := ada.PostForm("/devices/channels/slack", url.Values{"address": {"U0123ABCDEF"}}); r.Status != http.StatusSeeOther {
			t.Fatalf("a good member id: %s", r)
		}
		me, _ := env.Store.MemberBySubject(ctx, env.Account.ID, "ada")
		if got, _ := env.Store.PersonChannels(ctx, env.Account.ID, me.ID); len(got) != 1 || got[0].Address != "U0123ABCDEF" {
			t.Errorf("stored %+v", got)
		}
	})
}

// receiver is a webhook's receiving end: it keeps each post it gets.
type receiver struct {
	*httptest.Server
	mu    sync.Mutex
	posts []receivedPost
}

type receivedPost struct {
	path   string
	header http.Header
	body   []byte
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.posts = append(r.posts, receivedPost{path: req.URL.Path, header: req.Header.Clone(), body: body})
		r.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.Close)
	return r
}

// received waits up to 10 s for a post and returns it.
func (r *receiver) received(t *testing.T) receivedPost {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		r.mu.Lock()
		if len(r.posts) > 0 {
			p := r.posts[0]
			r.mu.Unlock()
			return p
		}
		r.mu.Unlock()
	}
	t.Fatalf("the webhook received nothing in 10 s")
	return receivedPost{}
}

func TestAdminChannelsAddsWebhooksAndTeamsShowsNoSecretAndListsDeadLetters(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		hook := newReceiver(t)
		local := strings.TrimPrefix(hook.URL, "http://")
		env := apptest.StartWeb(t, db, map[string]string{"COUNTERSIGN_CHANNEL_PRIVATE_HOSTS": local, "COUNTERSIGN_CHANNEL_RETRY": "10ms"})
		ada := env.Join(env.Account.ID, core.RoleOwner, "ada")
		bob := env.Join(env.Account.ID, core.RoleMember, "bob")
		saved := func(name string) *outbox.SharedChannel {
			t.Helper()
			ch, err := env.Store.SharedChannelByName(ctx, env.Account.ID, name)
			if core.CodeOf(err) == core.NotFound {
				return nil
			}
			if err != nil {
				t.Fatal(err)
			}
			return ch
		}

		t.Run("a member who is not an admin is refused, and saves nothing", func(t *testing.T) {
			if r := bob.Page("/admin/channels"); r.Status != http.StatusForbidden {
				t.Errorf("GET as a member: %s", r)
			}
			if r := bob.PostForm("/admin/channels", url.Values{"kind": {"webhook"}, "name": {"sneaky"}, "url": {"https://hooks.example.com/x"}}); r.Status != http.StatusForbidden || saved("sneaky") != nil {
				t.Errorf("POST as a member: %s", r)
			}
		})

		t.Run("with nothing yet, the page says so", func(t *testing.T) {
			_, doc := pageOf(t, ada, "/admin/channels")
			if got := testIDs(doc, "no-channels", "no-dead-letters", "channel-form-teams", "channel-form-ntfy", "channel-form-webhook", "new-signing-secret"); !got["no-channels"] || !got["no-dead-letters"] ||
				!got["channel-form-teams"] || !got["channel-form-ntfy"] || !got["channel-form-webhook"] || got["new-signing-secret"] {
				t.Errorf("the empty page holds %v", got)
			}
			if line := textOf(within(t, within(t, doc, "channel-form-slack"), "channel-not-set-up")); !strings.Contains(line, "COUNTERSIGN_SLACK_BOT_TOKEN") {
				t.Errorf("Slack, not set up, says %q", line)
			}
		})

		const hookURL = "https://hooks.example.com/services/T0001/very-secret-path?key=k-123"
		var signing string
		t.Run("a webhook's signing secret is shown once, and never its URL's path", func(t *testing.T) {
			r := ada.PostForm("/admin/channels", url.Values{"kind": {"webhook"}, "name": {"pagerduty"}, "url": {hookURL}})
			if r.Status != http.StatusOK {
				t.Fatalf("add a webhook: %s", r)
			}
			body := string(r.Raw)
			signing = textOf(within(t, within(t, parseHTML(t, body), "new-signing-secret"), "signing-secret"))
			ch := saved("pagerduty")
			if ch == nil {
				t.Fatal("the webhook was not saved")
			}
			sec, err := channels.SecretOf(ch)
			if err != nil || sec.URL != hookURL || sec.SigningSecret != signing || !strings.HasPrefix(signing, "whsec_") || ch.Kind != outbox.ChannelWebhook || ch.EveryAsk {
				t.Fatalf("shown %q; saved %+v %+v %v", signing, ch, sec, err)
			}
			if !testIDs(parseHTML(t, body), "copy-signing-secret")["copy-signing-secret"] {
				t.Errorf("the signing secret has no Copy button")
			}
			again, doc := pageOf(t, ada, "/admin/channels")
			for page, html := range map[string]string{"the page after saving": body, "the page reloaded": again} {
				for _, secret := range []string{"very-secret-path", "k-123", "/services/T0001"} {
					if strings.Contains(html, secret) {
						t.Errorf("%s shows %q of the URL", page, secret)
					}
				}
			}
			if strings.Contains(again, signing) || testIDs(doc, "new-signing-secret")["new-signing-secret"] {
				t.Errorf("the reloaded page shows the signing secret again")
			}
			row := elements(doc, byAttr("data-channel", "pagerduty"))
			if len(row) != 1 || !strings.Contains(textOf(row[0]), "hooks.example.com") || !strings.Contains(textOf(row[0]), "secret set") {
				t.Errorf("the webhook's row does not say where it posts and that its secret is set")
			}
		})

		t.Run("a change with the URL left empty keeps the URL and the signing secret", func(t *testing.T) {
			r := ada.PostForm("/admin/channels", url.Values{"kind": {"webhook"}, "name": {"pagerduty"}, "url": {""}, "every_ask": {"on"}})
			if r.Status != http.StatusSeeOther || r.Header.Get("Location") != "/admin/channels" {
				t.Fatalf("change: %s", r)
			}
			ch := saved("pagerduty")
			sec, _ := channels.SecretOf(ch)
			if !ch.EveryAsk || sec.URL != hookURL || sec.SigningSecret != signing {
				t.Errorf("after the change: every ask %v, URL kept %v, signing secret kept %v", ch.EveryAsk, sec.URL == hookURL, sec.SigningSecret == signing)
			}
		})

		t.Run("a Teams URL off Microsoft's hosts is refused at its field", func(t *testing.T) {
			r := ada.PostForm("/admin/channels", url.Values{"kind": {"teams"}, "name": {"#ops"}, "url": {"https://teams.evil.example/workflows/abc?sig=s3cret"}})
			if r.Status != http.StatusBadRequest || saved("#ops") != nil {
				t.Fatalf("a Teams URL on another host: %s", r)
			}
			doc := parseHTML(t, string(r.Raw))
			field := within(t, within(t, doc, "channel-form-teams"), "field-error")
			if attrOf(field, "id") != "teams-url-error" || !strings.Contains(textOf(field), "is not a Teams Workflows webhook") {
				t.Errorf("the refusal %q is at #%s", textOf(field), attrOf(field, "id"))
			}
			if strings.Contains(string(r.Raw), "s3cret") {
				t.Errorf("the refusal shows the URL's key")
			}
			if name := elements(doc, byAttr("id", "teams-name")); len(name) != 1 || attrOf(name[0], "value") != "#ops" {
				t.Errorf("the refused form lost its name")
			}
			ok := "https://prod-01.westeurope.logic.azure.com:443/workflows/abc/triggers/manual/paths/invoke?sig=s3cret"
			if r := ada.PostForm("/admin/channels", url.Values{"kind": {"teams"}, "name": {"#ops"}, "url": {ok}}); r.Status != http.StatusSeeOther {
				t.Fatalf("a Workflows URL: %s", r)
			}
			if ch := saved("#ops"); ch == nil || ch.Kind != outbox.ChannelTeams {
				t.Fatalf("the Teams channel was not saved")
			}
			if page, _ := pageOf(t, ada, "/admin/channels"); strings.Contains(page, "s3cret") || strings.Contains(page, "/workflows/") || !strings.Contains(page, "prod-01.westeurope.logic.azure.com") {
				t.Errorf("the page shows the Teams URL's path, or not its host")
			}
		})

		t.Run("a private address is refused unless allowed, and an allowed one gets a signed test", func(t *testing.T) {
			r := ada.PostForm("/admin/channels", url.Values{"kind": {"webhook"}, "name": {"inside"}, "url": {"http://127.0.0.1:9/x"}})
			if r.Status != http.StatusBadRequest || saved("inside") != nil {
				t.Fatalf("a private address: %s", r)
			}
			if field := within(t, within(t, parseHTML(t, string(r.Raw)), "channel-form-webhook"), "field-error"); attrOf(field, "id") != "webhook-url-error" {
				t.Errorf("the refusal is at #%s", attrOf(field, "id"))
			}
			r = ada.PostForm("/admin/channels", url.Values{"kind": {"webhook"}, "name": {"inside"}, "url": {hook.URL + "/hook/secret-part"}})
			if r.Status != http.StatusOK {
				t.Fatalf("an allowed private host (COUNTERSIGN_CHANNEL_PRIVATE_HOSTS): %s", r)
			}
			secret := textOf(within(t, parseHTML(t, string(r.Raw)), "signing-secret"))
			if r := ada.PostForm("/admin/channels/inside/test", nil); r.Status != http.StatusSeeOther {
				t.Fatalf("send a test: %s", r)
			}
			got := hook.received(t)
			var event channels.WebhookEvent
			if err := json.Unmarshal(got.body, &event); err != nil || event.Type != "test" || got.path != "/hook/secret-part" {
				t.Fatalf("the receiver got %s at %s", got.body, got.path)
			}
			stamp, _ := strconv.ParseInt(got.header.Get("webhook-timestamp"), 10, 64)
			want, err := channels.SignWebhook(secret, got.header.Get("webhook-id"), time.Unix(stamp, 0), got.body)
			if err != nil || got.header.Get("webhook-signature") != want["webhook-signature"] || got.header.Get("webhook-timestamp") != want["webhook-timestamp"] {
				t.Errorf("the test's signature %q does not check with the secret shown (%v)", got.header.Get("webhook-signature"), err)
			}
		})

		t.Run("an ntfy topic is saved with its server, and its token stays secret", func(t *testing.T) {
			r := ada.PostForm("/admin/channels", url.Values{"kind": {"ntfy"}, "name": {"ops-phones"}, "server": {"https://ntfy.sh/"}, "topic": {"cs-ops"}, "token": {"tk_hidden"}})
			if r.Status != http.StatusSeeOther {
				t.Fatalf("ntfy: %s", r)
			}
			ch := saved("ops-phones")
			sec, _ := channels.SecretOf(ch)
			var st channels.NtfySettings
			_ = json.Unmarshal([]byte(ch.Settings), &st)
			if st.Server != "https://ntfy.sh" || st.Topic != "cs-ops" || sec.Token != "tk_hidden" {
				t.Errorf("saved %+v %+v", st, sec)
			}
			if page, _ := pageOf(t, ada, "/admin/channels?edit=ops-phones"); strings.Contains(page, "tk_hidden") || !strings.Contains(page, `value="cs-ops"`) {
				t.Errorf("the change form shows the token, or not the topic")
			}
		})

		t.Run("remove takes a channel away, # and all", func(t *testing.T) {
			for _, name := range []string{"pagerduty", "#ops"} {
				r := ada.PostForm("/admin/channels/"+url.PathEscape(name)+"/remove", nil)
				if r.Status != http.StatusSeeOther || saved(name) != nil {
					t.Errorf("remove %s: %s", name, r)
				}
			}
			if r := ada.PostForm("/admin/channels/pagerduty/remove", nil); r.Status != http.StatusNotFound {
				t.Errorf("remove it again: %s", r)
			}
		})

		t.Run("a dead message is listed, its error without the URL's path", func(t *testing.T) {
			now := time.Now().UTC()
			dead := outbox.ChannelMessage{Key: "dead/1", AccountID: env.Account.ID, Channel: "gone", Kind: outbox.ChannelWebhook, Event: outbox.MessageAsk, Body: "{}",
				CreatedAt: now, NotBefore: now, ExpiresAt: now.Add(time.Hour), Attempts: outbox.MaxMessageAttempts, DoneAt: &now, Outcome: "dead",
				LastError: `the webhook: Post "https://hooks.example.com/services/T0001/very-secret-path": dial tcp: connection refused`}
			if err := env.Store.DB().Table("channel_messages").Create(&dead).Error; err != nil {
				t.Fatal(err)
			}
			_, doc := pageOf(t, ada, "/admin/channels")
			rows := elements(within(t, doc, "dead-letters"), byAttr("data-testid", "dead-letter"))
			if len(rows) != 1 {
				t.Fatalf("%d dead letters listed, want 1", len(rows))
			}
			fields := map[string]string{}
			for _, dd := range elements(rows[0], func(n *html.Node) bool { return n.Data == "dd" && attrOf(n, "data-field") != "" }) {
				fields[attrOf(dd, "data-field")] = textOf(dd)
			}
			want := map[string]string{"to": "gone", "kind": "Webhook", "event": "ask", "attempts": "8",
				"last-error": `the webhook: Post "https://hooks.example.com/…": dial tcp: connection refused`}
			for k, v := range want {
				if fields[k] != v {
					t.Errorf("the dead letter's %s is %q, want %q", k, fields[k], v)
				}
			}
			if testIDs(doc, "no-dead-letters")["no-dead-letters"] {
				t.Errorf("the page says nothing is dead")
			}
		})
	})
}
