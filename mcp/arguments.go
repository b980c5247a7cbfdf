package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/countersign/countersign/models/core"
)

// decodeArguments reads a tool's arguments into In. They must be one JSON
// object that names no member twice (see strictArguments) and matches the
// tool's input schema; a mismatch is INVALID_ARGUMENT naming the argument.
// The arguments are parsed twice, once generically for the schema and once
// into In; a call whose arguments are whole and plain (the members of its
// objects all counted in the map, and of the shape the schema compiles to)
// is neither walked token by token nor run through the schema's validator:
// those run only to name what is wrong.
func decodeArguments[In any](raw json.RawMessage, input *inputSchema) (In, error) {
	var in In
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("{}")
	}
	var v map[string]any
	err := json.Unmarshal(raw, &v)
	if err != nil || objectMembers(raw) != mapEntries(v) {
		if err := strictArguments(raw); err != nil {
			return in, err
		}
	}
	if err != nil || v == nil { // a map that failed part way may hold the rest
		return in, core.Invalid("", "the arguments must be a JSON object")
	}
	if err := nullMembers(v, input.resolved.Schema()); err != nil {
		return in, err
	}
	if !input.shape.matches(v) {
		if err := input.resolved.Validate(v); err != nil {
			field := ""
			if m := schemaField.FindStringSubmatch(err.Error()); m != nil {
				field = m[1] + m[2] + m[3]
			}
			return in, core.Invalid(field, "validating \"arguments\": %v", err)
		}
	}
	if err = json.Unmarshal(raw, &in); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return in, core.Invalid(typeErr.Field, "must be %s, not %s", jsonKind(typeErr.Type.Kind()), typeErr.Value)
		}
		return in, core.Invalid("", "%v", err)
	}
	return in, nil
}

// objectMembers counts the members of every object in raw, which is valid
// JSON: the colons outside strings.
func objectMembers(raw []byte) int {
	n := 0
	inString, escaped := false, false
	for _, b := range raw {
		switch {
		case escaped:
			escaped = false
		case inString:
			escaped = b == '\\'
			inString = b != '"'
		case b == '"':
			inString = true
		case b == ':':
			n++
		}
	}
	return n
}

// mapEntries counts the entries of every map in a decoded JSON value. It
// equals objectMembers of the JSON unless an object named a member twice:
// the map kept only the last.
func mapEntries(v any) int {
	n := 0
	switch v := v.(type) {
	case map[string]any:
		n = len(v)
		for _, e := range v {
			n += mapEntries(e)
		}
	case []any:
		for _, e := range v {
			n += mapEntries(e)
		}
	}
	return n
}

// nullArguments refuses, for a tool that reads its arguments itself
// (rawInput), a top-level argument sent as null, as decodeArguments does; a
// body that is not an object is left to the tool's own reading.
func nullArguments(raw json.RawMessage, schema *jsonschema.Resolved) error {
	var v map[string]any
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	return nullMembers(v, schema.Schema())
}

// nullMembers refuses an argument sent as null, required or optional alike,
// with INVALID_ARGUMENT naming it: null is not a value of any of them (the
// schemas say so: see singleTypes), and an optional member means "none" by
// being left out, as inside a payload or a context (package ask). (The schema
// validator would answer with a Go reflection message.) It looks into the
// members of objects the schema describes (scope.ask_kinds), not into
// free-form ones (payload, context), whose own checks refuse null. The first
// in name order is named, so the answer is the same on every try.
func nullMembers(args map[string]any, schema *jsonschema.Schema) error {
	return nullMembersAt("", args, schema)
}

func nullMembersAt(path string, args map[string]any, schema *jsonschema.Schema) error {
	look := false
	for _, v := range args {
		_, object := v.(map[string]any)
		look = look || v == nil || object
	}
	if !look {
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(args)) {
		prop, known := schema.Properties[name]
		if !known {
			continue
		}
		field := path + name
		if nested, ok := args[name].(map[string]any); ok && len(prop.Properties) > 0 {
			if err := nullMembersAt(field+".", nested, prop); err != nil {
				return err
			}
		}
		if args[name] != nil {
			continue
		}
		want := schemaKind(prop)
		if slices.Contains(schema.Required, name) {
			return core.Invalid(field, "must be %s, not null", want)
		}
		return core.Invalid(field, "must be %s, not null: leave an optional member out instead", want)
	}
	return nil
}

// schemaKind says in JSON's words what a property's schema type takes.
func schemaKind(prop *jsonschema.Schema) string {
	typ := prop.Type
	for _, t := range prop.Types { // a Go slice infers ["null", "array"]
		if t != "null" {
			typ = t
		}
	}
	switch typ {
	case "string":
		return "a string"
	case "integer":
		return "a whole number"
	case "number":
		return "a number"
	case "boolean":
		return "true or false"
	case "array":
		return "an array"
	case "object":
		return "an object"
	}
	return "a value"
}

// jsonKind says in JSON's words what a Go field of kind k takes.
func jsonKind(k reflect.Kind) string {
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number in range"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "a " + k.String()
}

// schemaField finds the argument a schema error is about: a missing required
// one, the property whose value failed, or one the tool does not take.
var schemaField = regexp.MustCompile(`missing properties: \["([a-zA-Z_]+)"|/properties/([a-zA-Z_]+)|additional properties \["([a-zA-Z_]+)"`)

// strictArguments refuses tool arguments that name a member twice in one
// object, at any depth. Decoded into a map or a struct, the last of two
// "repo" members would silently win: a person must sign exactly what the
// agent sent, so such a call is refused.
func strictArguments(raw json.RawMessage) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := walkValue(dec, ""); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return core.Invalid("", "the arguments hold more than one JSON value")
	}
	return nil
}

func walkValue(dec *json.Decoder, path string) error {
	tok, err := dec.Token()
	if err != nil {
		return core.Invalid(path, "not valid JSON: %v", err)
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			t, err := dec.Token()
			if err != nil {
				return core.Invalid(path, "not valid JSON: %v", err)
			}
			name := t.(string)
			child := name
			if path != "" {
				child = path + "." + name
			}
			if seen[name] {
				return core.Invalid(child, "this member appears twice; send each member once")
			}
			seen[name] = true
			if err := walkValue(dec, child); err != nil {
				return err
			}
		}
		_, err = dec.Token() // }
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			if err := walkValue(dec, path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
		_, err = dec.Token() // ]
	}
	if err != nil {
		return core.Invalid(path, "not valid JSON: %v", err)
	}
	return nil
}

// encodeResult is a tool result's output as JSON with no HTML escaping, so a
// payload's canonical bytes come back exactly as stored. It is both the text
// and the structured content of the result.
func encodeResult(out any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return nil, fmt.Errorf("encode result: %w", err)
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// inputSchema is a tool's input schema, resolved and compiled once, when
// the tool is defined.
type inputSchema struct {
	resolved *jsonschema.Resolved
	// shape passes the arguments that need no validator; nil: every call
	// is validated.
	shape *argumentsShape
}

func newInputSchema(resolved *jsonschema.Resolved) *inputSchema {
	return &inputSchema{resolved: resolved, shape: shapeOf(resolved.Schema())}
}

// argumentsShape is what a schema inferred from a Go struct says of a
// value: its JSON types, and for an object its members, which of them are
// required and whether others may come, for an array its items. A value it
// matches is one the schema's validator accepts.
type argumentsShape struct {
	types    []string // none: any
	members  map[string]*argumentsShape
	required []string
	closed   bool            // no member but those named
	items    *argumentsShape // nil: any
}

// falseSchema is the schema that accepts nothing (additionalProperties: false).
var falseSchema = jsonschema.Schema{Not: &jsonschema.Schema{}}

// shapeOf compiles a schema, or returns nil when it says more than a shape
// holds (an enum, a bound, a pattern, a reference…): then the validator
// decides every call.
func shapeOf(s *jsonschema.Schema) *argumentsShape {
	if s == nil {
		return nil
	}
	rest := *s
	// What a shape holds, and the annotations, which validate nothing.
	rest.Type, rest.Types, rest.Properties, rest.Required, rest.AdditionalProperties, rest.Items = "", nil, nil, nil, nil, nil
	rest.Title, rest.Description, rest.Comment, rest.Default, rest.Examples, rest.PropertyOrder = "", "", "", nil, nil, nil
	rest.Deprecated, rest.ReadOnly, rest.WriteOnly = false, false, false
	if !reflect.DeepEqual(rest, jsonschema.Schema{}) {
		return nil
	}
	sh := &argumentsShape{types: s.Types, required: s.Required}
	if s.Type != "" {
		sh.types = []string{s.Type}
	}
	switch {
	case s.AdditionalProperties == nil:
	case reflect.DeepEqual(*s.AdditionalProperties, falseSchema):
		sh.closed = true
	default:
		return nil
	}
	if s.Items != nil {
		if sh.items = shapeOf(s.Items); sh.items == nil {
			return nil
		}
	}
	if len(s.Properties) > 0 {
		sh.members = make(map[string]*argumentsShape, len(s.Properties))
		for name, p := range s.Properties {
			if sh.members[name] = shapeOf(p); sh.members[name] == nil {
				return nil
			}
		}
	}
	return sh
}

// matches says whether v, a value decoded from JSON into any, has the
// shape. A nil shape matches nothing.
func (sh *argumentsShape) matches(v any) bool {
	if sh == nil {
		return false
	}
	if len(sh.types) > 0 {
		t := jsonType(v)
		if !slices.Contains(sh.types, t) && (t != "integer" || !slices.Contains(sh.types, "number")) {
			return false
		}
	}
	switch v := v.(type) {
	case map[string]any:
		for _, name := range sh.required {
			if _, ok := v[name]; !ok {
				return false
			}
		}
		for name, e := range v {
			m, named := sh.members[name]
			if !named && sh.closed || named && !m.matches(e) {
				return false
			}
		}
	case []any:
		if sh.items != nil {
			for _, e := range v {
				if !sh.items.matches(e) {
					return false
				}
			}
		}
	}
	return true
}

// jsonType is the JSON type of a value decoded into any, as the schema
// validator names it: a number without a fraction is an integer.
func jsonType(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case float64:
		if _, frac := math.Modf(v); frac == 0 {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return ""
}
