package models_test

import (
	"context"
	"testing"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
)

// Migration 28 marks the rules agents made before it as the service's (the
// ones no person's client is), and no token matches them from then on; a
// person's client that took the name is left a person's agent.
func TestMigration28MarksTheRulesAgentsMadeBeforeItAndNoSquatter(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		s, acct := apptest.BareStore(t, db)
		other, err := s.CreateAccount(ctx, "other")
		if err != nil {
			t.Fatal(err)
		}
		// The database as it was before 28, with a rules agent in one account
		// and, in the other, a person's client that took the name first.
		genuine, token, err := s.CreateAgent(ctx, acct.ID, "rules-before", []string{people.ScopeApprovalsRead})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.AddMember(ctx, other.ID, "bob", "bob", core.RoleMember); err != nil {
			t.Fatal(err)
		}
		squatter, _, err := s.CreateAgentFor(ctx, other.ID, "bobs-client", people.AllScopes, "bob")
		if err != nil {
			t.Fatal(err)
		}
		gdb := s.DB()
		for _, id := range []string{genuine.ID, squatter.ID} {
			if err := gdb.Exec(`UPDATE agents SET name = ?, subject = ? WHERE id = ?`, models.ServiceAgentName, "agent:"+models.ServiceAgentName, id).Error; err != nil {
				t.Fatal(err)
			}
		}
		for _, stmt := range []string{`DROP INDEX agents_service`, `ALTER TABLE agents DROP COLUMN service`, `ALTER TABLE invites DROP COLUMN approval_id`,
			`ALTER TABLE invites DROP COLUMN held`, `DELETE FROM schema_migrations WHERE version = 28`} {
			if err := gdb.Exec(stmt).Error; err != nil {
				t.Fatalf("%s: %v", stmt, err)
			}
		}
		if err := core.Migrate(ctx, gdb, s.Dialect(), apptest.Logger()); err != nil {
			t.Fatal(err)
		}
		var got []people.Agent
		if err := gdb.Table("agents").Where("id IN ?", []string{genuine.ID, squatter.ID}).Find(&got).Error; err != nil {
			t.Fatal(err)
		}
		for _, a := range got {
			if want := a.ID == genuine.ID; a.Service != want {
				t.Errorf("agent %s (for %v) service = %t, want %t", a.ID, a.ForPersonID, a.Service, want)
			}
		}
		if _, err := s.AgentByToken(ctx, token); core.CodeOf(err) != core.NotFound {
			t.Errorf("the marked agent's old token still finds it: %v", err)
		}
	})
}
