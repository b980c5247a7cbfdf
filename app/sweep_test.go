package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/ask"

	"github.com/countersign/countersign/app"
	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
)

// messages counts the log messages an instance writes, at every level.
type messages struct {
	mu    sync.Mutex
	count map[string]int
}

func (m *messages) Enabled(context.Context, slog.Level) bool { return true }
func (m *messages) Handle(_ context.Context, r slog.Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.count[r.Message]++
	return nil
}
func (m *messages) WithAttrs([]slog.Attr) slog.Handler { return m }
func (m *messages) WithGroup(string) slog.Handler      { return m }

func (m *messages) of(msg string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.count[msg]
}

// skipped is what Sweep logs when another instance is at its pass.
const skipped = "another instance is sweeping: this one skips its pass"

// waitFor polls cond until it holds, failing after a bound generous for a
// loaded machine: it is a hang guard, not a measure.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting until %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Two instances on one PostgreSQL sweep in turns: while the sweep's turn is
// held elsewhere neither expires anything (both skip their passes); once it
// is given back, every due ask expires exactly once, with one expired event.
func TestTwoInstancesSweepInTurnsAndExpireEachAskOnce(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		if db == apptest.SQLite {
			t.Skip("SQLite serves one instance")
		}
		ctx := context.Background()
		cfg := apptest.Config(t, db, map[string]string{"COUNTERSIGN_SWEEP_EVERY": "100ms", "COUNTERSIGN_ASK_TTL": "1m"})
		var (
			apps []*app.App
			logs []*messages
		)
		for range 2 {
			m := &messages{count: map[string]int{}}
			a, err := app.Open(ctx, cfg, slog.New(m))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { a.Close() })
			apps, logs = append(apps, a), append(logs, m)
		}
		s := apps[0].Store
		acct, err := s.AccountByName(ctx, people.DefaultAccountName)
		if err != nil {
			t.Fatal(err)
		}
		agent, _, err := s.CreateAgent(ctx, acct.ID, "bot", people.AllScopes)
		if err != nil {
			t.Fatal(err)
		}
		const askCount = 200
		for n := range askCount {
			_, err := s.CreateApproval(ctx, models.NewAsk{
				Requester: agent, Kind: ask.KindPullRequest, Title: fmt.Sprintf("Merge acme/web#%d", n+1), Summary: "Fixes the login redirect.",
				ApproveMeans: "I merge it", DenyMeans: "It stays open",
				Payload: json.RawMessage(fmt.Sprintf(`{"pull_request":{"repo":"acme/web","number":%d,"head":"%040x","title":"Fix"}}`, n+1, n+1)),
				Context: json.RawMessage(`{"no_context_reason":"a test"}`),
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		later := time.Now().Add(time.Hour)
		for _, a := range apps {
			a.Store.SetClock(func() time.Time { return later })
		}
		expired := func() int64 {
			var n int64
			if err := s.DB().Table("approvals").Where("status = ?", asks.StatusExpired).Count(&n).Error; err != nil {
				t.Fatal(err)
			}
			return n
		}

		// A third party holds the sweep's turn while both instances start sweeping.
		holder, err := app.OpenStore(ctx, cfg, apptest.Logger())
		if err != nil {
			t.Fatal(err)
		}
		if sqlDB, err := holder.DB().DB(); err == nil {
			t.Cleanup(func() { sqlDB.Close() })
		}
		held, release, given := make(chan struct{}), make(chan struct{}), make(chan error, 1)
		go func() {
			_, err := holder.TakeTurn(ctx, core.SweepTurn, func(context.Context) error {
				close(held)
				<-release
				return nil
			})
			given <- err
		}()
		<-held

		sweeping, stop := context.WithCancel(ctx)
		var wg sync.WaitGroup
		for _, a := range apps {
			wg.Go(func() { a.Sweep(sweeping) })
		}
		defer func() { stop(); wg.Wait() }()
		waitFor(t, "both instances skipped two passes", func() bool { return logs[0].of(skipped) >= 2 && logs[1].of(skipped) >= 2 })
		if n := expired(); n != 0 {
			t.Fatalf("%d asks expired while another held the sweep's turn, want 0", n)
		}

		close(release)
		if err := <-given; err != nil {
			t.Fatal(err)
		}
		waitFor(t, fmt.Sprintf("all %d asks expired", askCount), func() bool { return expired() == askCount })
		stop()
		wg.Wait()

		var events []struct {
			ApprovalID string
			N          int64
		}
		if err := s.DB().Table("events").Select("approval_id, count(*) AS n").Where("to_status = ?", asks.StatusExpired).
			Group("approval_id").Scan(&events).Error; err != nil {
			t.Fatal(err)
		}
		if len(events) != askCount {
			t.Errorf("%d asks have an expired event, want %d", len(events), askCount)
		}
		for _, e := range events {
			if e.N != 1 {
				t.Errorf("ask %s has %d expired events, want 1", e.ApprovalID, e.N)
			}
		}
		for i, m := range logs {
			if n := m.of("sweep"); n != 0 {
				t.Errorf("instance %d logged %d failed passes", i, n)
			}
			t.Logf("instance %d: %d passes that expired asks, %d skipped", i, m.of("expired asks"), m.of(skipped))
		}
	})
}

// The sweeper makes its first pass at start, unless Config.NoStartSweep puts
// it a whole SweepEvery later (tests that expire asks themselves set it). Sweep
// runs here with its context already ended, so that it returns at its first
// wait: a pass before that wait reads the store's clock (for the asks due by
// now), and on SQLite nothing else stands between Sweep and that read.
func TestTheSweeperPassesAtStartUnlessToldToWaitATick(t *testing.T) {
	for _, tc := range []struct {
		name         string
		noStartSweep bool
		passes       bool
	}{
		{"by default the first pass is at start", false, true},
		{"with NoStartSweep no pass comes before the first tick", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := apptest.Config(t, apptest.SQLite, map[string]string{"COUNTERSIGN_SWEEP_EVERY": "1h"})
			cfg.NoStartSweep = tc.noStartSweep
			a, err := app.Open(context.Background(), cfg, apptest.Logger())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { a.Close() })
			var read atomic.Bool
			a.Store.SetClock(func() time.Time { read.Store(true); return time.Now() })
			ended, end := context.WithCancel(context.Background())
			end()
			a.Sweep(ended)
			if read.Load() != tc.passes {
				t.Fatalf("the sweeper made a pass before its first tick: %t, want %t", read.Load(), tc.passes)
			}
		})
	}
}
