package handlers_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/ask"
	"github.com/countersign/countersign/models"
)

// toolCallAsk files a tool_call, one of the riskiest asks, and returns its
// id and the check code its agent was answered.
func (s *scene) toolCallAsk(t *testing.T) (id, code string) {
	t.Helper()
	out := s.agent.OK("approvals_create", map[string]any{
		"kind": "tool_call", "title": "Call write_file on filesystem",
		"approve_means": "The call goes ahead once", "deny_means": "The call is refused",
		"payload": map[string]any{"tool_call": map[string]any{"server": "filesystem", "tool": "write_file", "arguments": map[string]any{"path": "/srv/a.txt"}}},
	})
	id, _ = out["approval_id"].(string)
	code, _ = out["check_code"].(string)
	sha, _ := out["payload_sha256"].(string)
	if id == "" || code != ask.CheckCode(sha) || len(code) != 2 {
		t.Fatalf("approvals_create answered check_code %q for payload %s (want %q): %v", code, sha, ask.CheckCode(sha), out)
	}
	return id, code
}

// The check code against fatigue is enforced by the server, not only by
// the page: without the right pick no signature prompt is made for an
// approval, nothing is recorded, and the right pick signs.
func TestApprovingARiskyAskNeedsItsCheckCode(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := newScene(t, db, nil)
		id, code := s.toolCallAsk(t)
		wrong := "00"
		if code == wrong {
			wrong = "01"
		}
		before := s.state(t, id)
		for _, tc := range []struct{ name, picked, says string }{
			{"no pick", "", "pick the check code"},
			{"a wrong pick", wrong, wrong + " is not this ask's check code: nothing was signed"},
		} {
			t.Run("an approval with "+tc.name+" is refused before any passkey prompt", func(t *testing.T) {
				b := s.owner.For(t)
				b.CheckCode = func(string) string { return tc.picked }
				r := b.Challenge(id, "approve", "")
				if r.Status != http.StatusConflict || r.Code() != string(models.FailedPrecondition) || r.Field() != "check_code" {
					t.Fatalf("challenge = %s, want 409 FAILED_PRECONDITION on check_code", r)
				}
				if msg, _ := r.Body["message"].(string); !strings.Contains(msg, tc.says) {
					t.Errorf("the refusal says %q, want it to say %q", msg, tc.says)
				}
				if got := s.state(t, id); got != before {
					t.Fatalf("the refusal changed the ask: %+v, was %+v", got, before)
				}
			})
		}
		t.Run("a deny needs no code", func(t *testing.T) {
			b := s.owner.For(t)
			b.CheckCode = nil
			if r := b.Challenge(id, "deny", ""); r.Status != http.StatusOK {
				t.Fatalf("deny challenge = %s", r)
			}
		})
		t.Run("a pull request needs no code", func(t *testing.T) {
			b := s.owner.For(t)
			b.CheckCode = nil
			pr := s.prAsk(t, "")
			if r := b.Decide(pr, "approve", ""); r.Status != http.StatusOK {
				t.Fatalf("approve a pull request without a code = %s", r)
			}
		})
		t.Run("the right pick signs the approval", func(t *testing.T) {
			b := s.owner.For(t)
			b.CheckCode = func(string) string { return code }
			if r := b.Decide(id, "approve", ""); r.Status != http.StatusOK {
				t.Fatalf("approve with the right code = %s", r)
			}
			if got := s.state(t, id); got.Status != models.StatusApproved || !got.HasProof {
				t.Fatalf("after the right pick: %+v", got)
			}
		})
	})
}
