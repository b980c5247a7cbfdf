package mcp

import (
	"encoding/json"
	"fmt"
	"testing"
)

// createArguments are approvals_create's arguments as countersign-load sends them.
func createArguments(tb testing.TB) json.RawMessage {
	tb.Helper()
	raw, err := json.Marshal(map[string]any{
		"kind": "pull_request", "title": "Merge acme/web#901", "summary": "Fixes the login redirect.",
		"approve_means": "I merge #901; nothing rolls", "deny_means": "#901 stays open",
		"payload": map[string]any{"pull_request": map[string]any{
			"repo": "Acme/Web", "number": 901, "head": fmt.Sprintf("%08x%032x", 3, 901), "title": "Fix login redirect",
		}},
		"context": map[string]any{"plan_id": "plan_1", "plan_item": "item_2", "job_id": "job_901"},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return raw
}

// BenchmarkDecodeCreateArguments is the argument decoding of one
// approvals_create call: the duplicate check, the schema and the typed decode.
func BenchmarkDecodeCreateArguments(b *testing.B) {
	resolved, err := mustSchema[CreateInput]().Resolve(nil)
	if err != nil {
		b.Fatal(err)
	}
	input := newInputSchema(resolved)
	raw := createArguments(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeArguments[CreateInput](raw, input); err != nil {
			b.Fatal(err)
		}
	}
}
