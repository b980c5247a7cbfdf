package models_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
	"github.com/countersign/countersign/models/work"
)

// board makes the columns todo, doing and done and one item in doing.
func board(t *testing.T, s *models.Store, accountID string) *work.WorkItem {
	t.Helper()
	ctx := context.Background()
	for _, c := range [][2]string{{"todo", "To do"}, {"doing", "Doing"}, {"done", "Done"}} {
		if _, err := s.AddColumn(ctx, accountID, c[0], c[1]); err != nil {
			t.Fatal(err)
		}
	}
	it, err := s.AddItem(ctx, accountID, "doing", "Fix login", "", asks.ActorPerson, "alice")
	if err != nil {
		t.Fatal(err)
	}
	return it
}

func moveArgs(key, itemID, column, session string) json.RawMessage {
	args := map[string]any{
		"kind": "work_change", "title": "Move Fix login to Done", "idempotencyKey": key,
		"proposal": map[string]any{"mode": "command", "command": map[string]any{"method": "work_move",
			"input": map[string]any{"itemId": itemID, "columnKey": column}}},
	}
	if session != "" {
		args["sessionId"] = session
	}
	b, _ := json.Marshal(args)
	return b
}

func columnOf(t *testing.T, s *models.Store, accountID, itemID string) string {
	t.Helper()
	b, err := s.WorkBoard(context.Background(), accountID, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range b.Items {
		if it.ID == itemID {
			return it.ColumnKey
		}
	}
	t.Fatalf("item %s is not on the board", itemID)
	return ""
}

func TestAnApprovedWorkMoveMovesTheItemAndTheHeartbeatCarriesItOnce(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		s, acct := apptest.BareStore(t, db)
		agent, _, err := s.CreateAgent(ctx, acct.ID, "bot", people.AllScopes)
		if err != nil {
			t.Fatal(err)
		}
		owner, err := s.AddMember(ctx, acct.ID, "alice", "Alice", core.RoleOwner)
		if err != nil {
			t.Fatal(err)
		}
		it := board(t, s, acct.ID)
		ss, err := s.StartSession(ctx, agent, "fixing login")
		if err != nil {
			t.Fatal(err)
		}
		a, r, repeat, err := s.FileRequest(ctx, agent, moveArgs("k1", it.ID, "done", ss.ID), nil)
		if err != nil || repeat {
			t.Fatalf("file: %v repeat=%t", err, repeat)
		}
		if r.Method != "work_move" || a.Status != asks.StatusPending || a.AgentLabel != "fixing login" {
			t.Fatalf("filed %+v %+v", a, r)
		}
		beat, err := s.Heartbeat(ctx, agent, ss.ID)
		if err != nil {
			t.Fatal(err)
		}
		if beat.State != work.SessionWaiting || len(beat.WaitingOn) != 1 || beat.WaitingOn[0] != a.ID || len(beat.Instructions) != 0 {
			t.Fatalf("beat while pending = %+v", beat)
		}
		if got := columnOf(t, s, acct.ID, it.ID); got != "doing" {
			t.Fatalf("the item moved before the approval: %s", got)
		}
		a, err = s.Decide(ctx, acct.ID, a.ID, owner, asks.Decision{Verdict: asks.VerdictApprove})
		if err != nil {
			t.Fatal(err)
		}
		if a.Status != asks.StatusDone {
			t.Fatalf("status after approve = %s, want done", a.Status)
		}
		if got := columnOf(t, s, acct.ID, it.ID); got != "done" {
			t.Fatalf("item is in %s after approval, want done", got)
		}
		hist, err := s.WorkItemHistory(ctx, acct.ID, it.ID)
		if err != nil {
			t.Fatal(err)
		}
		if last := hist[len(hist)-1]; last.Action != work.WorkMoved || last.ApprovalID != a.ID || last.FromColumn != "doing" || last.ToColumn != "done" || last.Actor != "alice" {
			t.Errorf("history's last line = %+v", last)
		}
		beat, err = s.Heartbeat(ctx, agent, ss.ID)
		if err != nil {
			t.Fatal(err)
		}
		if beat.State != work.SessionActive || len(beat.Instructions) != 1 {
			t.Fatalf("beat after approval = %+v", beat)
		}
		in := beat.Instructions[0]
		if in.ApprovalID != a.ID || in.Status != "done" || in.Command == nil || !in.Command.Executed || in.DecidedBy != "alice" {
			t.Errorf("instruction = %+v command=%+v", in, in.Command)
		}
		beat, err = s.Heartbeat(ctx, agent, ss.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(beat.Instructions) != 0 {
			t.Errorf("the instruction came again: %+v", beat.Instructions)
		}
	})
}

func TestAWorkMoveThatCannotRunFailsAndLeavesTheBoard(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		s, acct := apptest.BareStore(t, db)
		agent, _, _ := s.CreateAgent(ctx, acct.ID, "bot", people.AllScopes)
		owner, _ := s.AddMember(ctx, acct.ID, "alice", "Alice", core.RoleOwner)
		it := board(t, s, acct.ID)
		a, _, _, err := s.FileRequest(ctx, agent, moveArgs("k1", it.ID, "done", ""), nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.MoveItem(ctx, acct.ID, it.ID, "todo", asks.ActorPerson, "alice"); err != nil {
			t.Fatal(err)
		}
		if err := s.RemoveItem(ctx, acct.ID, it.ID, asks.ActorPerson, "alice"); err != nil {
			t.Fatal(err)
		}
		a, err = s.Decide(ctx, acct.ID, a.ID, owner, asks.Decision{Verdict: asks.VerdictApprove})
		if err != nil {
			t.Fatal(err)
		}
		r, err := s.RequestOf(ctx, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		o := work.OutcomeOf(a, r)
		if a.Status != asks.StatusFailed || a.Decision != "approve" || o.Command.Executed || o.Command.Reason == "" {
			t.Errorf("after approving a move of a removed item: status %s decision %s command %+v", a.Status, a.Decision, o.Command)
		}
	})
}

func TestIdempotencyKeys(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		s, acct := apptest.BareStore(t, db)
		agent, _, _ := s.CreateAgent(ctx, acct.ID, "bot", people.AllScopes)
		other, _, _ := s.CreateAgent(ctx, acct.ID, "other", people.AllScopes)
		it := board(t, s, acct.ID)

		t.Run("a refused call reserves no key", func(t *testing.T) {
			_, _, _, err := s.FileRequest(ctx, agent, moveArgs("k0", it.ID, "nowhere", ""), nil)
			if core.CodeOf(err) != core.NotFound || core.FieldOf(err) != "proposal.command.input.columnKey" {
				t.Fatalf("err = %v", err)
			}
			if _, _, repeat, err := s.FileRequest(ctx, agent, moveArgs("k0", it.ID, "done", ""), nil); err != nil || repeat {
				t.Fatalf("the key was reserved by a refused call: %v repeat=%t", err, repeat)
			}
		})
		t.Run("20 concurrent retries file one request", func(t *testing.T) {
			var wg sync.WaitGroup
			ids := make([]string, 20)
			errs := make([]error, 20)
			for i := range ids {
				wg.Go(func() {
					a, _, _, err := s.FileRequest(ctx, agent, moveArgs("k-race", it.ID, "todo", ""), nil)
					errs[i] = err
					if a != nil {
						ids[i] = a.ID
					}
				})
			}
			wg.Wait()
			for i := range ids {
				if errs[i] != nil || ids[i] != ids[0] {
					t.Fatalf("retry %d: id %s err %v, want %s", i, ids[i], errs[i], ids[0])
				}
			}
			var n int64
			if err := s.DB().Table("approvals").Where("requester_id = ? AND kind = ?", agent.ID, "work_change").
				Where("id IN (SELECT approval_id FROM agent_requests WHERE idempotency_key = ?)", "k-race").Count(&n).Error; err != nil {
				t.Fatal(err)
			}
			if n != 1 {
				t.Errorf("%d asks for one key", n)
			}
		})
		t.Run("the same key with other arguments is refused", func(t *testing.T) {
			_, _, _, err := s.FileRequest(ctx, agent, moveArgs("k-race", it.ID, "done", ""), nil)
			if core.CodeOf(err) != core.FailedPrecondition || core.FieldOf(err) != "idempotencyKey" {
				t.Fatalf("err = %v", err)
			}
		})
		t.Run("keys are per agent", func(t *testing.T) {
			if _, _, repeat, err := s.FileRequest(ctx, other, moveArgs("k-race", it.ID, "done", ""), nil); err != nil || repeat {
				t.Fatalf("another agent's key: %v repeat=%t", err, repeat)
			}
		})
	})
}

func TestSessions(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		s, acct := apptest.BareStore(t, db)
		s.SetAgentSessionIdle(time.Minute)
		agent, _, _ := s.CreateAgent(ctx, acct.ID, "bot", people.AllScopes)
		other, _, _ := s.CreateAgent(ctx, acct.ID, "other", people.AllScopes)
		ss, err := s.StartSession(ctx, agent, "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Heartbeat(ctx, other, ss.ID); core.CodeOf(err) != core.NotFound || core.FieldOf(err) != "sessionId" {
			t.Errorf("another agent's heartbeat: %v", err)
		}
		if _, err := s.EndSession(ctx, agent, ss.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Heartbeat(ctx, agent, ss.ID); core.CodeOf(err) != core.FailedPrecondition {
			t.Errorf("heartbeat of an ended session: %v", err)
		}
		idle, _ := s.StartSession(ctx, agent, "")
		now := time.Now()
		s.SetClock(func() time.Time { return now.Add(61 * time.Second) })
		if _, err := s.Heartbeat(ctx, agent, idle.ID); core.CodeOf(err) != core.FailedPrecondition {
			t.Errorf("heartbeat of an idle session: %v", err)
		}
		if _, _, _, err := s.FileRequest(ctx, agent, json.RawMessage(fmt.Sprintf(`{"kind":"life_change","title":"t","proposal":{"mode":"advisory"},"idempotencyKey":"x","sessionId":%q}`, idle.ID)), nil); core.CodeOf(err) != core.FailedPrecondition || core.FieldOf(err) != "sessionId" {
			t.Errorf("request in an idle session: %v", err)
		}
	})
}

func TestTwoHeartbeatsAtOnceDeliverAnInstructionOnce(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		s, acct := apptest.BareStore(t, db)
		agent, _, _ := s.CreateAgent(ctx, acct.ID, "bot", people.AllScopes)
		owner, _ := s.AddMember(ctx, acct.ID, "alice", "Alice", core.RoleOwner)
		ss, _ := s.StartSession(ctx, agent, "")
		for trial := range 10 {
			a, _, _, err := s.FileRequest(ctx, agent, json.RawMessage(fmt.Sprintf(`{"kind":"memory_change","title":"Forget X","proposal":{"mode":"advisory"},"idempotencyKey":"k%d","sessionId":%q}`, trial, ss.ID)), nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Decide(ctx, acct.ID, a.ID, owner, asks.Decision{Verdict: asks.VerdictDeny}); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			got := make([]int, 2)
			for i := range got {
				wg.Go(func() {
					for {
						beat, err := s.Heartbeat(ctx, agent, ss.ID)
						if core.CodeOf(err) == core.FailedPrecondition {
							continue // the other one delivered meanwhile: heartbeat again
						}
						if err != nil {
							t.Error(err)
							return
						}
						got[i] = len(beat.Instructions)
						return
					}
				})
			}
			wg.Wait()
			if got[0]+got[1] != 1 {
				t.Fatalf("trial %d: the two heartbeats carried %d and %d instructions, want 1 in total", trial, got[0], got[1])
			}
		}
	})
}

func TestApproveVersusExpiryNeverMovesAfterTheDeadline(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		s, acct := apptest.BareStore(t, db)
		agent, _, _ := s.CreateAgent(ctx, acct.ID, "bot", people.AllScopes)
		owner, _ := s.AddMember(ctx, acct.ID, "alice", "Alice", core.RoleOwner)
		board(t, s, acct.ID)
		var clock sync.Mutex
		base := time.Now()
		offset := time.Duration(0)
		s.SetClock(func() time.Time {
			clock.Lock()
			defer clock.Unlock()
			return base.Add(offset).Add(time.Since(base))
		})
		moved, expired := 0, 0
		for trial := range 50 {
			it, err := s.AddItem(ctx, acct.ID, "doing", fmt.Sprintf("Item %d", trial), "", asks.ActorPerson, "alice")
			if err != nil {
				t.Fatal(err)
			}
			args := moveArgs(fmt.Sprintf("t%d", trial), it.ID, "done", "")
			var m map[string]any
			_ = json.Unmarshal(args, &m)
			m["expiresInMinutes"] = 5
			args, _ = json.Marshal(m)
			a, _, _, err := s.FileRequest(ctx, agent, args, nil)
			if err != nil {
				t.Fatal(err)
			}
			// Bring the clock to within a millisecond or two of the deadline, then race.
			clock.Lock()
			offset += a.ExpiresAt.Sub(base.Add(offset).Add(time.Since(base))) - time.Duration(trial%4)*500*time.Microsecond
			clock.Unlock()
			var wg sync.WaitGroup
			var decided *asks.Approval
			var decideErr error
			wg.Go(func() {
				decided, decideErr = s.Decide(ctx, acct.ID, a.ID, owner, asks.Decision{Verdict: asks.VerdictApprove})
			})
			wg.Go(func() { _, _ = s.ExpireDue(ctx) })
			wg.Wait()
			final, err := s.GetApproval(ctx, acct.ID, a.ID)
			if err != nil {
				t.Fatal(err)
			}
			col := columnOf(t, s, acct.ID, it.ID)
			switch final.Status {
			case asks.StatusDone:
				moved++
				if decideErr != nil || col != "done" || final.DecidedAt == nil || !final.DecidedAt.Before(final.ExpiresAt) {
					t.Fatalf("trial %d: done, but err %v column %s decided %v deadline %v", trial, decideErr, col, final.DecidedAt, final.ExpiresAt)
				}
			case asks.StatusExpired:
				expired++
				if decideErr == nil || col != "doing" || decided != nil && decided.Status == asks.StatusDone {
					t.Fatalf("trial %d: expired, but the approve said %v and the item is in %s", trial, decideErr, col)
				}
			default:
				t.Fatalf("trial %d: status %s", trial, final.Status)
			}
		}
		t.Logf("%d moved before the deadline, %d expired", moved, expired)
	})
}

func TestVerdictsOfARequestsQuestion(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		s, acct := apptest.BareStore(t, db)
		agent, _, _ := s.CreateAgent(ctx, acct.ID, "bot", people.AllScopes)
		owner, _ := s.AddMember(ctx, acct.ID, "alice", "Alice", core.RoleOwner)
		choices, _, _, err := s.FileRequest(ctx, agent, json.RawMessage(`{"kind":"agent_request","title":"Which branch?","proposal":{"mode":"advisory"},"question":{"choices":["main","next"]},"idempotencyKey":"q1"}`), nil)
		if err != nil {
			t.Fatal(err)
		}
		free, _, _, err := s.FileRequest(ctx, agent, json.RawMessage(`{"kind":"agent_request","title":"What name?","proposal":{"mode":"advisory"},"question":{},"idempotencyKey":"q2"}`), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name    string
			a       *asks.Approval
			verdict asks.Verdict
			text    string
			field   string
		}{
			{"approve is no answer to a question", choices, asks.VerdictApprove, "", "decision"},
			{"a choice past the last", choices, "choice:2", "", "decision"},
			{"a choice with a leading zero", choices, "choice:01", "", "decision"},
			{"a free-text answer to a question with choices", choices, asks.VerdictAnswer, "x", "decision"},
			{"a choice on a free-text question", free, "choice:0", "", "decision"},
			{"an empty answer", free, asks.VerdictAnswer, "  ", "answer"},
			{"an answer whose hash is another text's", free, asks.AnswerVerdict("other"), "text", "answer"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := asks.ParseVerdict(tc.a, tc.verdict, tc.text)
				if core.CodeOf(err) != core.InvalidArgument || core.FieldOf(err) != tc.field {
					t.Errorf("err = %v, want INVALID_ARGUMENT on %s", err, tc.field)
				}
			})
		}
		a, err := s.Decide(ctx, acct.ID, choices.ID, owner, asks.Decision{Verdict: "choice:1"})
		if err != nil {
			t.Fatal(err)
		}
		o := work.OutcomeOf(a, nil)
		if a.Status != asks.StatusApproved || a.Decision != "choice:1" || o.Answer == nil || !o.Answer.Chosen || o.Answer.Index != 1 || o.Answer.Choice != "next" {
			t.Errorf("after choice:1: %s %s %+v", a.Status, a.Decision, o.Answer)
		}
		d, err := asks.ParseVerdict(free, asks.VerdictAnswer, "call it Atlas")
		if err != nil {
			t.Fatal(err)
		}
		a, err = s.Decide(ctx, acct.ID, free.ID, owner, d)
		if err != nil {
			t.Fatal(err)
		}
		o = work.OutcomeOf(a, nil)
		if a.Status != asks.StatusApproved || a.Decision != string(asks.AnswerVerdict("call it Atlas")) || o.Answer == nil || o.Answer.Text != "call it Atlas" {
			t.Errorf("after the answer: %s %s %+v", a.Status, a.Decision, o.Answer)
		}
	})
}
