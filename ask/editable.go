package ask

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Editable is a member of an ask's payload that the person may change before
// they sign: an argument of a tool call, or an argument of a run after its
// script. Path is its JSON pointer (RFC 6901) into the payload; the schema
// bounds what the person may write there.
type Editable struct {
	Path      string   `json:"path"`                 // "/tool_call/arguments/content", "/run/argv/2"
	Type      string   `json:"type"`                 // string, number, integer or boolean: the original value's, when not sent
	Enum      []string `json:"enum,omitempty"`       // a string's allowed values
	MaxLength int      `json:"max_length,omitempty"` // a string's longest value, in characters; 0: MaxEditableLength
}

// The bounds of what may be marked editable.
const (
	MaxEditable       = 20       // members of one ask
	MaxEditableLength = 64 << 10 // characters of one string
	maxEnum           = 50
)

var editableTypes = []string{"string", "number", "integer", "boolean"}

// EditableHelp says, for approvals_create's description, what may be editable.
const EditableHelp = `Members of the payload the person may change before they sign: at most 20, each a JSON pointer ("/tool_call/arguments/content") or a dotted path ("tool_call.arguments.content", "run.argv[2]"), or an object {"path", "type", "enum", "max_length"}. Only a tool_call's arguments and a run's argv after argv[0] are editable, and only where the value is a string, number or boolean. The answer is then decision approve_edited with edited_payload and its hash; act on the edited payload.`

// ParseEditable reads approvals_create's editable argument for an ask of
// kind whose canonical payload is payload: each entry a path or an object
// with a path and a schema. It returns them with their paths as JSON
// pointers and their types filled in, or nil when none were sent. Every
// refusal names the entry at fault.
func ParseEditable(kind string, raw json.RawMessage, payload []byte) ([]Editable, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var entries []json.RawMessage
	if err := json.Unmarshal(raw, &entries); err != nil {
		return nil, Invalid("editable", "must be an array of paths or {path, type, enum, max_length} objects")
	}
	if len(entries) == 0 {
		return nil, nil
	}
	if kind != KindToolCall && kind != KindRun {
		return nil, Invalid("editable", "only a tool_call's arguments and a run's argv are editable; a %s ask is signed as filed", kind)
	}
	if len(entries) > MaxEditable {
		return nil, Invalid("editable", "at most %d members, got %d", MaxEditable, len(entries))
	}
	tree, err := decodeTree(payload)
	if err != nil {
		return nil, Invalid("payload", "%v", err)
	}
	var out []Editable
	for i, entry := range entries {
		field := fmt.Sprintf("editable[%d]", i)
		var e Editable
		if entry[0] == '"' {
			if err := json.Unmarshal(entry, &e.Path); err != nil {
				return nil, Invalid(field, "not a string")
			}
		} else if err := decodeStrict(entry, &e); err != nil {
			return nil, Invalid(field, "must be a path, or an object with path and optionally type, enum and max_length: %v", err)
		}
		tokens, err := PathTokens(e.Path)
		if err != nil {
			return nil, Invalid(field, "%v", err)
		}
		if err := editableTarget(kind, tokens); err != nil {
			return nil, Invalid(field, "%s: %v", e.Path, err)
		}
		e.Path = Pointer(tokens)
		if slices.ContainsFunc(out, func(o Editable) bool { return o.Path == e.Path }) {
			return nil, Invalid(field, "%s is named twice", e.Path)
		}
		value, found := at(tree, tokens)
		if !found {
			return nil, Invalid(field, "the payload has no member %s", e.Path)
		}
		if err := e.fill(field, value); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// editableTarget says whether the member at tokens may be edited on an ask
// of kind: a tool call's arguments, never its server or tool; a run's
// argv after argv[0], never the script, its hash, the runner or the effect.
func editableTarget(kind string, tokens []string) error {
	if len(tokens) == 0 || tokens[0] != kind {
		return fmt.Errorf("starts at the payload's one member, %q", kind)
	}
	switch kind {
	case KindToolCall:
		if len(tokens) < 3 || tokens[1] != "arguments" {
			return fmt.Errorf("only the call's arguments are editable (tool_call.arguments.<name>), never its server or tool")
		}
	case KindRun:
		n, err := strconv.Atoi(tokensAt(tokens, 2))
		if len(tokens) != 3 || tokens[1] != "argv" || err != nil || strconv.Itoa(n) != tokens[2] {
			return fmt.Errorf("only an argument of the run is editable (run.argv[<n>]), never its script, hash, runner or effect")
		}
		if n == 0 {
			return fmt.Errorf("argv[0] is the pinned script: it is never editable")
		}
	}
	return nil
}

func tokensAt(tokens []string, i int) string {
	if i < len(tokens) {
		return tokens[i]
	}
	return ""
}

// fill checks the entry's schema against the value the agent filed, and
// fills in the type from the value when none was sent.
func (e *Editable) fill(field string, value any) error {
	kind := jsonKind(value)
	if kind == "" {
		return Invalid(field, "%s holds %s: only a string, number or boolean is editable", e.Path, jsonType(value))
	}
	if e.Type == "" {
		e.Type = kind
		if kind == "number" && isInteger(value) {
			e.Type = "integer"
		}
	}
	if !slices.Contains(editableTypes, e.Type) {
		return Invalid(field+".type", "unknown type %q: one of %s", clip(e.Type), strings.Join(editableTypes, ", "))
	}
	if e.Type != "string" && (len(e.Enum) > 0 || e.MaxLength != 0) {
		return Invalid(field, "enum and max_length bound a string, not a %s", e.Type)
	}
	if e.MaxLength < 0 || e.MaxLength > MaxEditableLength {
		return Invalid(field+".max_length", "from 1 to %d characters", MaxEditableLength)
	}
	if len(e.Enum) > maxEnum {
		return Invalid(field+".enum", "at most %d values, got %d", maxEnum, len(e.Enum))
	}
	for j, v := range e.Enum {
		if err := checkText(fmt.Sprintf("%s.enum[%d]", field, j), v, 200, true, true); err != nil {
			return err
		}
	}
	if err := e.Allows(value); err != nil {
		return Invalid(field, "the value the ask was filed with does not meet its own schema: %v", err)
	}
	return nil
}

// Allows says whether the person may write value (decoded with UseNumber)
// at the entry's path.
func (e Editable) Allows(value any) error {
	switch e.Type {
	case "string":
		s, ok := value.(string)
		if !ok {
			return fmt.Errorf("%s must be a string, not %s", e.Path, jsonType(value))
		}
		limit := e.MaxLength
		if limit == 0 {
			limit = MaxEditableLength
		}
		if n := utf8.RuneCountInString(s); n > limit {
			return fmt.Errorf("%s is at most %d characters, got %d", e.Path, limit, n)
		}
		if strings.ContainsRune(s, 0) || !utf8.ValidString(s) {
			return fmt.Errorf("%s must be UTF-8 text without NUL", e.Path)
		}
		if len(e.Enum) > 0 && !slices.Contains(e.Enum, s) {
			return fmt.Errorf("%s must be one of %s", e.Path, strings.Join(e.Enum, ", "))
		}
	case "number", "integer":
		if jsonKind(value) != "number" {
			return fmt.Errorf("%s must be a number, not %s", e.Path, jsonType(value))
		}
		if e.Type == "integer" && !isInteger(value) {
			return fmt.Errorf("%s must be a whole number", e.Path)
		}
	case "boolean":
		if _, ok := value.(bool); !ok {
			return fmt.Errorf("%s must be true or false, not %s", e.Path, jsonType(value))
		}
	}
	return nil
}

// EditableAt finds the entry for path among list.
func EditableAt(list []Editable, path string) (Editable, bool) {
	i := slices.IndexFunc(list, func(e Editable) bool { return e.Path == path })
	if i < 0 {
		return Editable{}, false
	}
	return list[i], true
}

// ValueAt reads the member at pointer from JSON bytes, decoded with
// UseNumber; ok is false when there is none.
func ValueAt(raw []byte, pointer string) (any, bool) {
	tokens, err := PathTokens(pointer)
	if err != nil {
		return nil, false
	}
	tree, err := decodeTree(raw)
	if err != nil {
		return nil, false
	}
	return at(tree, tokens)
}

func at(tree any, tokens []string) (any, bool) {
	v := tree
	for _, t := range tokens {
		switch x := v.(type) {
		case map[string]any:
			next, ok := x[t]
			if !ok {
				return nil, false
			}
			v = next
		case []any:
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 || i >= len(x) || strconv.Itoa(i) != t {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// PathTokens reads a JSON pointer ("/tool_call/arguments/content") or a
// dotted path ("tool_call.arguments.content", "run.argv[2]") into its
// reference tokens.
func PathTokens(path string) ([]string, error) {
	switch {
	case path == "":
		return nil, fmt.Errorf("the path is empty")
	case len(path) > 500:
		return nil, fmt.Errorf("the path is longer than 500 bytes")
	case strings.HasPrefix(path, "/"):
		var out []string
		for _, t := range strings.Split(path[1:], "/") {
			if strings.Contains(strings.ReplaceAll(strings.ReplaceAll(t, "~0", ""), "~1", ""), "~") {
				return nil, fmt.Errorf("%q is not a JSON pointer: ~ is written ~0 and / is ~1", path)
			}
			out = append(out, strings.NewReplacer("~1", "/", "~0", "~").Replace(t))
		}
		return out, nil
	}
	var out []string
	for _, part := range strings.Split(path, ".") {
		name, rest, _ := strings.Cut(part, "[")
		if name == "" {
			return nil, fmt.Errorf("%q is not a path: write tool_call.arguments.content, run.argv[2] or a JSON pointer", path)
		}
		out = append(out, name)
		for rest != "" {
			idx, after, ok := strings.Cut(rest, "]")
			if n, err := strconv.Atoi(idx); !ok || err != nil || n < 0 || strconv.Itoa(n) != idx {
				return nil, fmt.Errorf("%q has an index that is not [<n>]", path)
			}
			out = append(out, idx)
			if after == "" {
				break
			}
			if !strings.HasPrefix(after, "[") {
				return nil, fmt.Errorf("%q is not a path: write tool_call.arguments.content, run.argv[2] or a JSON pointer", path)
			}
			rest = after[1:]
		}
	}
	return out, nil
}

// Pointer writes reference tokens as a JSON pointer.
func Pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteString("/")
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(t))
	}
	return b.String()
}

// jsonKind is "string", "number" or "boolean" for a scalar, "" otherwise.
func jsonKind(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case json.Number:
		return "number"
	case bool:
		return "boolean"
	}
	return ""
}

func isInteger(v any) bool {
	n, ok := v.(json.Number)
	if !ok {
		return false
	}
	_, err := strconv.ParseInt(n.String(), 10, 64)
	return err == nil
}
