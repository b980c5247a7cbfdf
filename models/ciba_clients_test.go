package models_test

import (
	"context"
	"testing"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/oidc"
)

// A CIBA client may ask only the people listed for it, of its own account;
// revoking it disables its agent and cancels the agent's open asks in the
// same transaction, and then it may ask nobody.
func TestACIBAClientMayAskOnlyItsListedPeople(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		s, acct := apptest.BareStore(t, db)
		ada, err := s.AddMember(ctx, acct.ID, "ada", "Ada", core.RoleOwner)
		if err != nil {
			t.Fatal(err)
		}
		bob, err := s.AddMember(ctx, acct.ID, "bob", "Bob", core.RoleMember)
		if err != nil {
			t.Fatal(err)
		}
		other, err := s.CreateAccount(ctx, "other")
		if err != nil {
			t.Fatal(err)
		}
		carl, err := s.AddMember(ctx, other.ID, "carl", "Carl", core.RoleOwner)
		if err != nil {
			t.Fatal(err)
		}
		in := models.RegisterCIBAClient{AccountID: acct.ID, Name: "Pay Desk", AuthMethod: oidc.AuthClientSecretBasic,
			SecretSHA256: core.HashToken("s3cret"), DeliveryMode: oidc.DeliveryPoll, PersonIDs: []string{ada.ID, ada.ID}, CreatedBy: "ada"}
		c, err := s.RegisterCIBAClient(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.CIBAClient(ctx, c.ID)
		if err != nil || got.Name != "Pay Desk" || got.AccountID != acct.ID || got.AuthMethod != oidc.AuthClientSecretBasic ||
			got.SecretSHA256 != core.HashToken("s3cret") || got.JWKS != "" || got.DeliveryMode != oidc.DeliveryPoll || got.AgentID == "" ||
			got.CreatedBy != "ada" || got.RevokedAt != nil {
			t.Fatalf("CIBAClient = %+v, %v", got, err)
		}
		if ids, err := s.CIBAClientPeople(ctx, c.ID); err != nil || len(ids) != 1 || ids[0] != ada.ID {
			t.Errorf("CIBAClientPeople = %v (%v), want ada alone", ids, err)
		}
		if list, err := s.CIBAClients(ctx, acct.ID); err != nil || len(list) != 1 || list[0].ID != c.ID {
			t.Errorf("CIBAClients = %+v (%v)", list, err)
		}
		if list, err := s.CIBAClients(ctx, other.ID); err != nil || len(list) != 0 {
			t.Errorf("the other account lists %+v (%v), want none", list, err)
		}
		for _, tc := range []struct {
			who    string
			person string
			may    bool
		}{{"ada, listed", ada.ID, true}, {"bob, of the account but not listed", bob.ID, false}, {"carl, of another account", carl.ID, false}} {
			if may, err := s.ClientMayAsk(ctx, c.ID, tc.person); err != nil || may != tc.may {
				t.Errorf("ClientMayAsk(%s) = %t, %v; want %t", tc.who, may, err, tc.may)
			}
		}
		if _, err := s.CIBAClient(ctx, "ciba_nobody"); core.CodeOf(err) != core.NotFound {
			t.Errorf("an unknown client = %v, want NOT_FOUND", err)
		}

		bad := in
		bad.PersonIDs = []string{ada.ID, carl.ID}
		if _, err := s.RegisterCIBAClient(ctx, bad); core.CodeOf(err) != core.NotFound || core.FieldOf(err) != "people" {
			t.Errorf("a client asking another account's person = %v, want NOT_FOUND about people", err)
		}
		for name, change := range map[string]func(*models.RegisterCIBAClient){
			"no people":       func(r *models.RegisterCIBAClient) { r.PersonIDs = nil },
			"no name":         func(r *models.RegisterCIBAClient) { r.Name = " " },
			"unknown method":  func(r *models.RegisterCIBAClient) { r.AuthMethod = "none" },
			"unknown mode":    func(r *models.RegisterCIBAClient) { r.DeliveryMode = "push" },
			"ping, no target": func(r *models.RegisterCIBAClient) { r.DeliveryMode = oidc.DeliveryPing },
			"jwt, no JWKS":    func(r *models.RegisterCIBAClient) { r.AuthMethod = oidc.AuthPrivateKeyJWT },
		} {
			r := in
			change(&r)
			if _, err := s.RegisterCIBAClient(ctx, r); core.CodeOf(err) != core.InvalidArgument {
				t.Errorf("%s: %v, want INVALID_ARGUMENT", name, err)
			}
		}
		if list, _ := s.CIBAClients(ctx, acct.ID); len(list) != 1 {
			t.Errorf("refused registrations left %d clients, want 1", len(list))
		}

		second, err := s.RegisterCIBAClient(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		agent, err := s.AgentByName(ctx, acct.ID, "Pay-Desk")
		if err != nil || agent.ID != c.AgentID {
			t.Fatalf("the client's agent is %+v (%v), want agent Pay-Desk %s", agent, err, c.AgentID)
		}
		if a2, err := s.AgentByName(ctx, acct.ID, "Pay-Desk-2"); err != nil || a2.ID != second.AgentID {
			t.Fatalf("a second client of the same name got agent %+v (%v), want Pay-Desk-2", a2, err)
		}
		open := apptest.FilePullRequest(t, s, agent, 1)

		if err := s.RevokeCIBAClient(ctx, other.ID, c.ID, "carl"); core.CodeOf(err) != core.NotFound {
			t.Errorf("revoking from another account = %v, want NOT_FOUND", err)
		}
		if err := s.RevokeCIBAClient(ctx, acct.ID, c.ID, "ada"); err != nil {
			t.Fatal(err)
		}
		if err := s.RevokeCIBAClient(ctx, acct.ID, c.ID, "ada"); err != nil {
			t.Errorf("revoking again = %v, want no change", err)
		}
		if got, err := s.CIBAClient(ctx, c.ID); err != nil || got.RevokedAt == nil {
			t.Errorf("after revoking, CIBAClient = %+v (%v), want RevokedAt set", got, err)
		}
		if may, err := s.ClientMayAsk(ctx, c.ID, ada.ID); err != nil || may {
			t.Errorf("a revoked client may ask ada: %t, %v", may, err)
		}
		if a, err := s.AgentByName(ctx, acct.ID, "Pay-Desk"); err != nil || !a.Disabled {
			t.Errorf("the revoked client's agent is %+v (%v), want disabled", a, err)
		}
		if a, err := s.GetApproval(ctx, acct.ID, open.ID); err != nil || a.Status != asks.StatusCancelled {
			t.Errorf("the agent's open ask is %+v (%v), want cancelled", a, err)
		}
		if may, err := s.ClientMayAsk(ctx, second.ID, ada.ID); err != nil || !may {
			t.Errorf("the other client may no longer ask ada: %t, %v", may, err)
		}
	})
}
