package outbox_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/app"
	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/outbox"
	"github.com/countersign/countersign/models/people"
	"gorm.io/gorm"
)

// TestTheOutboxKnowsWhenItsNextPushIsDueAndDropsAReplacedBrowsersPushes runs
// on a store with no sender, so the queue stays as the test leaves it.
func TestTheOutboxKnowsWhenItsNextPushIsDueAndDropsAReplacedBrowsersPushes(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		s, acct := apptest.BareStore(t, db)
		ada, _ := s.AddMember(ctx, acct.ID, "ada", "Ada", core.RoleOwner)
		bob, _ := s.AddMember(ctx, acct.ID, "bob", "Bob", core.RoleMember)

		if next, err := s.NextPushDue(ctx); err != nil || !next.IsZero() {
			t.Fatalf("an empty outbox: next due %v (%v), want none", next, err)
		}
		sub := outbox.PushSubscription{Endpoint: "https://fcm.googleapis.com/fcm/send/one", P256dh: "key", Auth: "auth"}
		if _, err := s.SavePushSubscription(ctx, ada.ID, sub); err != nil {
			t.Fatal(err)
		}
		before := time.Now()
		if n, err := s.QueueTestPush(ctx, ada.ID); err != nil || n != 1 {
			t.Fatalf("queue a test push: %d, %v", n, err)
		}
		next, err := s.NextPushDue(ctx)
		if err != nil || next.Before(before.Add(-time.Second)) || next.After(time.Now().Add(time.Second)) {
			t.Fatalf("next due %v (%v), want about now", next, err)
		}

		// The same browser subscribes for another person: ada's queued push goes with her subscription.
		if _, err := s.SavePushSubscription(ctx, bob.ID, sub); err != nil {
			t.Fatal(err)
		}
		var queued int64
		if err := s.DB().Table("push_jobs").Where("done_at IS NULL").Count(&queued).Error; err != nil {
			t.Fatal(err)
		}
		if queued != 0 {
			t.Errorf("%d pushes still queued for the replaced subscription, want 0", queued)
		}
		if next, err := s.NextPushDue(ctx); err != nil || !next.IsZero() {
			t.Errorf("after the replacement: next due %v (%v), want none", next, err)
		}
	})
}

// A write wakes the sender after it commits when, and only when, it queued
// pushes: an ask asked of nobody with a device, an ask of a person with one,
// and the decided pushes of asks cancelled when their agent is disabled.
func TestAWriteWakesTheSenderWhenItQueuedPushes(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		s, acct := apptest.BareStore(t, db)
		var wakes atomic.Int32
		s.Changes().Subscribe(func(c core.Change) {
			if c.Kind == core.OutboxQueued {
				wakes.Add(1)
			}
		})
		ada, _ := s.AddMember(ctx, acct.ID, "ada", "Ada", core.RoleOwner)
		agent, _, err := s.CreateAgent(ctx, acct.ID, "bot", people.AllScopes)
		if err != nil {
			t.Fatal(err)
		}
		apptest.FilePullRequest(t, s, agent, 1)
		if n := wakes.Load(); n != 0 {
			t.Fatalf("an ask nobody gets a push for woke the sender %d times, want 0", n)
		}
		if _, err := s.SavePushSubscription(ctx, ada.ID, outbox.PushSubscription{Endpoint: "https://fcm.googleapis.com/fcm/send/ada", P256dh: "key", Auth: "auth"}); err != nil {
			t.Fatal(err)
		}
		apptest.FilePullRequest(t, s, agent, 2)
		if n := wakes.Swap(0); n != 1 {
			t.Fatalf("an ask pushed to ada's device woke the sender %d times, want 1", n)
		}
		if _, err := s.DisableAgent(ctx, acct.ID, "bot", "a test", "ada"); err != nil {
			t.Fatal(err)
		}
		if n := wakes.Load(); n != 1 {
			t.Errorf("cancelling the pushed ask of a disabled agent woke the sender %d times, want 1", n)
		}
	})
}

// Two instances claiming from one outbox at once never lease the same push:
// each job goes to exactly one sender (PostgreSQL's SKIP LOCKED).
func TestTwoInstancesClaimEachPushOnce(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		if db == apptest.SQLite {
			t.Skip("SQLite serves one instance")
		}
		ctx := context.Background()
		cfg := apptest.Config(t, db, nil)
		var stores []*models.Store
		for range 2 {
			s, err := app.OpenStore(ctx, cfg, apptest.Logger())
			if err != nil {
				t.Fatal(err)
			}
			if err := s.EnsureDefaultAccount(ctx); err != nil {
				t.Fatal(err)
			}
			stores = append(stores, s)
		}
		s := stores[0]
		acct, err := s.AccountByName(ctx, people.DefaultAccountName)
		if err != nil {
			t.Fatal(err)
		}
		ada, _ := s.AddMember(ctx, acct.ID, "ada", "Ada", core.RoleOwner)
		for d := range 5 {
			endpoint := fmt.Sprintf("https://fcm.googleapis.com/fcm/send/ada-%d", d)
			if _, err := s.SavePushSubscription(ctx, ada.ID, outbox.PushSubscription{Endpoint: endpoint, P256dh: "key", Auth: "auth"}); err != nil {
				t.Fatal(err)
			}
		}
		agent, _, err := s.CreateAgent(ctx, acct.ID, "bot", people.AllScopes)
		if err != nil {
			t.Fatal(err)
		}
		for n := range 40 {
			apptest.FilePullRequest(t, s, agent, n+1)
		}
		var total int64
		if err := s.DB().Table("push_jobs").Count(&total).Error; err != nil || total < 100 {
			t.Fatalf("%d push jobs queued (%v), want at least 100", total, err)
		}

		var mu sync.Mutex
		claimed := map[int64]int{}
		var wg sync.WaitGroup
		for _, store := range []*models.Store{stores[0], stores[1], stores[0], stores[1]} {
			wg.Go(func() {
				for {
					jobs, err := store.ClaimPushJobs(ctx, 8, time.Minute)
					if err != nil {
						t.Error(err)
						return
					}
					if len(jobs) == 0 {
						return
					}
					mu.Lock()
					for _, j := range jobs {
						claimed[j.Seq]++
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		for seq, n := range claimed {
			if n != 1 {
				t.Errorf("push job %d was claimed %d times", seq, n)
			}
		}
		if int64(len(claimed)) != total {
			t.Errorf("%d of %d push jobs were claimed", len(claimed), total)
		}
	})
}

// TestTheStatementsOfAnAskDoNotGrowWithItsRecipients files an ask asked of
// one person with one device and one asked of four people with two devices
// each: both run the same number of statements, and the second queues eight
// pushes (a plain member is not asked, so gets none).
func TestTheStatementsOfAnAskDoNotGrowWithItsRecipients(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		s, acct := apptest.BareStore(t, db)
		s.SetPushCap(outbox.PushCap{N: 100, Window: time.Hour})
		var (
			counting   atomic.Bool
			statements atomic.Int32
		)
		count := func(*gorm.DB) {
			if counting.Load() {
				statements.Add(1)
			}
		}
		// Registered before any query runs: the store has no workers.
		cb := s.DB().Callback()
		for name, err := range map[string]error{
			"create": cb.Create().After("gorm:create").Register("test:count", count),
			"query":  cb.Query().After("gorm:query").Register("test:count", count),
			"update": cb.Update().After("gorm:update").Register("test:count", count),
			"delete": cb.Delete().After("gorm:delete").Register("test:count", count),
			"row":    cb.Row().After("gorm:row").Register("test:count", count),
			"raw":    cb.Raw().After("gorm:raw").Register("test:count", count),
		} {
			if err != nil {
				t.Fatalf("count %s statements: %v", name, err)
			}
		}
		agent, _, err := s.CreateAgent(ctx, acct.ID, "bot", []string{"approvals:write"})
		if err != nil {
			t.Fatal(err)
		}
		device := func(p *people.Member, name string) {
			sub := outbox.PushSubscription{Endpoint: "https://fcm.googleapis.com/fcm/send/" + name, P256dh: "key", Auth: "auth"}
			if _, err := s.SavePushSubscription(ctx, p.ID, sub); err != nil {
				t.Fatal(err)
			}
		}
		member := func(subject string, role core.Role, devices int) *people.Member {
			p, err := s.AddMember(ctx, acct.ID, subject, subject, role)
			if err != nil {
				t.Fatal(err)
			}
			for d := range devices {
				device(p, fmt.Sprintf("%s-%d", subject, d))
			}
			return p
		}
		fileCounted := func(n int) (int32, int64) {
			statements.Store(0)
			counting.Store(true)
			a := apptest.FilePullRequest(t, s, agent, n)
			counting.Store(false)
			var pushes int64
			if err := s.DB().Table("push_jobs").Where("approval_id = ?", a.ID).Count(&pushes).Error; err != nil {
				t.Fatal(err)
			}
			return statements.Load(), pushes
		}

		ada := member("ada", core.RoleOwner, 1)
		one, pushes := fileCounted(1)
		if pushes != 1 {
			t.Fatalf("an ask of one person with one device queued %d pushes, want 1", pushes)
		}
		device(ada, "ada-1")
		member("bea", core.RoleAdmin, 2)
		member("cy", core.RoleAdmin, 2)
		member("dee", core.RoleOwner, 2)
		member("bob", core.RoleMember, 2)
		many, pushes := fileCounted(2)
		if pushes != 8 {
			t.Errorf("an ask of four people with two devices each queued %d pushes, want 8", pushes)
		}
		if many != one {
			t.Errorf("an ask of four people with eight devices ran %d statements, one of one person with one device %d: want the same", many, one)
		}
	})
}

// A sender whose lease ran out, and whose push another sender claimed
// since, records nothing: neither the job's outcome nor the subscription's
// failures or success. Only the claim that holds the push finishes it.
func TestOnlyTheClaimThatHoldsAPushFinishesIt(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		s, acct := apptest.BareStore(t, db)
		ada, _ := s.AddMember(ctx, acct.ID, "ada", "Ada", core.RoleOwner)
		if _, err := s.SavePushSubscription(ctx, ada.ID, outbox.PushSubscription{Endpoint: "https://fcm.googleapis.com/fcm/send/ada", P256dh: "key", Auth: "auth"}); err != nil {
			t.Fatal(err)
		}
		agent, _, err := s.CreateAgent(ctx, acct.ID, "bot", people.AllScopes)
		if err != nil {
			t.Fatal(err)
		}
		apptest.FilePullRequest(t, s, agent, 1)
		first, err := s.ClaimPushJobs(ctx, 10, time.Millisecond)
		if err != nil || len(first) != 1 {
			t.Fatalf("claim: %d jobs, %v", len(first), err)
		}
		time.Sleep(5 * time.Millisecond) // the lease runs out: another sender claims the push
		second, err := s.ClaimPushJobs(ctx, 10, time.Minute)
		if err != nil || len(second) != 1 {
			t.Fatalf("claim again: %d jobs, %v", len(second), err)
		}
		job := func() (outcome string, failures int) {
			t.Helper()
			var j struct{ Outcome string }
			if err := s.DB().Table("push_jobs").Where("seq = ?", first[0].Seq).Take(&j).Error; err != nil {
				t.Fatal(err)
			}
			var sub struct{ Failures int }
			if err := s.DB().Table("push_subscriptions").Where("id = ?", first[0].SubscriptionID).Take(&sub).Error; err != nil {
				t.Fatal(err)
			}
			return j.Outcome, sub.Failures
		}
		stale := first[0]
		for what, finish := range map[string]func() error{
			"failed":    func() error { return s.PushFailed(ctx, &stale, "too late") },
			"retried":   func() error { return s.PushRetry(ctx, &stale, s.Now().Add(time.Minute), "too late") },
			"delivered": func() error { return s.PushDelivered(ctx, &stale) },
			"gone":      func() error { return s.PushGone(ctx, &stale) },
		} {
			if err := finish(); err != nil {
				t.Fatalf("%s by the stale claim: %v", what, err)
			}
			if outcome, failures := job(); outcome != "" || failures != 0 {
				t.Fatalf("the stale claim %s the push: outcome %q, failures %d; want nothing written", what, outcome, failures)
			}
		}
		if err := s.PushDelivered(ctx, &second[0]); err != nil {
			t.Fatal(err)
		}
		if outcome, _ := job(); outcome != "delivered" {
			t.Errorf("the holding claim's delivery: outcome %q, want delivered", outcome)
		}
	})
}
