package ask

// The authorization kind: a CIBA client (OpenID Client-Initiated Backchannel
// Authentication) asks one person to authorize it. The provider files it,
// never an agent through approvals_create, and no policy, window or batch
// answers it. Its payload freezes what the client sent: who the client is,
// the scope, the RFC 9396 authorization_details in canonical form, and the
// binding message the person compares with what the client shows.
//
// Choices made where the RFCs leave room:
//   - scope is required and holds "openid" (CIBA Core 7.1); its tokens are
//     RFC 6749's scope-token, separated by exactly one space.
//   - authorization_details, when sent, is a list of 1 to 20 objects of at
//     most 16 KiB canonical. A known type (payment_initiation,
//     account_information, countersign_action) takes only its own members
//     and RFC 9396's common ones (locations, actions, datatypes, identifier,
//     privileges): the page says it in words, so a member it would not say
//     is refused. An unknown type passes as sent and is shown as a tree.
//   - binding_message is one line of at most 64 printable characters.

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// AuthorizationPayload is payload.authorization: what a CIBA client asks the
// person to authorize.
type AuthorizationPayload struct {
	Client               AuthorizationClient `json:"client"`
	Scope                string              `json:"scope"`
	AuthorizationDetails json.RawMessage     `json:"authorization_details,omitempty"`
	BindingMessage       string              `json:"binding_message,omitempty"`
}

// AuthorizationClient is the CIBA client that asks, as the provider
// registered it.
type AuthorizationClient struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// Limits of an authorization ask.
const (
	MaxAuthorizationDetails      = 20       // objects in authorization_details
	MaxAuthorizationDetailsBytes = 16 << 10 // canonical bytes of authorization_details
	MaxBindingMessage            = 64       // characters of binding_message
	MaxScopeTokens               = 20
	MaxScopeLength               = 1000
)

// The authorization_details types the page says in words.
const (
	DetailPaymentInitiation  = "payment_initiation"
	DetailAccountInformation = "account_information"
	DetailCountersignAction  = "countersign_action"
)

// AuthorizationDetailTypes are the types whose members are checked and said
// in words; any other type is shown as sent.
var AuthorizationDetailTypes = []string{DetailPaymentInitiation, DetailAccountInformation, DetailCountersignAction}

// Detail is one authorization_details object of a known type, as read for
// the page. Members of other types are not read into it.
type Detail struct {
	Type                              string         `json:"type"`
	Locations                         []string       `json:"locations,omitempty"`
	Actions                           []string       `json:"actions,omitempty"`
	Datatypes                         []string       `json:"datatypes,omitempty"`
	Identifier                        string         `json:"identifier,omitempty"`
	Privileges                        []string       `json:"privileges,omitempty"`
	InstructedAmount                  *PaymentAmount `json:"instructedAmount,omitempty"`
	CreditorName                      string         `json:"creditorName,omitempty"`
	CreditorAccount                   *Account       `json:"creditorAccount,omitempty"`
	RemittanceInformationUnstructured string         `json:"remittanceInformationUnstructured,omitempty"`
	Action                            string         `json:"action,omitempty"`
	Target                            string         `json:"target,omitempty"`
	Amount                            *ActionAmount  `json:"amount,omitempty"`
}

// PaymentAmount is a payment_initiation's instructedAmount.
type PaymentAmount struct {
	Currency string `json:"currency"`
	Amount   string `json:"amount"`
}

// Account is a payment_initiation's creditorAccount: an IBAN or another identifier.
type Account struct {
	IBAN  string `json:"iban,omitempty"`
	Other string `json:"other,omitempty"`
}

// ActionAmount is a countersign_action's amount.
type ActionAmount struct {
	Currency string `json:"currency"`
	Value    string `json:"value"`
}

// commonDetailMembers are RFC 9396's common members (section 2.2), allowed on every type.
var commonDetailMembers = []string{"locations", "actions", "datatypes", "identifier", "privileges"}

// detailMembers are the members each known type takes besides the common ones.
var detailMembers = map[string][]string{
	DetailPaymentInitiation:  {"instructedAmount", "creditorName", "creditorAccount", "remittanceInformationUnstructured"},
	DetailAccountInformation: {},
	DetailCountersignAction:  {"action", "target", "amount"},
}

// ParseAuthorizationDetails checks an RFC 9396 authorization_details value
// (a list of 1 to 20 objects, each with a type, at most 16 KiB) and returns
// its RFC 8785 canonical form. Refusals name the path from
// "authorization_details".
func ParseAuthorizationDetails(raw []byte) (json.RawMessage, *Refusal) {
	return parseAuthorizationDetails("authorization_details", raw)
}

func parseAuthorizationDetails(path string, raw []byte) (json.RawMessage, *Refusal) {
	if len(raw) > 4*MaxAuthorizationDetailsBytes {
		return nil, Invalid(path, "at most %d bytes in canonical form, got %d bytes as sent", MaxAuthorizationDetailsBytes, len(raw))
	}
	canonical, _, tree, err := readSent(path, raw)
	if err != nil {
		return nil, refusal(err)
	}
	if len(canonical) > MaxAuthorizationDetailsBytes {
		return nil, Invalid(path, "at most %d bytes in canonical form, got %d", MaxAuthorizationDetailsBytes, len(canonical))
	}
	list, ok := tree.([]any)
	if !ok {
		return nil, Invalid(path, "must be a list of objects (RFC 9396), not %s", jsonType(tree))
	}
	if len(list) == 0 || len(list) > MaxAuthorizationDetails {
		return nil, Invalid(path, "1 to %d objects, got %d", MaxAuthorizationDetails, len(list))
	}
	for i, d := range list {
		if r := checkDetail(fmt.Sprintf("%s[%d]", path, i), d); r != nil {
			return nil, r
		}
	}
	return canonical, nil
}

// checkDetail checks one authorization_details object.
func checkDetail(path string, v any) *Refusal {
	obj, ok := v.(map[string]any)
	if !ok {
		return Invalid(path, "must be an object, not %s", jsonType(v))
	}
	typ, ok := obj["type"].(string)
	switch {
	case obj["type"] == nil:
		return Invalid(path+".type", "required: the type of this authorization, a string of 1 to 100 characters")
	case !ok:
		return Invalid(path+".type", "must be a string, not %s", jsonType(obj["type"]))
	case typ == "" || utf8.RuneCountInString(typ) > 100:
		return Invalid(path+".type", "1 to 100 characters, got %d", utf8.RuneCountInString(typ))
	}
	if r := refusal(checkText(path+".type", typ, 100, true, true)); r != nil {
		return r
	}
	own, known := detailMembers[typ]
	if !known {
		return nil // shown as sent, as a tree
	}
	allowed := append(append([]string{"type"}, commonDetailMembers...), own...)
	for _, k := range sortedKeys(obj) {
		if !slices.Contains(allowed, k) {
			return Invalid(path+"."+clip(k), "unknown member: a %s takes only %s; a person must never sign what the page does not show", typ, strings.Join(allowed, ", "))
		}
	}
	if r := refusal(checkShape(obj, reflect.TypeOf(Detail{}), path)); r != nil {
		return r
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return Invalid(path, "not valid JSON: %v", err)
	}
	var d Detail
	if err := decodeStrict(raw, &d); err != nil {
		return Invalid(path, "%v", err)
	}
	if r := checkCommonMembers(path, &d); r != nil {
		return r
	}
	switch typ {
	case DetailPaymentInitiation:
		return checkPayment(path, &d)
	case DetailAccountInformation:
		if len(d.Actions) == 0 {
			return Invalid(path+".actions", "required: what the client may read, such as read_balances, read_transactions")
		}
	case DetailCountersignAction:
		if r := refusal(checkText(path+".action", d.Action, 200, true, true)); r != nil {
			return r
		}
		if r := refusal(checkText(path+".target", d.Target, 200, true, true)); r != nil {
			return r
		}
		if d.Amount != nil {
			if r := checkCurrency(path+".amount.currency", d.Amount.Currency); r != nil {
				return r
			}
			return checkDecimal(path+".amount.value", d.Amount.Value)
		}
	}
	return nil
}

// checkCommonMembers checks RFC 9396's common members on a known type: lists
// of at most 20 one-line strings, an identifier of one line.
func checkCommonMembers(path string, d *Detail) *Refusal {
	for _, l := range []struct {
		name string
		v    []string
	}{{"locations", d.Locations}, {"actions", d.Actions}, {"datatypes", d.Datatypes}, {"privileges", d.Privileges}} {
		if len(l.v) > 20 {
			return Invalid(path+"."+l.name, "at most 20 entries, got %d", len(l.v))
		}
		for i, s := range l.v {
			if r := refusal(checkText(fmt.Sprintf("%s.%s[%d]", path, l.name, i), s, 200, true, true)); r != nil {
				return r
			}
		}
	}
	return refusal(checkText(path+".identifier", d.Identifier, 200, true, false))
}

func checkPayment(path string, d *Detail) *Refusal {
	if d.InstructedAmount == nil {
		return Invalid(path+".instructedAmount", `required: {"currency": "EUR", "amount": "120.00"}`)
	}
	if r := checkCurrency(path+".instructedAmount.currency", d.InstructedAmount.Currency); r != nil {
		return r
	}
	if r := checkDecimal(path+".instructedAmount.amount", d.InstructedAmount.Amount); r != nil {
		return r
	}
	if r := refusal(checkText(path+".creditorName", d.CreditorName, 140, true, true)); r != nil {
		return r
	}
	acct := d.CreditorAccount
	switch {
	case acct == nil:
		return Invalid(path+".creditorAccount", `required: {"iban": "…"} or {"other": "…"}`)
	case (acct.IBAN == "") == (acct.Other == ""):
		return Invalid(path+".creditorAccount", "exactly one of iban and other")
	case acct.IBAN != "":
		if r := checkIBAN(path+".creditorAccount.iban", acct.IBAN); r != nil {
			return r
		}
	default:
		if r := refusal(checkText(path+".creditorAccount.other", acct.Other, 100, true, true)); r != nil {
			return r
		}
	}
	return refusal(checkText(path+".remittanceInformationUnstructured", d.RemittanceInformationUnstructured, 140, true, false))
}

// checkCurrency checks an ISO 4217 code: three upper-case letters.
func checkCurrency(field, s string) *Refusal {
	if len(s) != 3 || strings.Trim(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != "" {
		return Invalid(field, "must be an ISO 4217 currency code, three upper-case letters such as EUR, got %q", clip(s))
	}
	return nil
}

// checkDecimal checks an amount written as a decimal string: digits, with
// at most one point and digits after it ("120", "120.00").
func checkDecimal(field, s string) *Refusal {
	whole, frac, hasPoint := strings.Cut(s, ".")
	digits := func(x string, max int) bool {
		return x != "" && len(x) <= max && strings.Trim(x, "0123456789") == ""
	}
	if !digits(whole, 18) || hasPoint && !digits(frac, 8) {
		return Invalid(field, `must be a decimal amount as a string, such as "120.00", got %q`, clip(s))
	}
	return nil
}

// checkIBAN checks the form of an IBAN: a country code, two check digits and
// up to 30 letters or digits, 15 to 34 in all, upper case and without spaces.
func checkIBAN(field, s string) *Refusal {
	ok := len(s) >= 15 && len(s) <= 34
	for i := 0; ok && i < len(s); i++ {
		c := s[i]
		switch {
		case i < 2:
			ok = c >= 'A' && c <= 'Z'
		case i < 4:
			ok = c >= '0' && c <= '9'
		default:
			ok = c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		}
	}
	if !ok {
		return Invalid(field, "must be an IBAN: 15 to 34 upper-case letters and digits, no spaces, starting with a country code and two check digits, got %q", clip(s))
	}
	return nil
}

// CheckBindingMessage checks a CIBA binding_message: optional, one line of
// at most 64 printable characters.
func CheckBindingMessage(s string) *Refusal { return checkBindingMessage("binding_message", s) }

func checkBindingMessage(field, s string) *Refusal {
	if n := utf8.RuneCountInString(s); n > MaxBindingMessage {
		return Invalid(field, "at most %d characters, got %d", MaxBindingMessage, n)
	}
	if r := refusal(checkText(field, s, MaxBindingMessage, true, false)); r != nil {
		return r
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return Invalid(field, "must be printable characters on one line (found U+%04X)", r)
		}
	}
	return nil
}

// CheckScope checks an OAuth scope (RFC 6749 3.3): tokens of the scope-token
// characters separated by one space, at most 20 and 1000 characters, and
// "openid" among them, as CIBA requires.
func CheckScope(s string) *Refusal { return checkScope("scope", s) }

func checkScope(field, s string) *Refusal {
	if s == "" {
		return Invalid(field, `required: space-separated scope tokens, "openid" among them`)
	}
	if len(s) > MaxScopeLength {
		return Invalid(field, "at most %d characters, got %d", MaxScopeLength, len(s))
	}
	tokens := strings.Split(s, " ")
	if len(tokens) > MaxScopeTokens {
		return Invalid(field, "at most %d scope tokens, got %d", MaxScopeTokens, len(tokens))
	}
	for i, t := range tokens {
		if t == "" {
			return Invalid(field, "scope tokens are separated by exactly one space, with none before or after")
		}
		for j := 0; j < len(t); j++ {
			if c := t[j]; c < 0x21 || c == 0x22 || c == 0x5C || c > 0x7E {
				return Invalid(field, "scope token %d holds %q: a scope token is printable ASCII without space, \" and \\", i+1, clip(t))
			}
		}
	}
	if !slices.Contains(tokens, "openid") {
		return Invalid(field, `must hold the scope token "openid" (CIBA)`)
	}
	return nil
}

// checkAuthorization checks payload.authorization: the member names exactly,
// then each member.
func checkAuthorization(raw json.RawMessage, tree any, path string) *Refusal {
	obj, ok := tree.(map[string]any)
	if !ok {
		return Invalid(path, "must be an object, not %s", jsonType(tree))
	}
	names := []string{"client", "scope", "authorization_details", "binding_message"}
	for _, k := range sortedKeys(obj) {
		if !slices.Contains(names, k) {
			return Invalid(path+"."+clip(k), "unknown member: %s takes only %s; a person must never sign what the page does not show", path, strings.Join(names, ", "))
		}
	}
	if obj["client"] == nil {
		if _, sent := obj["client"]; !sent {
			return Invalid(path+".client", "required: the CIBA client that asks, {id, name}")
		}
	}
	shapes := []struct {
		name string
		t    reflect.Type
	}{{"client", reflect.TypeOf(AuthorizationClient{})}, {"scope", reflect.TypeOf("")}, {"binding_message", reflect.TypeOf("")}}
	for _, s := range shapes {
		if v, sent := obj[s.name]; sent {
			if r := refusal(checkShape(v, s.t, path+"."+s.name)); r != nil {
				return r
			}
		}
	}
	var v AuthorizationPayload
	if err := decodeStrict(raw, &v); err != nil {
		return Invalid(path, "%v", err)
	}
	if r := refusal(checkText(path+".client.id", v.Client.ID, 200, true, true)); r != nil {
		return r
	}
	if r := refusal(checkText(path+".client.name", v.Client.Name, 200, true, true)); r != nil {
		return r
	}
	if r := checkScope(path+".scope", v.Scope); r != nil {
		return r
	}
	if _, sent := obj["authorization_details"]; sent {
		if _, r := parseAuthorizationDetails(path+".authorization_details", v.AuthorizationDetails); r != nil {
			return r
		}
	}
	return checkBindingMessage(path+".binding_message", v.BindingMessage)
}

// ReadAuthorizationDetails reads the canonical authorization_details of a
// filed ask, one raw object each, for the page. A value that does not read
// gives nil.
func ReadAuthorizationDetails(canonical json.RawMessage) []json.RawMessage {
	var list []json.RawMessage
	if len(canonical) == 0 || json.Unmarshal(canonical, &list) != nil {
		return nil
	}
	return list
}

// ReadDetail reads one authorization_details object of a known type, strictly:
// false for an unknown type or one whose members do not read, which the page
// then shows as a tree.
func ReadDetail(raw json.RawMessage) (Detail, bool) {
	var d Detail
	if decodeStrict(raw, &d) != nil {
		return Detail{}, false
	}
	if _, known := detailMembers[d.Type]; !known {
		return Detail{}, false
	}
	return d, true
}

// refusal is err as a *Refusal: the checks shared with other kinds return error.
func refusal(err error) *Refusal {
	if err == nil {
		return nil
	}
	var r *Refusal
	if errors.As(err, &r) {
		return r
	}
	return Invalid("", "%v", err)
}
