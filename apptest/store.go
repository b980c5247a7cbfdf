package apptest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/countersign/countersign/app"
	"github.com/countersign/countersign/ask"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/people"
)

// BareStore opens a store on a fresh database, with no service around it (no
// sender, no sealer), and returns it with its default account: the storage
// rooms' tests run on it.
func BareStore(t testing.TB, db Database) (*models.Store, *people.Account) {
	t.Helper()
	ctx := context.Background()
	s, err := app.OpenStore(ctx, Config(t, db, nil), Logger())
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

// FilePullRequest has agent file the pull request ask number n.
func FilePullRequest(t testing.TB, s *models.Store, agent *people.Agent, n int) *asks.Approval {
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
