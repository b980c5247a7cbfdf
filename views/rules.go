package views

import (
	"encoding/json"
	"net/url"
	"strings"

	"github.com/a-h/templ"
)

// RulesView is the Admin → Rules page: the account's approval rules, the
// removed built-ins among them, and the form that proposes a change.
type RulesView struct {
	Rules []RuleRow
	Form  RuleForm // the form's values: empty, a rule to edit, or what was refused
	Error string   // a refusal, shown at its field (ErrorField) or above the form
	// ErrorField is the form field the refusal is about ("" for none).
	ErrorField string
}

// RuleExample is a rule the form offers to start from: a button that fills
// the form in (the page script reads Fill, the form's values by field name).
type RuleExample struct {
	Label string
	Fill  string // JSON: {"id": "…", "kinds": "…", …}
}

// RuleExamples are the rules the form leads with.
var RuleExamples = []RuleExample{
	ruleExample("Production runs need two people", map[string]string{"id": "production-runs-need-two", "name": "Production runs need two people",
		"kinds": "run", "effects": "production", "count": "2", "pool_kind": "role", "pool_role": "admins"}),
	ruleExample("Deleting tools need an owner", map[string]string{"id": "deletes-need-an-owner", "name": "Tool calls that delete need an owner",
		"kinds": "tool_call", "tools": "delete_*", "count": "1", "pool_kind": "role", "pool_role": "owners"}),
	ruleExample("Rolls need two, owners after 30 minutes", map[string]string{"id": "rolls-need-two", "name": "Rolls need two people",
		"kinds": "roll", "count": "2", "pool_kind": "role", "pool_role": "admins", "escalate_role": "owners", "escalate_after": "30m"}),
}

func ruleExample(label string, fill map[string]string) RuleExample {
	b, err := json.Marshal(fill)
	if err != nil {
		panic(err) // a map of strings always marshals
	}
	return RuleExample{Label: label, Fill: string(b)}
}

// RuleRow is one rule as the page lists it.
type RuleRow struct {
	ID      string
	Name    string
	Summary string // the rule in one line of words
	Builtin bool
	Removed bool // a built-in switched off
	By      string
}

// RuleForm is the propose-a-change form's fields, as text.
type RuleForm struct {
	ID            string
	Name          string
	Kinds         string // comma-separated
	Effects       string
	Servers       string
	Tools         string
	Requesters    string
	MinPriority   string
	Count         string
	PoolKind      string // role, group or asked_of
	PoolRole      string // owners, admins or members
	Group         string
	People        string // comma-separated subjects
	EscalateRole  string // owners, admins or members: "" for no escalation
	EscalateAfter string // like 30m
	// EscalateChannel is a shared channel ("#oncall") the ask is posted to
	// after EscalateAfter; "" for none.
	EscalateChannel string
	RemindEvery     string // like 10m
	ApplyFrom       string
}

// rulePath is where a rule's form posts.
func rulePath(id, action string) templ.SafeURL {
	return templ.SafeURL("/admin/rules/" + url.PathEscape(id) + "/" + action)
}

// ruleEditPath opens the page with the rule in the form.
func ruleEditPath(id string) templ.SafeURL {
	return templ.SafeURL("/admin/rules?edit=" + url.QueryEscape(id) + "#propose")
}

// SplitList reads a comma-separated field into its trimmed, non-empty items.
func SplitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
