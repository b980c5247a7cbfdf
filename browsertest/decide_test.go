package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/proof"
)

// statusIs is a page condition: the ask's status badge shows status.
func statusIs(status string) string {
	return fmt.Sprintf(`document.readyState === "complete" && document.querySelector("[data-testid=status]")?.dataset.status === %s`, jsString(status))
}

// openFromInbox finds the ask in the inbox and opens its page.
func (s *service) openFromInbox(id, title string) {
	s.t.Helper()
	p := s.page
	row := fmt.Sprintf("[data-approval-row=%s]", jsString(id))
	p.Go("/")
	p.WaitVisible(row)
	if got := p.Text(row + " .title"); got != title {
		s.t.Errorf("inbox row title = %q, want %q", got, title)
	}
	p.ClickToLoad(row+" a", "/approvals/"+id, "[data-testid=status]")
	if got := p.Attr("[data-testid=status]", "data-status"); got != "pending" {
		p.Fatalf("the ask page shows status %q, want pending", got)
	}
}

// answer presses an answer button on the ask page: the passkey signs, the
// page moves on (to the next ask or the inbox; a question stays on its
// ask), and the ask's page is opened again to show the answer. Approving
// one of the riskiest asks is the pick of its check code, as a person reads
// it where the agent runs.
func (s *service) answer(id, button string) {
	s.t.Helper()
	p := s.page
	if button == "[data-testid=approve]" && p.Count(button) == 0 && p.Count("[data-testid=check-codes]") == 1 {
		button = "[data-testid=check-code-" + s.env.CheckCode(id) + "]"
	}
	Eval[bool](p, `window.browsertestClickedHere = true`)
	p.Click(button)
	p.WaitFor("a new page after a click on "+button, `!window.browsertestClickedHere && document.readyState === "complete"`)
	if p.Path() != "/approvals/"+id {
		p.Go("/approvals/" + id)
	}
	p.WaitVisible("[data-testid=status]")
}

// checkDecided checks what the ask page shows once decided.
func (s *service) checkDecided(status, decisionText, subject string) {
	s.t.Helper()
	p := s.page
	p.WaitFor("the status "+status, statusIs(status))
	p.WaitVisible("[data-testid=decision]")
	box := p.Text("[data-testid=decision]")
	if !strings.Contains(box, decisionText) || !strings.Contains(box, subject) {
		p.Fatalf("the decision box says %q, want the decision %q by %s", box, decisionText, subject)
	}
	if n := p.Count("[data-testid=approve], [data-testid=deny]"); n != 0 {
		p.Fatalf("a decided ask still shows %d answer buttons", n)
	}
	if href := p.Attr("[data-testid=proof]", "href"); !strings.HasSuffix(href, "/proof.json") {
		p.Fatalf("the proof link is %q", href)
	}
}

// checkGet checks the agent's approvals_get of a decided ask; note "" means
// the ask carries no note.
func (s *service) checkGet(id, status, decision, subject, note string) map[string]any {
	s.t.Helper()
	got := s.get(id)
	gotNote, _ := got["note"].(string)
	if got["status"] != status || got["decision"] != decision || got["decided_by"] != subject || gotNote != note {
		s.t.Fatalf("approvals_get = status %v, decision %v, decided_by %v, note %q; want %s, %s, %s, %q",
			got["status"], got["decision"], got["decided_by"], gotNote, status, decision, subject, note)
	}
	if got["decided_at"] == nil {
		s.t.Errorf("approvals_get has no decided_at")
	}
	return got
}

func TestAnAskFiledOverMCPIsApprovedWithAPasskey(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := start(t, db)
		s.signUp("ada", core.RoleOwner)
		id, sha := s.ask(pullRequestAsk(900, "abcdef1234567"))

		s.openFromInbox(id, "Merge acme/web#900")
		p := s.page
		if got := shownHash(p); got != sha {
			t.Errorf("the page shows payload hash %q, want %q", got, sha)
		}
		if got := p.Text("[data-testid=approve-means]"); got != "I merge #900; nothing rolls" {
			t.Errorf("approve means %q", got)
		}
		s.answer(id, "[data-testid=approve]")
		s.checkDecided("approved", "Approved", "ada")

		got := s.checkGet(id, "approved", "approve", "ada", "")
		s.checkProof(got["proof"], id, sha, "approve", "ada")

		p.Go("/")
		p.WaitVisible("[data-testid=inbox-empty]")
	})
}

func TestAnAskFiledOverMCPIsDeniedWithAPasskey(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := start(t, db)
		s.signUp("ada", core.RoleOwner)
		id, sha := s.ask(pullRequestAsk(901, "0123456789abc"))

		s.openFromInbox(id, "Merge acme/web#900")
		s.answer(id, "[data-testid=deny]")
		s.checkDecided("denied", "Denied", "ada")

		got := s.checkGet(id, "denied", "deny", "ada", "")
		s.checkProof(got["proof"], id, sha, "deny", "ada")
	})
}

func TestAQuestionGoesToTheAgentAndTheAnswerReopensTheAsk(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := start(t, db)
		s.signUp("ada", core.RoleOwner)
		id, sha := s.ask(pullRequestAsk(902, "fedcba9876543"))
		p := s.page
		const question = "Which test covers the Safari redirect?"
		const answer = "TestSafariRedirect in auth/redirect_test.go"

		s.openFromInbox(id, "Merge acme/web#900")
		p.Type("[data-testid=question-text]", question)
		s.answer(id, "[data-testid=question]")
		p.WaitFor("the status question", statusIs("question"))
		if got := p.Text("[data-testid=note]"); got != question {
			t.Errorf("the page shows the question %q, want %q", got, question)
		}

		got := s.get(id)
		if got["status"] != "question" || got["note"] != question {
			t.Fatalf("approvals_get after the question = status %v note %v", got["status"], got["note"])
		}
		// The question is signed too; its proof rides on the timeline event.
		events, err := s.env.Store.Timeline(context.Background(), s.env.Account.ID, id)
		if err != nil {
			t.Fatal(err)
		}
		last := events[len(events)-1]
		if last.Step != "question" || last.Actor != "ada" || last.Data == nil {
			t.Fatalf("last timeline event = %s by %s (data %t), want ada's signed question", last.Step, last.Actor, last.Data != nil)
		}
		var raw map[string]any
		if err := json.Unmarshal([]byte(*last.Data), &raw); err != nil {
			t.Fatal(err)
		}
		pr := s.checkProof(raw, id, sha, proof.QuestionDecision(question), "ada")
		if pr.Unsigned.Question != question {
			t.Errorf("the question proof carries the text %q, want %q", pr.Unsigned.Question, question)
		}

		answered := s.agent.OK("approvals_add_progress", map[string]any{
			"approval_id": id, "step": "answered", "note": answer, "expected_state": "question",
		})
		if answered["status"] != "pending" {
			t.Fatalf("after answered: status %v, want pending", answered["status"])
		}
		if got := s.get(id); got["status"] != "pending" {
			t.Fatalf("approvals_get after answered: status %v, want pending", got["status"])
		}

		// The open page hears the answer on its live timeline and reloads
		// itself, buttons back.
		p.WaitFor("the status pending", statusIs("pending"))
		p.WaitVisible("[data-testid=approve]")
		if tl := p.Text("[data-timeline]"); !strings.Contains(tl, answer) {
			p.Fatalf("the timeline does not show the agent's answer %q:\n%s", answer, tl)
		}
	})
}

func TestADecisionOptionComesBackToTheAgentAsTheNote(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := start(t, db)
		s.signUp("ada", core.RoleOwner)
		id, sha := s.ask(map[string]any{
			"kind":          "decision",
			"title":         "When do we ship 2.4?",
			"approve_means": "I schedule the release on the day you pick",
			"deny_means":    "No release is scheduled",
			"payload":       map[string]any{"decision": map[string]any{"options": []string{"Ship Friday", "Ship Monday"}}},
			"context":       map[string]any{"no_context_reason": "a release date, nothing planned yet"},
		})
		p := s.page

		s.openFromInbox(id, "When do we ship 2.4?")
		if a, b := p.Text("[data-testid=choice-0]"), p.Text("[data-testid=choice-1]"); a != "Ship Friday" || b != "Ship Monday" {
			t.Errorf("choices = %q, %q", a, b)
		}
		if n := p.Count("[data-testid=approve]"); n != 0 {
			t.Errorf("a decision ask shows a plain approve button")
		}
		s.answer(id, "[data-testid=choice-1]")
		s.checkDecided("approved", "Chose option 2: Ship Monday", "ada")

		got := s.checkGet(id, "approved", "option:1", "ada", "Ship Monday")
		s.checkProof(got["proof"], id, sha, "option:1", "ada")
	})
}

func TestTheTimelineShowsProgressLiveWithoutAReload(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := start(t, db)
		s.signUp("ada", core.RoleOwner)
		created := s.agent.OK("approvals_create", pullRequestAsk(903, "a1b2c3d4e5f60"))
		id, _ := created["approval_id"].(string)
		p := s.page

		s.openFromInbox(id, "Merge acme/web#900")
		s.answer(id, "[data-testid=approve]")
		s.checkDecided("approved", "Approved", "ada")
		p.WaitVisible("[data-live]")

		before := p.Count("[data-timeline] li")
		Eval[bool](p, `window.stillThisPage = true`)

		started := s.agent.OK("approvals_add_progress", map[string]any{
			"approval_id": id, "step": "started", "expected_state": "approved", "observed": created["payload"],
		})
		if started["status"] != "in_progress" {
			t.Fatalf("after started: status %v", started["status"])
		}
		p.WaitFor("the started event on the timeline", fmt.Sprintf(
			`document.querySelectorAll("[data-timeline] li").length === %d && document.querySelector("[data-timeline] li:last-child").innerText.includes("started")`, before+1))
		p.WaitFor("the status in_progress", statusIs("in_progress"))

		s.agent.OK("approvals_add_progress", map[string]any{"approval_id": id, "step": "step", "note": "merging into main"})
		p.WaitFor("the step with its note on the timeline", fmt.Sprintf(
			`document.querySelectorAll("[data-timeline] li").length === %d && document.querySelector("[data-timeline] li:last-child q")?.innerText === "merging into main"`, before+2))

		if !Eval[bool](p, `window.stillThisPage === true`) {
			p.Fatalf("the page reloaded: the timeline must update in place")
		}
		// A reload shows the same timeline, from the server.
		p.Reload()
		p.WaitFor("the status in_progress after a reload", statusIs("in_progress"))
		if n := p.Count("[data-timeline] li"); n != before+2 {
			p.Fatalf("after a reload the timeline has %d entries, want %d", n, before+2)
		}
	})
}
