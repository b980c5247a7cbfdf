package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/ask"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
)

const hostile = `<script>alert(1)</script>`

// authorizationDetailsJSON holds one detail of each known type and one of
// a type the page does not know, with hostile strings where text goes.
const authorizationDetailsJSON = `[
	{"type":"payment_initiation","instructedAmount":{"currency":"EUR","amount":"120.00"},"creditorName":"Merchant A ` + hostile + `","creditorAccount":{"iban":"DE89370400440532013000"},"remittanceInformationUnstructured":"Invoice 7"},
	{"type":"account_information","actions":["read_balances","read_transactions"]},
	{"type":"countersign_action","action":"Restart","target":"db-primary","amount":{"currency":"USD","value":"5.50"}},
	{"type":"x_custom_grant","limits":{"max":3,"note":"` + hostile + `"},"flags":[true,null]}
]`

// fileAuthorization files an authorization ask of subject by a CIBA
// client's agent, as the provider does.
func fileAuthorization(t *testing.T, env *apptest.Env, subject, binding string) *asks.Approval {
	t.Helper()
	ctx := context.Background()
	m, err := env.Store.MemberBySubject(ctx, env.Account.ID, subject)
	if err != nil {
		t.Fatal(err)
	}
	agent, _ := env.Agent(env.Account.ID, "ciba-shop")
	a, err := env.Store.FileAuthorization(ctx, models.AuthorizationFiling{
		AccountID: env.Account.ID, AgentID: agent.ID, PersonID: m.ID, ExpiresAt: env.Store.Now().Add(10 * time.Minute),
		Payload: ask.AuthorizationPayload{
			Client: ask.AuthorizationClient{ID: "cli_shop", Name: "Shop"}, Scope: "openid payments",
			AuthorizationDetails: json.RawMessage(authorizationDetailsJSON), BindingMessage: binding,
		},
	})
	if err != nil {
		t.Fatalf("file the authorization: %v", err)
	}
	return a
}

// The ask page of an authorization says who asks, the binding message where
// the check code goes, each known detail in words and an unknown one as a
// folded tree, with every value escaped; approving it with the passkey
// settles it approved.
func TestAnAuthorizationAskPageSaysItInWordsAndIsApprovedWithThePasskey(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		env := apptest.StartWeb(t, db, nil)
		bob := join(t, env, env.Account.ID, core.RoleMember, "bob")
		a := fileAuthorization(t, env, "bob", "Code <b>4711</b>")

		r := bob.Page("/approvals/" + a.ID)
		if r.Status != http.StatusOK {
			t.Fatalf("the ask page answered %d", r.Status)
		}
		body := string(r.Raw)
		doc := parseHTML(t, body)
		text := func(testid string) []string {
			var out []string
			for _, n := range elements(doc, byAttr("data-testid", testid)) {
				out = append(out, strings.Join(strings.Fields(textOf(n)), " "))
			}
			return out
		}
		want := map[string][]string{
			"authorization-who":     {"Shop asks you to authorize"},
			"client-id":             {"cli_shop"},
			"binding-message":       {"Code <b>4711</b>"},
			"binding-message-check": {"Check that Shop shows this message: Code <b>4711</b>"},
			"detail-words":          {"Pay 120.00 EUR to Merchant A " + hostile + ", account DE89370400440532013000, reference Invoice 7", "Read your accounts: balances, transactions", "Restart on db-primary, amount 5.50 USD"},
			"approve":               {"Approve"},
			"check-codes":           nil, // the binding message stands for the check code
			"window":                nil, // no window opens on an authorization
			"title":                 {"Shop asks you to authorize"},
			"scope":                 {"openid payments"},
			"no-details":            nil,
		}
		for id, w := range want {
			if got := text(id); strings.Join(got, "|") != strings.Join(w, "|") {
				t.Errorf("%s reads %q, want %q", id, got, w)
			}
		}
		trees := elements(doc, byAttr("data-testid", "detail-tree"))
		if len(trees) != 1 || trees[0].Data != "details" || attrOf(trees[0], "open") != "" {
			t.Fatalf("want one folded <details> tree for the unknown type, got %d", len(trees))
		}
		tree := strings.Join(strings.Fields(textOf(trees[0])), " ")
		for _, s := range []string{"x_custom_grant", "limits (object, 2 members)", "max: 3", "note: " + hostile, "flags (list, 2 entries)", "[0]: true", "[1]: null"} {
			if !strings.Contains(tree, s) {
				t.Errorf("the tree reads %q, want it to hold %q", tree, s)
			}
		}
		if strings.Contains(body, hostile) || strings.Contains(body, "<b>4711") {
			t.Error("the page holds a hostile string unescaped")
		}
		if !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
			t.Error("the page does not show the hostile string as text")
		}

		if d := bob.Decide(a.ID, "approve", ""); d.Status != http.StatusOK {
			t.Fatalf("approve: %s", d)
		}
		got, err := env.Store.GetApproval(context.Background(), env.Account.ID, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != asks.StatusApproved || got.Decision != string(asks.VerdictApprove) || got.DecidedBy != "bob" || got.Proof == nil {
			t.Errorf("after the approve the ask is %s, %q by %q, proof %v; want approved by bob with a proof", got.Status, got.Decision, got.DecidedBy, got.Proof != nil)
		}
	})
}

// An authorization with no binding message and no details shows neither,
// and says the scope alone is asked.
func TestAnAuthorizationWithoutDetailsOrMessage(t *testing.T) {
	env := apptest.StartWeb(t, apptest.SQLite, nil)
	bob := join(t, env, env.Account.ID, core.RoleMember, "bob")
	ctx := context.Background()
	m, err := env.Store.MemberBySubject(ctx, env.Account.ID, "bob")
	if err != nil {
		t.Fatal(err)
	}
	agent, _ := env.Agent(env.Account.ID, "ciba-shop")
	a, err := env.Store.FileAuthorization(ctx, models.AuthorizationFiling{
		AccountID: env.Account.ID, AgentID: agent.ID, PersonID: m.ID, ExpiresAt: env.Store.Now().Add(time.Minute),
		Payload: ask.AuthorizationPayload{Client: ask.AuthorizationClient{ID: "c", Name: "Shop"}, Scope: "openid"},
	})
	if err != nil {
		t.Fatal(err)
	}
	doc := parseHTML(t, string(bob.Page("/approvals/"+a.ID).Raw))
	for id, n := range map[string]int{"no-details": 1, "binding-message": 0, "binding-message-check": 0, "authorization-details": 0, "approve": 1} {
		if got := len(elements(doc, byAttr("data-testid", id))); got != n {
			t.Errorf("%d elements %s, want %d", got, id, n)
		}
	}
}

// No batch takes an authorization: one passkey prompt over a list of asks
// never answers a client's request; the refusal says why and signs nothing.
func TestABatchRefusesAnAuthorizationAsk(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		env := apptest.StartWeb(t, db, nil)
		ada := env.Owner("ada")
		_, token := env.Agent(env.Account.ID, "bot")
		review := env.Connect(token).OK("approvals_create", map[string]any{"kind": "review", "title": "Review", "approve_means": "Reviewed", "deny_means": "Waits",
			"payload": map[string]any{"review": map[string]any{"url": "https://docs.example.com/1"}}})["approval_id"].(string)
		a := fileAuthorization(t, env, "ada", "Code 4711")
		r := ada.Post("/batch/challenge", map[string]any{"approval_ids": []string{review, a.ID}, "decision": "approve"})
		if r.Status != http.StatusConflict || !strings.Contains(fmt.Sprint(r.Body["message"]), "it authorizes a client to act for you") {
			t.Errorf("a batch with an authorization: %s, want 409 saying why it is answered alone", r)
		}
		if r := ada.Post("/batch/challenge", map[string]any{"approval_ids": []string{review}, "decision": "approve"}); r.Status != http.StatusOK {
			t.Errorf("a batch of the review alone: %s, want 200", r)
		}
		got, err := env.Store.GetApproval(context.Background(), env.Account.ID, a.ID)
		if err != nil || got.Status != asks.StatusPending {
			t.Errorf("the authorization is %v (%v), want pending", got.Status, err)
		}
	})
}
