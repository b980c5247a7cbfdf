package people_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/countersign/countersign/ask"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
)

// A rename carries what still names the person and is to come (an open ask
// asked of them); what happened keeps the subject it happened under.
func TestARenameCarriesTheOpenAsksAndKeepsTheHistory(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		s, acct := apptest.BareStore(t, db)
		bob, err := s.AddMember(ctx, acct.ID, "bob", "Bob", core.RoleMember)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.AddMember(ctx, acct.ID, "Bob", "Bob", core.RoleMember); core.CodeOf(err) != core.FailedPrecondition || core.FieldOf(err) != "subject" {
			t.Fatalf("AddMember Bob while bob exists: %v, want FAILED_PRECONDITION on subject", err)
		}
		agent, _, err := s.CreateAgent(ctx, acct.ID, "bot", []string{people.ScopeMCPWrite, people.ScopeApprovalsWrite})
		if err != nil {
			t.Fatal(err)
		}
		ask := func(n string) *asks.Approval {
			a, err := s.CreateApproval(ctx, models.NewAsk{Requester: agent, Kind: ask.KindReview, Title: "Read draft " + n,
				ApproveMeans: "I mark it read", DenyMeans: "It waits", AskedOf: "bob",
				Payload: json.RawMessage(`{"review":{"url":"https://docs.example.com/` + n + `"}}`)})
			if err != nil {
				t.Fatal(err)
			}
			return a
		}
		decided, open := ask("1"), ask("2")
		if _, err := s.Decide(ctx, acct.ID, decided.ID, bob, asks.Decision{Verdict: asks.VerdictApprove}); err != nil {
			t.Fatalf("bob decides: %v", err)
		}
		p, err := s.RenamePerson(ctx, "bob", "robert", "cli")
		if err != nil || p.Subject != "robert" || p.ID != bob.ID {
			t.Fatalf("RenamePerson = %+v, %v", p, err)
		}
		if a, _ := s.GetApproval(ctx, acct.ID, open.ID); a.AskedOf != "robert" {
			t.Errorf("the open ask is asked of %q, want robert", a.AskedOf)
		}
		if a, _ := s.GetApproval(ctx, acct.ID, decided.ID); a.AskedOf != "bob" || a.DecidedBy != "bob" {
			t.Errorf("the decided ask = asked of %q, decided by %q; want bob's history kept", a.AskedOf, a.DecidedBy)
		}
		robert, err := s.MemberBySubject(ctx, acct.ID, "robert")
		if err != nil || !robert.MayDecide(mustApproval(t, s, acct.ID, open.ID)) {
			t.Errorf("robert may not decide the open ask asked of him (%v)", err)
		}
		if _, err := s.RenamePerson(ctx, "robert", "ROBERT", "cli"); err != nil {
			t.Errorf("a person changing only the case of their own subject: %v", err)
		}
	})
}

func mustApproval(t *testing.T, s *models.Store, accountID, id string) *asks.Approval {
	t.Helper()
	a, err := s.GetApproval(context.Background(), accountID, id)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
