package models_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/countersign/countersign/ask"

	"github.com/countersign/countersign/app"
	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/people"
)

// openStore opens a store on a fresh database, with no service around it (no
// sender, no sealer), and returns it with its default account.
func openStore(t *testing.T, db apptest.Database) (*models.Store, *people.Account) {
	t.Helper()
	ctx := context.Background()
	s, err := app.OpenStore(ctx, apptest.Config(t, db, nil), apptest.Logger())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.EnsureDefaultAccount(ctx); err != nil {
		t.Fatal(err)
	}
	acct, err := s.AccountByName(ctx, people.DefaultAccountName)
	if err != nil {
		t.Fatal(err)
	}
	return s, acct
}

// fileAsk has agent file the pull request ask number n.
func fileAsk(t *testing.T, s *models.Store, agent *people.Agent, n int) *asks.Approval {
	t.Helper()
	a, err := s.CreateApproval(context.Background(), models.NewAsk{
		Requester: agent, Kind: ask.KindPullRequest, Title: fmt.Sprintf("Merge acme/web#%d", n), Summary: "Fixes the login redirect.",
		ApproveMeans: "I merge it", DenyMeans: "It stays open",
		Payload: json.RawMessage(fmt.Sprintf(`{"pull_request":{"repo":"acme/web","number":%d,"head":"%040x","title":"Fix"}}`, n, n)),
		Context: json.RawMessage(`{"no_context_reason":"a test"}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	return a
}
