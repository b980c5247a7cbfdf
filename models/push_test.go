package models_test

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
)

// TestTheOutboxKnowsWhenItsNextPushIsDueAndDropsAReplacedBrowsersPushes runs
// on a store with no sender, so the queue stays as the test leaves it.
func TestTheOutboxKnowsWhenItsNextPushIsDueAndDropsAReplacedBrowsersPushes(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		s, acct := openStore(t, db)
		ada, _ := s.AddMember(ctx, acct.ID, "ada", "Ada", models.RoleOwner)
		bob, _ := s.AddMember(ctx, acct.ID, "bob", "Bob", models.RoleMember)

		if next, err := s.NextPushDue(ctx); err != nil || !next.IsZero() {
			t.Fatalf("an empty outbox: next due %v (%v), want none", next, err)
		}
		sub := models.PushSubscription{Endpoint: "https://fcm.googleapis.com/fcm/send/one", P256dh: "key", Auth: "auth"}
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
		s, acct := openStore(t, db)
		var wakes atomic.Int32
		s.Changes().Subscribe(func(c models.Change) {
			if c.Kind == models.PushesQueued {
				wakes.Add(1)
			}
		})
		ada, _ := s.AddMember(ctx, acct.ID, "ada", "Ada", models.RoleOwner)
		agent, _, err := s.CreateAgent(ctx, acct.ID, "bot", models.AllScopes)
		if err != nil {
			t.Fatal(err)
		}
		fileAsk(t, s, agent, 1)
		if n := wakes.Load(); n != 0 {
			t.Fatalf("an ask nobody gets a push for woke the sender %d times, want 0", n)
		}
		if _, err := s.SavePushSubscription(ctx, ada.ID, models.PushSubscription{Endpoint: "https://fcm.googleapis.com/fcm/send/ada", P256dh: "key", Auth: "auth"}); err != nil {
			t.Fatal(err)
		}
		fileAsk(t, s, agent, 2)
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
		acct, err := s.AccountByName(ctx, models.DefaultAccountName)
		if err != nil {
			t.Fatal(err)
		}
		ada, _ := s.AddMember(ctx, acct.ID, "ada", "Ada", models.RoleOwner)
		for d := range 5 {
			endpoint := fmt.Sprintf("https://fcm.googleapis.com/fcm/send/ada-%d", d)
			if _, err := s.SavePushSubscription(ctx, ada.ID, models.PushSubscription{Endpoint: endpoint, P256dh: "key", Auth: "auth"}); err != nil {
				t.Fatal(err)
			}
		}
		agent, _, err := s.CreateAgent(ctx, acct.ID, "bot", models.AllScopes)
		if err != nil {
			t.Fatal(err)
		}
		for n := range 40 {
			fileAsk(t, s, agent, n+1)
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
