package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/countersign/countersign/models/core"
)

// Every typed tool's input schema compiles to a shape, and the shape passes
// exactly the arguments its validator accepts: a value of every JSON type
// for every member, at every depth, every required member left out, and a
// member the tool does not take.
func TestEveryToolsShapePassesExactlyWhatItsSchemaAccepts(t *testing.T) {
	s := New(nil, Options{})
	compiled := 0
	for _, def := range s.tools() {
		input := def.input
		resolved := input.resolved
		if input.shape == nil {
			continue // a schema written by hand: validated on every call
		}
		compiled++
		t.Run(def.tool.Name, func(t *testing.T) {
			cases := argumentVariants(resolved.Schema())
			if len(cases) < 10 {
				t.Fatalf("only %d variants", len(cases))
			}
			for _, v := range cases {
				valid := resolved.Validate(v) == nil
				if got := input.shape.matches(v); got != valid {
					t.Errorf("the shape says %v and the validator %v of %v", got, valid, v)
				}
			}
		})
	}
	if tools := len(s.tools()); compiled < tools-1 {
		t.Errorf("%d of %d tools' schemas compiled to a shape; all but approval_request's should", compiled, tools)
	}
}

// A schema that says more than a shape holds compiles to none.
func TestASchemaWithAnEnumABoundOrAPatternHasNoShape(t *testing.T) {
	one, word := 1.0, "^[a-z]+$"
	for name, s := range map[string]*jsonschema.Schema{
		"an enum":           {Type: "string", Enum: []any{"a", "b"}},
		"a bound":           {Type: "integer", Minimum: &one},
		"a pattern":         {Type: "string", Pattern: word},
		"in depth":          {Type: "object", Properties: map[string]*jsonschema.Schema{"a": {Type: "array", Items: &jsonschema.Schema{Type: "string", Pattern: word}}}},
		"a oneOf":           {OneOf: []*jsonschema.Schema{{Type: "string"}, {Type: "integer"}}},
		"open, by a schema": {Type: "object", AdditionalProperties: &jsonschema.Schema{Type: "string"}},
	} {
		if sh := shapeOf(s); sh != nil {
			t.Errorf("%s compiled to %+v", name, sh)
		}
	}
}

// samples are decoded JSON values of every type.
var samples = []any{nil, true, "s", 2.0, 2.5, []any{}, []any{"s"}, []any{2.0, nil}, map[string]any{}, map[string]any{"x": "s"}}

// argumentVariants are arguments for an object schema: one that has every
// member (each with a value of its type), then that one with each member
// replaced by every sample and by the variants of its own schema, with each
// required member left out, and with a member the schema does not name.
func argumentVariants(s *jsonschema.Schema) []any {
	if s == nil || s.Type != "object" && !slices.Contains(s.Types, "object") {
		return nil
	}
	full := map[string]any{}
	for name, p := range s.Properties {
		full[name] = valueOf(p)
	}
	out := []any{full}
	for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
		p := s.Properties[name]
		values := append(slices.Clone(samples), argumentVariants(p)...)
		if p.Items != nil {
			for _, item := range append(slices.Clone(samples), argumentVariants(p.Items)...) {
				values = append(values, []any{valueOf(p.Items), item})
			}
		}
		for _, v := range values {
			m := maps.Clone(full)
			m[name] = v
			out = append(out, m)
		}
	}
	for _, name := range s.Required {
		m := maps.Clone(full)
		delete(m, name)
		out = append(out, m)
	}
	m := maps.Clone(full)
	m["not_a_member"] = "s"
	return append(out, m, map[string]any{})
}

// valueOf is a value of a schema's (first non-null) type.
func valueOf(s *jsonschema.Schema) any {
	typ := s.Type
	for _, t := range s.Types {
		if t != "null" {
			typ = t
		}
	}
	switch typ {
	case "string":
		return "s"
	case "integer":
		return 3.0
	case "number":
		return 1.5
	case "boolean":
		return true
	case "array":
		if s.Items != nil {
			return []any{valueOf(s.Items)}
		}
		return []any{}
	case "object":
		if vs := argumentVariants(s); len(vs) > 0 {
			return vs[0]
		}
		return map[string]any{}
	}
	panic(fmt.Sprintf("no value of type %q", typ))
}

// Arguments that are no plain JSON object, or name a member twice, are
// refused as the token walk refuses them, whichever check finds them.
func TestArgumentsThatAreNoPlainObjectAreRefusedNamingWhy(t *testing.T) {
	resolved, err := mustSchema[CreateInput]().Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	input := newInputSchema(resolved)
	for _, tc := range []struct{ raw, field, says string }{
		{`{"kind":"pull_request","title":1e999}`, "", "must be a JSON object"},
		{`[{"kind":"a"}]`, "", "must be a JSON object"},
		{`null`, "", "must be a JSON object"},
		{`{"kind":"a"} {"kind":"b"}`, "", "more than one JSON value"},
		{`{"title":"a: \"b\" \\","payload":{"x":{"y":1,"y":2}}}`, "payload.x.y", "appears twice"},
		{`{"links":[{"a":1},{"a":1,"a":2}]}`, "links[1].a", "appears twice"},
	} {
		_, err := decodeArguments[CreateInput](json.RawMessage(tc.raw), input)
		if core.CodeOf(err) != core.InvalidArgument || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v, want INVALID_ARGUMENT saying %q", tc.raw, err, tc.says)
			continue
		}
		var refusal *core.Error
		if errors.As(err, &refusal); refusal.Field != tc.field {
			t.Errorf("%s: names %q, want %q", tc.raw, refusal.Field, tc.field)
		}
	}
}
