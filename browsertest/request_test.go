package browsertest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
)

// board is a service with a work board (To do, Doing, Done; "Fix login" in
// Doing), an owner signed up with a passkey, and an open session of the agent.
type board struct {
	*service
	itemID  string
	session string
	skew    atomic.Int64 // how far the store's clock runs ahead of the real one
}

func startBoard(t *testing.T, db apptest.Database) *board {
	t.Helper()
	ctx := context.Background()
	b := &board{service: start(t, db)}
	b.env.Store.SetClock(func() time.Time { return time.Now().Add(time.Duration(b.skew.Load())) })
	for _, c := range [][2]string{{"todo", "To do"}, {"doing", "Doing"}, {"done", "Done"}} {
		if _, err := b.env.Store.AddColumn(ctx, b.env.Account.ID, c[0], c[1]); err != nil {
			t.Fatal(err)
		}
	}
	it, err := b.env.Store.AddItem(ctx, b.env.Account.ID, "doing", "Fix login", "", asks.ActorPerson, "ops")
	if err != nil {
		t.Fatal(err)
	}
	b.itemID = it.ID
	b.signUp("ada", core.RoleOwner)
	b.session = b.agent.OK("session_start", map[string]any{"label": "fixing login"})["sessionId"].(string)
	return b
}

// request files an approval_request in the board's session; it returns the
// request's id and payload hash.
func (b *board) request(args map[string]any) (id, sha string) {
	b.t.Helper()
	args["sessionId"] = b.session
	args["idempotencyKey"] = fmt.Sprint(time.Now().UnixNano())
	out := b.agent.OK("approval_request", args)
	id, _ = out["approvalId"].(string)
	sha, _ = out["payloadSha256"].(string)
	if id == "" || out["status"] != "pending" {
		b.t.Fatalf("approval_request answered %v", out)
	}
	return id, sha
}

// move is a work_move of the board's item to column.
func (b *board) move(column string) map[string]any {
	return map[string]any{"kind": "work_change", "title": "Move Fix login to " + column, "expiresInMinutes": 30,
		"proposal": map[string]any{"mode": "command", "command": map[string]any{"method": "work_move",
			"input": map[string]any{"itemId": b.itemID, "columnKey": column}}}}
}

// beat heartbeats the session and returns its state and instructions.
func (b *board) beat() (state string, instructions []map[string]any) {
	b.t.Helper()
	out := b.agent.OK("session_heartbeat", map[string]any{"sessionId": b.session})
	for _, i := range out["instructions"].([]any) {
		instructions = append(instructions, i.(map[string]any))
	}
	return out["state"].(string), instructions
}

// oneInstruction checks that the next heartbeat carries exactly the outcome
// of request id, and the one after it nothing.
func (b *board) oneInstruction(id, status string) map[string]any {
	b.t.Helper()
	_, got := b.beat()
	if len(got) != 1 || got[0]["approvalId"] != id || got[0]["status"] != status {
		b.t.Fatalf("the heartbeat after the answer carries %v; want %s's outcome, %s", got, id, status)
	}
	if _, again := b.beat(); len(again) != 0 {
		b.t.Fatalf("the next heartbeat carries %v again", again)
	}
	return got[0]
}

// status is the agent's approval_status of id.
func (b *board) status(id string) map[string]any {
	b.t.Helper()
	return b.agent.OK("approval_status", map[string]any{"approvalId": id})
}

// column is where the board's item is now.
func (b *board) column() string {
	b.t.Helper()
	it, err := b.env.Store.GetWorkItem(context.Background(), b.env.Account.ID, b.itemID)
	if err != nil {
		b.t.Fatal(err)
	}
	return it.ColumnKey
}

func TestAWorkMoveInASessionIsApprovedWithAPasskeyAndMovesTheItem(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		b := startBoard(t, db)
		p := b.page
		id, sha := b.request(b.move("done"))

		// The session shows waiting, and its request is one tap away.
		if state, _ := b.beat(); state != "waiting" {
			t.Fatalf("the session's state is %s, want waiting", state)
		}
		row := fmt.Sprintf("[data-session=%s]", jsString(b.session))
		p.Go("/sessions")
		p.WaitVisible(row)
		if got := p.Attr(row, "data-state"); got != "waiting" {
			t.Fatalf("the sessions page shows the session %s", got)
		}
		p.ClickToLoad(row+" a[href='/approvals/"+id+"']", "/approvals/"+id, "[data-testid=status]")
		if got := p.Text("[data-testid=proposal]"); !strings.HasPrefix(got, "Move Fix login from Doing to Done") {
			t.Fatalf("the proposal reads %q", got)
		}
		if n := p.Count("time[data-countdown]"); n == 0 {
			t.Error("no expiry countdown")
		}

		b.answer(id, "[data-testid=approve]")
		b.checkDecided("done", "Approved", "ada")
		if got := p.Text("[data-testid=command-outcome]"); !strings.Contains(got, "Executed") {
			t.Errorf("the command outcome reads %q", got)
		}
		if got := b.column(); got != "done" {
			t.Fatalf("the item is in %s, want done", got)
		}
		st := b.status(id)
		if cmd, _ := st["command"].(map[string]any); st["status"] != "done" || cmd["executed"] != true {
			t.Fatalf("approval_status = %v", st)
		}
		b.checkProof(st["proof"], id, sha, "approve", "ada")
		if cmd, _ := b.oneInstruction(id, "done")["command"].(map[string]any); cmd["executed"] != true {
			t.Fatalf("the instruction's command = %v", cmd)
		}
		if state, _ := b.beat(); state != "active" {
			t.Errorf("the session is %s once answered, want active", state)
		}

		// The item's history names the request that moved it.
		p.Go("/work/items/" + b.itemID)
		p.WaitVisible("[data-testid=moved-by]")
		if got := p.Attr("[data-testid=moved-by]", "href"); got != "/approvals/"+id {
			t.Errorf("moved-by links to %q", got)
		}
	})
}

func TestAnExpiredWorkMoveIsNeverApprovedAndNothingMoves(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		b := startBoard(t, db)
		// A page of its own: its refused approve answers 409 on purpose.
		b.page = browser.Open(t, b.env.URL)
		t.Cleanup(func() {
			for _, e := range b.page.ConsoleErrors() {
				if !strings.Contains(e, "status of 4") {
					t.Errorf("the page reported an error in the browser console: %s", e)
				}
			}
		})
		b.signUp("bea", core.RoleOwner)
		args := b.move("done")
		args["expiresInMinutes"] = 5
		id, _ := b.request(args)
		p := b.page
		p.Go("/approvals/" + id)
		p.WaitVisible("[data-testid=approve]")

		b.skew.Store(int64(6 * time.Minute)) // the deadline passes with the page open
		p.Click("[data-testid=approve]")
		p.WaitVisible("[data-error]")
		if got := b.column(); got != "doing" {
			t.Fatalf("the item moved to %s after the deadline", got)
		}
		// The next heartbeat finds the deadline passed: it closes the request
		// and carries its outcome, once.
		b.oneInstruction(id, "expired")
		if st := b.status(id); st["status"] != "expired" || st["decidedBy"] != nil {
			t.Fatalf("approval_status = %v", st)
		}
		if got := b.column(); got != "doing" {
			t.Fatalf("the item moved to %s", got)
		}
		p.Reload()
		p.WaitFor("the status expired", statusIs("expired"))
		if n := p.Count("[data-testid=approve]"); n != 0 {
			t.Fatal("an expired request still shows approve")
		}
	})
}

func TestAnAdvisoryRequestIsRecordedAndNothingMoves(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		b := startBoard(t, db)
		id, sha := b.request(map[string]any{"kind": "work_change", "title": "I will tidy the login code",
			"description": "No behaviour changes.", "proposal": map[string]any{"mode": "advisory"}})
		b.page.Go("/approvals/" + id)
		b.page.WaitVisible("[data-testid=approve]")
		if got := b.page.Attr("[data-testid=proposal]", "data-mode"); got != "advisory" {
			t.Fatalf("the proposal's mode is %q", got)
		}
		b.answer(id, "[data-testid=approve]")
		b.checkDecided("approved", "Approved", "ada")
		if got := b.column(); got != "doing" {
			t.Fatalf("an advisory approval moved the item to %s", got)
		}
		st := b.status(id)
		if st["status"] != "approved" || st["command"] != nil {
			t.Fatalf("approval_status = %v", st)
		}
		b.checkProof(st["proof"], id, sha, "approve", "ada")
		if in := b.oneInstruction(id, "approved"); in["command"] != nil {
			t.Fatalf("the instruction carries a command: %v", in)
		}
	})
}

func TestAQuestionsAnswerComesBackOnTheHeartbeatSignedByThePasskey(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		b := startBoard(t, db)
		p := b.page

		t.Run("a choice", func(t *testing.T) {
			id, sha := b.request(map[string]any{"kind": "agent_request", "title": "Which branch do I fix it on?",
				"proposal": map[string]any{"mode": "advisory"}, "question": map[string]any{"choices": []string{"main", "release-2.4"}}})
			p.Go("/approvals/" + id)
			p.WaitVisible("[data-testid=choice-1]")
			if n := p.Count("[data-testid=approve]"); n != 0 {
				t.Fatal("a question shows approve")
			}
			b.answer(id, "[data-testid=choice-1]")
			b.checkDecided("approved", "Answered with choice 2: release-2.4", "ada")
			st := b.status(id)
			if ans, _ := st["answer"].(map[string]any); ans["choice"] != "release-2.4" || ans["index"] != float64(1) {
				t.Fatalf("approval_status = %v", st)
			}
			b.checkProof(st["proof"], id, sha, "choice:1", "ada")
			if ans, _ := b.oneInstruction(id, "approved")["answer"].(map[string]any); ans["choice"] != "release-2.4" || ans["index"] != float64(1) {
				t.Fatalf("the instruction's answer = %v", ans)
			}
		})

		t.Run("free text", func(t *testing.T) {
			const text = "On main, then cherry-pick <it> to 2.4"
			id, sha := b.request(map[string]any{"kind": "agent_request", "title": "Where should the fix go?",
				"proposal": map[string]any{"mode": "advisory"}, "question": map[string]any{}})
			p.Go("/approvals/" + id)
			p.WaitVisible("[data-testid=answer-text]")
			p.Type("[data-testid=answer-text]", text)
			b.answer(id, "[data-testid=answer]")
			b.checkDecided("approved", "Answered in words", "ada")
			if got := p.Text("[data-testid=note]"); got != text {
				t.Errorf("the page shows the answer %q", got)
			}
			st := b.status(id)
			if ans, _ := st["answer"].(map[string]any); ans["text"] != text {
				t.Fatalf("approval_status = %v", st)
			}
			sum := sha256.Sum256([]byte(text))
			pr := b.checkProof(st["proof"], id, sha, "answer:"+hex.EncodeToString(sum[:]), "ada")
			if pr.Unsigned.Answer != text {
				t.Errorf("the proof carries the answer %q", pr.Unsigned.Answer)
			}
			if ans, _ := b.oneInstruction(id, "approved")["answer"].(map[string]any); ans["text"] != text {
				t.Fatalf("the instruction's answer = %v", ans)
			}
		})
	})
}
