package ask

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

const (
	paymentDetail = `{"type":"payment_initiation","actions":["initiate"],"instructedAmount":{"currency":"EUR","amount":"120.00"},"creditorName":"Merchant A","creditorAccount":{"iban":"DE89370400440532013000"},"remittanceInformationUnstructured":"Ref 42"}`
	accountDetail = `{"type":"account_information","actions":["read_balances","read_transactions"],"locations":["https://bank.example/"]}`
	actionDetail  = `{"type":"countersign_action","action":"Deploy","target":"api","amount":{"currency":"USD","value":"5"}}`
	unknownDetail = `{"type":"x_custom","anything":{"goes":[1,true,null]}}`
)

func authorizationJSON(members string) string { return `{"authorization":{` + members + `}}` }

const authClient = `"client":{"id":"cli_1","name":"Shop"}`

func TestAuthorizationPayloadsAcceptedAndRefused(t *testing.T) {
	cases := []struct {
		name, payload string
		code          Code
		field         string
	}{
		{"a whole one is accepted", authorizationJSON(authClient + `,"scope":"openid payments","binding_message":"Code 4711","authorization_details":[` + paymentDetail + `,` + accountDetail + `,` + actionDetail + `,` + unknownDetail + `]`), "", ""},
		{"scope and client alone are accepted", authorizationJSON(authClient + `,"scope":"openid"`), "", ""},
		{"an unknown member is refused", authorizationJSON(authClient + `,"scope":"openid","extra":1`), InvalidArgument, "payload.authorization.extra"},
		{"a member spelled in another case is refused", authorizationJSON(authClient + `,"Scope":"openid"`), InvalidArgument, "payload.authorization.Scope"},
		{"no client is refused", authorizationJSON(`"scope":"openid"`), InvalidArgument, "payload.authorization.client"},
		{"a client with no name is refused", authorizationJSON(`"client":{"id":"c"},"scope":"openid"`), InvalidArgument, "payload.authorization.client.name"},
		{"a client member unknown is refused", authorizationJSON(`"client":{"id":"c","name":"n","x":"y"},"scope":"openid"`), InvalidArgument, "payload.authorization.client.x"},
		{"a scope without openid is refused", authorizationJSON(authClient + `,"scope":"payments"`), InvalidArgument, "payload.authorization.scope"},
		{"a scope that is a number is refused", authorizationJSON(authClient + `,"scope":1`), InvalidArgument, "payload.authorization.scope"},
		{"a binding message on two lines is refused", authorizationJSON(authClient + `,"scope":"openid","binding_message":"a\nb"`), InvalidArgument, "payload.authorization.binding_message"},
		{"null details are refused", authorizationJSON(authClient + `,"scope":"openid","authorization_details":null`), InvalidArgument, "payload.authorization.authorization_details"},
		{"a detail's bad currency is refused by path", authorizationJSON(authClient + `,"scope":"openid","authorization_details":[` + strings.Replace(paymentDetail, `"EUR"`, `"eur"`, 1) + `]`), InvalidArgument, "payload.authorization.authorization_details[0].instructedAmount.currency"},
		{"a second member beside authorization is refused", `{"authorization":{` + authClient + `,"scope":"openid"},"x":{}}`, InvalidArgument, "payload.x"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := ParsePayload(KindAuthorization, json.RawMessage(c.payload), testNow)
			wantRefusal(t, err, c.code, c.field)
			if c.code == "" && (p == nil || p.SHA256 == "") {
				t.Fatalf("accepted without a hash: %+v", p)
			}
		})
	}
}

func TestAuthorizationDetails(t *testing.T) {
	big := `[{"type":"x","v":"` + strings.Repeat("a", MaxAuthorizationDetailsBytes) + `"}]`
	cases := []struct {
		name, details string
		field         string // "" when accepted
	}{
		{"payment_initiation is accepted", `[` + paymentDetail + `]`, ""},
		{"payment_initiation to another account identifier is accepted", `[{"type":"payment_initiation","instructedAmount":{"currency":"EUR","amount":"1"},"creditorName":"M","creditorAccount":{"other":"acct-7"}}]`, ""},
		{"account_information is accepted", `[` + accountDetail + `]`, ""},
		{"countersign_action without an amount is accepted", `[{"type":"countersign_action","action":"Restart","target":"db"}]`, ""},
		{"an unknown type passes as sent", `[` + unknownDetail + `]`, ""},
		{"an object is refused", paymentDetail, "authorization_details"},
		{"an empty list is refused", `[]`, "authorization_details"},
		{"21 objects are refused", jsonList(21, func(int) string { return unknownDetail }), "authorization_details"},
		{"20 objects are accepted", jsonList(20, func(int) string { return unknownDetail }), ""},
		{"more than 16 KiB is refused", big, "authorization_details"},
		{"a string entry is refused", `["payment"]`, "authorization_details[0]"},
		{"no type is refused", `[{"x":1}]`, "authorization_details[0].type"},
		{"a number type is refused", `[{"type":7}]`, "authorization_details[0].type"},
		{"an empty type is refused", `[{"type":""}]`, "authorization_details[0].type"},
		{"a type of 101 characters is refused", `[{"type":"` + strings.Repeat("t", 101) + `"}]`, "authorization_details[0].type"},
		{"duplicate names are refused", `[{"type":"x","type":"y"}]`, "authorization_details"},
		{"a payment without an amount is refused", `[{"type":"payment_initiation","creditorName":"M","creditorAccount":{"iban":"DE89370400440532013000"}}]`, "authorization_details[0].instructedAmount"},
		{"a payment amount as a number is refused", `[` + strings.Replace(paymentDetail, `"120.00"`, `120`, 1) + `]`, "authorization_details[0].instructedAmount.amount"},
		{"a payment amount not decimal is refused", `[` + strings.Replace(paymentDetail, `"120.00"`, `"1e3"`, 1) + `]`, "authorization_details[0].instructedAmount.amount"},
		{"a payment without a creditor is refused", `[` + strings.Replace(paymentDetail, `"creditorName":"Merchant A",`, ``, 1) + `]`, "authorization_details[0].creditorName"},
		{"a bad IBAN is refused", `[` + strings.Replace(paymentDetail, `DE89370400440532013000`, `de89 3704`, 1) + `]`, "authorization_details[0].creditorAccount.iban"},
		{"an account with iban and other is refused", `[` + strings.Replace(paymentDetail, `{"iban":"DE89370400440532013000"}`, `{"iban":"DE89370400440532013000","other":"x"}`, 1) + `]`, "authorization_details[0].creditorAccount"},
		{"an unknown member of a known type is refused", `[` + strings.Replace(paymentDetail, `"creditorName"`, `"hidden":"x","creditorName"`, 1) + `]`, "authorization_details[0].hidden"},
		{"a member of another known type is refused", `[{"type":"account_information","actions":["read_balances"],"action":"x"}]`, "authorization_details[0].action"},
		{"a reference on two lines is refused", `[` + strings.Replace(paymentDetail, `Ref 42`, `Ref\n42`, 1) + `]`, "authorization_details[0].remittanceInformationUnstructured"},
		{"account_information without actions is refused", `[{"type":"account_information"}]`, "authorization_details[0].actions"},
		{"account_information with a number action is refused", `[{"type":"account_information","actions":[1]}]`, "authorization_details[0].actions[0]"},
		{"countersign_action without a target is refused", `[{"type":"countersign_action","action":"Restart"}]`, "authorization_details[0].target"},
		{"countersign_action with an action on two lines is refused", `[{"type":"countersign_action","action":"a\nb","target":"t"}]`, "authorization_details[0].action"},
		{"countersign_action with a bad amount is refused", `[{"type":"countersign_action","action":"a","target":"t","amount":{"currency":"USD","value":"-1"}}]`, "authorization_details[1-1].amount.value"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			field := strings.Replace(c.field, "[1-1]", "[0]", 1)
			out, r := ParseAuthorizationDetails([]byte(c.details))
			if field == "" {
				if r != nil {
					t.Fatalf("want success, got %v", r)
				}
				if len(out) == 0 {
					t.Fatal("accepted with no canonical form")
				}
				return
			}
			if r == nil {
				t.Fatalf("want a refusal on %q, got %s", field, out)
			}
			if r.Code != InvalidArgument || r.Field != field {
				t.Fatalf("want INVALID_ARGUMENT on %q, got %v", field, r)
			}
		})
	}
}

func TestAuthorizationDetailsComeBackCanonical(t *testing.T) {
	out, r := ParseAuthorizationDetails([]byte(" [ {\"z\": 1.0, \"type\" : \"x\", \"a\": \"\\u00e9\"} ] "))
	if r != nil {
		t.Fatal(r)
	}
	if want := `[{"a":"é","type":"x","z":1}]`; string(out) != want {
		t.Fatalf("canonical form %s, want %s", out, want)
	}
}

func TestBindingMessage(t *testing.T) {
	for _, c := range []struct {
		msg string
		ok  bool
	}{
		{"", true},
		{"Code 4711 — Café", true},
		{strings.Repeat("x", 64), true},
		{strings.Repeat("é", 64), true},
		{strings.Repeat("x", 65), false},
		{"a\nb", false},
		{"a\tb", false},
		{"a\u202eb", false},
		{"a\u00adb", false}, // soft hyphen: not printable
		{"a\u200bb", false}, // zero-width space: not printable
	} {
		r := CheckBindingMessage(c.msg)
		if (r == nil) != c.ok {
			t.Errorf("CheckBindingMessage(%q) = %v, want ok %v", c.msg, r, c.ok)
		}
		if r != nil && r.Field != "binding_message" {
			t.Errorf("CheckBindingMessage(%q) names %q, want binding_message", c.msg, r.Field)
		}
	}
}

func TestScope(t *testing.T) {
	for _, c := range []struct {
		scope string
		ok    bool
	}{
		{"openid", true},
		{"openid profile payments:write", true},
		{"profile openid", true},
		{"", false},
		{"profile", false},
		{"openid  profile", false},
		{" openid", false},
		{"openid ", false},
		{"openid pro\"file", false},
		{"openid pro\\file", false},
		{"openid é", false},
		{"openid\tprofile", false},
		{"openid " + strings.TrimSpace(strings.Repeat("s ", 19)), true},
		{"openid " + strings.TrimSpace(strings.Repeat("s ", 20)), false},
		{"openid " + strings.Repeat("s", 994), false},
	} {
		r := CheckScope(c.scope)
		if (r == nil) != c.ok {
			t.Errorf("CheckScope(%q) = %v, want ok %v", c.scope, r, c.ok)
		}
		if r != nil && r.Field != "scope" {
			t.Errorf("CheckScope(%q) names %q, want scope", c.scope, r.Field)
		}
	}
}

// The kind is filed by the provider only: approvals_create's list does not
// hold it, and no policy, window or batch answers it.
func TestAuthorizationIsNeverAutoApprovedNorFiledByAgents(t *testing.T) {
	if slices.Contains(Kinds, KindAuthorization) {
		t.Error("Kinds holds authorization: approvals_create would file it")
	}
	if !slices.Contains(NeverAutoApproved, KindAuthorization) {
		t.Error("NeverAutoApproved lacks authorization")
	}
	if _, ok := PayloadHelp[KindAuthorization]; ok {
		t.Error("PayloadHelp describes authorization to agents")
	}
}

func TestReadDetail(t *testing.T) {
	out, r := ParseAuthorizationDetails([]byte(`[` + paymentDetail + `,` + unknownDetail + `]`))
	if r != nil {
		t.Fatal(r)
	}
	list := ReadAuthorizationDetails(out)
	if len(list) != 2 {
		t.Fatalf("read %d details, want 2", len(list))
	}
	d, ok := ReadDetail(list[0])
	if !ok || d.Type != DetailPaymentInitiation || d.InstructedAmount.Amount != "120.00" || d.CreditorAccount.IBAN != "DE89370400440532013000" || d.CreditorName != "Merchant A" || d.RemittanceInformationUnstructured != "Ref 42" {
		t.Fatalf("payment read as %+v, %v", d, ok)
	}
	if _, ok := ReadDetail(list[1]); ok {
		t.Fatal("an unknown type read as a known one")
	}
}
