package oidc_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/oidc"
)

// fakeClock is a clock a test moves; the store reads it from other goroutines.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func kids(keys []oidc.SigningKey) []string {
	var out []string
	for _, k := range keys {
		out = append(out, k.Kid)
	}
	return out
}

// The first signing key is made once however many ask for it at once, a
// rotation keeps the old key published for its overlap, and then drops it.
func TestTheSigningKeyIsMadeOnceAndRotatedWithOverlap(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		s, _ := apptest.BareStore(t, db)
		clock := &fakeClock{now: time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)}
		s.SetClock(clock.Now)
		var made atomic.Int32
		s.SetSigningKeyMaker(func() (string, string, error) {
			n := made.Add(1)
			return fmt.Sprintf("kid-%d", n), fmt.Sprintf(`{"d":"%d"}`, n), nil
		})

		const n = 8
		got := make([]*oidc.SigningKey, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { got[i], errs[i] = s.CurrentSigningKey(ctx) })
		}
		wg.Wait()
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("CurrentSigningKey %d: %v", i, errs[i])
			}
			if got[i].Kid != got[0].Kid || got[i].PrivateJWK != got[0].PrivateJWK || got[i].RetiredAt != nil {
				t.Fatalf("first uses at once got %+v and %+v: want one current key", got[0], got[i])
			}
		}
		first := got[0].Kid
		if keys, err := s.PublishedSigningKeys(ctx); err != nil || len(keys) != 1 || keys[0].Kid != first {
			t.Fatalf("published %v (%v), want the one key %s", kids(keys), err, first)
		}
		if k, err := s.CurrentSigningKey(ctx); err != nil || k.Kid != first {
			t.Fatalf("a later use got %+v (%v), want the same key %s", k, err, first)
		}

		if err := s.RotateSigningKey(ctx, "kid-new", `{"d":"new"}`, time.Hour); err != nil {
			t.Fatal(err)
		}
		if k, err := s.CurrentSigningKey(ctx); err != nil || k.Kid != "kid-new" {
			t.Fatalf("after rotation the current key is %+v (%v), want kid-new", k, err)
		}
		keys, err := s.PublishedSigningKeys(ctx)
		if err != nil || len(keys) != 2 || keys[0].Kid != "kid-new" || keys[1].Kid != first {
			t.Fatalf("published during the overlap: %v (%v), want kid-new then %s", kids(keys), err, first)
		}
		if keys[1].RetiredAt == nil || keys[1].PublishedUntil == nil || !keys[1].PublishedUntil.Equal(clock.Now().Add(time.Hour)) {
			t.Errorf("the retired key reads %+v, want retired now and published an hour more", keys[1])
		}

		clock.Add(time.Hour + time.Second)
		if keys, err := s.PublishedSigningKeys(ctx); err != nil || len(keys) != 1 || keys[0].Kid != "kid-new" {
			t.Fatalf("published after the overlap: %v (%v), want kid-new alone", kids(keys), err)
		}
		if err := s.RotateSigningKey(ctx, "kid-third", `{"d":"third"}`, 0); err != nil {
			t.Fatal(err)
		}
		var left int64
		if err := s.DB().Table("oidc_keys").Where("kid = ?", first).Count(&left).Error; err != nil || left != 0 {
			t.Errorf("the key whose publication ended is still kept (%d, %v)", left, err)
		}
		if err := s.RotateSigningKey(ctx, "kid-fourth", "{}", -time.Second); core.CodeOf(err) != core.InvalidArgument {
			t.Errorf("a negative overlap = %v, want INVALID_ARGUMENT", err)
		}
	})
}

// A client assertion's jti is spent once: of many at once, exactly one is
// accepted; another client may use the same jti; a spent id is forgotten
// once its assertion expired.
func TestAnAssertionIsSpentOnceUnderConcurrency(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		s, _ := apptest.BareStore(t, db)
		clock := &fakeClock{now: time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)}
		s.SetClock(clock.Now)
		exp := clock.Now().Add(5 * time.Minute)

		const n = 12
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { errs[i] = s.SpendAssertion(ctx, "ciba_a", "jti-1", exp) })
		}
		wg.Wait()
		won := 0
		for i, err := range errs {
			switch {
			case err == nil:
				won++
			case core.CodeOf(err) != core.FailedPrecondition:
				t.Errorf("spend %d: %v, want FAILED_PRECONDITION for a jti used before", i, err)
			}
		}
		if won != 1 {
			t.Fatalf("%d of %d spends of one jti were accepted, want exactly 1", won, n)
		}
		if err := s.SpendAssertion(ctx, "ciba_b", "jti-1", exp); err != nil {
			t.Errorf("another client's jti-1 = %v, want accepted", err)
		}
		if err := s.SpendAssertion(ctx, "ciba_a", "", exp); core.CodeOf(err) != core.InvalidArgument {
			t.Errorf("an empty jti = %v, want INVALID_ARGUMENT", err)
		}
		clock.Add(6 * time.Minute)
		if err := s.SpendAssertion(ctx, "ciba_a", "jti-2", clock.Now().Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		var kept int64
		if err := s.DB().Table("oidc_assertions").Where("jti = ?", "jti-1").Count(&kept).Error; err != nil || kept != 0 {
			t.Errorf("%d expired spent ids are kept (%v), want them pruned", kept, err)
		}
	})
}
