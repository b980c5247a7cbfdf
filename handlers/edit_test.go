package handlers_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/proof"
)

// writeFileCall is a tool_call of write_file with content as its content.
func writeFileCall(content string) map[string]any {
	return map[string]any{"tool_call": map[string]any{"server": "filesystem", "tool": "write_file",
		"arguments": map[string]any{"path": "/srv/notes.txt", "content": content}}}
}

// A person edits the one member the agent marked editable and signs the
// result: the proof binds both the filed payload's hash and the edited
// one's, the agent reads approve_edited with the edited payload, and acts
// on it. A change of any other member, a change beyond the member's schema
// and no change at all are refused by the server before any signature, and
// change nothing.
func TestAnEditedPayloadIsSignedWithBothHashes(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := newScene(t, db, nil)
		filed := s.agent.OK("approvals_create", map[string]any{
			"kind": "tool_call", "title": "Write the release notes", "approve_means": "The file is written once", "deny_means": "Nothing is written",
			"payload":  writeFileCall("v1.4 ships on Monday"),
			"editable": []any{map[string]any{"path": "tool_call.arguments.content", "max_length": 40}},
		})
		id := filed["approval_id"].(string)
		if e, _ := filed["editable"].([]any); len(e) != 1 || e[0].(map[string]any)["path"] != "/tool_call/arguments/content" {
			t.Fatalf("approvals_create answered editable %v, want the content's pointer", filed["editable"])
		}
		before := s.state(t, id)
		for _, tc := range []struct {
			name   string
			edited map[string]any
			status int
			code   core.Code
			says   string
		}{
			{"a member not marked editable", map[string]any{"tool_call": map[string]any{"server": "filesystem", "tool": "write_file",
				"arguments": map[string]any{"path": "/etc/passwd", "content": "v1.4 ships on Monday"}}}, http.StatusForbidden, core.PermissionDenied, "/tool_call/arguments/path is not editable"},
			{"another tool", map[string]any{"tool_call": map[string]any{"server": "filesystem", "tool": "delete_file",
				"arguments": map[string]any{"path": "/srv/notes.txt", "content": "x"}}}, http.StatusForbidden, core.PermissionDenied, "/tool_call/tool is not editable"},
			{"a member added", map[string]any{"tool_call": map[string]any{"server": "filesystem", "tool": "write_file",
				"arguments": map[string]any{"path": "/srv/notes.txt", "content": "x", "mode": "0777"}}}, http.StatusForbidden, core.PermissionDenied, "/tool_call/arguments/mode is not editable"},
			{"past the member's schema", writeFileCall(strings.Repeat("x", 41)), http.StatusBadRequest, core.InvalidArgument, "at most 40 characters"},
			{"no change", writeFileCall("v1.4 ships on Monday"), http.StatusBadRequest, core.InvalidArgument, "nothing was changed"},
		} {
			t.Run(tc.name+" is refused", func(t *testing.T) {
				r := s.owner.For(t).ChallengeEdited(id, tc.edited)
				msg, _ := r.Body["message"].(string)
				if r.Status != tc.status || r.Code() != string(tc.code) || r.Field() != "edited_payload" || !strings.Contains(msg, tc.says) {
					t.Fatalf("challenge = %s, want %d %s on edited_payload saying %q", r, tc.status, tc.code, tc.says)
				}
				if got := s.state(t, id); got != before {
					t.Fatalf("the refusal changed the ask: %+v, was %+v", got, before)
				}
			})
		}

		r := s.owner.DecideEdited(id, writeFileCall("v1.4 ships on Tuesday"))
		if r.Status != http.StatusOK || r.Body["status"] != "approved" {
			t.Fatalf("ada approves her edit: %s", r)
		}
		got := s.agent.OK("approvals_get", map[string]any{"approval_id": id})
		editedCanonical := `{"tool_call":{"arguments":{"content":"v1.4 ships on Tuesday","path":"/srv/notes.txt"},"server":"filesystem","tool":"write_file"}}`
		sum := sha256.Sum256([]byte(editedCanonical))
		editedSHA := hex.EncodeToString(sum[:])
		if got["decision"] != "approve_edited" || got["edited_payload_sha256"] != editedSHA || got["payload_sha256"] != filed["payload_sha256"] {
			t.Fatalf("the agent reads decision %v, edited hash %v, payload hash %v; want approve_edited, %s and the filed %v",
				got["decision"], got["edited_payload_sha256"], got["payload_sha256"], editedSHA, filed["payload_sha256"])
		}
		if raw, _ := json.Marshal(got["edited_payload"]); !sameJSON(raw, []byte(editedCanonical)) {
			t.Errorf("edited_payload = %s, want %s", raw, editedCanonical)
		}
		raw, _ := json.Marshal(got["proof"])
		p, err := proof.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		res, err := proof.Verify(p, proof.Expect{Origin: s.env.URL, Keys: mustKeys(t, s.env.KeysExport(s.env.Account.ID))})
		if err != nil {
			t.Fatalf("the proof of the edit does not verify: %v", err)
		}
		if res.PayloadSHA256 != filed["payload_sha256"] || res.EditedSHA256 != editedSHA || res.Decision != proof.EditedDecision(editedSHA) ||
			len(res.Edits) != 1 || res.Edits[0].Path != "/tool_call/arguments/content" || string(res.Edits[0].After) != `"v1.4 ships on Tuesday"` {
			t.Fatalf("the proof shows payload %s, edited %s, decision %s, edits %+v", res.PayloadSHA256, res.EditedSHA256, res.Decision, res.Edits)
		}

		// The agent acts on the edited payload: reporting it as observed
		// starts the work; the filed one would say it changed.
		started := s.agent.OK("approvals_add_progress", map[string]any{"approval_id": id, "step": "started",
			"observed": json.RawMessage(editedCanonical)})
		if started["status"] != "in_progress" {
			t.Errorf("started with the edited payload: %v, want in_progress", started["status"])
		}
	})
}

func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ra, _ := json.Marshal(x)
	rb, _ := json.Marshal(y)
	return string(ra) == string(rb)
}

func mustKeys(t *testing.T, raw []byte) *proof.Keys {
	t.Helper()
	k, err := proof.ParseKeys(raw)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
