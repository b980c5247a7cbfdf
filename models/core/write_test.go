package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"
)

// openSQLite opens a fresh SQLite store; the group commit is SQLite's alone.
func openSQLite(t *testing.T) *Store {
	t.Helper()
	db, dialect, err := Open(context.Background(), "", t.TempDir(), 0, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if sqlDB, err := db.DB(); err == nil {
			sqlDB.Close()
		}
	})
	return New(db, dialect)
}

func insertAccount(tx *gorm.DB, name string) error {
	return tx.Exec(`INSERT INTO accounts (id, name, created_at) VALUES (?, ?, ?)`, "acct_"+name, name, time.Now().UTC()).Error
}

func accountNames(t *testing.T, s *Store) map[string]bool {
	t.Helper()
	var names []string
	if err := s.db.Table("accounts").Pluck("name", &names).Error; err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, n := range names {
		out[n] = true
	}
	return out
}

// holdCommits takes the commit slot, so that writes queue up and go in one
// group when the returned function gives it back.
func holdCommits(t *testing.T, s *Store, queued int) (release func()) {
	t.Helper()
	s.group.slot <- struct{}{}
	return func() {
		deadline := time.Now().Add(10 * time.Second)
		for len(s.group.queue) < queued {
			if time.Now().After(deadline) {
				t.Fatalf("%d writes queued, want %d", len(s.group.queue), queued)
			}
			time.Sleep(time.Millisecond)
		}
		<-s.group.slot
	}
}

// A group carries writes that succeed, fail and panic: each caller hears its
// own outcome, and only the writes that succeeded are kept.
func TestWriteGroupKeepsEachOutcome(t *testing.T) {
	s := openSQLite(t)
	const n = 30
	release := holdCommits(t, s, n)
	errFailed := errors.New("failed on purpose")
	outcomes := make([]error, n)
	panics := make([]any, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			defer func() { panics[i] = recover() }()
			outcomes[i] = s.Write(context.Background(), func(tx *gorm.DB) error {
				if err := insertAccount(tx, fmt.Sprintf("a%02d", i)); err != nil {
					return err
				}
				switch i % 5 {
				case 1:
					return errFailed // after its insert: the insert must go
				case 2:
					panic(fmt.Sprintf("write %d panics", i))
				case 3:
					// A constraint error is this write's alone.
					return insertAccount(tx, fmt.Sprintf("a%02d", i))
				}
				return insertAccount(tx, fmt.Sprintf("b%02d", i))
			})
		})
	}
	release()
	wg.Wait()

	names := accountNames(t, s)
	for i := range n {
		kept := names[fmt.Sprintf("a%02d", i)]
		switch i % 5 {
		case 1:
			if !errors.Is(outcomes[i], errFailed) || kept {
				t.Errorf("write %d: outcome %v, kept %t; want its own error and nothing kept", i, outcomes[i], kept)
			}
		case 2:
			if panics[i] != fmt.Sprintf("write %d panics", i) || kept {
				t.Errorf("write %d: panic %v, kept %t; want its own panic in its caller and nothing kept", i, panics[i], kept)
			}
		case 3:
			if outcomes[i] == nil || kept {
				t.Errorf("write %d: outcome %v, kept %t; want the constraint error and nothing kept", i, outcomes[i], kept)
			}
		default:
			if outcomes[i] != nil || panics[i] != nil || !kept || !names[fmt.Sprintf("b%02d", i)] {
				t.Errorf("write %d: outcome %v, panic %v, kept %t; want it committed whole", i, outcomes[i], panics[i], kept)
			}
		}
	}
	if want := 2 * (n / 5) * 2; len(names) != want { // two rows of each write that succeeded
		t.Errorf("%d accounts, want %d", len(names), want)
	}
}

// A write whose caller gave up while it waited is not run, and says so.
func TestWriteGroupSkipsAbandonedWrites(t *testing.T) {
	s := openSQLite(t)
	release := holdCommits(t, s, 2)
	ctx, cancel := context.WithCancel(context.Background())
	var abandoned, kept error
	var wg sync.WaitGroup
	wg.Go(func() { abandoned = s.Write(ctx, func(tx *gorm.DB) error { return insertAccount(tx, "abandoned") }) })
	wg.Go(func() {
		kept = s.Write(context.Background(), func(tx *gorm.DB) error { return insertAccount(tx, "kept") })
	})
	for len(s.group.queue) < 2 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	release()
	wg.Wait()
	names := accountNames(t, s)
	if !errors.Is(abandoned, context.Canceled) || names["abandoned"] {
		t.Errorf("abandoned write: %v, kept %t; want context.Canceled and nothing kept", abandoned, names["abandoned"])
	}
	if kept != nil || !names["kept"] {
		t.Errorf("the other write: %v, kept %t; want it committed", kept, names["kept"])
	}
}

// Writes from many goroutines at once are each committed exactly once.
func TestWriteGroupUnderLoad(t *testing.T) {
	s := openSQLite(t)
	const writers, each = 16, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				errs <- s.Write(context.Background(), func(tx *gorm.DB) error { return insertAccount(tx, fmt.Sprintf("w%d-%d", w, i)) })
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := len(accountNames(t, s)); got != writers*each {
		t.Errorf("%d accounts, want %d", got, writers*each)
	}
}
