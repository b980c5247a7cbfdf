package handlers_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/audit"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/outbox"
	"github.com/countersign/countersign/models/people"
)

// household is a service with ada (an owner, also a member of a second
// account) and bob, each joined through an invite with a passkey, and two
// browsers of ada's with notifications on.
type household struct {
	env      *apptest.Env
	ada, bob *apptest.Browser
	adaM     *people.Member
	bobM     *people.Member
	second   *people.Account
	mac      string // push endpoints of ada's browsers
	phone    string
}

func newPeople(t *testing.T, db apptest.Database) *household {
	t.Helper()
	env := apptest.StartWeb(t, db, nil)
	ctx := context.Background()
	invite := func(subject string, role core.Role) (*apptest.Browser, *people.Member) {
		t.Helper()
		token, _, err := env.Store.CreateInvite(ctx, people.NewInvite{AccountID: env.Account.ID, Role: role, By: people.OperatorInviter("test")})
		if err != nil {
			t.Fatal(err)
		}
		b := env.Browser()
		if r := b.AcceptInvite(token, subject); r.Status != http.StatusOK {
			t.Fatalf("accept the invite of %s: %s", subject, r)
		}
		m, err := env.Store.MemberBySubject(ctx, env.Account.ID, subject)
		if err != nil {
			t.Fatal(err)
		}
		return b, m
	}
	p := &household{env: env, mac: "http://127.0.0.1:9/push/mac", phone: "http://127.0.0.1:9/push/phone"}
	p.ada, p.adaM = invite("ada", core.RoleOwner)
	p.bob, p.bobM = invite("bob", core.RoleMember)
	second, err := env.Store.CreateAccount(ctx, "second")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Store.AddMember(ctx, second.ID, "ada", "ada", core.RoleMember); err != nil {
		t.Fatal(err)
	}
	p.second = second
	for _, endpoint := range []string{p.mac, p.phone} {
		if _, err := env.Store.SavePushSubscription(ctx, p.adaM.ID, outbox.PushSubscription{Endpoint: endpoint, P256dh: "BKey", Auth: "auth"}); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// authorise confirms with b's passkey that b may add one: the answer of the finish call.
func authorise(b *apptest.Browser) apptest.Response {
	begin := b.Post("/devices/authorise/begin", map[string]any{})
	if begin.Status != http.StatusOK {
		return begin
	}
	id, options := begin.Ceremony()
	return b.Post("/devices/authorise/finish", map[string]any{"ceremony": id, "credential": b.Sign(options)})
}

// grantOf is the grant token an authorise answer carries; the call must have succeeded.
func grantOf(t *testing.T, r apptest.Response) string {
	t.Helper()
	g, _ := r.Body["grant"].(string)
	if r.Status != http.StatusOK || g == "" {
		t.Fatalf("authorise: %s", r)
	}
	return g
}

// addHere makes a passkey on key under grant from b: the answer of the finish
// call, or of the begin call when it refused.
func addHere(t *testing.T, b *apptest.Browser, grant string, key *apptest.Authenticator, name, pushEndpoint string) apptest.Response {
	t.Helper()
	begin := b.Post("/devices/begin", map[string]string{"grant": grant, "device_name": name})
	if begin.Status != http.StatusOK {
		return begin
	}
	id, options := begin.Ceremony()
	credential, err := key.Register(b.Origin, options)
	if err != nil {
		t.Fatalf("register: %v", err)
	}
	return b.Post("/devices/finish", map[string]any{"ceremony": id, "grant": grant, "credential": json.RawMessage(credential), "push_endpoint": pushEndpoint})
}

// keyIDs are the ids of the person's live passkeys.
func keyIDs(t *testing.T, env *apptest.Env, personID string) []string {
	t.Helper()
	keys, err := env.Store.DeviceKeys(context.Background(), personID)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, k := range keys {
		ids = append(ids, k.ID)
	}
	return ids
}

// storedAnywhere says whether a device_keys row, live or removed, holds the credential.
func storedAnywhere(t *testing.T, env *apptest.Env, credentialID string) bool {
	t.Helper()
	var n int64
	if err := env.Store.DB().Table("device_keys").Where("id = ?", credentialID).Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n > 0
}

// pushesTo counts the queued pushes of event to the subscription with endpoint.
func pushesTo(t *testing.T, env *apptest.Env, endpoint, event string) int64 {
	t.Helper()
	var n int64
	err := env.Store.DB().Table("push_jobs j").Joins("JOIN push_subscriptions s ON s.id = j.subscription_id").
		Where("s.endpoint = ? AND j.event = ?", endpoint, event).Count(&n).Error
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestACookieAloneCannotAddAPasskey(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		p := newPeople(t, db)
		// The thief has ada's session cookie and CSRF token, and a passkey of
		// their own; not ada's passkey.
		thief := p.ada.For(t)
		thief.Passkey = apptest.NewAuthenticator()
		stolen := apptest.NewAuthenticator()
		before := keyIDs(t, p.env, p.adaM.ID)

		t.Run("the attack as it was made: begin and finish with the session alone", func(t *testing.T) {
			begin := thief.Post("/devices/begin", map[string]string{"device_name": "Thief"})
			if begin.Status != http.StatusNotFound || begin.Field() != "grant" {
				t.Fatalf("begin without a grant: %s", begin)
			}
			for _, grant := range []string{"", "dga_made-up", "dln_made-up"} {
				if r := addHere(t, thief, grant, stolen, "Thief", ""); r.Status < 400 {
					t.Fatalf("begin with grant %q: %s", grant, r)
				}
			}
			// A finish needs a ceremony of its own kind: an add-device
			// assertion's ceremony, which a session can start, does not do.
			begin = thief.Post("/devices/authorise/begin", map[string]any{})
			id, _ := begin.Ceremony()
			r := thief.Post("/devices/finish", map[string]any{"ceremony": id, "grant": "", "credential": json.RawMessage(`{}`)})
			if r.Status != http.StatusConflict || r.Code() != "FAILED_PRECONDITION" {
				t.Fatalf("finish on an add-device assertion's ceremony: %s", r)
			}
			if r := thief.Post("/devices/link", map[string]string{"grant": ""}); r.Status != http.StatusNotFound {
				t.Fatalf("a device link without a grant: %s", r)
			}
		})
		t.Run("a passkey that is not ada's cannot confirm, even claiming her credential id", func(t *testing.T) {
			begin := thief.Post("/devices/authorise/begin", map[string]any{})
			id, options := begin.Ceremony()
			forger := apptest.NewAuthenticator()
			forger.CredentialID, forger.UserHandle, forger.RPID = p.ada.Passkey.CredentialID, []byte(p.adaM.ID), "localhost"
			credential, err := forger.Assert(thief.Origin, options)
			if err != nil {
				t.Fatal(err)
			}
			r := thief.Post("/devices/authorise/finish", map[string]any{"ceremony": id, "credential": json.RawMessage(credential)})
			if r.Status != http.StatusForbidden || r.Body["grant"] != nil {
				t.Fatalf("a forged assertion: %s", r)
			}
		})
		if after := keyIDs(t, p.env, p.adaM.ID); len(after) != len(before) || after[0] != before[0] {
			t.Fatalf("ada's passkeys went from %v to %v", before, after)
		}
		if storedAnywhere(t, p.env, stolen.CredentialIDString()) {
			t.Fatalf("the thief's passkey was stored")
		}
		var grants int64
		if err := p.env.Store.DB().Table("device_grants").Count(&grants).Error; err != nil || grants != 0 {
			t.Fatalf("device grants after the attack: %d %v", grants, err)
		}
	})
}

func TestAnAddDeviceAssertionAuthorisesOnlyForItsPurposeForFiveMinutesOnce(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		p := newPeople(t, db)
		ctx := context.Background()
		ada := p.ada
		newKey := apptest.NewAuthenticator()
		refused := func(t *testing.T, what string, r apptest.Response, status int) {
			t.Helper()
			if r.Status != status {
				t.Fatalf("%s: %s, want HTTP %d", what, r, status)
			}
			if storedAnywhere(t, p.env, newKey.CredentialIDString()) {
				t.Fatalf("%s: the new passkey was stored", what)
			}
		}

		t.Run("a sign-in assertion is not one", func(t *testing.T) {
			signin := ada.For(t).Post("/signin/begin", map[string]string{})
			sid, soptions := signin.Ceremony()
			signed := ada.For(t).Sign(soptions)
			// Its own ceremony is of another kind…
			refused(t, "a sign-in ceremony", ada.For(t).Post("/devices/authorise/finish", map[string]any{"ceremony": sid, "credential": signed}), http.StatusConflict)
			// …and under an add-device ceremony it signed another challenge.
			begin := ada.For(t).Post("/devices/authorise/begin", map[string]any{})
			aid, _ := begin.Ceremony()
			refused(t, "a sign-in assertion", ada.For(t).Post("/devices/authorise/finish", map[string]any{"ceremony": aid, "credential": signed}), http.StatusForbidden)
		})
		t.Run("a decision's assertion is not one", func(t *testing.T) {
			agent, _ := p.env.Agent(p.env.Account.ID, "bot")
			ask := fileAsk(t, p.env, agent, "Ship it", "ada")
			ch := ada.For(t).Challenge(ask.ID, "approve", "")
			did, doptions := ch.Ceremony()
			signed := ada.For(t).Sign(doptions)
			refused(t, "a decision ceremony", ada.For(t).Post("/devices/authorise/finish", map[string]any{"ceremony": did, "credential": signed}), http.StatusConflict)
			begin := ada.For(t).Post("/devices/authorise/begin", map[string]any{})
			aid, _ := begin.Ceremony()
			refused(t, "a decision's assertion", ada.For(t).Post("/devices/authorise/finish", map[string]any{"ceremony": aid, "credential": signed}), http.StatusForbidden)
		})
		t.Run("an assertion older than five minutes does not authorise", func(t *testing.T) {
			grant := grantOf(t, authorise(ada.For(t)))
			later := time.Now().Add(people.DeviceGrantTTL + time.Second)
			p.env.Store.SetClock(func() time.Time { return later })
			defer p.env.Store.SetClock(time.Now)
			refused(t, "a grant past five minutes", addHere(t, ada.For(t), grant, newKey, "Late", ""), http.StatusConflict)
			refused(t, "a link from a grant past five minutes", ada.For(t).Post("/devices/link", map[string]string{"grant": grant}), http.StatusConflict)
			// The assertion's own prompt lasts five minutes too.
			p.env.Store.SetClock(time.Now)
			begin := ada.For(t).Post("/devices/authorise/begin", map[string]any{})
			id, options := begin.Ceremony()
			signed := ada.For(t).Sign(options)
			p.env.Store.SetClock(func() time.Time { return later })
			refused(t, "an assertion on a prompt past five minutes", ada.For(t).Post("/devices/authorise/finish", map[string]any{"ceremony": id, "credential": signed}), http.StatusConflict)
		})
		t.Run("another person's assertion does not authorise", func(t *testing.T) {
			bobGrant := grantOf(t, authorise(p.bob.For(t)))
			refused(t, "bob's grant in ada's session", addHere(t, ada.For(t), bobGrant, newKey, "Bob's", ""), http.StatusForbidden)
			refused(t, "bob's grant for a link in ada's session", ada.For(t).Post("/devices/link", map[string]string{"grant": bobGrant}), http.StatusForbidden)
			// Nor does bob's assertion on ada's prompt.
			begin := ada.For(t).Post("/devices/authorise/begin", map[string]any{})
			aid, _ := begin.Ceremony()
			bobBegin := p.bob.For(t).Post("/devices/authorise/begin", map[string]any{})
			_, boptions := bobBegin.Ceremony()
			refused(t, "bob's assertion on ada's prompt", ada.For(t).Post("/devices/authorise/finish", map[string]any{"ceremony": aid, "credential": p.bob.For(t).Sign(boptions)}), http.StatusForbidden)
			// And a grant of ada's works in no other session of hers.
			grant := grantOf(t, authorise(ada.For(t)))
			other := p.env.Browser()
			token, err := p.env.Store.CreateSession(ctx, p.adaM.ID, p.env.Account.ID)
			if err != nil {
				t.Fatal(err)
			}
			setSession(t, other, token)
			// With that session's own CSRF token, so that what refuses is the
			// grant's tie to its session, not the CSRF guard.
			m := csrfMeta.FindStringSubmatch(string(other.Get("/devices").Raw))
			if m == nil {
				t.Fatal("no csrf-token meta on the other session's devices page")
			}
			other.CSRF = m[1]
			r := addHere(t, other, grant, newKey, "Elsewhere", "")
			refused(t, "ada's grant in another session", r, http.StatusForbidden)
			if !strings.Contains(string(r.Raw), "made for another person or session") {
				t.Errorf("ada's grant in another session: %s; want it refused for its session", r)
			}
		})
		t.Run("a grant adds one passkey, once", func(t *testing.T) {
			grant := grantOf(t, authorise(ada.For(t)))
			// Two prompts on one grant: only the first finish counts.
			first := ada.For(t).Post("/devices/begin", map[string]string{"grant": grant, "device_name": "Key one"})
			second := ada.For(t).Post("/devices/begin", map[string]string{"grant": grant, "device_name": "Key two"})
			if first.Status != http.StatusOK || second.Status != http.StatusOK {
				t.Fatalf("begin: %s / %s", first, second)
			}
			finish := func(r apptest.Response, key *apptest.Authenticator) apptest.Response {
				id, options := r.Ceremony()
				credential, err := key.Register(ada.Origin, options)
				if err != nil {
					t.Fatal(err)
				}
				return ada.For(t).Post("/devices/finish", map[string]any{"ceremony": id, "grant": grant, "credential": json.RawMessage(credential)})
			}
			if r := finish(first, newKey); r.Status != http.StatusOK {
				t.Fatalf("the first finish: %s", r)
			}
			other := apptest.NewAuthenticator()
			if r := finish(second, other); r.Status != http.StatusConflict || storedAnywhere(t, p.env, other.CredentialIDString()) {
				t.Fatalf("a second passkey on the same grant: %s", r)
			}
			if r := addHere(t, ada.For(t), grant, other, "Again", ""); r.Status != http.StatusConflict {
				t.Fatalf("a spent grant: %s", r)
			}
			if r := ada.For(t).Post("/devices/link", map[string]string{"grant": grant}); r.Status != http.StatusConflict {
				t.Fatalf("a link from a spent grant: %s", r)
			}
		})
		t.Run("a grant dies with the passkey that gave it", func(t *testing.T) {
			grant := grantOf(t, authorise(ada.For(t)))
			if err := p.env.Store.RemoveDeviceKey(ctx, p.adaM.ID, ada.Passkey.CredentialIDString()); err != nil {
				t.Fatal(err)
			}
			other := apptest.NewAuthenticator()
			if r := addHere(t, ada.For(t), grant, other, "After", ""); r.Status != http.StatusConflict || storedAnywhere(t, p.env, other.CredentialIDString()) {
				t.Fatalf("a grant of a removed passkey: %s", r)
			}
		})
	})
}

// addedBy is what a passkey's row says added it.
func addedBy(row *html.Node) string {
	cells := elements(row, byAttr("data-field", "added-by"))
	if len(cells) != 1 {
		return ""
	}
	return strings.TrimSpace(textOf(cells[0]))
}

func readBody(t *testing.T, res *http.Response) string {
	t.Helper()
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// setSession puts a session cookie into b's jar.
func setSession(t *testing.T, b *apptest.Browser, token string) {
	t.Helper()
	u, err := http.NewRequest(http.MethodGet, b.Origin+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	b.HTTP.Jar.SetCookies(u.URL, []*http.Cookie{{Name: "cs_session", Value: token, Path: "/"}})
}

// passkeyEvents are the account's audit events of step, oldest first.
func passkeyEvents(t *testing.T, env *apptest.Env, accountID, step string) []asks.TimelineEvent {
	t.Helper()
	events, _, err := env.Store.Audit(context.Background(), accountID, audit.AuditFilter{Step: step})
	if err != nil {
		t.Fatal(err)
	}
	for i, j := 0, len(events)-1; i < j; i, j = i+1, j-1 {
		events[i], events[j] = events[j], events[i]
	}
	return events
}

// sealAndVerify seals the audit log and checks that it verifies in the account.
func sealAndVerify(t *testing.T, env *apptest.Env, accountID string) {
	t.Helper()
	ctx := context.Background()
	sealer := env.Store.NewAuditSealer()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := sealer.Seal(ctx); err != nil {
			t.Fatal(err)
		}
		if head, err := env.Store.AuditHead(ctx, accountID); err == nil && head.Pos > 0 && head.Unsealed == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the events were not sealed within 10 s")
		}
	}
	report, err := env.Store.VerifyAudit(ctx, accountID)
	if err != nil || !report.OK() || report.Sealed == 0 {
		t.Fatalf("verify the audit log: %+v, %v", report, err)
	}
}

func TestAPasskeyAddedHereIsSignedForAuditedAndPushedToTheOtherDevices(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		p := newPeople(t, db)
		ctx := context.Background()
		ada := p.ada
		first := ada.Passkey.CredentialIDString()

		r := authorise(ada)
		grant := grantOf(t, r)
		if r.Body["by"] != "test passkey" {
			t.Fatalf("the grant does not name the passkey that gave it: %s", r)
		}
		if k, _ := p.env.Store.DeviceKeyByID(ctx, first); k.SignCount != int64(ada.Passkey.Counter) || k.LastUsedAt == nil {
			t.Fatalf("the confirming assertion's counter was not recorded: %+v (authenticator at %d)", k, ada.Passkey.Counter)
		}
		begin := ada.Post("/devices/begin", map[string]string{"grant": grant, "device_name": "Work Mac"})
		if _, options := begin.Ceremony(); begin.Status != http.StatusOK || !strings.Contains(string(options), first) {
			t.Fatalf("begin does not exclude the passkey ada has: %s", begin)
		}
		work := apptest.NewAuthenticator()
		// Added on the Mac, whose browser has notifications on: the phone hears of it, the Mac does not.
		if r := addHere(t, ada, grant, work, "Work Mac", p.mac); r.Status != http.StatusOK || r.Body["redirect"] != "/devices" {
			t.Fatalf("add: %s", r)
		}
		keys, err := p.env.Store.DeviceKeys(ctx, p.adaM.ID)
		if err != nil || len(keys) != 2 || keys[1].ID != work.CredentialIDString() || keys[1].Name != "Work Mac" || keys[1].AddedBy != first || keys[0].AddedBy != "" {
			t.Fatalf("ada's passkeys = %+v %v", keys, err)
		}

		for _, acct := range []string{p.env.Account.ID, p.second.ID} {
			events := passkeyEvents(t, p.env, acct, people.StepPasskeyAdded)
			if len(events) != 1 {
				t.Fatalf("account %s has %d passkey_added events", acct, len(events))
			}
			e := events[0]
			var data map[string]string
			if e.Data != nil {
				_ = json.Unmarshal([]byte(*e.Data), &data)
			}
			if e.ApprovalID != "" || e.ActorKind != asks.ActorPerson || e.Actor != "ada" || !strings.Contains(e.Note, `"Work Mac"`) ||
				data["credential_id"] != work.CredentialIDString() || data["added_by"] != first {
				t.Fatalf("the event in %s: %+v %v", acct, e, data)
			}
		}
		if n := passkeyEvents(t, p.env, p.env.Account.ID, people.StepPasskeyAdded); len(n) != 1 {
			t.Fatalf("events: %v", n)
		}
		if got := pushesTo(t, p.env, p.phone, people.PushPasskeyAdded); got != 1 {
			t.Fatalf("pushes to ada's phone: %d, want 1", got)
		}
		if got := pushesTo(t, p.env, p.mac, people.PushPasskeyAdded); got != 0 {
			t.Fatalf("pushes to the Mac the passkey was added on: %d, want 0", got)
		}
		var body string
		if err := p.env.Store.DB().Table("push_jobs").Where("event = ?", people.PushPasskeyAdded).Pluck("body", &body).Error; err != nil {
			t.Fatal(err)
		}
		var msg outbox.PushMessage
		if err := json.Unmarshal([]byte(body), &msg); err != nil || msg.URL != "/devices" || !strings.HasPrefix(msg.Title, "A new passkey was added to your account") {
			t.Fatalf("the push says %s", body)
		}

		res, err := ada.HTTP.Get(p.env.URL + "/devices")
		if err != nil {
			t.Fatal(err)
		}
		page := readBody(t, res)
		doc := parseHTML(t, page)
		row := elements(doc, byAttr("data-device", work.CredentialIDString()))
		if !strings.Contains(page, "Passkey added.") || len(row) != 1 || addedBy(row[0]) != "test passkey" {
			t.Fatalf("the devices page does not show the new passkey, who added it, and the notice:\n%s", page)
		}
		if row := elements(doc, byAttr("data-device", first)); len(row) != 1 || addedBy(row[0]) != "first passkey, from the invite" {
			t.Fatalf("the first passkey is not shown as the invite's")
		}

		elsewhere := p.env.Browser()
		elsewhere.Passkey = work
		if r := elsewhere.SignIn(); r.Status != http.StatusOK || elsewhere.Session() == "" {
			t.Fatalf("sign in with the new passkey: %s", r)
		}

		// Removing, signed by the passkey that goes, goes on the chain and to every device too.
		if r := removeSigned(ada, first); r.Status != http.StatusOK {
			t.Fatalf("remove: %s", r)
		}
		for _, acct := range []string{p.env.Account.ID, p.second.ID} {
			if events := passkeyEvents(t, p.env, acct, people.StepPasskeyRemoved); len(events) != 1 || events[0].Actor != "ada" ||
				events[0].Note != `passkey "test passkey" removed, authorised by passkey "test passkey"` {
				t.Fatalf("passkey_removed events in %s: %+v", acct, events)
			}
		}
		for _, endpoint := range []string{p.mac, p.phone} {
			if got := pushesTo(t, p.env, endpoint, people.PushPasskeyRemoved); got != 1 {
				t.Fatalf("removal pushes to %s: %d, want 1", endpoint, got)
			}
		}
		if ids := keyIDs(t, p.env, p.adaM.ID); len(ids) != 1 || ids[0] != work.CredentialIDString() {
			t.Fatalf("ada's passkeys after the removal: %v", ids)
		}
		// The last one stays, and nothing is logged for the refusal.
		if r := removeSigned(elsewhere, work.CredentialIDString()); r.Status != http.StatusConflict {
			t.Fatalf("removing the last passkey: %s", r)
		}
		if events := passkeyEvents(t, p.env, p.env.Account.ID, people.StepPasskeyRemoved); len(events) != 1 {
			t.Fatalf("a refused removal was logged: %+v", events)
		}
		sealAndVerify(t, p.env, p.env.Account.ID)
		sealAndVerify(t, p.env, p.second.ID)
	})
}

func TestADeviceLinkAddsAPasskeyOnANewDeviceOnce(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		p := newPeople(t, db)
		ctx := context.Background()
		ada := p.ada
		grant := grantOf(t, authorise(ada))
		made := ada.Post("/devices/link", map[string]string{"grant": grant})
		link, _ := made.Body["link"].(string)
		if made.Status != http.StatusOK || !strings.HasPrefix(link, p.env.URL+"/add-device/dln_") {
			t.Fatalf("make a link: %s", made)
		}
		path := strings.TrimPrefix(link, p.env.URL)
		token := strings.TrimPrefix(path, "/add-device/")

		t.Run("the link is stored hashed", func(t *testing.T) {
			var rows []people.DeviceGrant
			if err := p.env.Store.DB().Table("device_grants").Find(&rows).Error; err != nil {
				t.Fatal(err)
			}
			found := false
			for _, g := range rows {
				if strings.Contains(g.TokenHash, token) || strings.Contains(g.TokenHash, grant) {
					t.Fatalf("a token is stored in the clear: %+v", g)
				}
				if g.TokenHash == core.HashToken(token) {
					found = g.Kind == people.GrantLink && g.PersonID == p.adaM.ID && g.AuthorisedBy == ada.Passkey.CredentialIDString() &&
						g.ExpiresAt.Sub(g.CreatedAt) == people.DeviceLinkTTL && g.UsedAt == nil
				}
			}
			if !found {
				t.Fatalf("no live link grant under the token's hash: %+v", rows)
			}
		})
		// The grant that made the link is spent.
		if r := addHere(t, ada, grant, apptest.NewAuthenticator(), "Also", ""); r.Status != http.StatusConflict {
			t.Fatalf("the grant after making a link: %s", r)
		}

		phone := p.env.Browser() // a new device: no session
		if r := phone.Get(path); r.Status != http.StatusOK || !strings.Contains(string(r.Raw), "ada") {
			t.Fatalf("open the link: %s", r)
		}
		begin := phone.Post(path+"/begin", map[string]string{"device_name": "Phone"})
		id, options := begin.Ceremony()
		if begin.Status != http.StatusOK || !strings.Contains(string(options), ada.Passkey.CredentialIDString()) {
			t.Fatalf("begin on the link: %s", begin)
		}
		credential, err := phone.Passkey.Register(phone.Origin, options)
		if err != nil {
			t.Fatal(err)
		}
		if r := phone.Post(path+"/finish", map[string]any{"ceremony": id, "credential": json.RawMessage(credential)}); r.Status != http.StatusOK || r.Body["redirect"] != "/" || phone.Session() == "" {
			t.Fatalf("finish on the link: %s", r)
		}
		k, err := p.env.Store.DeviceKeyByID(ctx, phone.Passkey.CredentialIDString())
		if err != nil || k.PersonID != p.adaM.ID || k.Name != "Phone" || k.AddedBy != ada.Passkey.CredentialIDString() {
			t.Fatalf("the phone's passkey: %+v %v", k, err)
		}
		if res := phone.Get("/devices"); res.Status != http.StatusOK || !strings.Contains(string(res.Raw), phone.Passkey.CredentialIDString()) {
			t.Fatalf("the phone is not signed in as ada: %s", res)
		}
		for _, endpoint := range []string{p.mac, p.phone} {
			if got := pushesTo(t, p.env, endpoint, people.PushPasskeyAdded); got != 1 {
				t.Fatalf("pushes to %s: %d, want 1", endpoint, got)
			}
		}
		if events := passkeyEvents(t, p.env, p.second.ID, people.StepPasskeyAdded); len(events) != 1 || !strings.Contains(events[0].Note, `"Phone"`) {
			t.Fatalf("passkey_added in ada's second account: %+v", events)
		}

		t.Run("the link works once", func(t *testing.T) {
			again := p.env.Browser()
			if r := again.Get(path); r.Status != http.StatusConflict {
				t.Fatalf("open a used link: %s", r)
			}
			if r := again.Post(path+"/begin", map[string]string{"device_name": "Again"}); r.Status != http.StatusConflict {
				t.Fatalf("begin on a used link: %s", r)
			}
		})
		t.Run("a ceremony begun on a link cannot finish after the link was used", func(t *testing.T) {
			grant := grantOf(t, authorise(ada.For(t)))
			made := ada.For(t).Post("/devices/link", map[string]string{"grant": grant})
			path := strings.TrimPrefix(made.Body["link"].(string), p.env.URL)
			one, two := p.env.Browser(), p.env.Browser()
			b1, b2 := one.Post(path+"/begin", map[string]string{}), two.Post(path+"/begin", map[string]string{})
			finish := func(b *apptest.Browser, begin apptest.Response) apptest.Response {
				id, options := begin.Ceremony()
				credential, err := b.Passkey.Register(b.Origin, options)
				if err != nil {
					t.Fatal(err)
				}
				return b.Post(path+"/finish", map[string]any{"ceremony": id, "credential": json.RawMessage(credential)})
			}
			if r := finish(one, b1); r.Status != http.StatusOK {
				t.Fatalf("the first device: %s", r)
			}
			if r := finish(two, b2); r.Status != http.StatusConflict || two.Session() != "" || storedAnywhere(t, p.env, two.Passkey.CredentialIDString()) {
				t.Fatalf("a second device on the same link: %s", r)
			}
		})
		t.Run("the link expires", func(t *testing.T) {
			grant := grantOf(t, authorise(ada.For(t)))
			made := ada.For(t).Post("/devices/link", map[string]string{"grant": grant})
			path := strings.TrimPrefix(made.Body["link"].(string), p.env.URL)
			late := p.env.Browser()
			later := time.Now().Add(people.DeviceLinkTTL + time.Second)
			p.env.Store.SetClock(func() time.Time { return later })
			defer p.env.Store.SetClock(time.Now)
			if r := late.Get(path); r.Status != http.StatusConflict || !strings.Contains(string(r.Raw), "expired") {
				t.Fatalf("open an expired link: %s", r)
			}
			if r := late.Post(path+"/begin", map[string]string{}); r.Status != http.StatusConflict {
				t.Fatalf("begin on an expired link: %s", r)
			}
		})
	})
}

// A passkey whose credential id is registered already (here bob's) is
// refused with 409 and the reason, on a device link and on an invite alike,
// and nothing changes: the link and the invite still work, and nobody new
// is stored.
func TestAPasskeyRegisteredAlreadyIsRefusedWithTheReason(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		p := newPeople(t, db)
		ctx := context.Background()
		bobsKey := p.bob.Passkey.CredentialIDString()
		refused := func(t *testing.T, r apptest.Response) {
			t.Helper()
			if r.Status != http.StatusConflict || r.Code() != "FAILED_PRECONDITION" || r.Field() != "credential" ||
				!strings.Contains(r.Body["message"].(string), "already registered") {
				t.Fatalf("finish with bob's passkey: %s, want 409 saying the passkey is registered already", r)
			}
			if k, err := p.env.Store.DeviceKeyByID(ctx, bobsKey); err != nil || k.PersonID != p.bobM.ID {
				t.Fatalf("bob's passkey after the refusal: %+v %v", k, err)
			}
		}

		t.Run("on a device link", func(t *testing.T) {
			grant := grantOf(t, authorise(p.ada.For(t)))
			made := p.ada.For(t).Post("/devices/link", map[string]string{"grant": grant})
			path := strings.TrimPrefix(made.Body["link"].(string), p.env.URL)
			phone := p.env.Browser()
			phone.Passkey = p.bob.Passkey
			begin := phone.Post(path+"/begin", map[string]string{"device_name": "Phone"})
			id, options := begin.Ceremony()
			credential, err := phone.Passkey.Register(phone.Origin, options)
			if err != nil {
				t.Fatal(err)
			}
			refused(t, phone.Post(path+"/finish", map[string]any{"ceremony": id, "credential": json.RawMessage(credential)}))
			if phone.Session() != "" || len(keyIDs(t, p.env, p.adaM.ID)) != 1 {
				t.Fatalf("the refused device is signed in (%q) or ada has %d passkeys", phone.Session(), len(keyIDs(t, p.env, p.adaM.ID)))
			}
			if r := p.env.Browser().Get(path); r.Status != http.StatusOK {
				t.Fatalf("the link after the refusal: %s, want it unspent", r)
			}
		})
		t.Run("on an invite", func(t *testing.T) {
			token, _, err := p.env.Store.CreateInvite(ctx, people.NewInvite{AccountID: p.env.Account.ID, Role: core.RoleMember, By: people.OperatorInviter("test")})
			if err != nil {
				t.Fatal(err)
			}
			carol := p.env.Browser()
			carol.Passkey = p.bob.Passkey
			refused(t, carol.AcceptInvite(token, "carol"))
			if _, err := p.env.Store.MemberBySubject(ctx, p.env.Account.ID, "carol"); core.CodeOf(err) != core.NotFound {
				t.Fatalf("carol after the refusal: %v, want no such member", err)
			}
			if r := p.env.Browser().AcceptInvite(token, "carol"); r.Status != http.StatusOK {
				t.Fatalf("the invite with a passkey of carol's own: %s, want it still open", r)
			}
		})
	})
}
