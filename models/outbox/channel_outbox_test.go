package outbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/outbox"
	"github.com/countersign/countersign/models/people"
	"gorm.io/gorm"
)

// The channel outbox on a store with no sender: an ask is queued once to
// each channel of the people it is asked of, however often it is queued; a
// message a sender claimed is finished only by that claim; an ask that ends
// drops its messages not sent and queues the update of each Slack message
// that told of it.
func TestTheChannelOutboxWritesEachMessageOnceAndOnlyItsClaimFinishesIt(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		s, acct := apptest.BareStore(t, db)
		ada, _ := s.AddMember(ctx, acct.ID, "ada", "Ada", core.RoleOwner)
		bob, _ := s.AddMember(ctx, acct.ID, "bob", "Bob", core.RoleMember)
		for _, c := range []struct{ who, kind, address string }{{ada.ID, outbox.ChannelEmail, "ada@example.com"}, {ada.ID, outbox.ChannelSlack, ""}, {bob.ID, outbox.ChannelEmail, "bob@example.com"}} {
			if err := s.SetPersonChannel(ctx, acct.ID, c.who, c.kind, c.address); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.SetPersonChannel(ctx, acct.ID, ada.ID, outbox.ChannelEmail, "not an address"); core.FieldOf(err) != "address" {
			t.Errorf("a bad address: %v, want a refusal on address", err)
		}
		agent, _, err := s.CreateAgent(ctx, acct.ID, "bot", []string{people.ScopeMCPWrite, people.ScopeApprovalsWrite})
		if err != nil {
			t.Fatal(err)
		}
		a := apptest.FilePullRequest(t, s, agent, 1)
		messages := func(event string) (n int64) {
			s.DB().Table("channel_messages").Where("approval_id = ? AND event = ?", a.ID, event).Count(&n)
			return n
		}
		if got := messages(outbox.MessageAsk); got != 2 {
			t.Fatalf("%d ask messages, want ada's two (bob is a member: the ask is the owners')", got)
		}
		if err := s.Write(ctx, func(tx *gorm.DB) error { return s.QueueAsk(tx, a) }); err != nil {
			t.Fatal(err)
		}
		if got := messages(outbox.MessageAsk); got != 2 {
			t.Fatalf("queued again: %d ask messages, want still 2", got)
		}

		claimed, err := s.ClaimChannelMessages(ctx, 10, time.Millisecond)
		if err != nil || len(claimed) != 2 {
			t.Fatalf("claim: %d messages, %v", len(claimed), err)
		}
		time.Sleep(5 * time.Millisecond) // the lease runs out: another sender claims them
		again, err := s.ClaimChannelMessages(ctx, 10, time.Minute)
		if err != nil || len(again) != 2 {
			t.Fatalf("claim again: %d messages, %v", len(again), err)
		}
		slack := again[0]
		if slack.Kind != outbox.ChannelSlack {
			slack = again[1]
		}
		for _, m := range claimed {
			if err := s.MessageDead(ctx, &m, "the first claim, too late"); err != nil {
				t.Fatal(err)
			}
		}
		var dead int64
		s.DB().Table("channel_messages").Where("outcome = ?", "dead").Count(&dead)
		if dead != 0 {
			t.Fatalf("a claim whose lease ran out finished %d messages another holds", dead)
		}
		if err := s.MessageSent(ctx, &slack, "D0ADA 1700000000.000100"); err != nil {
			t.Fatal(err)
		}

		s.SetClock(func() time.Time { return a.ExpiresAt.Add(time.Second) })
		if n, err := s.ExpireDue(ctx); err != nil || n != 1 {
			t.Fatalf("expire the ask: %d, %v", n, err)
		}
		var email outbox.ChannelMessage
		s.DB().Table("channel_messages").Where("approval_id = ? AND kind = ?", a.ID, outbox.ChannelEmail).Take(&email)
		if email.Outcome != "superseded" || messages(outbox.MessageDecided) != 1 {
			t.Errorf("after the ask ended: the email never sent is %q, %d updates queued; want it superseded and one update of the Slack message", email.Outcome, messages(outbox.MessageDecided))
		}
	})
}

// The fatigue cap counts every channel together: a person told of N asks in
// the window, by any channel, gets no more channel messages until it passes.
func TestTheFatigueCapCountsEveryChannelTogether(t *testing.T) {
	ctx := context.Background()
	s, acct := apptest.BareStore(t, apptest.SQLite)
	s.SetPushCap(outbox.PushCap{N: 2, Window: time.Hour})
	ada, _ := s.AddMember(ctx, acct.ID, "ada", "Ada", core.RoleOwner)
	if err := s.SetPersonChannel(ctx, acct.ID, ada.ID, outbox.ChannelEmail, "ada@example.com"); err != nil {
		t.Fatal(err)
	}
	agent, _, err := s.CreateAgent(ctx, acct.ID, "bot", []string{people.ScopeMCPWrite, people.ScopeApprovalsWrite})
	if err != nil {
		t.Fatal(err)
	}
	var told []int64
	for n := 1; n <= 3; n++ {
		a := apptest.FilePullRequest(t, s, agent, n)
		var c int64
		s.DB().Table("channel_messages").Where("approval_id = ? AND person_id = ?", a.ID, ada.ID).Count(&c)
		told = append(told, c)
	}
	if told[0] != 1 || told[1] != 1 || told[2] != 0 {
		t.Errorf("emails per ask %v, want 1, 1 and none past a cap of 2", told)
	}
}

// A test goes to an address somebody typed: one a minute per channel, so
// "Send me a test" is no way to flood it.
func TestATestIsSentOnceAMinuteAtMost(t *testing.T) {
	ctx := context.Background()
	s, acct := apptest.BareStore(t, apptest.SQLite)
	now := time.Now()
	s.SetClock(func() time.Time { return now })
	ada, _ := s.AddMember(ctx, acct.ID, "ada", "Ada", core.RoleOwner)
	if err := s.SetPersonChannel(ctx, acct.ID, ada.ID, outbox.ChannelEmail, "ada@example.com"); err != nil {
		t.Fatal(err)
	}
	if err := s.QueueTestMessage(ctx, acct.ID, ada.ID, outbox.ChannelEmail); err != nil {
		t.Fatal(err)
	}
	if err := s.QueueTestMessage(ctx, acct.ID, ada.ID, outbox.ChannelEmail); core.CodeOf(err) != core.ResourceExhausted {
		t.Fatalf("a second test within the minute: %v, want RESOURCE_EXHAUSTED", err)
	}
	now = now.Add(outbox.TestEvery + time.Second)
	if err := s.QueueTestMessage(ctx, acct.ID, ada.ID, outbox.ChannelEmail); err != nil {
		t.Fatalf("a test a minute later: %v", err)
	}
}
