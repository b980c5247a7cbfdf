package core_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/core"
)

// openInstances opens n stores on one fresh database, as n instances of
// the service would.
func openInstances(t *testing.T, db apptest.Database, n int) []*models.Store {
	t.Helper()
	cfg := apptest.Config(t, db, nil)
	var stores []*models.Store
	for range n {
		s, _ := apptest.OpenStore(t, cfg)
		stores = append(stores, s)
	}
	return stores
}

// turnLocks counts the sessions holding turn's advisory lock (a bigint key
// shows in pg_locks as its high and low 32 bits).
func turnLocks(t *testing.T, s *models.Store, turn core.Turn) int64 {
	t.Helper()
	var n int64
	if err := s.DB().Raw(`SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid = ? AND objid = ? AND objsubid = 1`,
		int64(turn)>>32, int64(turn)&0xffffffff).Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// connectionsInUse is how many of the store's pool connections are taken.
func connectionsInUse(t *testing.T, s *models.Store) int {
	t.Helper()
	sqlDB, err := s.DB().DB()
	if err != nil {
		t.Fatal(err)
	}
	return sqlDB.Stats().InUse
}

// On SQLite one process owns the file: a turn is always this instance's,
// and the function's error comes back.
func TestOnSQLiteTheTurnIsAlwaysThisInstances(t *testing.T) {
	s := openInstances(t, apptest.SQLite, 1)[0]
	ctx := context.Background()
	runs := 0
	for range 3 {
		ran, err := s.TakeTurn(ctx, core.SweepTurn, func(context.Context) error { runs++; return nil })
		if !ran || err != nil {
			t.Fatalf("TakeTurn = %v, %v; want true, nil", ran, err)
		}
	}
	if runs != 3 {
		t.Errorf("the function ran %d times, want 3", runs)
	}
	boom := errors.New("boom")
	if ran, err := s.TakeTurn(ctx, core.SweepTurn, func(context.Context) error { return boom }); !ran || !errors.Is(err, boom) {
		t.Errorf("TakeTurn of a failing function = %v, %v; want true, boom", ran, err)
	}
}

// Two instances on one PostgreSQL take turns: while one is at the work the
// other skips; a turn that fails, panics or is cut short by its context is
// given back all the same; the pool gets every connection back; and, tried
// at once many times, never two are inside while both get turns.
func TestTwoInstancesTakeTurns(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		if db == apptest.SQLite {
			t.Skip("SQLite serves one instance")
		}
		ctx := context.Background()
		stores := openInstances(t, db, 2)
		a, b := stores[0], stores[1]

		t.Run("while one instance has the turn the other skips, then gets it", func(t *testing.T) {
			inside, leave := make(chan struct{}), make(chan struct{})
			done := make(chan error, 1)
			go func() {
				ran, err := a.TakeTurn(ctx, core.SweepTurn, func(context.Context) error {
					close(inside)
					<-leave
					return nil
				})
				if !ran && err == nil {
					err = errors.New("did not run")
				}
				done <- err
			}()
			<-inside
			if n := turnLocks(t, b, core.SweepTurn); n != 1 {
				t.Errorf("%d sessions hold the turn while one instance is at it, want 1", n)
			}
			for range 3 {
				if ran, err := b.TakeTurn(ctx, core.SweepTurn, func(context.Context) error { return errors.New("ran beside the other") }); ran || err != nil {
					t.Fatalf("the second instance's TakeTurn = %v, %v; want false, nil", ran, err)
				}
			}
			close(leave)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if ran, err := b.TakeTurn(ctx, core.SweepTurn, func(context.Context) error { return nil }); !ran || err != nil {
				t.Fatalf("the second instance's TakeTurn after the first gave it back = %v, %v; want true, nil", ran, err)
			}
		})

		t.Run("a turn that fails, panics or is cancelled is given back", func(t *testing.T) {
			boom := errors.New("boom")
			if ran, err := a.TakeTurn(ctx, core.SweepTurn, func(context.Context) error { return boom }); !ran || !errors.Is(err, boom) {
				t.Fatalf("TakeTurn of a failing function = %v, %v; want true, boom", ran, err)
			}
			if ran, err := b.TakeTurn(ctx, core.SweepTurn, func(context.Context) error { return nil }); !ran || err != nil {
				t.Fatalf("after a failed turn the other instance's TakeTurn = %v, %v; want true, nil", ran, err)
			}

			func() {
				defer func() {
					if recover() == nil {
						t.Error("the panic did not come through TakeTurn")
					}
				}()
				_, _ = a.TakeTurn(ctx, core.SweepTurn, func(context.Context) error { panic("boom") })
			}()
			if ran, err := b.TakeTurn(ctx, core.SweepTurn, func(context.Context) error { return nil }); !ran || err != nil {
				t.Fatalf("after a panicking turn the other instance's TakeTurn = %v, %v; want true, nil", ran, err)
			}

			cut, cancel := context.WithCancel(ctx)
			if ran, err := a.TakeTurn(cut, core.SweepTurn, func(ctx context.Context) error { cancel(); return ctx.Err() }); !ran || !errors.Is(err, context.Canceled) {
				t.Fatalf("TakeTurn cancelled inside = %v, %v; want true, context.Canceled", ran, err)
			}
			if ran, err := b.TakeTurn(ctx, core.SweepTurn, func(context.Context) error { return nil }); !ran || err != nil {
				t.Fatalf("after a cancelled turn the other instance's TakeTurn = %v, %v; want true, nil", ran, err)
			}
			if n := turnLocks(t, a, core.SweepTurn); n != 0 {
				t.Errorf("%d sessions still hold the turn, want 0", n)
			}
			for i, s := range stores {
				if n := connectionsInUse(t, s); n != 0 {
					t.Errorf("instance %d has %d pool connections in use after its turns, want 0", i, n)
				}
			}
		})

		t.Run("tried at once many times one instance at a time is inside and both get turns", func(t *testing.T) {
			const want = 25       // turns each instance must get
			const attempts = 5000 // tries each worker makes at most
			var inside, most atomic.Int32
			turns := make([]atomic.Int32, len(stores))
			var errs []error
			var mu sync.Mutex
			var wg sync.WaitGroup
			for w := range 4 { // two workers per instance
				i := w % len(stores)
				s := stores[i]
				wg.Go(func() {
					for range attempts {
						if turns[0].Load() >= want && turns[1].Load() >= want {
							return
						}
						ran, err := s.TakeTurn(ctx, core.SweepTurn, func(ctx context.Context) error {
							n := inside.Add(1)
							defer inside.Add(-1)
							for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
							}
							// Work on the pool, as the sweep does, while in the turn.
							return s.DB().WithContext(ctx).Exec(`SELECT pg_sleep(0.002)`).Error
						})
						if err != nil {
							mu.Lock()
							errs = append(errs, err)
							mu.Unlock()
							return
						}
						if ran {
							turns[i].Add(1)
						}
						// Pause as the sweeper does between its ticks, for a
						// random while, or one instance's workers could keep
						// handing the turn to each other on a loaded machine.
						time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
					}
				})
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			if m := most.Load(); m != 1 {
				t.Errorf("at most %d were inside at once, want 1", m)
			}
			for i := range turns {
				if n := turns[i].Load(); n < want {
					t.Errorf("instance %d got %d turns, want at least %d", i, n, want)
				}
			}
			t.Logf("turns: %d and %d", turns[0].Load(), turns[1].Load())
			for i, s := range stores {
				if n := connectionsInUse(t, s); n != 0 {
					t.Errorf("instance %d has %d pool connections in use after its turns, want 0", i, n)
				}
			}
		})
	})
}
