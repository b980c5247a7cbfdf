package handlers_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/outbox"
	"github.com/countersign/countersign/models/people"
)

const iPhoneSafari = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1"

// pushWorld is a running service whose pushes go to a local push service
// that decrypts them, with an owner and a member signed in.
type pushWorld struct {
	env    *apptest.Env
	ps     *apptest.PushService
	agent  string // the agent's token
	owner  *people.Member
	member *people.Member
}

func newPushWorld(t *testing.T, db apptest.Database) *pushWorld {
	t.Helper()
	ps := apptest.NewPushService(t)
	env := apptest.Start(t, db, map[string]string{"COUNTERSIGN_PUSH_ALLOWED_HOSTS": ps.Host(), "COUNTERSIGN_PUSH_RETRY": "10ms"})
	_, token := env.Agent(env.Account.ID, "bot")
	return &pushWorld{env: env, ps: ps, agent: token,
		owner:  env.Member(env.Account.ID, "ada", core.RoleOwner),
		member: env.Member(env.Account.ID, "bob", core.RoleMember)}
}

// subscriptionOf is the PushSubscription.toJSON() a browser posts.
func subscriptionOf(endpoint, p256dh, auth string) map[string]any {
	return map[string]any{"endpoint": endpoint, "expirationTime": nil, "keys": map[string]string{"p256dh": p256dh, "auth": auth}}
}

// jsonAnswer is an HTTP answer of a JSON call.
type jsonAnswer struct {
	status int
	body   map[string]any
	raw    string
}

func (a jsonAnswer) code() string  { s, _ := a.body["error"].(string); return s }
func (a jsonAnswer) field() string { s, _ := a.body["field"].(string); return s }

// postJSON posts body as the page script does: JSON, with the CSRF token
// unless withCSRF is false, from a browser whose User-Agent is ua.
func (b *browser) postJSON(path, ua string, body any, withCSRF bool) jsonAnswer {
	b.t.Helper()
	raw, err := json.Marshal(body)
	if err != nil {
		b.t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, b.env.URL+path, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", ua)
	if withCSRF {
		req.Header.Set("X-CSRF-Token", b.csrf)
	}
	res, text := b.do(req)
	a := jsonAnswer{status: res.StatusCode, raw: text}
	_ = json.Unmarshal([]byte(text), &a.body)
	return a
}

// visitor is a browser that is not signed in, with the CSRF cookie and
// token of the sign-in page.
func visitor(t *testing.T, env *apptest.Env) *browser {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	b := &browser{t: t, env: env, client: &http.Client{Jar: jar}}
	res, body := b.get("/signin")
	match := csrfMeta.FindStringSubmatch(body)
	if res.StatusCode != http.StatusOK || match == nil {
		t.Fatalf("GET /signin: %d without a csrf-token meta tag", res.StatusCode)
	}
	b.csrf = match[1]
	return b
}

// renew posts to /push/renew as the service worker does: no cookie, no
// CSRF token.
func renew(t *testing.T, env *apptest.Env, body any, header http.Header) jsonAnswer {
	t.Helper()
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, env.URL+"/push/renew", bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header[k] = v
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST /push/renew: %v", err)
	}
	defer res.Body.Close()
	text, _ := io.ReadAll(res.Body)
	a := jsonAnswer{status: res.StatusCode, raw: string(text)}
	_ = json.Unmarshal(text, &a.body)
	return a
}

func pushRows(t *testing.T, env *apptest.Env, personID string) []outbox.PushSubscription {
	t.Helper()
	subs, err := env.Store.PushSubscriptions(context.Background(), personID)
	if err != nil {
		t.Fatal(err)
	}
	return subs
}

func allPushRows(t *testing.T, env *apptest.Env) int64 {
	t.Helper()
	var n int64
	if err := env.Store.DB().Table("push_subscriptions").Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// nextPush waits for the next push the local service decrypted.
func (w *pushWorld) nextPush(t *testing.T) (apptest.Delivery, outbox.PushMessage) {
	t.Helper()
	d, ok := w.ps.Next(10 * time.Second)
	if !ok {
		t.Fatalf("no push arrived within 10 s; %d taken so far", len(w.ps.Deliveries()))
	}
	var m outbox.PushMessage
	if err := json.Unmarshal(d.Plaintext, &m); err != nil {
		t.Fatalf("push body %q is not JSON: %v", d.Plaintext, err)
	}
	return d, m
}

func TestTurningNotificationsOnStoresTheSubscriptionAndTheDevicesPageListsIt(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		w := newPushWorld(t, db)
		b := signIn(t, w.env, w.owner)

		res, body := b.get("/devices")
		if res.StatusCode != http.StatusOK {
			t.Fatalf("GET /devices: %d", res.StatusCode)
		}
		doc := parseHTML(t, body)
		cards := elements(doc, byAttr("data-testid", "notifications"))
		if len(cards) != 1 || attrOf(cards[0], "data-vapid-key") != w.env.App.Keys.Public || w.env.App.Keys.Public == "" {
			t.Fatalf("the notifications card does not carry the VAPID public key %q", w.env.App.Keys.Public)
		}
		if len(elements(doc, byAttr("data-testid", "enable-push"))) != 1 || len(elements(doc, byAttr("data-testid", "disable-push"))) != 1 {
			t.Fatal("no enable-push and disable-push buttons")
		}
		if len(elements(doc, byAttr("data-testid", "test-push"))) != 0 || len(elements(doc, byAttr("data-testid", "no-push-devices"))) != 1 {
			t.Fatal("with no device subscribed the page offers a test push, or does not say none is")
		}

		endpoint, p256dh, auth := w.ps.Subscribe("phone")
		a := b.postJSON("/push/subscribe", iPhoneSafari, subscriptionOf(endpoint, p256dh, auth), true)
		if a.status != http.StatusOK {
			t.Fatalf("subscribe: %d %s", a.status, a.raw)
		}
		rows := pushRows(t, w.env, w.owner.ID)
		if len(rows) != 1 {
			t.Fatalf("%d subscriptions stored, want 1", len(rows))
		}
		r := rows[0]
		if r.Endpoint != endpoint || r.P256dh != p256dh || r.Auth != auth || r.UserAgent != iPhoneSafari || r.PersonID != w.owner.ID ||
			r.Failures != 0 || r.LastSuccessAt != nil || r.CreatedAt.IsZero() {
			t.Fatalf("stored %+v, want endpoint %s, keys %s/%s, the User-Agent, the owner, no failures, never delivered", r, endpoint, p256dh, auth)
		}
		if a.body["id"] != r.ID || a.body["user_agent"] != iPhoneSafari {
			t.Errorf("subscribe answered %s, want the stored row %s", a.raw, r.ID)
		}
		if n := len(pushRows(t, w.env, w.member.ID)); n != 0 {
			t.Errorf("bob has %d subscriptions: the owner's went to someone else", n)
		}

		_, body = b.get("/devices")
		doc = parseHTML(t, body)
		listed := elements(doc, byAttr("data-push-device", r.ID))
		if len(listed) != 1 {
			t.Fatalf("the subscribed device is not listed")
		}
		sum := sha256.Sum256([]byte(endpoint))
		if got := attrOf(listed[0], "data-endpoint-sha256"); got != hex.EncodeToString(sum[:]) {
			t.Errorf("data-endpoint-sha256 = %q, want the endpoint's SHA-256", got)
		}
		if strings.Contains(body, endpoint) {
			t.Error("the page shows the endpoint itself")
		}
		text := textOf(listed[0])
		for _, want := range []string{"Safari on iPhone", "never yet"} {
			if !strings.Contains(text, want) {
				t.Errorf("the device row %q does not say %q", text, want)
			}
		}
		if f := elements(listed[0], byAttr("data-field", "user-agent")); len(f) != 1 || strings.TrimSpace(textOf(f[0])) != iPhoneSafari {
			t.Error("the device row does not show the full User-Agent")
		}
		if f := elements(listed[0], byAttr("data-field", "failures")); len(f) != 1 || strings.TrimSpace(textOf(f[0])) != "0" {
			t.Error("the device row does not show 0 failures")
		}
		if len(elements(doc, byAttr("data-testid", "test-push"))) != 1 || len(elements(doc, byAttr("data-testid", "no-push-devices"))) != 0 {
			t.Error("with a device subscribed the page offers no test push")
		}

		// Subscribing the same browser again replaces its row: one row per endpoint.
		if a := b.postJSON("/push/subscribe", iPhoneSafari, subscriptionOf(endpoint, p256dh, auth), true); a.status != http.StatusOK {
			t.Fatalf("subscribe again: %d %s", a.status, a.raw)
		}
		if n := allPushRows(t, w.env); n != 1 {
			t.Errorf("%d rows after subscribing the same endpoint twice, want 1", n)
		}
	})
}

func TestAnEndpointOffTheKnownPushServicesIsRefusedAndNothingIsStored(t *testing.T) {
	w := newPushWorld(t, apptest.SQLite)
	b := signIn(t, w.env, w.owner)
	for _, tc := range []struct {
		name  string
		body  any
		field string
	}{
		{"the cloud metadata address", subscriptionOf("http://169.254.169.254/latest/meta-data", "BKey", "auth"), "endpoint"},
		{"a site the client picked", subscriptionOf("https://evil.example/push", "BKey", "auth"), "endpoint"},
		{"a push service over plain http", subscriptionOf("http://fcm.googleapis.com/fcm/send/x", "BKey", "auth"), "endpoint"},
		{"a look-alike host", subscriptionOf("https://fcm.googleapis.com.evil.example/x", "BKey", "auth"), "endpoint"},
		{"loopback on another port", subscriptionOf("http://127.0.0.1:1/push/x", "BKey", "auth"), "endpoint"},
		{"no endpoint", subscriptionOf("", "BKey", "auth"), "endpoint"},
		{"no keys", map[string]any{"endpoint": "https://fcm.googleapis.com/fcm/send/x"}, "keys"},
		{"a body over 8 KB", subscriptionOf("https://fcm.googleapis.com/fcm/send/"+strings.Repeat("x", 9000), "BKey", "auth"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := b.postJSON("/push/subscribe", "test", tc.body, true)
			if a.status != http.StatusBadRequest || a.code() != "INVALID_ARGUMENT" || a.field() != tc.field {
				t.Errorf("answered %d %s, want 400 INVALID_ARGUMENT about %q", a.status, a.raw, tc.field)
			}
			if n := allPushRows(t, w.env); n != 0 {
				t.Errorf("%d subscriptions stored, want none", n)
			}
		})
	}
}

func TestPushCallsNeedTheCSRFTokenAndASession(t *testing.T) {
	w := newPushWorld(t, apptest.SQLite)
	b := signIn(t, w.env, w.owner)
	endpoint, p256dh, auth := w.ps.Subscribe("phone")
	if _, err := w.env.Store.SavePushSubscription(context.Background(), w.owner.ID, outbox.PushSubscription{Endpoint: endpoint, P256dh: p256dh, Auth: auth}); err != nil {
		t.Fatal(err)
	}
	other, _, _ := w.ps.Subscribe("mac")
	for path, body := range map[string]any{
		"/push/subscribe":   subscriptionOf(other, p256dh, auth),
		"/push/unsubscribe": map[string]string{"endpoint": endpoint},
		"/push/test":        map[string]string{},
	} {
		if a := b.postJSON(path, "test", body, false); a.status != http.StatusForbidden {
			t.Errorf("%s without the CSRF token: %d %s, want 403", path, a.status, a.raw)
		}
		if a := visitor(t, w.env).postJSON(path, "test", body, true); a.status != http.StatusUnauthorized {
			t.Errorf("%s without a session: %d %s, want 401", path, a.status, a.raw)
		}
	}
	rows := pushRows(t, w.env, w.owner.ID)
	if len(rows) != 1 || rows[0].Endpoint != endpoint || allPushRows(t, w.env) != 1 {
		t.Errorf("subscriptions changed by refused calls: %+v", rows)
	}
	if d, ok := w.ps.Next(300 * time.Millisecond); ok {
		t.Errorf("a refused test push was sent to %s", d.Device)
	}
}

func TestTurningNotificationsOffRemovesOnlyThatBrowser(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		w := newPushWorld(t, db)
		owner, bob := signIn(t, w.env, w.owner), signIn(t, w.env, w.member)
		phone, p1, a1 := w.ps.Subscribe("phone")
		mac, p2, a2 := w.ps.Subscribe("mac")
		for _, s := range []map[string]any{subscriptionOf(phone, p1, a1), subscriptionOf(mac, p2, a2)} {
			if a := owner.postJSON("/push/subscribe", "test", s, true); a.status != http.StatusOK {
				t.Fatalf("subscribe: %d %s", a.status, a.raw)
			}
		}

		if a := bob.postJSON("/push/unsubscribe", "test", map[string]string{"endpoint": phone}, true); a.status != http.StatusNotFound || a.code() != "NOT_FOUND" {
			t.Errorf("bob turning off ada's phone: %d %s, want 404 NOT_FOUND", a.status, a.raw)
		}
		if n := len(pushRows(t, w.env, w.owner.ID)); n != 2 {
			t.Fatalf("ada has %d subscriptions after bob's try, want 2", n)
		}

		if a := owner.postJSON("/push/unsubscribe", "test", map[string]string{"endpoint": phone}, true); a.status != http.StatusOK || a.body["unsubscribed"] != true {
			t.Fatalf("unsubscribe: %d %s", a.status, a.raw)
		}
		rows := pushRows(t, w.env, w.owner.ID)
		if len(rows) != 1 || rows[0].Endpoint != mac {
			t.Fatalf("after turning the phone off ada has %+v, want the mac only", rows)
		}
		if a := owner.postJSON("/push/unsubscribe", "test", map[string]string{"endpoint": phone}, true); a.status != http.StatusNotFound || a.field() != "endpoint" {
			t.Errorf("unsubscribing twice: %d %s, want 404 about endpoint", a.status, a.raw)
		}
		if a := owner.postJSON("/push/unsubscribe", "test", map[string]string{}, true); a.status != http.StatusBadRequest || a.field() != "endpoint" {
			t.Errorf("unsubscribing nothing: %d %s, want 400 about endpoint", a.status, a.raw)
		}
	})
}

func TestATestPushReachesEveryDeviceOfThePerson(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		w := newPushWorld(t, db)
		b := signIn(t, w.env, w.owner)
		if a := b.postJSON("/push/test", "test", map[string]string{}, true); a.status != http.StatusConflict || a.code() != "FAILED_PRECONDITION" {
			t.Errorf("a test push with no device: %d %s, want 409 FAILED_PRECONDITION", a.status, a.raw)
		}
		for _, d := range []string{"phone", "mac"} {
			endpoint, p256dh, auth := w.ps.Subscribe(d)
			if a := b.postJSON("/push/subscribe", "test", subscriptionOf(endpoint, p256dh, auth), true); a.status != http.StatusOK {
				t.Fatalf("subscribe: %d %s", a.status, a.raw)
			}
		}
		a := b.postJSON("/push/test", "test", map[string]string{}, true)
		if a.status != http.StatusOK || a.body["devices"] != float64(2) {
			t.Fatalf("test push: %d %s, want 200 with devices 2", a.status, a.raw)
		}
		seen := map[string]bool{}
		for range 2 {
			d, m := w.nextPush(t)
			seen[d.Device] = true
			want := outbox.PushMessage{Event: outbox.PushTest, Title: "Countersign test: notifications work", URL: "/devices",
				WebPush: outbox.DeclarativeWebPush}
			n := m.Notification
			m.Notification = nil
			if m != want || n == nil || *n != (outbox.DeclarativeNotification{Title: want.Title, Body: "Notifications work on this device.", Tag: "countersign-test", Navigate: w.env.App.Config.BaseURL + "/devices"}) {
				t.Errorf("%s got %+v with the declarative notification %+v, want %+v", d.Device, m, n, want)
			}
		}
		if !seen["phone"] || !seen["mac"] {
			t.Errorf("the test push reached %v, want phone and mac", seen)
		}
		// The devices page then shows the delivery, once the sender has
		// recorded it (just after the push service answered).
		deadline := time.Now().Add(10 * time.Second)
		for rows := pushRows(t, w.env, w.owner.ID); rows[0].LastSuccessAt == nil || rows[1].LastSuccessAt == nil; rows = pushRows(t, w.env, w.owner.ID) {
			if time.Now().After(deadline) {
				t.Fatalf("the deliveries are not recorded within 10 s: %+v", rows)
			}
			time.Sleep(20 * time.Millisecond)
		}
		_, body := b.get("/devices")
		for _, r := range pushRows(t, w.env, w.owner.ID) {
			row := elements(parseHTML(t, body), byAttr("data-push-device", r.ID))
			if r.LastSuccessAt == nil || len(row) != 1 || strings.Contains(textOf(row[0]), "never yet") {
				t.Errorf("device %s: last success %v; the page does not show it", r.ID, r.LastSuccessAt)
			}
		}
	})
}

func TestTheDevicesPageShowsADevicesFailedTries(t *testing.T) {
	w := newPushWorld(t, apptest.SQLite)
	w.ps.Answer = func(string, int) (int, http.Header) { return http.StatusServiceUnavailable, nil }
	b := signIn(t, w.env, w.owner)
	endpoint, p256dh, auth := w.ps.Subscribe("flaky")
	if a := b.postJSON("/push/subscribe", "test", subscriptionOf(endpoint, p256dh, auth), true); a.status != http.StatusOK {
		t.Fatalf("subscribe: %d %s", a.status, a.raw)
	}
	if a := b.postJSON("/push/test", "test", map[string]string{}, true); a.status != http.StatusOK || a.body["devices"] != float64(1) {
		t.Fatalf("test push: %d %s", a.status, a.raw)
	}
	deadline := time.Now().Add(10 * time.Second)
	var row outbox.PushSubscription
	for row = pushRows(t, w.env, w.owner.ID)[0]; row.Failures < 2; row = pushRows(t, w.env, w.owner.ID)[0] {
		if time.Now().After(deadline) {
			t.Fatalf("%d failures recorded within 10 s of 503 answers, want 2", row.Failures)
		}
		time.Sleep(20 * time.Millisecond)
	}
	_, body := b.get("/devices")
	listed := elements(parseHTML(t, body), byAttr("data-push-device", row.ID))
	if len(listed) != 1 {
		t.Fatal("the device is not listed")
	}
	f := elements(listed[0], byAttr("data-field", "failures"))
	if len(f) != 1 {
		t.Fatal("the device row shows no failed tries")
	}
	shown, err := strconv.Atoi(strings.TrimSpace(textOf(f[0])))
	if err != nil || shown < row.Failures {
		t.Errorf("the page shows %q failed tries, want at least the %d recorded before it loaded", textOf(f[0]), row.Failures)
	}
	if got := textOf(elements(listed[0], byAttr("data-field", "last-success"))[0]); !strings.Contains(got, "never yet") {
		t.Errorf("last delivered shows %q for a device that never took a push", got)
	}
}

func TestTheServiceWorkerRenewsARotatedSubscriptionWithTheOldAuthSecret(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		w := newPushWorld(t, db)
		b := signIn(t, w.env, w.owner)
		oldEndpoint, oldP256dh, oldAuth := w.ps.Subscribe("phone")
		if a := b.postJSON("/push/subscribe", iPhoneSafari, subscriptionOf(oldEndpoint, oldP256dh, oldAuth), true); a.status != http.StatusOK {
			t.Fatalf("subscribe: %d %s", a.status, a.raw)
		}
		before := pushRows(t, w.env, w.owner.ID)[0]
		newEndpoint, newP256dh, newAuth := w.ps.Subscribe("phone-rotated")
		fresh := subscriptionOf(newEndpoint, newP256dh, newAuth)

		unchanged := func(t *testing.T) {
			t.Helper()
			rows := pushRows(t, w.env, w.owner.ID)
			if len(rows) != 1 || rows[0] != before {
				t.Errorf("the subscription changed: %+v, was %+v", rows, before)
			}
		}
		for _, tc := range []struct {
			name   string
			body   any
			header http.Header
			status int
			code   string
		}{
			{"a wrong auth secret", map[string]any{"old_endpoint": oldEndpoint, "old_auth": "d3Jvbmc", "subscription": fresh}, nil, http.StatusNotFound, "NOT_FOUND"},
			{"an unknown old endpoint", map[string]any{"old_endpoint": newEndpoint, "old_auth": oldAuth, "subscription": fresh}, nil, http.StatusNotFound, "NOT_FOUND"},
			{"no auth secret", map[string]any{"old_endpoint": oldEndpoint, "subscription": fresh}, nil, http.StatusBadRequest, "INVALID_ARGUMENT"},
			{"a new endpoint off the push services", map[string]any{"old_endpoint": oldEndpoint, "old_auth": oldAuth, "subscription": subscriptionOf("https://evil.example/push", newP256dh, newAuth)}, nil, http.StatusBadRequest, "INVALID_ARGUMENT"},
			{"a cross-site request", map[string]any{"old_endpoint": oldEndpoint, "old_auth": oldAuth, "subscription": fresh}, http.Header{"Sec-Fetch-Site": {"cross-site"}}, http.StatusForbidden, "FORBIDDEN"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				a := renew(t, w.env, tc.body, tc.header)
				if a.status != tc.status || a.code() != tc.code {
					t.Errorf("renew: %d %s, want %d %s", a.status, a.raw, tc.status, tc.code)
				}
				unchanged(t)
			})
		}

		// The right old endpoint and auth secret, with no session or CSRF token.
		a := renew(t, w.env, map[string]any{"old_endpoint": oldEndpoint, "old_auth": oldAuth, "subscription": fresh}, nil)
		if a.status != http.StatusOK || a.body["renewed"] != true {
			t.Fatalf("renew: %d %s", a.status, a.raw)
		}
		rows := pushRows(t, w.env, w.owner.ID)
		if len(rows) != 1 {
			t.Fatalf("%d subscriptions after the renewal, want 1", len(rows))
		}
		r := rows[0]
		if r.ID != before.ID || r.Endpoint != newEndpoint || r.P256dh != newP256dh || r.Auth != newAuth || r.UserAgent != iPhoneSafari || r.PersonID != w.owner.ID {
			t.Fatalf("after the renewal the row is %+v, want %s with the new endpoint and keys, the same person and User-Agent", r, before.ID)
		}
		// The old pair proves nothing any more.
		if a := renew(t, w.env, map[string]any{"old_endpoint": oldEndpoint, "old_auth": oldAuth, "subscription": fresh}, nil); a.status != http.StatusNotFound {
			t.Errorf("renewing with the replaced pair: %d %s, want 404", a.status, a.raw)
		}
		// Pushes now go to the new subscription, encrypted for its keys.
		if a := b.postJSON("/push/test", "test", map[string]string{}, true); a.status != http.StatusOK {
			t.Fatalf("test push: %d %s", a.status, a.raw)
		}
		if d, m := w.nextPush(t); d.Device != "phone-rotated" || m.Event != outbox.PushTest {
			t.Errorf("the test push went to %s as %+v, want phone-rotated", d.Device, m)
		}
		if n := w.ps.Requests("phone"); n != 0 {
			t.Errorf("the old endpoint got %d requests", n)
		}
	})
}

func TestRenewalsAreRateLimitedPerAddress(t *testing.T) {
	w := newPushWorld(t, apptest.SQLite)
	endpoint, p256dh, auth := w.ps.Subscribe("phone")
	body := map[string]any{"old_endpoint": "https://fcm.googleapis.com/fcm/send/nobody", "old_auth": "guess", "subscription": subscriptionOf(endpoint, p256dh, auth)}
	statuses := map[int]int{}
	for range 30 {
		a := renew(t, w.env, body, nil)
		statuses[a.status]++
		if a.status == http.StatusTooManyRequests && a.code() != "RESOURCE_EXHAUSTED" {
			t.Errorf("a refused renewal says %s, want RESOURCE_EXHAUSTED", a.raw)
		}
	}
	if statuses[http.StatusNotFound] < 1 || statuses[http.StatusTooManyRequests] < 1 || statuses[http.StatusNotFound]+statuses[http.StatusTooManyRequests] != 30 {
		t.Errorf("30 guesses in a row answered %v, want a few 404s then 429s", statuses)
	}
	if n := allPushRows(t, w.env); n != 0 {
		t.Errorf("%d subscriptions stored by guesses", n)
	}
}

func TestAnAskFiledOverMCPReachesTheSubscribedBrowser(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		w := newPushWorld(t, db)
		b := signIn(t, w.env, w.owner)
		endpoint, p256dh, auth := w.ps.Subscribe("phone")
		if a := b.postJSON("/push/subscribe", iPhoneSafari, subscriptionOf(endpoint, p256dh, auth), true); a.status != http.StatusOK {
			t.Fatalf("subscribe: %d %s", a.status, a.raw)
		}
		title := "Merge acme/web#900 ✓ <b>now</b>"
		created := w.env.Connect(w.agent).OK("approvals_create", map[string]any{
			"kind": "pull_request", "title": title, "summary": "Fixes the login redirect.",
			"approve_means": "I merge it; nothing rolls", "deny_means": "It stays open",
			"payload": map[string]any{"pull_request": map[string]any{"repo": "acme/web", "number": 900, "head": "abcdef1234567", "title": "Fix login redirect"}},
			"context": map[string]any{"plan_id": "plan_1", "plan_item": "item_2"},
		})
		id, _ := created["approval_id"].(string)
		if id == "" {
			t.Fatalf("approvals_create answered %v", created)
		}
		d, m := w.nextPush(t)
		if !strings.HasPrefix(m.URL, "/link/"+id+"/") || m.Notification == nil || m.Notification.Navigate != w.env.App.Config.BaseURL+m.URL {
			t.Fatalf("the phone's push opens %q (declarative %+v), want the ask's one-time link", m.URL, m.Notification)
		}
		m.URL, m.Notification = "", nil
		want := outbox.PushMessage{Event: outbox.PushAsk, ApprovalID: id, Title: title, WebPush: outbox.DeclarativeWebPush}
		if d.Device != "phone" || m != want {
			t.Fatalf("the phone got %+v on %s, want %+v", m, d.Device, want)
		}
		if d.VAPID.Key != w.env.App.Keys.Public {
			t.Errorf("signed with %s, not the key the page subscribes with (%s)", d.VAPID.Key, w.env.App.Keys.Public)
		}
		if d.Header.Get("Urgency") != "high" {
			t.Errorf("Urgency %q, want high", d.Header.Get("Urgency"))
		}
	})
}
