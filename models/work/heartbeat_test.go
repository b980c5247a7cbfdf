package work_test

import (
	"context"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
	"github.com/countersign/countersign/models/work"
)

// TestAQuietHeartbeatWritesNothingYetKeepsItsSessionAlive checks that a
// heartbeat with nothing to deliver is answered from reads, that the time it
// noted keeps the session alive for the store and for the idle sweep, and
// that the session ends once neither the written nor the noted time is
// recent enough.
func TestAQuietHeartbeatWritesNothingYetKeepsItsSessionAlive(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		s, acct := apptest.BareStore(t, db)
		s.SetAgentSessionIdle(time.Minute)
		agent, _, _ := s.CreateAgent(ctx, acct.ID, "bot", people.AllScopes)
		start := time.Now()
		at := func(d time.Duration) { s.SetClock(func() time.Time { return start.Add(d) }) }
		at(0)
		ss, err := s.StartSession(ctx, agent, "")
		if err != nil {
			t.Fatal(err)
		}
		written := func() time.Time {
			t.Helper()
			var got work.AgentSession
			if err := s.DB().Table("agent_sessions").Where("id = ?", ss.ID).Take(&got).Error; err != nil {
				t.Fatal(err)
			}
			return got.HeartbeatAt
		}
		before := written()

		at(50 * time.Second)
		beat, err := s.Heartbeat(ctx, agent, ss.ID)
		if err != nil || beat.State != work.SessionActive {
			t.Fatalf("heartbeat: %v %+v", err, beat)
		}
		if got := written(); !got.Equal(before) {
			t.Fatalf("a quiet heartbeat wrote its time (%s, was %s)", got, before)
		}

		at(100 * time.Second) // idle since the written time, not since the noted one
		if n, err := s.EndIdleSessions(ctx); err != nil || n != 0 {
			t.Fatalf("the idle sweep ended %d sessions (%v); the heartbeat at 50 s keeps it alive", n, err)
		}
		if got := written(); !got.After(before) {
			t.Fatal("the sweep did not write the noted heartbeat time first")
		}
		if _, err := s.Heartbeat(ctx, agent, ss.ID); err != nil {
			t.Fatalf("heartbeat at 100 s: %v", err)
		}
		if n, err := s.FlushHeartbeats(ctx); err != nil || n != 1 {
			t.Fatalf("flush wrote %d times (%v), want 1", n, err)
		}
		if n, err := s.FlushHeartbeats(ctx); err != nil || n != 0 {
			t.Fatalf("a second flush wrote %d times (%v), want 0", n, err)
		}

		at(100*time.Second + time.Minute + 2*time.Second)
		if n, err := s.EndIdleSessions(ctx); err != nil || n != 1 {
			t.Fatalf("the idle sweep ended %d sessions (%v), want 1", n, err)
		}
		if _, err := s.Heartbeat(ctx, agent, ss.ID); core.CodeOf(err) != core.FailedPrecondition {
			t.Fatalf("heartbeat of the ended session: %v", err)
		}
	})
}
