package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
)

// Seed 000's tools over real MCP HTTP: session_start, session_heartbeat,
// session_end, approval_request, approval_status and work_list.

type boardEnv struct {
	env     *apptest.Env
	bot     *apptest.Client
	owner   *people.Member
	itemID  string
	session string
}

func startBoard(t *testing.T, db apptest.Database) *boardEnv {
	t.Helper()
	ctx := context.Background()
	env := apptest.Start(t, db, nil)
	for _, c := range [][2]string{{"todo", "To do"}, {"doing", "Doing"}, {"done", "Done"}} {
		if _, err := env.Store.AddColumn(ctx, env.Account.ID, c[0], c[1]); err != nil {
			t.Fatal(err)
		}
	}
	it, err := env.Store.AddItem(ctx, env.Account.ID, "doing", "Fix login", "", asks.ActorPerson, "alice")
	if err != nil {
		t.Fatal(err)
	}
	_, token := env.Agent(env.Account.ID, "bot")
	bot := env.Connect(token)
	ss := bot.OK("session_start", map[string]any{"label": "fixing login"})
	return &boardEnv{env: env, bot: bot, owner: env.Member(env.Account.ID, "alice", core.RoleOwner), itemID: it.ID, session: ss["sessionId"].(string)}
}

func advisory() map[string]any { return map[string]any{"mode": "advisory"} }

func workMove(item, column string) map[string]any {
	return map[string]any{"mode": "command", "command": map[string]any{"method": "work_move", "input": map[string]any{"itemId": item, "columnKey": column}}}
}

// counts is what a refused call must not change.
func counts(t *testing.T, env *apptest.Env) string {
	t.Helper()
	var out []string
	for _, table := range []string{"approvals", "agent_requests", "events", "work_item_history", "agent_sessions"} {
		var n int64
		if err := env.Store.DB().Table(table).Count(&n).Error; err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s=%d", table, n))
	}
	return strings.Join(out, " ")
}

func TestToolsListPublishesTheSeedsApprovalRequestSchemaAsWritten(t *testing.T) {
	tools, _ := listedTools(t)
	seed, err := os.ReadFile("schemas/approval_request.json")
	if err != nil {
		t.Fatal(err)
	}
	var want any
	if err := json.Unmarshal(seed, &want); err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools {
		if tool.Name != "approval_request" {
			continue
		}
		b, _ := json.Marshal(tool.InputSchema)
		var got any
		_ = json.Unmarshal(b, &got)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("tools/list publishes\n%s\nwant the seed's\n%s", b, seed)
		}
		return
	}
	t.Fatal("approval_request is not in tools/list")
}

func TestApprovalRequestRefusesEveryRuleOfTheSchema(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		b := startBoard(t, db)
		ctx := context.Background()
		other, err := b.env.Store.CreateAccount(ctx, "other")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.env.Store.AddColumn(ctx, other.ID, "archive", "Archive"); err != nil {
			t.Fatal(err)
		}
		foreignItem, err := b.env.Store.AddItem(ctx, other.ID, "archive", "Theirs", "", asks.ActorPerson, "x")
		if err != nil {
			t.Fatal(err)
		}
		otherAgent, otherToken := b.env.Agent(b.env.Account.ID, "other-bot")
		_ = otherAgent
		theirSession := b.env.Connect(otherToken).OK("session_start", map[string]any{})["sessionId"].(string)
		ended := b.bot.OK("session_start", map[string]any{})["sessionId"].(string)
		b.bot.OK("session_end", map[string]any{"sessionId": ended})

		base := map[string]any{"kind": "work_change", "title": "Move Fix login to Done", "proposal": workMove(b.itemID, "done"), "idempotencyKey": "k"}
		question := map[string]any{"kind": "agent_request", "title": "Which?", "proposal": advisory(), "idempotencyKey": "k"}
		long := func(n int) string { return strings.Repeat("a", n) }
		cases := []struct {
			name  string
			args  map[string]any
			code  core.Code
			field string
		}{
			{"kind is required", specWith(base, "kind", specDrop), core.InvalidArgument, "kind"},
			{"kind is one of the four", specWith(base, "kind", "pull_request"), core.InvalidArgument, "kind"},
			{"kind is a string", specWith(base, "kind", 3), core.InvalidArgument, "kind"},
			{"title is required", specWith(base, "title", specDrop), core.InvalidArgument, "title"},
			{"title is not blank", specWith(base, "title", "  "), core.InvalidArgument, "title"},
			{"title is one line", specWith(base, "title", "a\nb"), core.InvalidArgument, "title"},
			{"title is at most 120", specWith(base, "title", long(121)), core.InvalidArgument, "title"},
			{"title is a string", specWith(base, "title", true), core.InvalidArgument, "title"},
			{"description is at most 2000", specWith(base, "description", long(2001)), core.InvalidArgument, "description"},
			{"description is not null", specWith(base, "description", nil), core.InvalidArgument, "description"},
			{"targetType is one line", specWith(base, "targetType", "a\nb"), core.InvalidArgument, "targetType"},
			{"targetType is at most 64", specWith(base, "targetType", long(65)), core.InvalidArgument, "targetType"},
			{"targetId is at most 200", specWith(base, "targetId", long(201)), core.InvalidArgument, "targetId"},
			{"targetId is a string", specWith(base, "targetId", 7), core.InvalidArgument, "targetId"},
			{"an unknown member", specWith(base, "priority", 1), core.InvalidArgument, "priority"},
			{"account_id is no member of the seed's schema", specWith(base, "account_id", b.env.Account.ID), core.InvalidArgument, "account_id"},
			{"proposal is required", specWith(base, "proposal", specDrop), core.InvalidArgument, "proposal"},
			{"proposal is an object", specWith(base, "proposal", "advisory"), core.InvalidArgument, "proposal"},
			{"proposal.mode is required", specWith(base, "proposal", map[string]any{}), core.InvalidArgument, "proposal.mode"},
			{"proposal.mode is advisory or command", specWith(base, "proposal", map[string]any{"mode": "auto"}), core.InvalidArgument, "proposal.mode"},
			{"an advisory proposal has nothing else", specWith(base, "proposal", map[string]any{"mode": "advisory", "command": map[string]any{}}), core.InvalidArgument, "proposal.command"},
			{"a command proposal needs its command", specWith(base, "proposal", map[string]any{"mode": "command"}), core.InvalidArgument, "proposal.command"},
			{"a command proposal has nothing else", specWith(base, "proposal", specWith(workMove(b.itemID, "done"), "note", "x")), core.InvalidArgument, "proposal.note"},
			{"command.method is work_move", specWith(base, "proposal", map[string]any{"mode": "command", "command": map[string]any{"method": "delete_item", "input": map[string]any{"itemId": b.itemID, "columnKey": "done"}}}), core.InvalidArgument, "proposal.command.method"},
			{"command.method is required", specWith(base, "proposal", map[string]any{"mode": "command", "command": map[string]any{"input": map[string]any{"itemId": b.itemID, "columnKey": "done"}}}), core.InvalidArgument, "proposal.command.method"},
			{"command.input is required", specWith(base, "proposal", map[string]any{"mode": "command", "command": map[string]any{"method": "work_move"}}), core.InvalidArgument, "proposal.command.input"},
			{"command has nothing else", specWith(base, "proposal", map[string]any{"mode": "command", "command": map[string]any{"method": "work_move", "input": map[string]any{"itemId": b.itemID, "columnKey": "done"}, "force": true}}), core.InvalidArgument, "proposal.command.force"},
			{"input.itemId is required", specWith(base, "proposal", map[string]any{"mode": "command", "command": map[string]any{"method": "work_move", "input": map[string]any{"columnKey": "done"}}}), core.InvalidArgument, "proposal.command.input.itemId"},
			{"input.columnKey is required", specWith(base, "proposal", map[string]any{"mode": "command", "command": map[string]any{"method": "work_move", "input": map[string]any{"itemId": b.itemID}}}), core.InvalidArgument, "proposal.command.input.columnKey"},
			{"input has nothing else", specWith(base, "proposal", map[string]any{"mode": "command", "command": map[string]any{"method": "work_move", "input": map[string]any{"itemId": b.itemID, "columnKey": "done", "position": 1}}}), core.InvalidArgument, "proposal.command.input.position"},
			{"input.itemId is a string", specWith(base, "proposal", workMove("x", "done"), "proposal", map[string]any{"mode": "command", "command": map[string]any{"method": "work_move", "input": map[string]any{"itemId": 5, "columnKey": "done"}}}), core.InvalidArgument, "proposal.command.input.itemId"},
			{"an item of no account", specWith(base, "proposal", workMove("item_nosuchitem", "done")), core.NotFound, "proposal.command.input.itemId"},
			{"another account's item", specWith(base, "proposal", workMove(foreignItem.ID, "done")), core.NotFound, "proposal.command.input.itemId"},
			{"a column of no account", specWith(base, "proposal", workMove(b.itemID, "archive")), core.NotFound, "proposal.command.input.columnKey"},
			{"the column the item is in", specWith(base, "proposal", workMove(b.itemID, "doing")), core.FailedPrecondition, "proposal.command.input.columnKey"},
			{"question on a work_change", specWith(base, "proposal", advisory(), "question", map[string]any{}), core.InvalidArgument, "question"},
			{"question with a command proposal", specWith(question, "proposal", workMove(b.itemID, "done"), "question", map[string]any{}), core.InvalidArgument, "question"},
			{"question is an object", specWith(question, "question", []any{"a", "b"}), core.InvalidArgument, "question"},
			{"question has only choices", specWith(question, "question", map[string]any{"text": "x"}), core.InvalidArgument, "question.text"},
			{"one choice is too few", specWith(question, "question", map[string]any{"choices": []any{"a"}}), core.InvalidArgument, "question.choices"},
			{"seven choices are too many", specWith(question, "question", map[string]any{"choices": []any{"a", "b", "c", "d", "e", "f", "g"}}), core.InvalidArgument, "question.choices"},
			{"choices are distinct", specWith(question, "question", map[string]any{"choices": []any{"a", "a"}}), core.InvalidArgument, "question.choices[1]"},
			{"a choice is not empty", specWith(question, "question", map[string]any{"choices": []any{"a", ""}}), core.InvalidArgument, "question.choices[1]"},
			{"a choice is at most 120", specWith(question, "question", map[string]any{"choices": []any{"a", long(121)}}), core.InvalidArgument, "question.choices[1]"},
			{"a choice is one line", specWith(question, "question", map[string]any{"choices": []any{"a\nb", "c"}}), core.InvalidArgument, "question.choices[0]"},
			{"a choice is a string", specWith(question, "question", map[string]any{"choices": []any{"a", 2}}), core.InvalidArgument, "question.choices[1]"},
			{"choices is a list", specWith(question, "question", map[string]any{"choices": "a,b"}), core.InvalidArgument, "question.choices"},
			{"expiresInMinutes at least 5", specWith(base, "expiresInMinutes", 4), core.InvalidArgument, "expiresInMinutes"},
			{"expiresInMinutes at most 10080", specWith(base, "expiresInMinutes", 10081), core.InvalidArgument, "expiresInMinutes"},
			{"expiresInMinutes is whole", specWith(base, "expiresInMinutes", 5.5), core.InvalidArgument, "expiresInMinutes"},
			{"expiresInMinutes is a number", specWith(base, "expiresInMinutes", "10"), core.InvalidArgument, "expiresInMinutes"},
			{"idempotencyKey is required", specWith(base, "idempotencyKey", specDrop), core.InvalidArgument, "idempotencyKey"},
			{"idempotencyKey is not empty", specWith(base, "idempotencyKey", ""), core.InvalidArgument, "idempotencyKey"},
			{"idempotencyKey is at most 200", specWith(base, "idempotencyKey", long(201)), core.InvalidArgument, "idempotencyKey"},
			{"idempotencyKey is a string", specWith(base, "idempotencyKey", 12), core.InvalidArgument, "idempotencyKey"},
			{"sessionId is a string", specWith(base, "sessionId", 1), core.InvalidArgument, "sessionId"},
			{"an unknown sessionId", specWith(base, "sessionId", "sess_nosuchsession"), core.NotFound, "sessionId"},
			{"another agent's sessionId", specWith(base, "sessionId", theirSession), core.NotFound, "sessionId"},
			{"an ended session", specWith(base, "sessionId", ended), core.FailedPrecondition, "sessionId"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				before := counts(t, b.env)
				r := b.bot.Call("approval_request", tc.args)
				if !r.IsError || r.Code != string(tc.code) || r.Field != tc.field {
					t.Errorf("%s, want %s on %s", r, tc.code, tc.field)
				}
				if after := counts(t, b.env); after != before {
					t.Errorf("a refused call stored something: %s → %s", before, after)
				}
			})
		}
		t.Run("the bounds themselves are accepted", func(t *testing.T) {
			for i, args := range []map[string]any{
				specWith(base, "title", long(120), "description", long(2000), "targetType", long(64), "targetId", long(200), "expiresInMinutes", 5, "idempotencyKey", long(200)),
				specWith(base, "expiresInMinutes", 10080, "idempotencyKey", "b2", "sessionId", b.session),
				specWith(question, "question", map[string]any{"choices": []any{"a", long(120), "c", "d", "e", "f"}}, "idempotencyKey", "b3"),
				specWith(question, "question", map[string]any{}, "idempotencyKey", "b4"),
				specWith(base, "kind", "memory_change", "proposal", advisory(), "idempotencyKey", "b5"),
				specWith(base, "kind", "life_change", "proposal", advisory(), "idempotencyKey", "b6"),
			} {
				if r := b.bot.Call("approval_request", args); r.IsError {
					t.Errorf("args %d: %s", i, r)
				}
			}
		})
	})
}

func TestSessionToolsRefuseOthersAndEnded(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		b := startBoard(t, db)
		ctx := context.Background()
		other, _ := b.env.Store.CreateAccount(ctx, "other")
		_, strangerToken := b.env.Agent(other.ID, "stranger")
		stranger := b.env.Connect(strangerToken)
		for _, tool := range []string{"session_heartbeat", "session_end"} {
			r := stranger.Call(tool, map[string]any{"sessionId": b.session})
			if r.Code != string(core.NotFound) || r.Field != "sessionId" {
				t.Errorf("%s on another account's session: %s", tool, r)
			}
			if r := b.bot.Call(tool, map[string]any{}); r.Code != string(core.InvalidArgument) || r.Field != "sessionId" {
				t.Errorf("%s without sessionId: %s", tool, r)
			}
			if r := b.bot.Call(tool, map[string]any{"sessionId": b.session, "extra": 1}); r.Code != string(core.InvalidArgument) || r.Field != "extra" {
				t.Errorf("%s with an unknown member: %s", tool, r)
			}
			if r := b.bot.Call(tool, map[string]any{"sessionId": 3}); r.Code != string(core.InvalidArgument) || r.Field != "sessionId" {
				t.Errorf("%s with a number: %s", tool, r)
			}
		}
		if r := b.bot.Call("session_start", map[string]any{"label": strings.Repeat("x", 121)}); r.Code != string(core.InvalidArgument) || r.Field != "label" {
			t.Errorf("a label of 121: %s", r)
		}
		if r := b.bot.Call("session_start", map[string]any{"label": "a\nb"}); r.Code != string(core.InvalidArgument) || r.Field != "label" {
			t.Errorf("a label of two lines: %s", r)
		}
		if r := stranger.Call("approval_status", map[string]any{"approvalId": "appr_x"}); r.Code != string(core.NotFound) || r.Field != "approvalId" {
			t.Errorf("approval_status of nothing: %s", r)
		}
		mine := b.bot.OK("approval_request", map[string]any{"kind": "life_change", "title": "t", "proposal": advisory(), "idempotencyKey": "z"})
		if r := stranger.Call("approval_status", map[string]any{"approvalId": mine["approvalId"]}); r.Code != string(core.NotFound) || r.Field != "approvalId" {
			t.Errorf("approval_status of another account's request: %s", r)
		}
		if r := b.bot.Call("work_list", map[string]any{"columnKey": "nope"}); r.Code != string(core.NotFound) || r.Field != "columnKey" {
			t.Errorf("work_list of no column: %s", r)
		}
		if out := stranger.OK("work_list", map[string]any{}); len(out["items"].([]any)) != 0 || len(out["columns"].([]any)) != 0 {
			t.Errorf("another account sees this board: %v", out)
		}
		b.bot.OK("session_end", map[string]any{"sessionId": b.session})
		if r := b.bot.Call("session_heartbeat", map[string]any{"sessionId": b.session}); r.Code != string(core.FailedPrecondition) || r.Field != "sessionId" {
			t.Errorf("heartbeat of an ended session: %s", r)
		}
		// Scopes: the session tools and approval_request need the write scopes, the others the read scopes.
		_, readOnly := b.env.Agent(b.env.Account.ID, "reader", people.ScopeMCPRead, people.ScopeApprovalsRead)
		reader := b.env.Connect(readOnly)
		for _, tool := range []string{"session_start", "session_heartbeat", "session_end", "approval_request"} {
			if r := reader.Call(tool, map[string]any{}); r.Code != string(core.PermissionDenied) {
				t.Errorf("%s with read scopes: %s", tool, r)
			}
		}
		_, writeOnly := b.env.Agent(b.env.Account.ID, "writer", people.ScopeMCPWrite, people.ScopeApprovalsWrite)
		writer := b.env.Connect(writeOnly)
		for _, tool := range []string{"approval_status", "work_list"} {
			if r := writer.Call(tool, map[string]any{}); r.Code != string(core.PermissionDenied) {
				t.Errorf("%s with write scopes: %s", tool, r)
			}
		}
	})
}

func TestTheSessionLoopOverMCP(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		b := startBoard(t, db)
		board := b.bot.OK("work_list", map[string]any{})
		if cols := board["columns"].([]any); len(cols) != 3 || cols[0].(map[string]any)["key"] != "todo" {
			t.Fatalf("work_list columns = %v", cols)
		}
		move := b.bot.OK("approval_request", map[string]any{"kind": "work_change", "title": "Move Fix login to Done",
			"proposal": workMove(b.itemID, "done"), "sessionId": b.session, "idempotencyKey": "m1", "expiresInMinutes": 30})
		ask := b.bot.OK("approval_request", map[string]any{"kind": "agent_request", "title": "Which branch?",
			"proposal": advisory(), "question": map[string]any{"choices": []any{"main", "next"}}, "sessionId": b.session, "idempotencyKey": "q1"})
		beat := b.bot.OK("session_heartbeat", map[string]any{"sessionId": b.session})
		if beat["state"] != "waiting" || len(beat["waitingOn"].([]any)) != 2 || len(beat["instructions"].([]any)) != 0 {
			t.Fatalf("heartbeat while pending = %v", beat)
		}
		if _, err := b.env.Store.Decide(ctx, b.env.Account.ID, move["approvalId"].(string), b.owner, asks.Decision{Verdict: asks.VerdictApprove}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.env.Store.Decide(ctx, b.env.Account.ID, ask["approvalId"].(string), b.owner, asks.Decision{Verdict: "choice:1"}); err != nil {
			t.Fatal(err)
		}
		st := b.bot.OK("approval_status", map[string]any{"approvalId": move["approvalId"]})
		cmd := st["command"].(map[string]any)
		if st["status"] != "done" || cmd["executed"] != true || cmd["method"] != "work_move" || st["decidedBy"] != "alice" {
			t.Errorf("approval_status of the move = %v", st)
		}
		st = b.bot.OK("approval_status", map[string]any{"approvalId": ask["approvalId"]})
		if ans := st["answer"].(map[string]any); st["status"] != "approved" || ans["choice"] != "next" || ans["index"] != float64(1) {
			t.Errorf("approval_status of the question = %v", st)
		}
		board = b.bot.OK("work_list", map[string]any{"columnKey": "done"})
		if items := board["items"].([]any); len(items) != 1 || items[0].(map[string]any)["id"] != b.itemID {
			t.Errorf("done column = %v", items)
		}
		beat = b.bot.OK("session_heartbeat", map[string]any{"sessionId": b.session})
		if beat["state"] != "active" || len(beat["instructions"].([]any)) != 2 {
			t.Fatalf("heartbeat after the answers = %v", beat)
		}
		if again := b.bot.OK("session_heartbeat", map[string]any{"sessionId": b.session}); len(again["instructions"].([]any)) != 0 {
			t.Errorf("the instructions came twice: %v", again)
		}
		listed := b.bot.OK("approvals_get", map[string]any{"approval_id": move["approvalId"]})
		if listed["kind"] != "work_change" || listed["status"] != "done" {
			t.Errorf("approvals_get of a request = %v", listed)
		}
		byKind := b.bot.OK("approvals_list", map[string]any{"kind": "agent_request"})
		if got := byKind["approvals"].([]any); len(got) != 1 || got[0].(map[string]any)["approval_id"] != ask["approvalId"] {
			t.Errorf("approvals_list kind agent_request = %v", got)
		}
		if ended := b.bot.OK("session_end", map[string]any{"sessionId": b.session}); ended["state"] != "ended" {
			t.Errorf("session_end = %v", ended)
		}
	})
}

func TestIdempotencyOverMCP(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		b := startBoard(t, db)
		args := map[string]any{"kind": "work_change", "title": "Move Fix login to Done", "proposal": workMove(b.itemID, "done"), "idempotencyKey": "race"}
		var wg sync.WaitGroup
		results := make([]apptest.Result, 20)
		for i := range results {
			wg.Go(func() {
				r, err := apptest.CallTool(context.Background(), b.bot.Session, "approval_request", args)
				if err != nil {
					t.Error(err)
				}
				results[i] = r
			})
		}
		wg.Wait()
		ids := map[any]bool{}
		fresh := 0
		for _, r := range results {
			if r.IsError {
				t.Fatalf("a retry was refused: %s", r)
			}
			ids[r.Out["approvalId"]] = true
			if r.Out["repeated"] == false {
				fresh++
			}
		}
		if len(ids) != 1 || fresh != 1 {
			t.Errorf("20 retries gave %d requests, %d of them new; want 1 and 1", len(ids), fresh)
		}
		var asks int64
		if err := b.env.Store.DB().Table("approvals").Where("kind = ?", "work_change").Count(&asks).Error; err != nil {
			t.Fatal(err)
		}
		var pushes int64
		_ = b.env.Store.DB().Table("push_outbox").Count(&pushes).Error
		if asks != 1 {
			t.Errorf("%d asks stored for one key", asks)
		}
		r := b.bot.Call("approval_request", specWith(args, "title", "Another title"))
		if r.Code != string(core.FailedPrecondition) || r.Field != "idempotencyKey" {
			t.Errorf("the same key with other arguments: %s", r)
		}
		// The same arguments in another member order are the same canonical arguments.
		reordered := maps.Clone(args)
		if r := b.bot.Call("approval_request", reordered); r.IsError || r.Out["repeated"] != true {
			t.Errorf("a retry: %s", r)
		}
	})
}

func TestTwoHeartbeatsAtOnceOverMCP(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		b := startBoard(t, db)
		_, token2 := b.env.Agent(b.env.Account.ID, "unused")
		_ = token2
		for trial := range 5 {
			req := b.bot.OK("approval_request", map[string]any{"kind": "memory_change", "title": "Forget the old key", "proposal": advisory(),
				"sessionId": b.session, "idempotencyKey": fmt.Sprintf("h%d", trial)})
			if _, err := b.env.Store.Decide(ctx, b.env.Account.ID, req["approvalId"].(string), b.owner, asks.Decision{Verdict: asks.VerdictApprove}); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			got := make([]int, 2)
			for i := range got {
				wg.Go(func() {
					for {
						r, err := apptest.CallTool(ctx, b.bot.Session, "session_heartbeat", map[string]any{"sessionId": b.session})
						if err != nil {
							t.Error(err)
							return
						}
						if r.IsError && r.Code == string(core.FailedPrecondition) {
							continue
						}
						if r.IsError {
							t.Error(r)
							return
						}
						got[i] = len(r.Out["instructions"].([]any))
						return
					}
				})
			}
			wg.Wait()
			if got[0]+got[1] != 1 {
				t.Fatalf("trial %d: %d + %d instructions, want 1 in total", trial, got[0], got[1])
			}
		}
	})
}
