package models_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

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
