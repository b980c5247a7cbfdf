package views

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/countersign/countersign/ask"
)

// Each known type reads as a sentence with the members its words leave
// out beside it; an unknown one is a tree, whose depth is bounded.
func TestAuthorizationDetailsReadInWordsOrAsATree(t *testing.T) {
	deep := `{"a":` + strings.Repeat(`[`, 10) + `"x"` + strings.Repeat(`]`, 10) + `}`
	p := &Authorization{Client: ask.AuthorizationClient{ID: "cli_shop", Name: "Shop"}, Scope: "openid", AuthorizationDetails: json.RawMessage(`[
		{"type":"payment_initiation","identifier":"inv-7","instructedAmount":{"currency":"EUR","amount":"9"},"creditorName":"M","creditorAccount":{"other":"acct-1"}},
		{"type":"account_information","actions":["read_balances","read_standing_orders"],"locations":["https://bank.example"]},
		{"type":"countersign_action","action":"Deploy","target":"api"},
		{"type":"odd","deep":` + deep + `}]`)}
	got := AuthorizationDetails(p)
	if len(got) != 4 {
		t.Fatalf("%d details, want 4", len(got))
	}
	for i, want := range []string{"Pay 9 EUR to M, account acct-1", "Read your accounts: balances, standing orders", "Deploy on api", ""} {
		if got[i].Words != want {
			t.Errorf("detail %d reads %q, want %q", i, got[i].Words, want)
		}
	}
	if f := got[0].Facts; len(f) != 1 || f[0] != (Fact{"Identifier", "inv-7"}) {
		t.Errorf("the payment's facts are %+v, want its identifier", f)
	}
	if f := got[1].Facts; len(f) != 1 || f[0] != (Fact{"At", "https://bank.example"}) {
		t.Errorf("the account information's facts are %+v, want its location only (its actions are in the words)", f)
	}
	depth, n := 0, got[3].Tree
	for n.Branch() && n.Deep == "" && len(n.Children) > 0 {
		n = n.Children[0] // "deep" sorts before "type"
		depth++
	}
	if n.Deep == "" || depth > maxTreeDepth {
		t.Errorf("the tree nests %d deep and ends in %+v; want at most %d, then JSON text", depth, n, maxTreeDepth)
	}
	card := authorizationCard(p)
	if card[0].Values[0] != "Shop" || card[2].Label != "Authorizes" || card[2].Values[3] != "odd: shown below as sent" {
		t.Errorf("the card reads %+v", card)
	}
}
