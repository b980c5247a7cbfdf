package push_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/ask"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/outbox"
	"github.com/countersign/countersign/models/people"
	"github.com/countersign/countersign/push"
)

// world is a running service with a local push service, an owner with
// devices subscribed to it, and an agent.
type world struct {
	env   *apptest.Env
	ps    *apptest.PushService
	owner *people.Member
	agent *people.Agent
}

func newWorld(t *testing.T, db apptest.Database, overrides map[string]string, devices ...string) *world {
	t.Helper()
	ps := apptest.NewPushService(t)
	o := map[string]string{"COUNTERSIGN_PUSH_ALLOWED_HOSTS": ps.Host(), "COUNTERSIGN_PUSH_RETRY": "10ms"}
	for k, v := range overrides {
		o[k] = v
	}
	env := apptest.Start(t, db, o)
	w := &world{env: env, ps: ps, owner: env.Member(env.Account.ID, "ada", core.RoleOwner)}
	w.agent, _ = env.Agent(env.Account.ID, "bot")
	for _, d := range devices {
		w.subscribe(t, w.owner.ID, d)
	}
	return w
}

func (w *world) subscribe(t *testing.T, personID, device string) {
	t.Helper()
	endpoint, p256dh, auth := w.ps.Subscribe(device)
	if _, err := w.env.Store.SavePushSubscription(context.Background(), personID, outbox.PushSubscription{
		Endpoint: endpoint, P256dh: p256dh, Auth: auth, UserAgent: "test " + device,
	}); err != nil {
		t.Fatalf("subscribe %s: %v", device, err)
	}
}

func (w *world) ask(t *testing.T, title string) *asks.Approval {
	t.Helper()
	a, err := w.env.Store.CreateApproval(context.Background(), models.NewAsk{
		Requester: w.agent, Kind: ask.KindReview, Title: title, ApproveMeans: "I ship it", DenyMeans: "I do not",
		Payload: json.RawMessage(`{"review":{"url":"https://example.com/r/` + strconv.FormatInt(time.Now().UnixNano(), 10) + `"}}`),
	})
	if err != nil {
		t.Fatalf("create ask: %v", err)
	}
	return a
}

func (w *world) next(t *testing.T) (apptest.Delivery, outbox.PushMessage) {
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

func (w *world) none(t *testing.T, within time.Duration) {
	t.Helper()
	if d, ok := w.ps.Next(within); ok {
		t.Fatalf("an unexpected push arrived: %s %s", d.Device, d.Plaintext)
	}
}

// linkURL is the path of an ask's one-time link: /link/ID/TOKEN.
var linkURL = regexp.MustCompile(`^/link/(appr_[a-z2-7]+)/(pl_[a-z2-7]{52})$`)

// checkDeclarative checks the declarative form a push carries beside the
// members the service worker reads: web_push 8030 at the top, and the
// notification the worker would show, opening the absolute URL of url.
func checkDeclarative(t *testing.T, w *world, plaintext []byte, m outbox.PushMessage, want outbox.DeclarativeNotification) {
	t.Helper()
	var top map[string]json.RawMessage
	if err := json.Unmarshal(plaintext, &top); err != nil || string(top["web_push"]) != "8030" {
		t.Errorf("the push %s has no top-level \"web_push\": 8030", plaintext)
	}
	want.Navigate = w.env.App.Config.BaseURL + m.URL
	if m.Notification == nil || *m.Notification != want {
		t.Errorf("the declarative notification is %+v, want %+v", m.Notification, want)
	}
}

func TestANewAskIsPushedToEveryDeviceEncryptedAndSigned(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		w := newWorld(t, db, nil, "phone", "mac")
		a := w.ask(t, "Ship <b>release</b> 42")
		seen := map[string]bool{}
		tokens := map[string]bool{}
		for range 2 {
			d, m := w.next(t)
			seen[d.Device] = true
			link := linkURL.FindStringSubmatch(m.URL)
			if link == nil || link[1] != a.ID {
				t.Fatalf("%s got the URL %q, want the ask's one-time link /link/%s/TOKEN", d.Device, m.URL, a.ID)
			}
			tokens[link[2]] = true
			checkDeclarative(t, w, d.Plaintext, m, outbox.DeclarativeNotification{Title: "Ship <b>release</b> 42", Body: "Open to answer", Tag: a.ID})
			m.URL, m.WebPush, m.Notification = "", 0, nil
			want := outbox.PushMessage{Event: outbox.PushAsk, ApprovalID: a.ID, Title: "Ship <b>release</b> 42"}
			if m != want {
				t.Errorf("%s got %+v, want %+v", d.Device, m, want)
			}
			// The store keeps the token's hash, never the token: a copy of
			// the database opens nothing.
			var stored []string
			if err := w.env.Store.DB().Table("push_links").Where("approval_id = ?", a.ID).Pluck("token_hash", &stored).Error; err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(stored, core.HashToken(link[2])) || slices.Contains(stored, link[2]) {
				t.Errorf("push_links holds %q, want the hash of the token and not the token", stored)
			}
			var bodies []string
			if err := w.env.Store.DB().Table("push_jobs").Where("approval_id = ?", a.ID).Pluck("body", &bodies).Error; err != nil {
				t.Fatal(err)
			}
			for _, b := range bodies {
				if strings.Contains(b, link[2]) {
					t.Errorf("the outbox keeps the link's token: %s", b)
				}
			}
			if got := d.Header.Get("Urgency"); got != "high" {
				t.Errorf("Urgency %q, want high", got)
			}
			ttl, err := strconv.Atoi(d.Header.Get("TTL"))
			if left := int(time.Until(a.ExpiresAt).Seconds()) + 1; err != nil || ttl <= 0 || ttl > left {
				t.Errorf("TTL %q, want 1 to %d (the ask's remaining life)", d.Header.Get("TTL"), left)
			}
			if topic := d.Header.Get("Topic"); topic == "" || len(topic) > 32 || !strings.Contains(a.ID, strings.ReplaceAll(topic, "-", "_")[:10]) {
				t.Errorf("Topic %q is not derived from %s", topic, a.ID)
			}
			if d.VAPID.Key != w.env.App.Keys.Public {
				t.Errorf("VAPID k %s is not the service's public key %s", d.VAPID.Key, w.env.App.Keys.Public)
			}
			if d.VAPID.Sub != "mailto:countersign@localhost" {
				t.Errorf("VAPID sub %q, want the default contact", d.VAPID.Sub)
			}
		}
		if !seen["phone"] || !seen["mac"] {
			t.Errorf("pushed to %v, want phone and mac", seen)
		}
		if len(tokens) != 2 {
			t.Errorf("the two devices got %d different links, want one each", len(tokens))
		}
	})
}

func TestOnlyThePeopleAskedGetThePush(t *testing.T) {
	w := newWorld(t, apptest.SQLite, nil, "owner-phone")
	bob := w.env.Member(w.env.Account.ID, "bob", core.RoleMember)
	w.subscribe(t, bob.ID, "bob-phone")
	// An ask with no asked_of goes to owners and admins, not to bob.
	w.ask(t, "For the admins")
	if d, _ := w.next(t); d.Device != "owner-phone" {
		t.Fatalf("pushed to %s, want owner-phone", d.Device)
	}
	w.none(t, 300*time.Millisecond)
	// An ask of bob goes to bob only.
	a, err := w.env.Store.CreateApproval(context.Background(), models.NewAsk{
		Requester: w.agent, Kind: ask.KindReview, Title: "For bob", ApproveMeans: "a", DenyMeans: "d", AskedOf: "bob",
		Payload: json.RawMessage(`{"review":{"url":"https://example.com/bob"}}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	if d, m := w.next(t); d.Device != "bob-phone" || m.ApprovalID != a.ID {
		t.Fatalf("pushed %s to %s, want %s to bob-phone", m.ApprovalID, d.Device, a.ID)
	}
	w.none(t, 300*time.Millisecond)
}

func TestAPushIsRetriedUntilTheServiceTakesIt(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		w := newWorld(t, db, nil, "phone")
		w.ps.Answer = func(_ string, n int) (int, http.Header) {
			switch n {
			case 1:
				return http.StatusInternalServerError, nil
			case 2:
				return http.StatusTooManyRequests, http.Header{"Retry-After": {"0"}}
			}
			return http.StatusCreated, nil
		}
		a := w.ask(t, "Retry me")
		if _, m := w.next(t); m.ApprovalID != a.ID {
			t.Fatalf("delivered %+v", m)
		}
		w.none(t, 300*time.Millisecond)
		if n := w.ps.Requests("phone"); n != 3 {
			t.Errorf("the push service saw %d requests, want 3 (500, 429, 201)", n)
		}
		if got := len(w.ps.Deliveries()); got != 1 {
			t.Errorf("delivered %d times, want once", got)
		}
		var job outbox.PushJob
		w.env.Store.DB().Table("push_jobs").Where("approval_id = ?", a.ID).Take(&job)
		if job.Outcome != "delivered" || job.Attempts != 3 || job.DoneAt == nil {
			t.Errorf("job outcome %q after %d attempts (done %v), want delivered after 3", job.Outcome, job.Attempts, job.DoneAt)
		}
	})
}

func TestAGoneSubscriptionIsRemovedAndNeverTriedAgain(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		w := newWorld(t, db, nil, "phone", "old-phone")
		w.ps.Answer = func(device string, _ int) (int, http.Header) {
			if device == "old-phone" {
				return http.StatusGone, nil
			}
			return http.StatusCreated, nil
		}
		w.ask(t, "First")
		if d, _ := w.next(t); d.Device != "phone" {
			t.Fatalf("delivered to %s", d.Device)
		}
		waitFor(t, func() bool { return w.ps.Requests("old-phone") == 1 && subscriptions(t, w) == 1 })
		w.ask(t, "Second")
		if d, _ := w.next(t); d.Device != "phone" {
			t.Fatalf("delivered to %s", d.Device)
		}
		w.none(t, 300*time.Millisecond)
		if n := w.ps.Requests("old-phone"); n != 1 {
			t.Errorf("the gone subscription got %d requests, want the one that said 410", n)
		}
	})
}

func TestAPushQueuedBeforeACrashIsDeliveredAfterTheRestart(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ps := apptest.NewPushService(t)
		cfg := apptest.Config(t, db, map[string]string{"COUNTERSIGN_PUSH_ALLOWED_HOSTS": ps.Host()})
		ctx := context.Background()
		// The first instance commits the ask and dies before it sends: its
		// sender never runs (a kill -9 between the commit and the send).
		first, err := openApp(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		acct, _ := first.Store.AccountByName(ctx, people.DefaultAccountName)
		owner, _ := first.Store.AddMember(ctx, acct.ID, "ada", "Ada", core.RoleOwner)
		agent, _, _ := first.Store.CreateAgent(ctx, acct.ID, "bot", people.AllScopes)
		endpoint, p256dh, auth := ps.Subscribe("phone")
		if _, err := first.Store.SavePushSubscription(ctx, owner.ID, outbox.PushSubscription{Endpoint: endpoint, P256dh: p256dh, Auth: auth}); err != nil {
			t.Fatal(err)
		}
		a, err := first.Store.CreateApproval(ctx, models.NewAsk{Requester: agent, Kind: ask.KindReview, Title: "Survive the crash",
			ApproveMeans: "a", DenyMeans: "d", Payload: json.RawMessage(`{"review":{"url":"https://example.com/crash"}}`)})
		if err != nil {
			t.Fatal(err)
		}
		// A job claimed by a sender that then died is leased, not lost.
		if jobs, err := first.Store.ClaimPushJobs(ctx, 10, 200*time.Millisecond); err != nil || len(jobs) != 1 {
			t.Fatalf("claim: %v, %d jobs", err, len(jobs))
		}
		first.Close()
		if _, ok := ps.Next(300 * time.Millisecond); ok {
			t.Fatal("a push was sent by the instance that crashed")
		}

		second := apptest.StartWith(t, cfg)
		_ = second
		d, ok := ps.Next(10 * time.Second)
		if !ok {
			t.Fatal("the restarted service did not deliver the queued push")
		}
		var m outbox.PushMessage
		_ = json.Unmarshal(d.Plaintext, &m)
		if m.ApprovalID != a.ID || m.Title != "Survive the crash" {
			t.Errorf("delivered %+v, want the ask %s", m, a.ID)
		}
	})
}

// On PostgreSQL the cap is counted inside the statement that files the ask
// (models.fileInOneStatement); on SQLite by outbox.QueueAskPushes: both are shown.
func TestPastTheCapOneCollapsedPushSaysHowManyWait(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		w := newWorld(t, db, map[string]string{"COUNTERSIGN_PUSH_CAP": "2/10m"}, "phone")
		for i := range 5 {
			w.ask(t, "Ask "+strconv.Itoa(i))
		}
		for range 2 {
			if _, m := w.next(t); m.Event != outbox.PushAsk {
				t.Errorf("push %+v within the cap, want an ask push", m)
			}
		}
		// Past the cap the asks gather into one collapsed push, sent after the delay.
		w.none(t, 300*time.Millisecond)
		later := time.Now().Add(outbox.CollapseDelay + time.Second)
		w.env.Store.SetClock(func() time.Time { return later })
		w.env.App.Push.Wake()
		if _, m := w.next(t); m.Event != outbox.PushCollapsed || m.Waiting != 5 || m.Title != "5 asks wait for you" || m.URL != "/" {
			t.Errorf("after the delay: %+v, want one collapsed push saying 5 wait", m)
		}
		w.none(t, 300*time.Millisecond)
		// The next ask past the cap starts a new collapsed push, not an ask push.
		w.ask(t, "Ask 6")
		w.none(t, 300*time.Millisecond)
		if n := len(w.ps.Deliveries()); n != 3 {
			t.Errorf("%d pushes in all, want 3", n)
		}
	})
}

func TestADecisionReplacesTheNotificationAndAnAnswerPushesAgain(t *testing.T) {
	w := newWorld(t, apptest.SQLite, nil, "phone")
	ctx := context.Background()
	a := w.ask(t, "Decide me")
	w.next(t)
	if _, err := w.env.Store.Decide(ctx, w.env.Account.ID, a.ID, w.owner, asks.Decision{Verdict: asks.VerdictQuestion, Note: "Why?"}); err != nil {
		t.Fatal(err)
	}
	w.none(t, 200*time.Millisecond) // a question is the person's own move: nothing to tell them
	if _, err := w.env.Store.AddProgress(ctx, w.agent, a.ID, asks.Progress{Step: "answered", Note: "Because."}); err != nil {
		t.Fatal(err)
	}
	if _, m := w.next(t); m.Event != outbox.PushAsk || m.ApprovalID != a.ID {
		t.Fatalf("after answered: %+v, want the ask pushed again", m)
	}
	if _, err := w.env.Store.Decide(ctx, w.env.Account.ID, a.ID, w.owner, asks.Decision{Verdict: asks.VerdictApprove}); err != nil {
		t.Fatal(err)
	}
	d, m := w.next(t)
	checkDeclarative(t, w, d.Plaintext, m, outbox.DeclarativeNotification{Title: "Decided: approved", Body: "Decide me", Tag: a.ID})
	m.WebPush, m.Notification = 0, nil
	want := outbox.PushMessage{Event: outbox.PushDecided, ApprovalID: a.ID, Title: "Decide me", Status: "approved", URL: "/approvals/" + a.ID}
	if m != want {
		t.Errorf("after approve: %+v, want %+v", m, want)
	}
	if d.Header.Get("Urgency") != "normal" {
		t.Errorf("the decided push has Urgency %q, want normal", d.Header.Get("Urgency"))
	}
}

func TestEndpointsOffTheKnownPushServicesAreRefused(t *testing.T) {
	for _, tc := range []struct {
		endpoint string
		extra    []string
		want     bool
	}{
		{"https://fcm.googleapis.com/fcm/send/abc", nil, true},
		{"https://updates.push.services.mozilla.com/wpush/v2/abc", nil, true},
		{"https://web.push.apple.com/QGx", nil, true},
		{"https://wns2-by3p.notify.windows.com/w/?token=x", nil, true},
		{"http://fcm.googleapis.com/fcm/send/abc", nil, false},
		{"https://fcm.googleapis.com.evil.example/x", nil, false},
		{"https://evilfcm.googleapis.com.example/x", nil, false},
		{"https://169.254.169.254/latest/meta-data", nil, false},
		{"http://127.0.0.1:9999/push/x", nil, false},
		{"http://127.0.0.1:9999/push/x", []string{"127.0.0.1:9999"}, true},
		{"http://127.0.0.1:9998/push/x", []string{"127.0.0.1:9999"}, false},
		{"not a url", nil, false},
	} {
		if got := push.Allowed(tc.endpoint, tc.extra); got != tc.want {
			t.Errorf("Allowed(%q, %v) = %t, want %t", tc.endpoint, tc.extra, got, tc.want)
		}
	}
}

func subscriptions(t *testing.T, w *world) int64 {
	var n int64
	if err := w.env.Store.DB().Table("push_subscriptions").Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestTheNpmPackageHttpEceDecryptsWhatIsSent(t *testing.T) {
	if _, err := os.Stat("../node_modules/http_ece"); err != nil {
		t.Fatal("node_modules/http_ece is missing: run npm ci")
	}
	w := newWorld(t, apptest.SQLite, nil, "phone")
	w.ask(t, "Decrypt me with http_ece: ünïcode ✓")
	d, _ := w.next(t)
	priv, auth := w.ps.DeviceSecrets("phone")
	b64 := base64.RawURLEncoding.EncodeToString
	in, _ := json.Marshal(map[string]string{"body": b64(d.Body), "private_key": b64(priv), "auth": b64(auth)})
	cmd := exec.Command("node", "web/test/push-decrypt.mjs")
	cmd.Dir = ".."
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("node push-decrypt: %v\n%s", err, stderr)
	}
	if !bytes.Equal(out, d.Plaintext) {
		t.Errorf("http_ece decrypted %q, the Go decryptor %q", out, d.Plaintext)
	}
	if !bytes.Contains(out, []byte("ünïcode ✓")) {
		t.Errorf("http_ece plaintext %q lacks the title", out)
	}
}
