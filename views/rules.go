package views

import (
	"net/url"
	"strings"

	"github.com/a-h/templ"
)

// RulesView is the Admin → Rules page: the account's approval rules, the
// removed built-ins among them, and the form that proposes a change.
type RulesView struct {
	Rules []RuleRow
	Form  RuleForm // the form's values: empty, a rule to edit, or what was refused
	Error string
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
	RemindEvery   string // like 10m
	ApplyFrom     string
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
