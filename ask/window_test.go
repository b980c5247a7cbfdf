package ask

import (
	"encoding/json"
	"testing"
)

// canonicalOf freezes a payload as filing does.
func canonicalOf(t *testing.T, kind, payload string) string {
	t.Helper()
	p, err := ParsePayload(kind, json.RawMessage(payload), testNow)
	if err != nil {
		t.Fatalf("ParsePayload(%s): %v", kind, err)
	}
	return string(p.Canonical)
}

// A window matches what an ask is about: the server and tool of a call
// (not its arguments), a review's URL, a document and its space (not its
// version), an advisory request's target; the kinds that always ask a
// person have none.
func TestAnAskTargetIsWhatAWindowMatches(t *testing.T) {
	tests := []struct {
		name    string
		kind    string
		payload string
		want    Target
	}{
		{"a tool call: its server and tool", KindToolCall, toolCallJSON(`"server":"filesystem","tool":"write_file","arguments":{"path":"/tmp/a"}`), Target{Server: "filesystem", Tool: "write_file"}},
		{"a review: its URL", KindReview, `{"review":{"url":"https://docs.example.com/a"}}`, Target{URL: "https://docs.example.com/a"}},
		{"a document: its id and space, not its version", KindDocument, `{"document":{"document_id":"doc_1","space_id":"eng","version":3}}`, Target{DocumentID: "doc_1", SpaceID: "eng"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := TargetOf(tc.kind, canonicalOf(t, tc.kind, tc.payload))
			if !ok || got != tc.want {
				t.Fatalf("TargetOf = %+v, %t; want %+v", got, ok, tc.want)
			}
		})
	}
	t.Run("a request: its target type and id", func(t *testing.T) {
		r, err := ParseRequest(json.RawMessage(`{"kind":"work_change","title":"Tidy the backlog","targetType":"board","targetId":"b_1","proposal":{"mode":"advisory"},"idempotencyKey":"k1"}`))
		if err != nil {
			t.Fatal(err)
		}
		got, ok := TargetOf(KindWorkChange, string(r.Canonical))
		if want := (Target{TargetType: "board", TargetID: "b_1"}); !ok || got != want {
			t.Fatalf("TargetOf = %+v, %t; want %+v", got, ok, want)
		}
		if _, ok := TargetOf(KindLifeChange, string(r.Canonical)); ok {
			t.Errorf("a work_change payload reads as a life_change target")
		}
	})
	for _, kind := range []string{KindPullRequest, KindRoll, KindRun, KindDecision, KindAutoApprove, KindRuleChange, KindMemberChange} {
		if _, ok := TargetOf(kind, `{}`); ok {
			t.Errorf("a %s ask has a target: no window may cover it", kind)
		}
	}
	if _, ok := TargetOf(KindToolCall, `{"review":{"url":"https://x.example"}}`); ok {
		t.Errorf("a tool_call whose payload is not a call has a target")
	}
}

// A window's JSON is its RFC 8785 form, the text of the proof's vector;
// reading it back takes only that text.
func TestAWindowHasOneText(t *testing.T) {
	w := Window{Agent: "agent:bot", Kind: KindToolCall, Minutes: 30, Target: Target{Server: "filesystem", Tool: "write_file"}}
	const want = `{"agent":"agent:bot","kind":"tool_call","minutes":30,"target":{"server":"filesystem","tool":"write_file"}}`
	if got := w.JSON(); got != want {
		t.Fatalf("JSON = %s, want %s", got, want)
	}
	if got, err := ReadWindow(want); err != nil || got != w {
		t.Fatalf("ReadWindow = %+v, %v; want %+v", got, err, w)
	}
	for name, text := range map[string]string{
		"white space":        `{"agent":"agent:bot", "kind":"tool_call","minutes":30,"target":{"server":"filesystem","tool":"write_file"}}`,
		"members reordered":  `{"kind":"tool_call","agent":"agent:bot","minutes":30,"target":{"server":"filesystem","tool":"write_file"}}`,
		"a name in capitals": `{"Agent":"agent:bot","kind":"tool_call","minutes":30,"target":{"server":"filesystem","tool":"write_file"}}`,
		"an unknown member":  `{"agent":"agent:bot","kind":"tool_call","minutes":30,"target":{"server":"filesystem","tool":"write_file"},"until":"never"}`,
		"an empty member":    `{"agent":"agent:bot","kind":"tool_call","minutes":30,"target":{"server":"filesystem","space_id":"","tool":"write_file"}}`,
		"not JSON":           `approve`,
	} {
		if _, err := ReadWindow(text); err == nil {
			t.Errorf("ReadWindow accepts %s", name)
		}
	}
}

func TestAWindowLastsALengthFromTheMenu(t *testing.T) {
	for _, m := range []int{15, 30, 60, 120, 240, 480} {
		if err := CheckWindowMinutes(m); err != nil {
			t.Errorf("%d minutes: %v", m, err)
		}
	}
	for _, m := range []int{0, -30, 14, 45, 481, 1440} {
		err := CheckWindowMinutes(m)
		wantRefusal(t, err, InvalidArgument, "minutes")
	}
	for m, want := range map[int]string{15: "15 minutes", 30: "30 minutes", 60: "1 hour", 120: "2 hours", 480: "8 hours"} {
		if got := WindowLength(m); got != want {
			t.Errorf("WindowLength(%d) = %q, want %q", m, got, want)
		}
	}
}
