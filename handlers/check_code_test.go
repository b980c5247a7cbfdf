package handlers_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/ask"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
)

// toolCallAsk files a tool_call, one of the riskiest asks, and returns its
// id and the check code its agent was answered.
func (s *scene) toolCallAsk(t *testing.T) (id, code string) {
	t.Helper()
	return s.toolCallAskShownIn(t, "")
}

// toolCallAskShownIn is toolCallAsk whose agent says where it shows the
// code (check_code_shown_in; none when where is "").
func (s *scene) toolCallAskShownIn(t *testing.T, where string) (id, code string) {
	t.Helper()
	args := map[string]any{
		"kind": "tool_call", "title": "Call write_file on filesystem",
		"approve_means": "The call goes ahead once", "deny_means": "The call is refused",
		"payload": map[string]any{"tool_call": map[string]any{"server": "filesystem", "tool": "write_file", "arguments": map[string]any{"path": "/srv/a.txt"}}},
	}
	if where != "" {
		args["check_code_shown_in"] = where
	}
	out := s.agent.OK("approvals_create", args)
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
				if r.Status != http.StatusConflict || r.Code() != string(core.FailedPrecondition) || r.Field() != "check_code" {
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
			if got := s.state(t, id); got.Status != asks.StatusApproved || !got.HasProof {
				t.Fatalf("after the right pick: %+v", got)
			}
		})
	})
}

// The ask page says who shows the check code and where: the agent by its
// verified name, in the place it named (check_code_shown_in) or else where
// it runs. Saying where never drops the code: the server asks for it
// either way (the fatigue guard), and the page still offers only the codes.
func TestTheAskPageSaysWhereTheCheckCodeIsShownAndStillAsksForIt(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := newScene(t, db, nil)
		for _, tc := range []struct{ name, where, says string }{
			{"said", "the terminal on build-eu", "shows in the terminal on build-eu:"},
			{"said with its own preposition", "on the build log", "shows on the build log:"},
			{"escaped", "<b>chat</b>", "shows in &lt;b&gt;chat&lt;/b&gt;:"},
			{"not said", "", "shows where it runs:"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				id, code := s.toolCallAskShownIn(t, tc.where)
				if got := s.agent.OK("approvals_get", map[string]any{"approval_id": id})["check_code_shown_in"]; tc.where != "" && got != tc.where {
					t.Errorf("approvals_get check_code_shown_in = %v, want %q", got, tc.where)
				}
				page := s.owner.For(t).Page("/approvals/" + id)
				html := string(page.Raw)
				line := html[strings.Index(html, `data-testid="check-code-where"`):]
				line = line[:strings.Index(line, "</p>")]
				if page.Status != http.StatusOK || !strings.Contains(line, "<strong>agent:bot</strong>") || !strings.Contains(line, tc.says) {
					t.Fatalf("the line above the codes = %q, want agent:bot and %q", line, tc.says)
				}
				if !strings.Contains(html, `data-testid="check-code-`+code+`"`) || strings.Contains(html, `data-testid="approve"`) {
					t.Fatalf("the page offers no check codes, or a plain Approve")
				}
				b := s.owner.For(t)
				b.CheckCode = func(string) string { return "" }
				if r := b.Challenge(id, "approve", ""); r.Status != http.StatusConflict || r.Field() != "check_code" {
					t.Fatalf("an approval without the code, where the agent said %q: %s, want 409 on check_code", tc.where, r)
				}
			})
		}

		t.Run("a place that is not one short line is refused, and nothing is filed", func(t *testing.T) {
			var before int64
			if err := s.env.Store.DB().Table("approvals").Count(&before).Error; err != nil {
				t.Fatal(err)
			}
			for _, where := range []any{strings.Repeat("x", ask.MaxCheckCodeShownIn+1), "the terminal\non build-eu", "chat\u202e", 7} {
				r := s.agent.Call("approvals_create", map[string]any{
					"kind": "tool_call", "title": "Call write_file on filesystem", "approve_means": "The call goes ahead once", "deny_means": "The call is refused",
					"payload":             map[string]any{"tool_call": map[string]any{"server": "filesystem", "tool": "write_file", "arguments": map[string]any{}}},
					"check_code_shown_in": where,
				})
				if !r.IsError || r.Code != string(core.InvalidArgument) || r.Field != "check_code_shown_in" {
					t.Errorf("check_code_shown_in %q: %s, want INVALID_ARGUMENT on check_code_shown_in", where, r)
				}
			}
			var after int64
			if err := s.env.Store.DB().Table("approvals").Count(&after).Error; err != nil || after != before {
				t.Fatalf("asks went from %d to %d (%v)", before, after, err)
			}
		})
	})
}
