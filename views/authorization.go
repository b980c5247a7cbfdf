package views

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/countersign/countersign/ask"
)

// DetailView is one of an authorization's authorization_details as the
// page shows it: in words where its type is known, as a folded tree of what
// was sent otherwise.
type DetailView struct {
	Type  string
	Words string   // "" for a type the page does not know
	Facts []Fact   // the members the words leave out (RFC 9396's common ones)
	Tree  TreeNode // the object as sent, for a type the page does not know
}

// Fact is one labelled value beside a detail's words.
type Fact struct {
	Label string
	Value string
}

// TreeNode is one value of a JSON tree: a leaf with its text, or an object
// or list with its members in order (an object's by name).
type TreeNode struct {
	Key      string // the member name, or "[i]" in a list; "" at the root
	Leaf     string // a leaf's value: a string as it is, any other as JSON
	Kind     string // object, list, string, number, true/false or null
	Children []TreeNode
	Deep     string // past maxTreeDepth: the rest, as compact JSON
}

// Branch says whether the node holds members.
func (n TreeNode) Branch() bool { return n.Kind == "object" || n.Kind == "list" }

// Size says how many members a branch holds, in words.
func (n TreeNode) Size() string {
	what := "member"
	if n.Kind == "list" {
		what = "entry"
	}
	if len(n.Children) == 1 {
		return "1 " + what
	}
	if what == "entry" {
		return fmt.Sprintf("%d entries", len(n.Children))
	}
	return fmt.Sprintf("%d members", len(n.Children))
}

// maxTreeDepth is how deep the tree nests lists on the page; deeper values
// show as JSON text, which still wraps at phone width.
const maxTreeDepth = 6

// AuthorizationDetails are the authorization's details, one view each, in
// the order sent.
func AuthorizationDetails(p *Authorization) []DetailView {
	list := ask.ReadAuthorizationDetails(p.AuthorizationDetails)
	out := make([]DetailView, 0, len(list))
	for _, raw := range list {
		if d, ok := ask.ReadDetail(raw); ok {
			out = append(out, DetailView{Type: d.Type, Words: detailWords(d), Facts: detailFacts(d)})
			continue
		}
		var typ struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(raw, &typ)
		out = append(out, DetailView{Type: typ.Type, Tree: treeOf(raw)})
	}
	return out
}

// detailWords says a detail of a known type in a sentence.
func detailWords(d ask.Detail) string {
	switch d.Type {
	case ask.DetailPaymentInitiation:
		s := "Pay " + d.InstructedAmount.Amount + " " + d.InstructedAmount.Currency + " to " + d.CreditorName
		if acct := d.CreditorAccount; acct != nil {
			if acct.IBAN != "" {
				s += ", account " + acct.IBAN
			} else {
				s += ", account " + acct.Other
			}
		}
		if d.RemittanceInformationUnstructured != "" {
			s += ", reference " + d.RemittanceInformationUnstructured
		}
		return s
	case ask.DetailAccountInformation:
		what := make([]string, len(d.Actions))
		for i, a := range d.Actions {
			what[i] = accountActionWords(a)
		}
		return "Read your accounts: " + strings.Join(what, ", ")
	case ask.DetailCountersignAction:
		s := d.Action + " on " + d.Target
		if d.Amount != nil {
			s += ", amount " + d.Amount.Value + " " + d.Amount.Currency
		}
		return s
	}
	return ""
}

// accountActionWords says an account_information action in words: read_x
// reads x, and other underscores read as spaces.
func accountActionWords(a string) string {
	switch a {
	case "list_accounts":
		return "the list of your accounts"
	}
	return strings.ReplaceAll(strings.TrimPrefix(a, "read_"), "_", " ")
}

// detailFacts are RFC 9396's common members a detail holds that its words
// do not say.
func detailFacts(d ask.Detail) []Fact {
	var facts []Fact
	add := func(label string, v []string) {
		if len(v) > 0 {
			facts = append(facts, Fact{label, strings.Join(v, ", ")})
		}
	}
	add("At", d.Locations)
	if d.Type != ask.DetailAccountInformation {
		add("Actions", d.Actions)
	}
	add("Data types", d.Datatypes)
	if d.Identifier != "" {
		facts = append(facts, Fact{"Identifier", d.Identifier})
	}
	add("Privileges", d.Privileges)
	return facts
}

// treeOf reads one JSON value into a tree; a value that does not read is a
// leaf of its text.
func treeOf(raw json.RawMessage) TreeNode {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return TreeNode{Kind: "string", Leaf: string(raw)}
	}
	return nodeOf("", v, 0)
}

func nodeOf(key string, v any, depth int) TreeNode {
	n := TreeNode{Key: key}
	switch x := v.(type) {
	case map[string]any:
		n.Kind = "object"
		if depth >= maxTreeDepth {
			n.Deep = compactJSON(x)
			return n
		}
		names := make([]string, 0, len(x))
		for k := range x {
			names = append(names, k)
		}
		slices.Sort(names)
		for _, k := range names {
			n.Children = append(n.Children, nodeOf(k, x[k], depth+1))
		}
	case []any:
		n.Kind = "list"
		if depth >= maxTreeDepth {
			n.Deep = compactJSON(x)
			return n
		}
		for i, e := range x {
			n.Children = append(n.Children, nodeOf(fmt.Sprintf("[%d]", i), e, depth+1))
		}
	case string:
		n.Kind, n.Leaf = "string", x
	case json.Number:
		n.Kind, n.Leaf = "number", x.String()
	case bool:
		n.Kind, n.Leaf = "boolean", fmt.Sprint(x)
	default:
		n.Kind, n.Leaf = "null", "null"
	}
	return n
}

func compactJSON(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// authorizationCard is the card rows of an authorization: who asks, for
// what scope, each detail in a few words, and the binding message.
func authorizationCard(p *Authorization) []CardRow {
	rows := []CardRow{{Label: "Asks", Values: []string{p.Client.Name}}, {Label: "Scope", Values: strings.Fields(p.Scope), Code: true}}
	if details := AuthorizationDetails(p); len(details) > 0 {
		what := make([]string, len(details))
		for i, d := range details {
			what[i] = d.Words
			if what[i] == "" {
				what[i] = d.Type + ": shown below as sent"
			}
			what[i] = clip(what[i])
		}
		rows = append(rows, CardRow{Label: "Authorizes", Values: what})
	}
	if p.BindingMessage != "" {
		rows = append(rows, CardRow{Label: "Message", Values: []string{p.BindingMessage}})
	}
	return rows
}
