package core_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
)

// An instance whose LISTEN connection drops hears, once it is back, every
// change another instance committed while it was deaf: five drops in a row,
// each with asks cancelled on the other instance meanwhile.
func TestAListenerThatDropsHearsWhatItMissed(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		if db == apptest.SQLite {
			t.Skip("SQLite serves one instance and has no listener")
		}
		a := apptest.Start(t, db, nil)
		cfg := a.App.Config
		cfg.Data = t.TempDir()
		b := apptest.StartWith(t, cfg)
		agent, _ := b.Agent(b.Account.ID, "bot")
		ctx := context.Background()

		var mu sync.Mutex
		heard := map[string]bool{}
		cancel := a.Store.Changes().Subscribe(func(c core.Change) {
			if c.Kind == core.ApprovalChanged {
				mu.Lock()
				heard[c.ApprovalID] = true
				mu.Unlock()
			}
		})
		defer cancel()
		listener := core.ListenerName(a.Store.Changes())
		waitListening := func() {
			t.Helper()
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				var n int64
				if err := a.Store.DB().Raw(`SELECT count(*) FROM pg_stat_activity WHERE application_name = ? AND query LIKE 'LISTEN%'`, listener).Scan(&n).Error; err != nil {
					t.Fatal(err)
				}
				if n == 1 && a.Store.Changes().Listening() {
					return
				}
			}
			t.Fatalf("instance A's listener is not listening")
		}
		waitListening()
		for drop := range 5 {
			var filed []string
			for i := range 20 {
				filed = append(filed, apptest.FilePullRequest(t, b.Store, agent, 100*drop+i+1).ID)
			}
			if err := a.Store.DB().Exec(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = ?`, listener).Error; err != nil {
				t.Fatal(err)
			}
			for _, id := range filed { // while A reconnects
				if _, err := b.Store.Cancel(ctx, b.Account.ID, id, "ada", "a drop test"); err != nil {
					t.Fatal(err)
				}
			}
			waitListening()
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				mu.Lock()
				missing := 0
				for _, id := range filed {
					if !heard[id] {
						missing++
					}
				}
				mu.Unlock()
				if missing == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("drop %d: instance A never heard of %d of the %d asks cancelled on B while its listener was away", drop, missing, len(filed))
				}
			}
		}
	})
}
