package ask_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/countersign/countersign/ask"
)

const (
	writeFile = `{"tool_call":{"arguments":{"content":"hello","mode":"append","path":"/srv/notes.txt","size":5,"sync":true,"tags":["a"]},"server":"filesystem","tool":"write_file"}}`
	pinnedRun = `{"run":{"argv":["deploy.sh","eu","3"],"effect":"remote"}}`
)

// An agent marks members of its payload that the person may change: a
// dotted path or a JSON pointer, with a schema or the value's own type.
func TestEditableMembersAreReadAsPointersWithTheirSchema(t *testing.T) {
	got, err := ask.ParseEditable(ask.KindToolCall, json.RawMessage(`["tool_call.arguments.content",
		{"path": "/tool_call/arguments/mode", "enum": ["append", "replace"]},
		{"path": "tool_call.arguments.size"}, "tool_call.arguments.sync"]`), []byte(writeFile))
	if err != nil {
		t.Fatal(err)
	}
	want := []ask.Editable{
		{Path: "/tool_call/arguments/content", Type: "string"},
		{Path: "/tool_call/arguments/mode", Type: "string", Enum: []string{"append", "replace"}},
		{Path: "/tool_call/arguments/size", Type: "integer"},
		{Path: "/tool_call/arguments/sync", Type: "boolean"},
	}
	if raw, wantRaw := mustJSON(t, got), mustJSON(t, want); raw != wantRaw {
		t.Errorf("editable = %s, want %s", raw, wantRaw)
	}
	run, err := ask.ParseEditable(ask.KindRun, json.RawMessage(`["run.argv[2]"]`), []byte(pinnedRun))
	if err != nil || len(run) != 1 || run[0].Path != "/run/argv/2" || run[0].Type != "string" {
		t.Errorf("run.argv[2]: %+v %v", run, err)
	}
}

func TestEditableRefusesWhatAPersonMustNotChange(t *testing.T) {
	for _, tc := range []struct {
		name, kind, payload, editable, field, says string
	}{
		{"the tool", ask.KindToolCall, writeFile, `["tool_call.tool"]`, "editable[0]", "never its server or tool"},
		{"the server", ask.KindToolCall, writeFile, `["/tool_call/server"]`, "editable[0]", "never its server or tool"},
		{"the script", ask.KindRun, pinnedRun, `["run.argv[0]"]`, "editable[0]", "never editable"},
		{"the effect", ask.KindRun, pinnedRun, `["run.effect"]`, "editable[0]", "never its script"},
		{"another kind", ask.KindReview, `{"review":{"url":"https://x.example/1"}}`, `["review.url"]`, "editable", "signed as filed"},
		{"a member the payload lacks", ask.KindToolCall, writeFile, `["tool_call.arguments.owner"]`, "editable[0]", "has no member"},
		{"a list", ask.KindToolCall, writeFile, `["tool_call.arguments.tags"]`, "editable[0]", "only a string, number or boolean"},
		{"a member named twice", ask.KindToolCall, writeFile, `["tool_call.arguments.content", "/tool_call/arguments/content"]`, "editable[1]", "named twice"},
		{"an enum the original is not in", ask.KindToolCall, writeFile, `[{"path": "tool_call.arguments.mode", "enum": ["replace"]}]`, "editable[0]", "does not meet its own schema"},
		{"a max_length the original exceeds", ask.KindToolCall, writeFile, `[{"path": "tool_call.arguments.content", "max_length": 3}]`, "editable[0]", "does not meet its own schema"},
		{"an enum on a number", ask.KindToolCall, writeFile, `[{"path": "tool_call.arguments.size", "enum": ["5"]}]`, "editable[0]", "bound a string"},
		{"an unknown member of an entry", ask.KindToolCall, writeFile, `[{"path": "tool_call.arguments.content", "pattern": "x"}]`, "editable[0]", "unknown field"},
		{"an unknown type", ask.KindToolCall, writeFile, `[{"path": "tool_call.arguments.content", "type": "date"}]`, "editable[0].type", "unknown type"},
		{"a bad index", ask.KindRun, pinnedRun, `["run.argv[x]"]`, "editable[0]", "index"},
		{"not a list", ask.KindToolCall, writeFile, `"tool_call.arguments.content"`, "editable", "must be an array"},
		{"21 members", ask.KindToolCall, writeFile, `[` + strings.Repeat(`"tool_call.arguments.content",`, 20) + `"tool_call.arguments.content"]`, "editable", "at most 20"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ask.ParseEditable(tc.kind, json.RawMessage(tc.editable), []byte(tc.payload))
			if ask.FieldOf(err) != tc.field || err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("ParseEditable = %v, want a refusal of %s saying %q", err, tc.field, tc.says)
			}
		})
	}
}

func TestAnEditableMemberAllowsOnlyWhatItsSchemaSays(t *testing.T) {
	mode := ask.Editable{Path: "/tool_call/arguments/mode", Type: "string", Enum: []string{"append", "replace"}}
	short := ask.Editable{Path: "/a", Type: "string", MaxLength: 3}
	count := ask.Editable{Path: "/n", Type: "integer"}
	for _, tc := range []struct {
		e     ask.Editable
		value any
		ok    bool
	}{
		{mode, "replace", true}, {mode, "truncate", false}, {mode, json.Number("1"), false},
		{short, "abc", true}, {short, "abcd", false}, {short, "a\x00", false},
		{count, json.Number("7"), true}, {count, json.Number("7.5"), false}, {count, "7", false},
		{ask.Editable{Path: "/b", Type: "boolean"}, false, true}, {ask.Editable{Path: "/b", Type: "boolean"}, "false", false},
	} {
		if err := tc.e.Allows(tc.value); (err == nil) != tc.ok {
			t.Errorf("%s allows %#v: %v, want ok %v", tc.e.Path, tc.value, err, tc.ok)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}
