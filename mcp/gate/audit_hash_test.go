package gate_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/mcp/gate"
)

// The SHA-256 of each call's arguments in RFC 8785 form, worked out with
// sha256sum over the canonical bytes.
const (
	hashOfEmpty       = "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a" // {}
	hashOfForced42    = "acd607463b6d93e1988e7126ec9480693e9ebc5d31468375ef16db3b073fe597" // {"force":true,"id":"42"}
	hashOfNumericID42 = "17b4db064e17f4878e391177e6ca623b798911f34014bc9e78920993d7dd27ad" // {"id":42}
)

func TestEveryAuditEventCarriesTheHashOfTheCanonicalArguments(t *testing.T) {
	deny := func(context.Context, gate.ApprovalRequest) (gate.Decision, error) {
		return gate.Deny("carol", "no"), nil
	}
	tests := []struct {
		name, client, tool string
		args               json.RawMessage // as sent, key order and white space included
		sink               gate.ApprovalFunc
		wantPhase          string
		wantReason         string
		wantHash           string
		wantRan, wantAsked bool
	}{
		{name: "an allowed call no rule asks about", client: "bob", tool: "list_cases", args: json.RawMessage(`{}`),
			sink: approveBy("carol"), wantPhase: "allowed", wantHash: hashOfEmpty, wantRan: true},
		{name: "an allowed call with no arguments at all hashes the empty object", client: "bob", tool: "list_cases",
			sink: approveBy("carol"), wantPhase: "allowed", wantHash: hashOfEmpty, wantRan: true},
		{name: "an approved call", client: "alice", tool: "delete_case", args: json.RawMessage(`{"id":"42","force":true}`),
			sink: approveBy("carol"), wantPhase: "allowed", wantHash: hashOfForced42, wantRan: true, wantAsked: true},
		{name: "the same arguments in another order and spacing hash the same", client: "alice", tool: "delete_case", args: json.RawMessage(`{ "force" : true,  "id": "42" }`),
			sink: approveBy("carol"), wantPhase: "allowed", wantHash: hashOfForced42, wantRan: true, wantAsked: true},
		{name: "a denied call", client: "alice", tool: "delete_case", args: json.RawMessage(`{"id":"42","force":true}`),
			sink: deny, wantPhase: "refused", wantReason: "denied", wantHash: hashOfForced42, wantAsked: true},
		{name: "a call the caller may not make", client: "bob", tool: "delete_case", args: json.RawMessage(`{"id":"42","force":true}`),
			sink: approveBy("carol"), wantPhase: "refused", wantReason: "permission_denied", wantHash: hashOfForced42},
		{name: "arguments the schema refuses", client: "alice", tool: "delete_case", args: json.RawMessage(`{"id":42}`),
			sink: approveBy("carol"), wantPhase: "refused", wantReason: "invalid_arguments", wantHash: hashOfNumericID42},
		{name: "arguments with a duplicate name have no canonical form: refused before anybody is asked, with no hash", client: "alice", tool: "delete_case",
			args: json.RawMessage(`{"id":"42","force":false,"force":true}`), sink: approveBy("carol"),
			wantPhase: "refused", wantReason: "invalid_arguments: the arguments have no canonical form to hash for the audit", wantHash: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var asked atomic.Int32
			f := newFixture(t, func(ctx context.Context, req gate.ApprovalRequest) (gate.Decision, error) {
				asked.Add(1)
				return tc.sink(ctx, req)
			}, 10*time.Second)
			cs := connect(t, f.srv, tc.client)
			params := &mcp.CallToolParams{Name: tc.tool}
			if tc.args != nil {
				params.Arguments = tc.args
			}
			if _, err := cs.CallTool(context.Background(), params); err != nil && tc.wantReason != "permission_denied" {
				t.Fatalf("call: %v", err)
			}
			ev := f.lastEvent(t)
			if ev.Phase != tc.wantPhase || !strings.HasPrefix(ev.Reason, tc.wantReason) || (tc.wantReason == "") != (ev.Reason == "") {
				t.Errorf("audit event = %+v, want phase %s, reason %q", ev, tc.wantPhase, tc.wantReason)
			}
			if ev.ArgumentsSHA256 != tc.wantHash {
				t.Errorf("argumentsSha256 = %q, want %q", ev.ArgumentsSHA256, tc.wantHash)
			}
			if ran := f.ran.Load() == 1; ran != tc.wantRan {
				t.Errorf("handler ran = %t, want %t", ran, tc.wantRan)
			}
			if got := asked.Load() == 1; got != tc.wantAsked {
				t.Errorf("asked = %t, want %t", got, tc.wantAsked)
			}
		})
	}
}
