package handlers_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/asks"
)

// pageOf fetches an HTML page in b and parses it.
func pageOf(t *testing.T, b *apptest.Browser, path string) (string, *html.Node) {
	t.Helper()
	res, err := b.HTTP.Get(b.Origin + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", path, res.StatusCode, err)
	}
	return string(raw), parseHTML(t, string(raw))
}

// testIDs says which of the test ids the page holds.
func testIDs(doc *html.Node, ids ...string) map[string]bool {
	out := map[string]bool{}
	for _, id := range ids {
		out[id] = len(elements(doc, byAttr("data-testid", id))) > 0
	}
	return out
}

// requestScene is a scene with a board (To do, Doing, Done; "Fix <b>login</b>"
// in Doing) and an open session of the agent.
func requestScene(t *testing.T, db apptest.Database) (s *scene, itemID, session string) {
	t.Helper()
	ctx := context.Background()
	s = newScene(t, db, nil)
	for _, c := range [][2]string{{"todo", "To do"}, {"doing", "Doing"}, {"done", "Done <i>now</i>"}} {
		if _, err := s.env.Store.AddColumn(ctx, s.env.Account.ID, c[0], c[1]); err != nil {
			t.Fatal(err)
		}
	}
	it, err := s.env.Store.AddItem(ctx, s.env.Account.ID, "doing", "Fix <b>login</b>", "", asks.ActorPerson, "ada")
	if err != nil {
		t.Fatal(err)
	}
	ss := s.agent.OK("session_start", map[string]any{"label": "fixing login"})
	return s, it.ID, ss["sessionId"].(string)
}

func TestTheAskPageOfARequestShowsItsProposalAndQuestionAndSignsTheAnswer(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s, itemID, session := requestScene(t, db)
		owner := s.owner.For(t)
		buttons := []string{"approve", "deny", "choice-0", "choice-1", "choice-2", "answer-text", "answer", "question-text"}

		t.Run("a work_move reads as a move in the board's words, with approve and deny, and approving it moves the item", func(t *testing.T) {
			move := s.agent.OK("approval_request", map[string]any{"kind": "work_change", "title": "Ship <script>alert(1)</script>",
				"description": "Tests pass <img src=x>", "proposal": map[string]any{"mode": "command", "command": map[string]any{
					"method": "work_move", "input": map[string]any{"itemId": itemID, "columnKey": "done"}}},
				"sessionId": session, "idempotencyKey": "move", "expiresInMinutes": 30})
			id := move["approvalId"].(string)
			body, doc := pageOf(t, owner, "/approvals/"+id)
			for _, raw := range []string{"<script>alert(1)", "<b>login</b>", "<i>now</i>", "<img src=x>"} {
				if strings.Contains(body, raw) {
					t.Fatalf("the page holds %q unescaped", raw)
				}
			}
			p := elements(doc, byAttr("data-testid", "proposal"))
			if len(p) != 1 || attrOf(p[0], "data-mode") != "command" ||
				!strings.HasPrefix(textOf(p[0]), "Move Fix <b>login</b> from Doing to Done <i>now</i>") {
				t.Fatalf("proposal = %q", textOf(p[0]))
			}
			if got := testIDs(doc, buttons...); !got["approve"] || !got["deny"] || got["choice-0"] || got["answer-text"] || got["question-text"] {
				t.Fatalf("buttons = %v", got)
			}
			if n := len(elements(doc, func(n *html.Node) bool { return n.Data == "time" && hasAttr(n, "data-countdown") })); n != 1 {
				t.Fatalf("%d expiry countdowns", n)
			}
			if r := owner.Decide(id, "approve", ""); r.Status != http.StatusOK || r.Body["status"] != "done" {
				t.Fatalf("approve: %s", r)
			}
			_, doc = pageOf(t, owner, "/approvals/"+id)
			out := elements(doc, byAttr("data-testid", "command-outcome"))
			if len(out) != 1 || attrOf(out[0], "data-executed") != "true" || !strings.Contains(textOf(out[0]), "moved") {
				t.Fatalf("command outcome = %v", out)
			}
			if p := elements(doc, byAttr("data-testid", "proposal")); !strings.HasPrefix(textOf(p[0]), "Moved Fix <b>login</b> to Done") {
				t.Fatalf("proposal after the move = %q", textOf(p[0]))
			}
		})

		t.Run("a question with choices has a button per choice and no approve; a choice is signed and answered", func(t *testing.T) {
			q := s.agent.OK("approval_request", map[string]any{"kind": "agent_request", "title": "Which <u>branch</u>?",
				"proposal": map[string]any{"mode": "advisory"}, "question": map[string]any{"choices": []any{"main", "next <em>one</em>"}},
				"sessionId": session, "idempotencyKey": "choices"})
			id := q["approvalId"].(string)
			body, doc := pageOf(t, owner, "/approvals/"+id)
			if strings.Contains(body, "<em>one</em>") || strings.Contains(body, "<u>branch</u>") {
				t.Fatal("a choice or the question is not escaped")
			}
			got := testIDs(doc, buttons...)
			if got["approve"] || !got["deny"] || !got["choice-0"] || !got["choice-1"] || got["choice-2"] || got["answer-text"] {
				t.Fatalf("buttons = %v", got)
			}
			if c := elements(doc, byAttr("data-testid", "choice-1")); attrOf(c[0], "data-decision") != "choice:1" || textOf(c[0]) != "next <em>one</em>" {
				t.Fatalf("choice-1 = %q %q", attrOf(c[0], "data-decision"), textOf(c[0]))
			}
			if r := owner.Challenge(id, "approve", ""); r.Status != http.StatusBadRequest || r.Field() != "decision" {
				t.Fatalf("approve on a question: %s", r)
			}
			if r := owner.Decide(id, "choice:1", ""); r.Status != http.StatusOK || r.Body["status"] != "approved" {
				t.Fatalf("choice:1: %s", r)
			}
			st := s.agent.OK("approval_status", map[string]any{"approvalId": id})
			if ans, _ := st["answer"].(map[string]any); ans["choice"] != "next <em>one</em>" || ans["index"] != float64(1) {
				t.Fatalf("approval_status = %v", st)
			}
			p := proofOf(t, st["proof"])
			s.checkProof(t, p, owner, id, payloadHash(t, s, id), "choice:1", "ada")
			_, doc = pageOf(t, owner, "/approvals/"+id)
			if d := elements(doc, byAttr("data-testid", "decision")); len(d) != 1 || !strings.Contains(textOf(d[0]), "Answered with choice 2: next <em>one</em>") {
				t.Fatalf("decision shown = %v", d)
			}
		})

		t.Run("a free-text question has a text box; its words are signed as their hash and come back as sent", func(t *testing.T) {
			q := s.agent.OK("approval_request", map[string]any{"kind": "agent_request", "title": "When do we ship?",
				"proposal": map[string]any{"mode": "advisory"}, "question": map[string]any{}, "sessionId": session, "idempotencyKey": "free"})
			id := q["approvalId"].(string)
			_, doc := pageOf(t, owner, "/approvals/"+id)
			if got := testIDs(doc, buttons...); got["approve"] || !got["deny"] || got["choice-0"] || !got["answer-text"] || !got["answer"] {
				t.Fatalf("buttons = %v", got)
			}
			if r := owner.Post("/approvals/"+id+"/challenge", map[string]string{"decision": "answer", "answer": "  "}); r.Status != http.StatusBadRequest || r.Field() != "answer" {
				t.Fatalf("an empty answer: %s", r)
			}
			text := "Tuesday, after <script>the</script> review"
			ch := owner.Post("/approvals/"+id+"/challenge", map[string]string{"decision": "answer", "answer": text})
			if ch.Status != http.StatusOK {
				t.Fatalf("challenge: %s", ch)
			}
			cer, options := ch.Ceremony()
			if r := owner.DecideWith(id, cer, owner.Sign(options)); r.Status != http.StatusOK || r.Body["status"] != "approved" {
				t.Fatalf("answer: %s", r)
			}
			sum := sha256.Sum256([]byte(text))
			signed := "answer:" + hex.EncodeToString(sum[:])
			st := s.agent.OK("approval_status", map[string]any{"approvalId": id})
			if ans, _ := st["answer"].(map[string]any); ans["text"] != text {
				t.Fatalf("approval_status = %v", st)
			}
			p := proofOf(t, st["proof"])
			s.checkProof(t, p, owner, id, payloadHash(t, s, id), signed, "ada")
			if p.Unsigned.Answer != text {
				t.Fatalf("the proof's answer = %q", p.Unsigned.Answer)
			}
			body, doc := pageOf(t, owner, "/approvals/"+id)
			if strings.Contains(body, "<script>the</script>") {
				t.Fatal("the answer is not escaped")
			}
			if n := elements(doc, byAttr("data-testid", "note")); len(n) != 1 || textOf(n[0]) != text {
				t.Fatalf("the answer shown = %v", n)
			}
			beat := s.agent.OK("session_heartbeat", map[string]any{"sessionId": session})
			if len(beat["instructions"].([]any)) != 3 {
				t.Fatalf("the heartbeat after three answers = %v", beat)
			}
		})
	})
}

func hasAttr(n *html.Node, key string) bool {
	for _, a := range n.Attr {
		if a.Key == key {
			return true
		}
	}
	return false
}

// payloadHash is the stored payload hash of an ask.
func payloadHash(t *testing.T, s *scene, id string) string {
	t.Helper()
	a, err := s.env.Store.GetApproval(context.Background(), s.env.Account.ID, id)
	if err != nil {
		t.Fatal(err)
	}
	return a.PayloadSHA256
}
