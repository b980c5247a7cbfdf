package audit_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/audit"
	"github.com/countersign/countersign/models/people"
)

// auditWorld is a store with two accounts whose agents filed asks, so that
// the two accounts' events interleave.
type auditWorld struct {
	s        *models.Store
	acct     *people.Account
	agent    *people.Agent
	other    *people.Agent
	otherAcc *people.Account
}

func newAuditWorld(t *testing.T, db apptest.Database) *auditWorld {
	t.Helper()
	ctx := context.Background()
	s, acct := apptest.BareStore(t, db)
	w := &auditWorld{s: s, acct: acct}
	var err error
	if w.otherAcc, err = s.CreateAccount(ctx, "other"); err != nil {
		t.Fatal(err)
	}
	if w.agent, _, err = s.CreateAgent(ctx, w.acct.ID, "bot", people.AllScopes); err != nil {
		t.Fatal(err)
	}
	if w.other, _, err = s.CreateAgent(ctx, w.otherAcc.ID, "bot", people.AllScopes); err != nil {
		t.Fatal(err)
	}
	return w
}

// sealAll seals until nothing is left; on PostgreSQL a run seals what the
// run before it marked, so it runs until two runs in a row sealed nothing.
func sealAll(t *testing.T, z *audit.AuditSealer) {
	t.Helper()
	idle := 0
	for idle < 2 {
		n, err := z.Seal(context.Background())
		if err != nil {
			t.Fatalf("seal: %v", err)
		}
		if n == 0 {
			idle++
		} else {
			idle = 0
		}
	}
}

func (w *auditWorld) verify(t *testing.T) *audit.AuditReport {
	t.Helper()
	r, err := w.s.VerifyAudit(context.Background(), w.acct.ID)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	return r
}

func (w *auditWorld) eventSeqs(t *testing.T, accountID string) []int64 {
	t.Helper()
	var seqs []int64
	if err := w.s.DB().Table("events").Where("account_id = ?", accountID).Order("seq").Pluck("seq", &seqs).Error; err != nil {
		t.Fatal(err)
	}
	return seqs
}

func (w *auditWorld) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	if err := w.s.DB().Exec(sql, args...).Error; err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func TestTheAuditChainSealsEveryEventAndVerifies(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		w := newAuditWorld(t, db)
		for i := range 6 {
			a := apptest.FilePullRequest(t, w.s, w.agent, i+1)
			apptest.FilePullRequest(t, w.s, w.other, i+1)
			if i%2 == 0 {
				if _, err := w.s.AddProgress(context.Background(), w.agent, a.ID, asks.Progress{Step: "stale", Note: "no longer needed"}); err != nil {
					t.Fatal(err)
				}
			}
		}
		before := w.verify(t)
		if !before.OK() || before.Sealed != 0 || before.Unsealed != 9 || before.HeadPos != 0 {
			t.Fatalf("before sealing: %+v, want nothing sealed and 9 events waiting", before)
		}
		sealAll(t, w.s.NewAuditSealer())
		r := w.verify(t)
		if !r.OK() || r.Sealed != 9 || r.Unsealed != 0 || r.HeadPos != 9 || len(r.HeadHash) != 64 {
			t.Fatalf("after sealing: %+v, want 9 events sealed, chain head 9", r)
		}
		other, err := w.s.VerifyAudit(context.Background(), w.otherAcc.ID)
		if err != nil || !other.OK() || other.Sealed != 6 || other.HeadPos != 6 {
			t.Fatalf("the other account: %+v, %v; want its own chain of 6", other, err)
		}

		apptest.FilePullRequest(t, w.s, w.agent, 99)
		if r := w.verify(t); !r.OK() || r.Unsealed != 1 || r.HeadPos != 9 {
			t.Errorf("a newer event: %+v, want it waiting and the chain as it was", r)
		}
		sealAll(t, w.s.NewAuditSealer())
		if r := w.verify(t); !r.OK() || r.Sealed != 10 || r.HeadPos != 10 || r.HeadHash == before.HeadHash {
			t.Errorf("after sealing it: %+v", r)
		}
	})
}

func TestTheAuditChainFindsEveryEditedDeletedOrAddedRow(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tamper func(t *testing.T, w *auditWorld, seqs []int64) (want string)
	}{
		{"an edited note", func(t *testing.T, w *auditWorld, seqs []int64) string {
			w.exec(t, `UPDATE events SET note = 'nothing to see' WHERE seq = ?`, seqs[2])
			return fmt.Sprintf("event %d (chain position 3", seqs[2])
		}},
		{"an edited actor", func(t *testing.T, w *auditWorld, seqs []int64) string {
			w.exec(t, `UPDATE events SET actor = 'agent:someone-else' WHERE seq = ?`, seqs[0])
			return fmt.Sprintf("event %d (chain position 1, created on", seqs[0])
		}},
		{"an edited time", func(t *testing.T, w *auditWorld, seqs []int64) string {
			w.exec(t, `UPDATE events SET at = ? WHERE seq = ?`, time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC), seqs[1])
			return fmt.Sprintf("event %d (chain position 2", seqs[1])
		}},
		{"a deleted event", func(t *testing.T, w *auditWorld, seqs []int64) string {
			w.exec(t, `DELETE FROM events WHERE seq = ?`, seqs[3])
			return fmt.Sprintf("event %d (chain position 4) is missing", seqs[3])
		}},
		{"an event added among sealed ones", func(t *testing.T, w *auditWorld, seqs []int64) string {
			// The other account's first event goes, and one of this account takes its seq.
			free := w.eventSeqs(t, w.otherAcc.ID)[0]
			w.exec(t, `DELETE FROM events WHERE seq = ?`, free)
			w.exec(t, `INSERT INTO events (seq, account_id, approval_id, at, actor_kind, actor, step, from_status, to_status, note)
				VALUES (?, ?, 'appr_forged', ?, 'person', 'ada', 'approve', 'pending', 'approved', '')`, free, w.acct.ID, time.Now().UTC())
			return fmt.Sprintf("event %d (approve on appr_forged) is not in the chain", free)
		}},
		{"an edited chain row", func(t *testing.T, w *auditWorld, seqs []int64) string {
			w.exec(t, `UPDATE audit_chain SET digest = ? WHERE seq = ?`, strings.Repeat("0", 64), seqs[1])
			return "chain position 2 (event"
		}},
		{"a deleted chain row", func(t *testing.T, w *auditWorld, seqs []int64) string {
			w.exec(t, `DELETE FROM audit_chain WHERE seq = ?`, seqs[2])
			return "chain positions 3 to 3 are missing"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
				w := newAuditWorld(t, db)
				for i := range 3 {
					apptest.FilePullRequest(t, w.s, w.agent, i+1)
					apptest.FilePullRequest(t, w.s, w.other, i+1)
				}
				a := apptest.FilePullRequest(t, w.s, w.agent, 4)
				if _, err := w.s.AddProgress(context.Background(), w.agent, a.ID, asks.Progress{Step: "stale", Note: "no longer needed"}); err != nil {
					t.Fatal(err)
				}
				sealAll(t, w.s.NewAuditSealer())
				if r := w.verify(t); !r.OK() || r.Sealed != 5 {
					t.Fatalf("before tampering: %+v", r)
				}
				want := tc.tamper(t, w, w.eventSeqs(t, w.acct.ID))
				r := w.verify(t)
				if r.OK() {
					t.Fatalf("after tampering the log verifies: %+v", r)
				}
				if !strings.Contains(strings.Join(r.Problems, "\n"), want) {
					t.Errorf("problems:\n%s\nwant one containing %q", strings.Join(r.Problems, "\n"), want)
				}
			})
		})
	}
}

// Asks filed from many goroutines while the sealer runs: every event ends up
// sealed exactly once, in one unbroken chain per account.
func TestTheAuditChainHoldsUnderConcurrentWriters(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		w := newAuditWorld(t, db)
		sealer := w.s.NewAuditSealer()
		ctx, stop := context.WithCancel(context.Background())
		var sealing sync.WaitGroup
		sealing.Go(func() {
			for ctx.Err() == nil {
				if _, err := sealer.Seal(ctx); err != nil && ctx.Err() == nil {
					t.Errorf("seal: %v", err)
					return
				}
				time.Sleep(2 * time.Millisecond)
			}
		})
		var writers sync.WaitGroup
		const goroutines, each = 8, 15
		for g := range goroutines {
			writers.Go(func() {
				for i := range each {
					agent := w.agent
					if i%3 == 0 {
						agent = w.other
					}
					apptest.FilePullRequest(t, w.s, agent, g*1000+i+1)
				}
			})
		}
		writers.Wait()
		stop()
		sealing.Wait()
		sealAll(t, sealer)
		want := int64(len(w.eventSeqs(t, w.acct.ID)))
		if r := w.verify(t); !r.OK() || r.Sealed != want || r.HeadPos != want || r.Unsealed != 0 {
			t.Fatalf("after concurrent writers: %+v, want all %d events sealed in one chain", r, want)
		}
		var links int64
		if err := w.s.DB().Table("audit_chain").Count(&links).Error; err != nil {
			t.Fatal(err)
		}
		if total := want + int64(len(w.eventSeqs(t, w.otherAcc.ID))); links != total {
			t.Errorf("%d chain rows for %d events", links, total)
		}
	})
}

// On PostgreSQL a transaction can hold a smaller seq while a larger one
// commits. The sealer must not seal past it: once it commits, every event is
// in the chain and the log verifies. (SQLite's writers take turns, so there
// this cannot happen.)
func TestTheSealerWaitsForASmallerSeqStillCommitting(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		if db != apptest.Postgres {
			t.Skip("SQLite's writers take turns: a smaller seq cannot commit after a larger one")
		}
		w := newAuditWorld(t, db)
		held := w.s.DB().Begin()
		defer held.Rollback()
		// It writes first, as every transaction that appends an event does, then takes the smaller seq.
		if err := held.Exec(`UPDATE accounts SET name = name WHERE id = ?`, w.acct.ID).Error; err != nil {
			t.Fatal(err)
		}
		if err := held.Exec(`INSERT INTO events (account_id, approval_id, at, actor_kind, actor, step, note)
			VALUES (?, 'appr_slow', ?, 'system', 'countersign', 'created', 'committed late')`, w.acct.ID, time.Now().UTC()).Error; err != nil {
			t.Fatal(err)
		}
		apptest.FilePullRequest(t, w.s, w.agent, 1) // a larger seq, committed at once
		sealer := w.s.NewAuditSealer()
		for range 5 {
			if _, err := sealer.Seal(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		if r := w.verify(t); r.Sealed != 0 || !r.OK() {
			t.Fatalf("with a smaller seq still uncommitted the sealer sealed past it: %+v", r)
		}
		if err := held.Commit().Error; err != nil {
			t.Fatal(err)
		}
		sealAll(t, sealer)
		if r := w.verify(t); !r.OK() || r.Sealed != 2 || r.Unsealed != 0 {
			t.Fatalf("after the commit: %+v, want both events sealed", r)
		}
	})
}
