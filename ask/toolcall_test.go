package ask

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"
)

func toolCallJSON(members string) string { return `{"tool_call":{` + members + `}}` }

func TestParsePayloadToolCall(t *testing.T) {
	big := `"x":"` + strings.Repeat("a", MaxToolCallArguments-8) + `"` // {"x":"…"} is exactly 64 KiB
	tests := []struct {
		name    string
		payload string
		code    Code
		field   string
	}{
		{"a call with arguments is accepted", toolCallJSON(`"server":"filesystem","tool":"write_file","arguments":{"path":"/tmp/a","content":"hi"}`), "", ""},
		{"a call with no arguments is accepted", toolCallJSON(`"server":"filesystem","tool":"list_allowed_directories","arguments":{}`), "", ""},
		{"arguments may hold anything, null and nesting included", toolCallJSON(`"server":"acme","tool":"delete_case","arguments":{"id":"42","force":true,"n":1.5,"tags":["a",null],"opts":{"deep":{"x":null}}}`), "", ""},
		{"a tool name with dots and dashes is valid", toolCallJSON(`"server":"acme","tool":"cases.delete-v2","arguments":{}`), "", ""},
		{"arguments of exactly 64 KiB canonical are accepted", toolCallJSON(`"server":"acme","tool":"put","arguments":{` + big + `}`), "", ""},
		{"arguments over 64 KiB canonical are refused", toolCallJSON(`"server":"acme","tool":"put","arguments":{` + big + `,"y":1}`), InvalidArgument, "payload.tool_call.arguments"},
		{"server is required", toolCallJSON(`"tool":"write_file","arguments":{}`), InvalidArgument, "payload.tool_call.server"},
		{"server is one line", toolCallJSON(`"server":"file\nsystem","tool":"write_file","arguments":{}`), InvalidArgument, "payload.tool_call.server"},
		{"server is at most 200 characters", toolCallJSON(`"server":"` + strings.Repeat("s", 201) + `","tool":"write_file","arguments":{}`), InvalidArgument, "payload.tool_call.server"},
		{"server of 200 characters is accepted", toolCallJSON(`"server":"` + strings.Repeat("s", 200) + `","tool":"write_file","arguments":{}`), "", ""},
		{"tool is required", toolCallJSON(`"server":"acme","arguments":{}`), InvalidArgument, "payload.tool_call.tool"},
		{"tool with a space is not an MCP tool name", toolCallJSON(`"server":"acme","tool":"delete case","arguments":{}`), InvalidArgument, "payload.tool_call.tool"},
		{"tool with a slash is not an MCP tool name", toolCallJSON(`"server":"acme","tool":"fs/write","arguments":{}`), InvalidArgument, "payload.tool_call.tool"},
		{"tool of 129 characters is refused", toolCallJSON(`"server":"acme","tool":"` + strings.Repeat("t", 129) + `","arguments":{}`), InvalidArgument, "payload.tool_call.tool"},
		{"arguments are required", toolCallJSON(`"server":"acme","tool":"write_file"`), InvalidArgument, "payload.tool_call.arguments"},
		{"arguments must be an object, not a list", toolCallJSON(`"server":"acme","tool":"write_file","arguments":["a"]`), InvalidArgument, "payload.tool_call.arguments"},
		{"arguments must not be null", toolCallJSON(`"server":"acme","tool":"write_file","arguments":null`), InvalidArgument, "payload.tool_call.arguments"},
		{"an unknown member is refused", toolCallJSON(`"server":"acme","tool":"write_file","arguments":{},"caller":"x"`), InvalidArgument, "payload.tool_call.caller"},
		{"a member named twice inside the arguments is refused", toolCallJSON(`"server":"acme","tool":"write_file","arguments":{"path":"/a","path":"/etc/passwd"}`), InvalidArgument, "payload"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParsePayload(KindToolCall, json.RawMessage(tc.payload), testNow)
			wantRefusal(t, err, tc.code, tc.field)
			if err == nil && (len(p.SHA256) != 64 || len(p.Canonical) == 0) {
				t.Errorf("payload = %+v, want it frozen and hashed", p)
			}
		})
	}
}

func TestAToolCallsExpiresAtIsWhenTheGateStopsWaiting(t *testing.T) {
	at := func(d time.Duration) string { return strconv.FormatInt(testNow.Add(d).Unix(), 10) }
	call := func(expiresAt string) string {
		return toolCallJSON(`"server":"acme","tool":"delete_case","arguments":{"id":"42"},"expires_at":` + expiresAt)
	}
	tests := []struct {
		name     string
		payload  string
		field    string
		wantLife time.Duration // the ask's life from now; 0 when the kind sets none
	}{
		{"no expires_at sets no life of its own", toolCallJSON(`"server":"acme","tool":"delete_case","arguments":{}`), "", 0},
		{"45 seconds ahead is the ask's life", call(at(45 * time.Second)), "", 45 * time.Second},
		{"exactly 24 hours ahead is accepted", call(at(24 * time.Hour)), "", 24 * time.Hour},
		{"a second past 24 hours is refused", call(at(24*time.Hour + time.Second)), "payload.tool_call.expires_at", 0},
		{"now is refused: the gate already stopped waiting", call(at(0)), "payload.tool_call.expires_at", 0},
		{"the past is refused", call(at(-time.Minute)), "payload.tool_call.expires_at", 0},
		{"a fraction is refused", call(at(time.Minute) + ".5"), "payload.tool_call.expires_at", 0},
		{"a string is refused", call(`"` + at(time.Minute) + `"`), "payload.tool_call.expires_at", 0},
		{"null is refused", call(`null`), "payload.tool_call.expires_at", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParsePayload(KindToolCall, json.RawMessage(tc.payload), testNow)
			if tc.field != "" {
				wantRefusal(t, err, InvalidArgument, tc.field)
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			var got time.Duration
			if !p.ExpiresAt.IsZero() {
				got = p.ExpiresAt.Sub(testNow.Truncate(time.Second))
			}
			if got != tc.wantLife {
				t.Errorf("the ask's life is %s, want %s", got, tc.wantLife)
			}
			if tc.wantLife != 0 && !strings.Contains(string(p.Canonical), `"expires_at":`) {
				t.Errorf("canonical %s lacks expires_at: the person signs it with the call", p.Canonical)
			}
		})
	}
}
