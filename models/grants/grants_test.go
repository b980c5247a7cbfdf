package grants_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/grants"
	"github.com/countersign/countersign/models/people"
)

// An OAuth grant, room by room: a client registered, a person's consent
// makes its agent and a code, the code is exchanged once for tokens whose
// access token names the agent, a second exchange revokes the grant, and a
// revoked token names nobody.
func TestAGrantGoesFromConsentToRevocation(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s, acct := apptest.BareStore(t, db)
		ctx := context.Background()
		if _, err := s.AddMember(ctx, acct.ID, "ada", "Ada", core.RoleOwner); err != nil {
			t.Fatal(err)
		}
		client, err := s.RegisterOAuthClient(ctx, "Desk Assistant", []string{"http://127.0.0.1:3000/callback"}, 500)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := s.OAuthClientByID(ctx, client.ID); err != nil || got.Name != "Desk Assistant" {
			t.Fatalf("OAuthClientByID = %+v, %v", got, err)
		}
		agent, code, err := s.ConnectOAuthClient(ctx, grants.NewConnection{AccountID: acct.ID, Subject: "ada", ClientID: client.ID, ClientName: client.Name,
			RedirectHost: "127.0.0.1", Scopes: []string{people.ScopeMCPRead, people.ScopeApprovalsRead},
			RedirectURI: "http://127.0.0.1:3000/callback", CodeChallenge: "challenge", Resource: "https://approvals.example.com/mcp", CodeLife: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		accept := func(*grants.OAuthCode) error { return nil }
		tokens, err := s.ExchangeOAuthCode(ctx, code, accept, time.Hour, 24*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := s.AgentByOAuthToken(ctx, tokens.Access)
		if err != nil || got.ID != agent.ID {
			t.Fatalf("the access token names %+v (%v), want the consent's agent %s", got, err, agent.ID)
		}
		if _, err := s.ExchangeOAuthCode(ctx, code, accept, time.Hour, 24*time.Hour); !errors.Is(err, grants.ErrOAuthReuse) {
			t.Fatalf("a second exchange of the code = %v, want ErrOAuthReuse", err)
		}
		if _, _, err := s.AgentByOAuthToken(ctx, tokens.Access); err == nil {
			t.Fatal("the grant's access token still names its agent after the code was used twice")
		}
	})
}
