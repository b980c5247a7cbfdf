package models_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/countersign/countersign/ask"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
	"github.com/countersign/countersign/models/rules"
)

// An ask is filed with the requirement of the rule that covers it, and
// without one when none does, whatever else the account's rules say: on
// PostgreSQL an ask that no built-in covers checks the account's own rules
// inside its one statement, and the rest read them first.
func TestAnAskCarriesTheRequirementOfTheRuleThatCoversItAndNoOther(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		s, acct := apptest.BareStore(t, db)
		for _, m := range []struct {
			subject string
			role    core.Role
		}{{"ada", core.RoleOwner}, {"bob", core.RoleAdmin}} {
			if _, err := s.AddMember(ctx, acct.ID, m.subject, m.subject, m.role); err != nil {
				t.Fatal(err)
			}
		}
		agent, _, err := s.CreateAgent(ctx, acct.ID, "bot", people.AllScopes)
		if err != nil {
			t.Fatal(err)
		}
		admins := rules.Pool{Kind: rules.PoolRole, Role: rules.PoolAdmins}
		n := 0
		file := func(kind string) *asks.Approval {
			t.Helper()
			n++
			payload := fmt.Sprintf(`{"pull_request":{"repo":"acme/web","number":%d,"head":"%040x","title":"Fix"}}`, n, n)
			if kind == ask.KindRoll {
				payload = fmt.Sprintf(`{"roll":{"deployments":["web"],"main_commit":"%07x","running_commit":"1234567","prs":[{"number":%d,"title":"a"}],"behind":1}}`, n, n)
			}
			a, err := s.CreateApproval(ctx, models.NewAsk{
				Requester: agent, Kind: kind, Title: fmt.Sprintf("Ask %d", n), ApproveMeans: "I go on", DenyMeans: "I stop",
				Payload: json.RawMessage(payload), Context: json.RawMessage(`{"no_context_reason":"a test"}`),
			})
			if err != nil {
				t.Fatalf("file a %s: %v", kind, err)
			}
			return a
		}
		steps := []struct {
			name   string
			change func() error
			kind   string
			rule   string // the rule whose requirement the ask must carry; "" for none
		}{
			{"an account without rules of its own files a pull request with none", nil, ask.KindPullRequest, ""},
			{"a built-in covers a roll", nil, ask.KindRoll, rules.RuleRoll},
			{"a rule of the account's own for reviews does not cover a pull request", func() error {
				_, err := s.SetRule(ctx, acct.ID, "two-for-reviews", rules.RuleSpec{Kinds: []string{ask.KindReview}, Count: 2, Pool: admins}, "cli:test")
				return err
			}, ask.KindPullRequest, ""},
			{"a rule of the account's own for pull requests covers one", func() error {
				_, err := s.SetRule(ctx, acct.ID, "two-for-merges", rules.RuleSpec{Kinds: []string{ask.KindPullRequest}, Count: 2, Pool: admins}, "cli:test")
				return err
			}, ask.KindPullRequest, "two-for-merges"},
			{"once removed it covers none", func() error {
				return s.RemoveRule(ctx, acct.ID, "two-for-merges", "cli:test")
			}, ask.KindPullRequest, ""},
			{"a removed built-in covers no roll", func() error {
				if err := s.RemoveRule(ctx, acct.ID, "two-for-reviews", "cli:test"); err != nil {
					return err
				}
				return s.RemoveRule(ctx, acct.ID, rules.RuleRoll, "cli:test")
			}, ask.KindRoll, ""},
			{"nor, with no rule of the account's own in force, a pull request", nil, ask.KindPullRequest, ""},
		}
		for _, step := range steps {
			t.Run(step.name, func(t *testing.T) {
				if step.change != nil {
					if err := step.change(); err != nil {
						t.Fatal(err)
					}
				}
				filed := file(step.kind)
				stored, err := s.GetApproval(ctx, acct.ID, filed.ID)
				if err != nil {
					t.Fatal(err)
				}
				for _, a := range []*asks.Approval{filed, stored} {
					got := ""
					if req := a.RequirementOf(); req != nil {
						got = req.RuleID
						if req.Count != 2 || len(req.People) != 2 {
							t.Errorf("the requirement is %+v, want 2 of ada and bob", req)
						}
					}
					if got != step.rule {
						t.Errorf("the %s ask carries the requirement of rule %q, want %q", step.kind, got, step.rule)
					}
					if a.Status != asks.StatusPending {
						t.Errorf("the ask is %s, want pending", a.Status)
					}
				}
				if w := filed.Written(); len(w) != 1 || w[0].Step != "created" {
					t.Errorf("filing wrote %+v, want the created event", w)
				}
			})
		}
	})
}
