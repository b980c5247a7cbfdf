package browsertest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/ask"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/core"
)

// A CIBA client's authorization ask on a phone (390×844): the first screen
// says who asks and what, the binding message stands where a check code
// would, an unknown detail opens as a tree that fits the screen, the page
// passes axe-core, and the person approves it with the passkey.
func TestAPersonAuthorizesACIBAClientOnAPhone(t *testing.T) {
	s := start(t, apptest.SQLite)
	p := s.page
	p.Emulate(phoneWidth, phoneHeight)
	ada := s.signUp("ada", core.RoleOwner)
	agent, _ := s.env.Agent(s.env.Account.ID, "ciba-shop")
	a, err := s.env.Store.FileAuthorization(context.Background(), models.AuthorizationFiling{
		AccountID: s.env.Account.ID, AgentID: agent.ID, PersonID: ada.ID, ExpiresAt: time.Now().Add(10 * time.Minute),
		Payload: ask.AuthorizationPayload{
			Client: ask.AuthorizationClient{ID: "cli_shop", Name: "Corner Shop"}, Scope: "openid payments accounts",
			AuthorizationDetails: json.RawMessage(`[
				{"type":"payment_initiation","actions":["initiate","status"],"locations":["https://bank.example.com/payments/v1/initiation"],"instructedAmount":{"currency":"EUR","amount":"120.00"},"creditorName":"Merchant A","creditorAccount":{"iban":"DE89370400440532013000"},"remittanceInformationUnstructured":"Order 2026-12-0042, cart of 3 items"},
				{"type":"account_information","actions":["list_accounts","read_balances","read_transactions"]},
				{"type":"countersign_action","action":"Restart","target":"payments-api-eu-west-1","amount":{"currency":"USD","value":"5.50"}},
				{"type":"https://schemas.example.com/grants/very-long-type-name-without-spaces","limits":{"daily":{"max":3,"note":"a_very_long_value_without_any_space_that_must_wrap_on_a_phone_screen_somewhere"}},"flags":[true,null]}
			]`),
			BindingMessage: "Corner Shop 4711",
		},
	})
	if err != nil {
		t.Fatal(err)
	}

	p.Go("/approvals/" + a.ID)
	p.WaitVisible("[data-testid=status]")
	answerOnTheFirstScreen(p, phoneAsk{name: "an authorization", id: a.ID, answers: true})
	namesWhatIsSigned(p, phoneAsk{name: "an authorization", id: a.ID, answers: true, verb: "Approve"})
	inView(p, "[data-testid=binding-message-check]", "the binding message in the answer bar")
	if got := p.Text("[data-testid=binding-message-check]"); got != "Check that Corner Shop shows this message: Corner Shop 4711" {
		t.Errorf("the answer bar reads %q", got)
	}
	if got := p.Text("[data-testid=authorization-who]"); got != "Corner Shop asks you to authorize" {
		t.Errorf("who asks reads %q", got)
	}
	words := Eval[[]string](p, `[...document.querySelectorAll("[data-testid=detail-words]")].map(e => e.innerText)`)
	want := []string{
		"Pay 120.00 EUR to Merchant A, account DE89370400440532013000, reference Order 2026-12-0042, cart of 3 items",
		"Read your accounts: the list of your accounts, balances, transactions",
		"Restart on payments-api-eu-west-1, amount 5.50 USD",
	}
	if strings.Join(words, "|") != strings.Join(want, "|") {
		t.Errorf("the details read %q, want %q", words, want)
	}
	if Eval[bool](p, `document.querySelector("[data-testid=detail-tree]").open`) {
		t.Error("the unknown detail's tree is open before a tap")
	}
	p.Click("[data-testid=detail-tree] > summary") // the folded tree opens on a tap
	p.WaitVisible("[data-testid=detail-tree] [data-testid=tree]")
	fitsThePhone(p, "the authorization page with its tree open")
	accessible(p, "the authorization page")
	holdsNarrowAndLarge(p, "the authorization page")

	s.answer(a.ID, "[data-testid=approve]")
	s.checkDecided("approved", "Approved", "ada")
	got, err := s.env.Store.GetApproval(context.Background(), s.env.Account.ID, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.DecidedBy != "ada" || got.Proof == nil {
		t.Errorf("the ask was decided by %q with proof %v, want ada's signature", got.DecidedBy, got.Proof != nil)
	}
}
