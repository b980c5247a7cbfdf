package views

import (
	"encoding/json"
	"strings"

	"github.com/countersign/countersign/ask"
	"github.com/countersign/countersign/proof"
)

// EditField is a member of the payload the person may change before they
// approve, as its field shows it.
type EditField struct {
	Path      string // its JSON pointer
	Label     string // the member in words: "content", "argv[2]"
	Type      string // string, number, integer or boolean
	Enum      []string
	MaxLength int
	Original  string // the value as filed: a string's text, a number's digits, true or false
}

// Multiline says whether the field is a text area: a string without a list
// of values.
func (f EditField) Multiline() bool { return f.Type == "string" && len(f.Enum) == 0 }

// EditFields are the fields of the members of canonical (the payload) that
// list marks editable.
func EditFields(list []ask.Editable, canonical []byte) []EditField {
	out := make([]EditField, 0, len(list))
	for _, e := range list {
		v, _ := ask.ValueAt(canonical, e.Path)
		out = append(out, EditField{Path: e.Path, Label: memberLabel(e.Path), Type: e.Type, Enum: e.Enum, MaxLength: e.MaxLength, Original: scalarText(v)})
	}
	return out
}

// EditMade is one member the person changed, as the settled page shows it.
type EditMade struct {
	Label, Before, After string
}

// EditsMade are the members in which edited differs from the payload.
func EditsMade(payload, edited []byte) []EditMade {
	edits, err := proof.Edits(payload, edited)
	if err != nil {
		return nil
	}
	out := make([]EditMade, len(edits))
	for i, e := range edits {
		out[i] = EditMade{Label: memberLabel(e.Path), Before: jsonText(e.Before), After: jsonText(e.After)}
	}
	return out
}

// memberLabel names a member by its pointer, without the kind and a tool
// call's "arguments": "/tool_call/arguments/content" is "content",
// "/run/argv/2" is "argv[2]".
func memberLabel(pointer string) string {
	tokens, err := ask.PathTokens(pointer)
	if err != nil || len(tokens) < 2 {
		return pointer
	}
	tokens = tokens[1:]
	if tokens[0] == "arguments" && len(tokens) > 1 {
		tokens = tokens[1:]
	}
	var b strings.Builder
	for i, t := range tokens {
		switch {
		case i > 0 && isIndex(t):
			b.WriteString("[" + t + "]")
		case i > 0:
			b.WriteString("." + t)
		default:
			b.WriteString(t)
		}
	}
	return b.String()
}

func isIndex(t string) bool {
	return t != "" && strings.Trim(t, "0123456789") == ""
}

// scalarText is a scalar as a field holds it.
func scalarText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	case bool:
		if x {
			return "true"
		}
		return "false"
	}
	return ""
}

// jsonText is a JSON value as the page says it: a string's text, any other
// value's JSON, "(none)" for a member one side lacks.
func jsonText(raw json.RawMessage) string {
	if raw == nil {
		return "(none)"
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}
