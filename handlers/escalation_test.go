package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
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
	"github.com/countersign/countersign/models/rules"
)

// escalationWorld is a running service that sweeps every 100 ms on a clock
// the test moves, with pushes going to a local push service that decrypts
// them, and a rule that asks bob for every pull request, reminds every ten
// minutes and escalates to carol after thirty.
type escalationWorld struct {
	env   *apptest.Env
	ps    *apptest.PushService
	clock *testClock
	agent *apptest.Client
	ada   *people.Member // owner
	bob   *people.Member // member, the rule's reviewer
	carol *people.Member // admin, the rule's escalation
	dan   *people.Member // admin, nobody's reviewer
}

func newEscalationWorld(t *testing.T, db apptest.Database, spec rules.RuleSpec) *escalationWorld {
	t.Helper()
	ps := apptest.NewPushService(t)
	env := apptest.Start(t, db, map[string]string{"COUNTERSIGN_PUSH_ALLOWED_HOSTS": ps.Host(), "COUNTERSIGN_PUSH_RETRY": "10ms",
		"COUNTERSIGN_SWEEP_EVERY": "100ms", "COUNTERSIGN_ASK_TTL": "2h"})
	w := &escalationWorld{env: env, ps: ps, clock: &testClock{}}
	env.Store.SetClock(w.clock.now)
	w.ada = env.Member(env.Account.ID, "ada", core.RoleOwner)
	w.bob = env.Member(env.Account.ID, "bob", core.RoleMember)
	w.carol = env.Member(env.Account.ID, "carol", core.RoleAdmin)
	w.dan = env.Member(env.Account.ID, "dan", core.RoleAdmin)
	if _, err := env.Store.SetRule(context.Background(), env.Account.ID, "reviews", spec, "cli:test"); err != nil {
		t.Fatalf("set the rule: %v", err)
	}
	_, token := env.Agent(env.Account.ID, "bot")
	w.agent = env.Connect(token)
	t.Cleanup(func() { w.agent.Close() })
	return w
}

// reviewRule is bob for every pull request, reminding every ten minutes and
// escalating to carol after thirty.
func reviewRule() rules.RuleSpec {
	return rules.RuleSpec{Name: "bob reviews pull requests", Kinds: []string{ask.KindPullRequest}, Count: 1,
		Pool:       rules.Pool{Kind: rules.PoolGroup, Group: "reviewers", People: []string{"bob"}},
		EscalateTo: rules.Pool{Kind: rules.PoolGroup, Group: "leads", People: []string{"carol"}}, EscalateAfter: rules.Duration(30 * time.Minute),
		RemindEvery: rules.Duration(10 * time.Minute)}
}

// subscribe turns notifications on for m's browser, a device named device.
func (w *escalationWorld) subscribe(t *testing.T, m *people.Member, device string) *browser {
	t.Helper()
	b := signIn(t, w.env, m)
	endpoint, p256dh, auth := w.ps.Subscribe(device)
	if a := b.postJSON("/push/subscribe", iPhoneSafari, subscriptionOf(endpoint, p256dh, auth), true); a.status != http.StatusOK {
		t.Fatalf("subscribe %s: %d %s", device, a.status, a.raw)
	}
	return b
}

// file files a pull request ask as the agent and returns its id.
func (w *escalationWorld) file(t *testing.T, n int) string {
	t.Helper()
	out := w.agent.OK("approvals_create", map[string]any{
		"kind": "pull_request", "title": fmt.Sprintf("Merge acme/web#%d", n), "approve_means": "I merge it", "deny_means": "it stays open",
		"payload": map[string]any{"pull_request": map[string]any{"repo": "acme/web", "number": n, "head": fmt.Sprintf("abcdef%07d", n), "title": "Fix"}},
		"context": map[string]any{"plan_id": "plan_1", "plan_item": "item_2"},
	})
	id, _ := out["approval_id"].(string)
	if id == "" || out["status"] != "pending" {
		t.Fatalf("approvals_create answered %v", out)
	}
	return id
}

// next waits for the next push and returns its device and message.
func (w *escalationWorld) next(t *testing.T, what string) (string, outbox.PushMessage) {
	t.Helper()
	d, ok := w.ps.Next(20 * time.Second)
	if !ok {
		t.Fatalf("no push arrived for %s; %d taken so far", what, len(w.ps.Deliveries()))
	}
	var m outbox.PushMessage
	if err := json.Unmarshal(d.Plaintext, &m); err != nil {
		t.Fatalf("push body %q: %v", d.Plaintext, err)
	}
	return d.Device, m
}

func TestAnUnansweredAskIsRemindedAfterItsRulesIntervalAndEscalatesAfterItsDelay(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		w := newEscalationWorld(t, db, reviewRule())
		w.subscribe(t, w.bob, "bob-phone")
		carol := w.subscribe(t, w.carol, "carol-phone")
		id := w.file(t, 1)

		dev, m := w.next(t, "the new ask")
		if dev != "bob-phone" || m.Event != outbox.PushAsk || m.ApprovalID != id || m.Title != "Merge acme/web#1" {
			t.Fatalf("the new ask pushed %s %+v, want bob's phone told of %s", dev, m, id)
		}
		if res, _ := carol.get("/approvals/" + id); res.StatusCode != http.StatusOK {
			t.Fatalf("carol reads the ask: %d", res.StatusCode)
		}
		if _, body := carol.get("/approvals/" + id); strings.Contains(body, `data-testid="escalated"`) {
			t.Fatal("the ask page says escalated before the delay")
		}

		w.clock.advance(11 * time.Minute)
		dev, m = w.next(t, "the reminder")
		if dev != "bob-phone" || m.Event != outbox.PushAsk || m.ApprovalID != id || m.Title != "Reminder: Merge acme/web#1" {
			t.Fatalf("the reminder pushed %s %+v, want bob's phone reminded of %s", dev, m, id)
		}
		a, err := w.env.Store.GetApproval(context.Background(), w.env.Account.ID, id)
		if err != nil {
			t.Fatal(err)
		}
		if a.RemindedAt == nil || a.EscalatedAt != nil || a.Status != asks.StatusPending {
			t.Fatalf("after the reminder: reminded_at %v, escalated_at %v, status %s; want reminded, not escalated, pending", a.RemindedAt, a.EscalatedAt, a.Status)
		}

		w.clock.advance(20 * time.Minute) // 31 minutes unanswered
		dev, m = w.next(t, "the escalation")
		if dev != "carol-phone" || m.Event != outbox.PushAsk || m.ApprovalID != id || m.Title != "Escalated to you: Merge acme/web#1" {
			t.Fatalf("the escalation pushed %s %+v, want carol's phone told of %s", dev, m, id)
		}
		if n := w.ps.Requests("bob-phone"); n != 2 {
			t.Errorf("bob's phone got %d pushes, want 2 (the ask and one reminder): the escalation reminds nobody twice", n)
		}
		a, err = w.env.Store.GetApproval(context.Background(), w.env.Account.ID, id)
		if err != nil {
			t.Fatal(err)
		}
		if a.EscalatedAt == nil || a.Status != asks.StatusPending {
			t.Fatalf("after the delay: escalated_at %v, status %s; want escalated, pending", a.EscalatedAt, a.Status)
		}
		_, body := carol.get("/approvals/" + id)
		if !strings.Contains(body, `data-testid="escalated"`) || !strings.Contains(body, "escalated to carol") {
			t.Errorf("the ask page does not say it escalated to carol")
		}
		events := timelineSteps(t, w.env, id)
		if !strings.Contains(strings.Join(events, " "), string(asks.EventEscalated)) {
			t.Errorf("the timeline %v has no escalated event", events)
		}
		if dan := signIn(t, w.env, w.dan); !strings.Contains(htmlOf(t, dan, "/approvals/"+id), "escalated") {
			t.Errorf("dan, an admin outside the rule, does not see that it escalated")
		}
	})
}

// timelineSteps reads the ask's timeline steps, in order.
func timelineSteps(t *testing.T, env *apptest.Env, id string) []string {
	t.Helper()
	var steps []string
	if err := env.Store.DB().Table("events").Where("approval_id = ?", id).Order("seq").Pluck("step", &steps).Error; err != nil {
		t.Fatal(err)
	}
	return steps
}

func htmlOf(t *testing.T, b *browser, path string) string {
	t.Helper()
	res, body := b.get(path)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d", path, res.StatusCode)
	}
	return body
}

// Two instances on one database sweeping at the same instant remind an ask
// once and escalate it once: the conditional updates let one of them push.
func TestTwoInstancesRemindAndEscalateAnAskOnce(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ps := apptest.NewPushService(t)
		env := apptest.Start(t, db, map[string]string{"COUNTERSIGN_PUSH_ALLOWED_HOSTS": ps.Host(), "COUNTERSIGN_SWEEP_EVERY": "1h", "COUNTERSIGN_ASK_TTL": "2h"})
		w := &escalationWorld{env: env, ps: ps, clock: &testClock{}}
		env.Store.SetClock(w.clock.now)
		other, _ := apptest.OpenStore(t, env.App.Config)
		other.SetClock(w.clock.now)
		w.bob = env.Member(env.Account.ID, "bob", core.RoleMember)
		w.carol = env.Member(env.Account.ID, "carol", core.RoleAdmin)
		if _, err := env.Store.SetRule(context.Background(), env.Account.ID, "reviews", reviewRule(), "cli:test"); err != nil {
			t.Fatal(err)
		}
		_, token := env.Agent(env.Account.ID, "bot")
		w.agent = env.Connect(token)
		defer w.agent.Close()
		w.subscribe(t, w.bob, "bob-phone")
		w.subscribe(t, w.carol, "carol-phone")
		id := w.file(t, 1)

		both := func() (reminded, escalated int) {
			type result struct{ r, e int }
			out := make(chan result, 2)
			for _, s := range []*models.Store{env.Store, other} {
				go func() {
					r, e, err := s.RemindAndEscalate(context.Background())
					if err != nil {
						t.Errorf("remind and escalate: %v", err)
					}
					out <- result{r, e}
				}()
			}
			for range 2 {
				got := <-out
				reminded, escalated = reminded+got.r, escalated+got.e
			}
			return reminded, escalated
		}
		jobs := func(person string) int64 {
			var n int64
			env.Store.DB().Table("push_jobs j").Joins("JOIN persons p ON p.id = j.person_id").
				Where("j.approval_id = ? AND p.subject = ? AND j.event = ?", id, person, outbox.PushAsk).Count(&n)
			return n
		}

		w.clock.advance(11 * time.Minute)
		if r, e := both(); r != 1 || e != 0 || jobs("bob") != 2 {
			t.Fatalf("two instances at once: %d reminded, %d escalated, bob has %d ask pushes; want 1, 0 and 2 (the ask, one reminder)", r, e, jobs("bob"))
		}
		w.clock.advance(20 * time.Minute)
		if r, e := both(); r != 0 || e != 1 || jobs("carol") != 1 || jobs("bob") != 2 {
			t.Fatalf("two instances at once: %d reminded, %d escalated, carol %d and bob %d ask pushes; want 0, 1, 1 and 2", r, e, jobs("carol"), jobs("bob"))
		}
		if steps := timelineSteps(t, env, id); strings.Count(strings.Join(steps, " "), string(asks.EventEscalated)) != 1 {
			t.Errorf("the timeline %v has not exactly one escalated event", steps)
		}
	})
}
