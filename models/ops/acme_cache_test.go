package ops_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/countersign/countersign/app"
	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/core"
)

// The ACME cache entries: a missing one is ErrNotFound, a put one reads back
// byte for byte (a DER key has zero bytes and high bytes), a second put
// replaces it, and a deleted one is missing again.
func TestACMECacheEntries(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		s, _ := apptest.BareStore(t, db)
		if _, err := s.ACMEEntry(ctx, "approvals.example.com"); !errors.Is(err, core.ErrNotFound) {
			t.Fatalf("a missing entry: %v, want ErrNotFound", err)
		}
		key := []byte{0x30, 0x82, 0x00, 0xff, 0x00, 0x01, '\n', 0x80}
		if err := s.PutACMEEntry(ctx, "acme_account+key", key); err != nil {
			t.Fatal(err)
		}
		if got, err := s.ACMEEntry(ctx, "acme_account+key"); err != nil || !bytes.Equal(got, key) {
			t.Fatalf("read back %x, %v; want %x", got, err, key)
		}
		renewed := []byte("-----BEGIN EC PRIVATE KEY-----\nrenewed\n")
		if err := s.PutACMEEntry(ctx, "acme_account+key", renewed); err != nil {
			t.Fatalf("a second put of one name: %v", err)
		}
		if got, err := s.ACMEEntry(ctx, "acme_account+key"); err != nil || !bytes.Equal(got, renewed) {
			t.Fatalf("after the second put read %q, %v; want %q", got, err, renewed)
		}
		if err := s.PutACMEEntry(ctx, "empty", nil); err != nil {
			t.Fatalf("an empty entry: %v", err)
		}
		if got, err := s.ACMEEntry(ctx, "empty"); err != nil || len(got) != 0 {
			t.Fatalf("an empty entry read %q, %v; want it there and empty", got, err)
		}
		if err := s.DeleteACMEEntry(ctx, "acme_account+key"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ACMEEntry(ctx, "acme_account+key"); !errors.Is(err, core.ErrNotFound) {
			t.Fatalf("a deleted entry: %v, want ErrNotFound", err)
		}
		if err := s.DeleteACMEEntry(ctx, "acme_account+key"); err != nil {
			t.Fatalf("deleting a missing entry: %v, want no error", err)
		}
		if _, err := s.ACMEEntry(ctx, "empty"); err != nil {
			t.Fatalf("deleting one entry took another: %v", err)
		}
	})
}

// Two stores on one database putting one name at once (two instances
// renewing the certificate together) never fail, and one of the puts is kept
// whole.
func TestConcurrentPutsOfOneACMEEntryNeverFail(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		cfg := apptest.Config(t, db, nil) // one data folder: on SQLite one file
		var stores []*models.Store
		for range 2 {
			s, err := app.OpenStore(ctx, cfg, apptest.Logger())
			if err != nil {
				t.Fatal(err)
			}
			if sqlDB, err := s.DB().DB(); err == nil {
				t.Cleanup(func() { sqlDB.Close() })
			}
			stores = append(stores, s)
		}
		const rounds = 20
		puts := make(map[string]bool)
		errs := make(chan error, 2*rounds)
		var wg sync.WaitGroup
		for i, s := range stores {
			for n := range rounds {
				data := fmt.Sprintf("certificate %d from instance %d", n, i)
				puts[data] = true
				wg.Go(func() { errs <- s.PutACMEEntry(ctx, "approvals.example.com", []byte(data)) })
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Errorf("a concurrent put failed: %v", err)
			}
		}
		for _, s := range stores {
			got, err := s.ACMEEntry(ctx, "approvals.example.com")
			if err != nil || !puts[string(got)] {
				t.Errorf("after the puts read %q, %v; want one of the puts", got, err)
			}
		}
	})
}
