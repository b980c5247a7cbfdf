package metrics_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/channels"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/outbox"
)

// scrape reads /metrics into series → value, a series named as Prometheus
// writes it: name{label="value",…}.
func scrape(t *testing.T, h http.Handler) map[string]float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("/metrics: HTTP %d", rec.Code)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(rec.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("series line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

func TestEveryNamedSeriesExistsAndMoves(t *testing.T) {
	ps := apptest.NewPushService(t)
	hook := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer hook.Close()
	env := apptest.Start(t, apptest.SQLite, map[string]string{
		"COUNTERSIGN_METRICS_ADDR":          "127.0.0.1:0",
		"COUNTERSIGN_PUSH_ALLOWED_HOSTS":    ps.Host(),
		"COUNTERSIGN_CHANNEL_PRIVATE_HOSTS": strings.TrimPrefix(hook.URL, "http://"),
	})
	if env.App.Metrics == nil {
		t.Fatal("COUNTERSIGN_METRICS_ADDR is set and the app has no metrics handler")
	}
	ctx := context.Background()
	owner := env.Member(env.Account.ID, "ada", core.RoleOwner)
	endpoint, p256dh, auth := ps.Subscribe("ada-phone")
	if _, err := env.Store.SavePushSubscription(ctx, owner.ID, outbox.PushSubscription{Endpoint: endpoint, P256dh: p256dh, Auth: auth}); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	secret, _ := json.Marshal(channels.Secret{URL: hook.URL + "/hook", SigningSecret: channels.NewSigningSecret()})
	if err := env.Store.SaveSharedChannel(ctx, outbox.SharedChannel{AccountID: env.Account.ID, Name: "pager", Kind: outbox.ChannelWebhook, Settings: "{}", Secret: string(secret), EveryAsk: true}); err != nil {
		t.Fatal(err)
	}
	_, token := env.Agent(env.Account.ID, "bot")
	c := env.Connect(token)
	before := scrape(t, env.App.Metrics)

	ask := c.OK("approvals_create", map[string]any{
		"kind": "pull_request", "title": "Merge acme/web#900", "approve_means": "I merge #900", "deny_means": "#900 stays open",
		"payload": map[string]any{"pull_request": map[string]any{"repo": "acme/web", "number": 900, "head": "abcdef1234567", "title": "Fix"}},
		"context": map[string]any{"plan_id": "plan_1", "plan_item": "item_2"},
	})
	if r := c.Call("approvals_get", map[string]any{"approval_id": "appr_aaaaaaaaaaaaaaaaaaaa"}); !r.IsError {
		t.Fatalf("a made-up approval was found: %s", r)
	}
	if _, err := env.Store.Decide(ctx, env.Account.ID, ask["approval_id"].(string), owner, asks.Decision{Verdict: asks.VerdictApprove}); err != nil {
		t.Fatalf("decide: %v", err)
	}
	if res, err := http.Get(env.URL + "/healthz"); err != nil {
		t.Fatal(err)
	} else {
		res.Body.Close()
	}

	want := map[string]string{ // series → what moves it
		`countersign_asks_filed_total{kind="pull_request"}`:                    "an ask filed",
		`countersign_mcp_calls_total{code="OK",tool="approvals_create"}`:       "a call that worked",
		`countersign_mcp_calls_total{code="NOT_FOUND",tool="approvals_get"}`:   "a refused call",
		`countersign_transitions_total{status="approved"}`:                     "the approve",
		`countersign_filed_to_decided_seconds_count{kind="pull_request"}`:      "the decision's wait",
		`countersign_pushes_total{outcome="delivered"}`:                        "the ask's push",
		`countersign_channel_messages_total{channel="webhook",outcome="sent"}`: "the ask's webhook",
		`countersign_http_requests_total{route="/healthz",status="200"}`:       "GET /healthz",
		`countersign_http_requests_total{route="/mcp",status="200"}`:           "the MCP calls",
		`countersign_sqlite_write_queue_wait_seconds_count`:                    "the writes",
	}
	var after map[string]float64
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		after = scrape(t, env.App.Metrics)
		moved := 0
		for s := range want {
			if after[s] > before[s] {
				moved++
			}
		}
		if moved == len(want) {
			break
		}
	}
	for s, why := range want {
		if after[s] <= before[s] {
			t.Errorf("%s did not move with %s: %v → %v", s, why, before[s], after[s])
		}
	}
	if _, ok := after["countersign_push_outbox_depth"]; !ok {
		t.Errorf("countersign_push_outbox_depth is missing")
	}
}

// The gauges of what an instance holds count the MCP sessions and the
// waiting streams as they open and close.
func TestTheSessionAndStreamGaugesFollowWhatIsOpen(t *testing.T) {
	env := apptest.Start(t, apptest.SQLite, map[string]string{"COUNTERSIGN_METRICS_ADDR": "127.0.0.1:0"})
	_, token := env.Agent(env.Account.ID, "bot")
	gauges := func() (float64, float64) {
		s := scrape(t, env.App.Metrics)
		return s["countersign_mcp_sessions"], s["countersign_waiting_streams"]
	}
	if sessions, streams := gauges(); sessions != 0 || streams != 0 {
		t.Fatalf("idle instance: %v sessions, %v streams; want 0 and 0", sessions, streams)
	}
	c := env.Connect(token) // the go-sdk client holds its session's GET stream
	c.OK("approvals_list", map[string]any{})
	eventually(t, "one session and its stream counted", func() bool {
		sessions, streams := gauges()
		return sessions == 1 && streams == 1
	})
	c.Close()
	eventually(t, "nothing counted once the client left", func() bool {
		sessions, streams := gauges()
		return sessions == 0 && streams == 0
	})
}

func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); !ok(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 15 s", what)
		}
	}
}

func TestTheOutboxDepthCountsWaitingPushes(t *testing.T) {
	env := apptest.Start(t, apptest.SQLite, map[string]string{"COUNTERSIGN_METRICS_ADDR": "127.0.0.1:0"})
	owner := env.Member(env.Account.ID, "ada", core.RoleOwner)
	if got := scrape(t, env.App.Metrics)["countersign_push_outbox_depth"]; got != 0 {
		t.Fatalf("outbox depth %v before any push, want 0", got)
	}
	// Two pushes due in an hour, so the sender leaves them waiting, and one done.
	now := time.Now().UTC()
	done := now
	for i, j := range []outbox.PushJob{
		{NotBefore: now.Add(time.Hour)}, {NotBefore: now.Add(time.Hour)}, {NotBefore: now, DoneAt: &done, Outcome: "delivered"},
	} {
		j.SubscriptionID, j.PersonID, j.Event, j.Body, j.Urgency = "sub_"+strconv.Itoa(i), owner.ID, "test", "{}", "normal"
		j.CreatedAt, j.ExpiresAt = now, now.Add(2*time.Hour)
		if err := env.Store.DB().Table("push_jobs").Create(&j).Error; err != nil {
			t.Fatalf("seed a push job: %v", err)
		}
	}
	if got := scrape(t, env.App.Metrics)["countersign_push_outbox_depth"]; got != 2 {
		t.Errorf("outbox depth %v with two pushes waiting and one done, want 2", got)
	}
}

func TestNoMetricsUnlessConfigured(t *testing.T) {
	env := apptest.Start(t, apptest.SQLite, nil)
	if env.App.Metrics != nil {
		t.Error("metrics are on without COUNTERSIGN_METRICS_ADDR")
	}
	res, err := http.Get(env.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode == http.StatusOK && res.Header.Get("Content-Type") != "" && strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain; version=") {
		t.Error("the public listener serves Prometheus metrics")
	}
}

// An ask filed through approval_request counts as filed (a retry with its
// idempotency key does not), and a command request, which goes from
// pending straight to done in the write that approves it, counts its
// decision wait and both of its moves.
func TestRequestsAreCountedFiledAndDecided(t *testing.T) {
	env := apptest.Start(t, apptest.SQLite, map[string]string{"COUNTERSIGN_METRICS_ADDR": "127.0.0.1:0"})
	ctx := context.Background()
	owner := env.Member(env.Account.ID, "ada", core.RoleOwner)
	for _, c := range [][2]string{{"doing", "Doing"}, {"done", "Done"}} {
		if _, err := env.Store.AddColumn(ctx, env.Account.ID, c[0], c[1]); err != nil {
			t.Fatal(err)
		}
	}
	item, err := env.Store.AddItem(ctx, env.Account.ID, "doing", "Fix login", "", asks.ActorPerson, "ada")
	if err != nil {
		t.Fatal(err)
	}
	_, token := env.Agent(env.Account.ID, "bot")
	c := env.Connect(token)
	before := scrape(t, env.App.Metrics)

	move := map[string]any{"kind": "work_change", "title": "Move Fix login to Done", "idempotencyKey": "move-1",
		"proposal": map[string]any{"mode": "command", "command": map[string]any{"method": "work_move", "input": map[string]any{"itemId": item.ID, "columnKey": "done"}}}}
	filed := c.OK("approval_request", move)
	if again := c.OK("approval_request", move); again["approvalId"] != filed["approvalId"] {
		t.Fatalf("the retry filed another request: %v", again)
	}
	if _, err := env.Store.Decide(ctx, env.Account.ID, filed["approvalId"].(string), owner, asks.Decision{Verdict: asks.VerdictApprove}); err != nil {
		t.Fatalf("approve: %v", err)
	}
	if status := c.OK("approval_status", map[string]any{"approvalId": filed["approvalId"]})["status"]; status != "done" {
		t.Fatalf("the request is %v after the approve, want done", status)
	}

	want := map[string]float64{ // series → how much it moves
		`countersign_asks_filed_total{kind="work_change"}`:               1,
		`countersign_filed_to_decided_seconds_count{kind="work_change"}`: 1,
		`countersign_transitions_total{status="approved"}`:               1,
		`countersign_transitions_total{status="done"}`:                   1,
	}
	var after map[string]float64
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		after = scrape(t, env.App.Metrics)
		if after[`countersign_transitions_total{status="done"}`] > before[`countersign_transitions_total{status="done"}`] &&
			after[`countersign_filed_to_decided_seconds_count{kind="work_change"}`] > 0 {
			break
		}
	}
	for s, n := range want {
		if got := after[s] - before[s]; got != n {
			t.Errorf("%s moved by %v, want %v", s, got, n)
		}
	}
}
