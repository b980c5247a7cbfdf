package handlers_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/countersign/countersign/apptest"
)

// A decision's nonce dies when the ask leaves pending. The person opened the
// approve prompt, then asked a question instead; the agent answered and the
// ask is pending again. The old prompt, signed now with a fresh signature
// (so the counter is fine), still carries the nonce of the ask as it was
// before the question: it decides nothing.
func TestANonceDiesWhenTheAskLeavesPending(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := newScene(t, db, nil)
		owner := s.owner.For(t)
		id := s.prAsk(t, "")

		old := owner.Challenge(id, "approve", "")
		if old.Status != http.StatusOK {
			t.Fatalf("challenge: %s", old)
		}
		oldCeremony, oldOptions := old.Ceremony()
		if before := s.state(t, id); before.Nonces != 1 || before.UsedNonces != 0 {
			t.Fatalf("after the challenge: %+v; want one unused nonce", before)
		}

		if r := owner.Decide(id, "question", "Does this touch the session cookie?"); r.Status != http.StatusOK || r.Body["status"] != "question" {
			t.Fatalf("question: %s", r)
		}
		if st := s.state(t, id); st.Nonces != 1 || st.UsedNonces != 1 {
			t.Errorf("after the question: %+v; want only the question's spent nonce left", st)
		}
		answered := s.agent.OK("approvals_add_progress", map[string]any{"approval_id": id, "step": "answered", "note": "No, only the redirect."})
		if answered["status"] != "pending" {
			t.Fatalf("after answered: %v", answered["status"])
		}

		before := s.state(t, id)
		r := owner.DecideWith(id, oldCeremony, owner.Sign(oldOptions))
		refused(t, r, http.StatusConflict, "FAILED_PRECONDITION")
		if r.Field() != "nonce" {
			t.Fatalf("refused on %q, want nonce: %s", r.Field(), r)
		}
		s.unchanged(t, id, before)

		// A fresh prompt on the pending ask decides it.
		if r := owner.Decide(id, "approve", ""); r.Status != http.StatusOK || r.Body["status"] != "approved" {
			t.Fatalf("approve with a fresh nonce: %s", r)
		}
	})
}

// Every way out of pending kills the ask's unspent nonces, in the move's
// own transaction: a question, a decision, a withdrawal, a cancel.
func TestEveryMoveOutOfPendingKillsTheUnspentNonces(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := newScene(t, db, nil)
		owner := s.owner.For(t)
		ctx := context.Background()
		moves := map[string]func(id string){
			"deny": func(id string) {
				if r := owner.Decide(id, "deny", ""); r.Status != http.StatusOK {
					t.Fatalf("deny: %s", r)
				}
			},
			"withdraw (stale)": func(id string) {
				s.agent.OK("approvals_add_progress", map[string]any{"approval_id": id, "step": "stale", "note": "not needed"})
			},
			"cancel": func(id string) {
				if _, err := s.env.Store.Cancel(ctx, s.env.Account.ID, id, "ada", "test"); err != nil {
					t.Fatal(err)
				}
			},
		}
		for name, move := range moves {
			t.Run(name, func(t *testing.T) {
				id := s.prAsk(t, "")
				for _, d := range []string{"approve", "deny", "not_mine"} {
					if r := owner.Challenge(id, d, ""); r.Status != http.StatusOK {
						t.Fatalf("challenge %s: %s", d, r)
					}
				}
				move(id)
				st := s.state(t, id)
				if st.Nonces != st.UsedNonces {
					t.Fatalf("after %s: %+v; want no unspent nonce", name, st)
				}
			})
		}
	})
}
