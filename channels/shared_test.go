package channels_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/app"
	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/channels"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/outbox"
	"github.com/countersign/countersign/models/rules"
)

// delivery is one request a recorder received.
type delivery struct {
	at     time.Time
	path   string
	header http.Header
	body   []byte
}

// recorder is a local HTTP server that records what it is sent and answers
// with what the test tells it (429 with Retry-After for the first few).
type recorder struct {
	*httptest.Server
	mu       sync.Mutex
	got      []delivery
	throttle int    // answer this many more requests with 429
	retry    string // their Retry-After
}

func newRecorder(t *testing.T) *recorder {
	t.Helper()
	r := &recorder{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, delivery{at: time.Now(), path: req.URL.Path, header: req.Header.Clone(), body: body})
		throttled := r.throttle > 0
		if throttled {
			r.throttle--
		}
		r.mu.Unlock()
		if throttled {
			w.Header().Set("Retry-After", r.retry)
			http.Error(w, "slow down", http.StatusTooManyRequests)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"ntfy-msg-1"}`)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *recorder) host() string { u, _ := url.Parse(r.URL); return u.Host }

// wait waits for n deliveries and returns them.
func (r *recorder) wait(t *testing.T, n int) []delivery {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		r.mu.Lock()
		got := append([]delivery(nil), r.got...)
		r.mu.Unlock()
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d deliveries after 20 s, want %d", len(got), n)
		}
	}
}

// sharedWorld is the service with shared channels posting to local
// recorders (allowed as private hosts), and an agent that files asks.
type sharedWorld struct {
	env *apptest.Env
	bot *apptest.Client
}

func newSharedWorld(t *testing.T, private ...string) *sharedWorld {
	t.Helper()
	env := apptest.StartWeb(t, apptest.SQLite, map[string]string{"COUNTERSIGN_CHANNEL_PRIVATE_HOSTS": strings.Join(private, ","), "COUNTERSIGN_CHANNEL_RETRY": "10ms"})
	env.Owner("ada")
	_, token := env.Agent(env.Account.ID, "bot")
	return &sharedWorld{env: env, bot: env.Connect(token)}
}

func (w *sharedWorld) channel(t *testing.T, name, kind, settings string, secret channels.Secret) {
	t.Helper()
	raw, _ := json.Marshal(secret)
	if err := w.env.Store.SaveSharedChannel(context.Background(), outbox.SharedChannel{AccountID: w.env.Account.ID, Name: name, Kind: kind,
		Settings: settings, Secret: string(raw), EveryAsk: true}); err != nil {
		t.Fatal(err)
	}
}

func (w *sharedWorld) review(t *testing.T, title string) string {
	t.Helper()
	return w.bot.OK("approvals_create", map[string]any{"kind": "review", "title": title, "approve_means": "I mark it reviewed", "deny_means": "It waits",
		"payload": map[string]any{"review": map[string]any{"url": "https://docs.example.com/" + strings.ReplaceAll(strings.ToLower(title), " ", "-")}}})["approval_id"].(string)
}

// outcome waits for the shared message of the ask on channel to end, and
// returns its outcome and last error.
func (w *sharedWorld) outcome(t *testing.T, id, channel string) (string, string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var m outbox.ChannelMessage
		err := w.env.Store.DB().Table("channel_messages").Where("approval_id = ? AND channel = ? AND event = ?", id, channel, outbox.MessageAsk).Take(&m).Error
		if err == nil && m.DoneAt != nil {
			return m.Outcome, m.LastError
		}
		if time.Now().After(deadline) {
			t.Fatalf("the message of %s to %s did not end within 20 s (%v)", id, channel, err)
		}
	}
}

// verifyWebhook checks a delivery with the Standard Webhooks reference
// verifier (npm standardwebhooks) and returns the payload it verified.
func verifyWebhook(t *testing.T, secret string, d delivery) (map[string]any, error) {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	headers := map[string]string{}
	for _, h := range []string{"webhook-id", "webhook-timestamp", "webhook-signature"} {
		headers[h] = d.header.Get(h)
	}
	in, _ := json.Marshal(map[string]any{"secret": secret, "headers": headers, "body": string(d.body)})
	cmd := exec.Command("node", filepath.Join(filepath.Dir(here), "..", "web", "test", "webhook-verify.mjs"))
	cmd.Stdin = bytes.NewReader(in)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%v: %s", err, errOut.String())
	}
	var payload map[string]any
	if err := json.Unmarshal(out.Bytes(), &payload); err != nil {
		t.Fatal(err)
	}
	return payload, nil
}

// A webhook gets every ask, signed as Standard Webhooks sign, and the
// reference verifier takes it; a body changed on the way, or another
// secret, fails it. The payload holds what a message holds: no payload of
// the ask, and the plain ask link, never a one-time link.
func TestAWebhookIsSignedAsStandardWebhooksVerify(t *testing.T) {
	rec := newRecorder(t)
	w := newSharedWorld(t, rec.host())
	secret := channels.NewSigningSecret()
	w.channel(t, "pager", outbox.ChannelWebhook, `{}`, channels.Secret{URL: rec.URL + "/hooks/countersign", SigningSecret: secret})
	id := w.review(t, "Review the onboarding doc")
	d := rec.wait(t, 1)[0]
	payload, err := verifyWebhook(t, secret, d)
	if err != nil {
		t.Fatalf("the reference verifier refused the webhook: %v\nheaders %v\nbody %s", err, d.header, d.body)
	}
	data, _ := payload["data"].(map[string]any)
	if payload["type"] != "approval.asked" || data["approval_id"] != id || data["title"] != "Review the onboarding doc" || data["agent"] != "agent:bot" ||
		data["url"] != w.env.URL+"/approvals/"+id {
		t.Errorf("the webhook says %v", payload)
	}
	if strings.Contains(string(d.body), "docs.example.com") || strings.Contains(string(d.body), "/link/") {
		t.Errorf("the webhook holds the payload or a one-time link: %s", d.body)
	}
	if d.header.Get("webhook-id") == "" || d.path != "/hooks/countersign" {
		t.Errorf("webhook-id %q, path %q", d.header.Get("webhook-id"), d.path)
	}
	tampered := d
	tampered.body = bytes.Replace(d.body, []byte("onboarding"), []byte("offboarding"), 1)
	if _, err := verifyWebhook(t, secret, tampered); err == nil {
		t.Error("the reference verifier took a changed body")
	}
	if _, err := verifyWebhook(t, channels.NewSigningSecret(), d); err == nil {
		t.Error("the reference verifier took another secret")
	}
}

// A channel that answers 429 with Retry-After is tried again after that
// wait, not sooner (the service's own retry is 10 ms here), and the
// message is sent.
func TestA429IsRetriedAfterItsRetryAfter(t *testing.T) {
	rec := newRecorder(t)
	rec.throttle, rec.retry = 1, "2"
	w := newSharedWorld(t, rec.host())
	w.channel(t, "pager", outbox.ChannelWebhook, `{}`, channels.Secret{URL: rec.URL + "/hook", SigningSecret: channels.NewSigningSecret()})
	id := w.review(t, "Review the retry doc")
	got := rec.wait(t, 2)
	if gap := got[1].at.Sub(got[0].at); gap < 2*time.Second {
		t.Errorf("tried again %s after a 429 with Retry-After: 2, want 2 s or more", gap.Round(time.Millisecond))
	}
	if o, _ := w.outcome(t, id, "pager"); o != "sent" {
		t.Errorf("the message ended %q, want sent", o)
	}
}

// ntfy gets the ask's title, its facts and a click to the plain ask page,
// with the channel's access token; Teams gets an Adaptive Card whose one
// action opens the ask, and whose words an agent cannot turn into a link.
func TestNtfyAndTeamsGetTheAskAndALinkNeverAnAnswer(t *testing.T) {
	ntfy, teams := newRecorder(t), newRecorder(t)
	w := newSharedWorld(t, ntfy.host(), teams.host())
	w.channel(t, "phones", outbox.ChannelNtfy, `{"server":"`+ntfy.URL+`","topic":"countersign-ops"}`, channels.Secret{Token: "tk_ntfy_test"})
	w.channel(t, "ops-team", outbox.ChannelTeams, `{}`, channels.Secret{URL: teams.URL + "/workflows/hook"})
	id := w.review(t, "Review [this](https://evil.example) now")

	n := ntfy.wait(t, 1)[0]
	if n.path != "/countersign-ops" || n.header.Get("Authorization") != "Bearer tk_ntfy_test" || n.header.Get("Click") != w.env.URL+"/approvals/"+id ||
		n.header.Get("Title") != "Review [this](https://evil.example) now" || !strings.Contains(string(n.body), "Asked by: agent:bot") || n.header.Get("Actions") != "" {
		t.Errorf("ntfy got %s %v\n%s", n.path, n.header, n.body)
	}
	c := teams.wait(t, 1)[0]
	var card struct {
		Attachments []struct {
			ContentType string `json:"contentType"`
			Content     struct {
				Body    []map[string]any `json:"body"`
				Actions []map[string]any `json:"actions"`
			} `json:"content"`
		} `json:"attachments"`
	}
	if err := json.Unmarshal(c.body, &card); err != nil || len(card.Attachments) != 1 {
		t.Fatalf("Teams got %s (%v)", c.body, err)
	}
	a := card.Attachments[0]
	if a.ContentType != "application/vnd.microsoft.card.adaptive" || len(a.Content.Actions) != 1 ||
		a.Content.Actions[0]["type"] != "Action.OpenUrl" || a.Content.Actions[0]["url"] != w.env.URL+"/approvals/"+id {
		t.Errorf("the card's actions are %v, want one link to the ask", a.Content.Actions)
	}
	if title, _ := a.Content.Body[0]["text"].(string); strings.Contains(title, "](") || !strings.Contains(title, "evil.example") {
		t.Errorf("the card's title %q: want the agent's words shown, never as a link", title)
	}
}

// A post to a private address that is not allowed never leaves: the guard
// refuses it when it connects, and the message is dead at once with the
// reason.
func TestAPostToAPrivateAddressIsRefused(t *testing.T) {
	rec := newRecorder(t)
	w := newSharedWorld(t) // nothing allowed
	w.channel(t, "inside", outbox.ChannelWebhook, `{}`, channels.Secret{URL: rec.URL + "/hook", SigningSecret: channels.NewSigningSecret()})
	id := w.review(t, "Review the guard doc")
	o, why := w.outcome(t, id, "inside")
	if o != "dead" || !strings.Contains(why, "private address") {
		t.Errorf("the message ended %q (%s), want dead for a private address", o, why)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.got) != 0 {
		t.Errorf("the private host received %d requests", len(rec.got))
	}
}

// A rule may name a shared channel for its escalation ("after 10 minutes,
// post to #oncall"): the ask is posted there once its delay has passed,
// once however many passes run, and not before. A rule cannot name a
// channel the account lacks, nor can the channel go while a rule names it.
func TestARuleEscalatesToASharedChannelAfterItsDelay(t *testing.T) {
	rec := newRecorder(t)
	w := newSharedWorld(t, rec.host())
	ctx := context.Background()
	var mu sync.Mutex
	now := time.Now()
	w.env.Store.SetClock(func() time.Time { mu.Lock(); defer mu.Unlock(); return now })
	spec := rules.RuleSpec{Name: "reviews page on-call", Kinds: []string{"review"}, Count: 1, Pool: rules.Pool{Kind: rules.PoolRole, Role: rules.PoolOwners},
		EscalateChannel: "#oncall", EscalateAfter: rules.Duration(10 * time.Minute)}
	if _, err := w.env.Store.SetRule(ctx, w.env.Account.ID, "reviews", spec, "cli:test"); core.FieldOf(err) != "escalate_channel" {
		t.Fatalf("a rule naming a channel the account lacks: %v, want a refusal on escalate_channel", err)
	}
	secret, _ := json.Marshal(channels.Secret{URL: rec.URL + "/oncall", SigningSecret: channels.NewSigningSecret()})
	if err := w.env.Store.SaveSharedChannel(ctx, outbox.SharedChannel{AccountID: w.env.Account.ID, Name: "#oncall", Kind: outbox.ChannelWebhook, Settings: "{}", Secret: string(secret)}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.env.Store.SetRule(ctx, w.env.Account.ID, "reviews", spec, "cli:test"); err != nil {
		t.Fatal(err)
	}
	if err := w.env.Store.RemoveSharedChannel(ctx, w.env.Account.ID, "#oncall"); core.CodeOf(err) != core.FailedPrecondition {
		t.Errorf("removing a channel a rule escalates to: %v, want a refusal", err)
	}
	id := w.review(t, "Review the on-call doc")
	posted := func() int64 {
		var n int64
		w.env.Store.DB().Table("channel_messages").Where("approval_id = ? AND channel = ?", id, "#oncall").Count(&n)
		return n
	}
	if _, _, err := w.env.Store.RemindAndEscalate(ctx); err != nil || posted() != 0 {
		t.Fatalf("before the delay: %v, %d messages to #oncall, want none", err, posted())
	}
	mu.Lock()
	now = now.Add(10 * time.Minute)
	mu.Unlock()
	for range 3 {
		if _, _, err := w.env.Store.RemindAndEscalate(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if posted() != 1 {
		t.Fatalf("%d messages to #oncall after the delay and three passes, want one", posted())
	}
	d := rec.wait(t, 1)[0]
	var ev channels.WebhookEvent
	if err := json.Unmarshal(d.body, &ev); err != nil || ev.Type != "approval.escalated" || ev.Data.ApprovalID != id ||
		ev.Data.Title != "Unanswered for 10m0s: Review the on-call doc" || ev.Data.URL != w.env.URL+"/approvals/"+id {
		t.Errorf("#oncall got %s (%v)", d.body, err)
	}
}

// The environment sets the default account's shared channels at start,
// each taking every ask: COUNTERSIGN_WEBHOOK_URL with its signing secret
// posts every ask, signed with that secret; a bad value stops the start,
// naming the variable.
func TestTheEnvironmentSetsTheDefaultAccountsSharedChannels(t *testing.T) {
	rec := newRecorder(t)
	secret := channels.NewSigningSecret()
	env := apptest.StartWeb(t, apptest.SQLite, map[string]string{"COUNTERSIGN_CHANNEL_PRIVATE_HOSTS": rec.host(), "COUNTERSIGN_CHANNEL_RETRY": "10ms",
		"COUNTERSIGN_WEBHOOK_URL": rec.URL + "/from-env", "COUNTERSIGN_WEBHOOK_SECRET": secret})
	env.Owner("ada")
	_, token := env.Agent(env.Account.ID, "bot")
	w := &sharedWorld{env: env, bot: env.Connect(token)}
	id := w.review(t, "Review the environment doc")
	d := rec.wait(t, 1)[0]
	payload, err := verifyWebhook(t, secret, d)
	if err != nil || d.path != "/from-env" || payload["data"].(map[string]any)["approval_id"] != id {
		t.Fatalf("the environment's webhook got %s %s (%v)", d.path, d.body, err)
	}
	for name, settings := range map[string]map[string]string{
		"COUNTERSIGN_TEAMS_WEBHOOK_URL": {"COUNTERSIGN_TEAMS_WEBHOOK_URL": "https://hooks.example.com/teams"},
		"COUNTERSIGN_NTFY_URL":          {"COUNTERSIGN_NTFY_URL": "https://ntfy.sh/"},
		"COUNTERSIGN_WEBHOOK_SECRET":    {"COUNTERSIGN_WEBHOOK_URL": "https://hooks.example.com/pager"},
		"COUNTERSIGN_SLACK_CHANNEL":     {"COUNTERSIGN_SLACK_CHANNEL": "#oncall"},
	} {
		_, err := app.LoadConfig(func(k string) string { return settings[k] })
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%v: %v, want the start refused naming %s", settings, err, name)
		}
	}
}
