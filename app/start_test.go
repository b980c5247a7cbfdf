package app_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"

	"github.com/countersign/countersign/app"
	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
)

// Two instances started at the same moment on one empty PostgreSQL
// database both come up: the schema is made once under the migration lock,
// and the default account once, the other instance finding it made. Ten
// times, since a race shows only sometimes.
func TestTwoInstancesStartAtOnceOnAnEmptyDatabase(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		if db == apptest.SQLite {
			t.Skip("SQLite serves one instance")
		}
		quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
		for trial := range 10 {
			url := apptest.DatabaseURL(t, db)
			var wg sync.WaitGroup
			errs := make([]error, 2)
			for i := range 2 {
				cfg := apptest.Config(t, apptest.SQLite, nil) // then pointed at the shared database
				cfg.DatabaseURL = url
				wg.Go(func() {
					a, err := app.Open(context.Background(), cfg, quiet)
					errs[i] = err
					if err == nil {
						t.Cleanup(func() { a.Close() })
					}
				})
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Fatalf("trial %d: instance %d did not start: %v", trial, i, err)
				}
			}
			cfg := apptest.Config(t, apptest.SQLite, nil) // then pointed at the shared database
			cfg.DatabaseURL = url
			store, err := app.OpenStore(context.Background(), cfg, quiet)
			if err != nil {
				t.Fatal(err)
			}
			if sqlDB, err := store.DB().DB(); err == nil {
				t.Cleanup(func() { sqlDB.Close() })
			}
			var accounts int64
			if err := store.DB().Table("accounts").Where("name = ?", people.DefaultAccountName).Count(&accounts).Error; err != nil || accounts != 1 {
				t.Fatalf("trial %d: %d default accounts (%v), want 1", trial, accounts, err)
			}
		}
	})
}

// COUNTERSIGN_DATABASE_POOL caps the connections an instance opens to
// PostgreSQL, and every one of them may stay idle; SQLite keeps its own.
func TestTheDatabasePoolSettingSizesThePostgreSQLPool(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		_, sqlDB := apptest.OpenStore(t, apptest.Config(t, db, map[string]string{"COUNTERSIGN_DATABASE_POOL": "12"}))
		want := 12
		if db == apptest.SQLite {
			want = core.PoolSize(core.SQLite)
		}
		if got := sqlDB.Stats().MaxOpenConnections; got != want {
			t.Errorf("the pool opens at most %d connections, want %d", got, want)
		}
	})
}
