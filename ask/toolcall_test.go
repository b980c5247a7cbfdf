package ask

import (
	"encoding/json"
	"strings"
	"testing"
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
