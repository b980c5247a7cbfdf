package runners_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/runners"
)

// A runner enrolled with its Ed25519 key holds a token that finds it, once
// per account and name; a key that is not one is refused and enrols nothing;
// a disabled runner's token finds it disabled.
func TestARunnerIsEnrolledFoundByItsTokenAndDisabled(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s, acct := apptest.BareStore(t, db)
		ctx := context.Background()
		pub, _, err := ed25519.GenerateKey(nil)
		if err != nil {
			t.Fatal(err)
		}
		key := base64.RawURLEncoding.EncodeToString(pub)
		if _, err := runners.ParseRunnerPublicKey(key); err != nil {
			t.Fatalf("ParseRunnerPublicKey of a real key: %v", err)
		}
		if _, _, err := s.EnrollRunner(ctx, acct.ID, "build-eu", "not-a-key", "ada"); core.CodeOf(err) != core.InvalidArgument {
			t.Fatalf("enrolling with a bad key = %v, want INVALID_ARGUMENT", err)
		}
		r, token, err := s.EnrollRunner(ctx, acct.ID, "build-eu", key, "ada")
		if err != nil {
			t.Fatal(err)
		}
		if !runners.IsRunnerToken(token) || !strings.HasPrefix(token, runners.RunnerTokenPrefix) || runners.RunnerIDOfToken(token) != r.ID {
			t.Fatalf("token %q: want a runner token naming %s", token, r.ID)
		}
		if _, _, err := s.EnrollRunner(ctx, acct.ID, "build-eu", key, "ada"); err == nil {
			t.Fatal("a second runner named build-eu was enrolled")
		}
		found, err := s.RunnerByToken(ctx, token)
		if err != nil || found.ID != r.ID || found.Disabled {
			t.Fatalf("RunnerByToken = %+v, %v; want the runner, enabled", found, err)
		}
		if _, err := s.DisableRunner(ctx, acct.ID, "build-eu", "ada"); err != nil {
			t.Fatal(err)
		}
		if found, err := s.RunnerByToken(ctx, token); err != nil || !found.Disabled {
			t.Fatalf("after the disable RunnerByToken = %+v, %v; want it disabled", found, err)
		}
		if list, err := s.ListRunners(ctx, acct.ID); err != nil || len(list) != 1 {
			t.Fatalf("ListRunners = %v, %v; want the one runner", list, err)
		}
	})
}
