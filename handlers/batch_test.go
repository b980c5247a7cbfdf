package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/asks"
)

// A batch is answered whole or not at all: a refused pick (a tool call that
// needs its check code, an answer other than approve or deny, an ask picked
// twice, more than 50) signs nothing and changes nothing; an ask withdrawn
// between the prompt and the signature refuses the whole batch; a batch
// whose asks are all still open decides them all with one signature.
func TestABatchIsAnsweredWholeOrNotAtAll(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		env := apptest.StartWeb(t, db, nil)
		ada := env.Owner("ada")
		_, token := env.Agent(env.Account.ID, "bot")
		bot := env.Connect(token)
		review := func(n int) string {
			return bot.OK("approvals_create", map[string]any{"kind": "review", "title": fmt.Sprintf("Review %d", n), "approve_means": "Reviewed", "deny_means": "Waits",
				"payload": map[string]any{"review": map[string]any{"url": fmt.Sprintf("https://docs.example.com/%d", n)}}})["approval_id"].(string)
		}
		tool := bot.OK("approvals_create", map[string]any{"kind": "tool_call", "title": "Call write_file", "approve_means": "Runs", "deny_means": "Nothing runs",
			"payload": map[string]any{"tool_call": map[string]any{"server": "filesystem", "tool": "write_file", "arguments": map[string]any{"path": "/tmp/x"}}}})["approval_id"].(string)
		runner := env.EnrollRunner(env.Account.ID, "host-1")
		run := runner.Ask("ada", apptest.ScriptSHA256([]byte("echo hi")), []string{"hi.sh", "eu"}, "read_only", 30*time.Minute)
		run["editable"] = []string{"run.argv[1]"}
		editable := bot.OK("approvals_create", run)["approval_id"].(string)
		a, b, c := review(1), review(2), review(3)
		many := make([]string, 51)
		for i := range many {
			many[i] = fmt.Sprintf("appr_%d", i)
		}
		for name, tc := range map[string]struct {
			body   map[string]any
			status int
		}{
			"a tool call":       {map[string]any{"approval_ids": []string{a, tool}, "decision": "approve"}, http.StatusConflict},
			"a question":        {map[string]any{"approval_ids": []string{a}, "decision": "question"}, http.StatusBadRequest},
			"an ask twice":      {map[string]any{"approval_ids": []string{a, a}, "decision": "approve"}, http.StatusBadRequest},
			"51 asks":           {map[string]any{"approval_ids": many, "decision": "approve"}, http.StatusBadRequest},
			"no ask":            {map[string]any{"approval_ids": []string{}, "decision": "approve"}, http.StatusBadRequest},
			"another's account": {map[string]any{"approval_ids": []string{"appr_nobodys"}, "decision": "approve"}, http.StatusNotFound},
		} {
			if r := ada.Post("/batch/challenge", tc.body); r.Status != tc.status {
				t.Errorf("%s: %s, want %d", name, r, tc.status)
			}
		}
		// A run that needs no check code, but whose argument the person may edit.
		if r := ada.Post("/batch/challenge", map[string]any{"approval_ids": []string{a, editable}, "decision": "approve"}); r.Status != http.StatusConflict ||
			!strings.Contains(fmt.Sprint(r.Body["message"]), "you may edit it before you sign") {
			t.Errorf("an ask the person may edit: %s, want 409 saying why it is answered alone", r)
		}

		// b is withdrawn by its agent between the prompt and the signature.
		begin := ada.Post("/batch/challenge", map[string]any{"approval_ids": []string{a, b}, "decision": "approve"})
		if begin.Status != http.StatusOK {
			t.Fatalf("batch challenge: %s", begin)
		}
		bot.OK("approvals_add_progress", map[string]any{"approval_id": b, "step": "stale", "note": "no longer needed"})
		id, options := begin.Ceremony()
		if r := ada.Post("/batch/decide", map[string]any{"ceremony": id, "credential": ada.Sign(options)}); r.Status == http.StatusOK {
			t.Fatalf("a batch with a withdrawn ask was decided: %s", r)
		}
		status := func(id string) asks.Status {
			got, err := env.Store.GetApproval(context.Background(), env.Account.ID, id)
			if err != nil {
				t.Fatal(err)
			}
			return got.Status
		}
		if status(a) != asks.StatusPending {
			t.Fatalf("the batch's other ask is %s after the refused batch, want pending: all or none", status(a))
		}

		begin = ada.Post("/batch/challenge", map[string]any{"approval_ids": []string{a, c}, "decision": "deny"})
		id, options = begin.Ceremony()
		if r := ada.Post("/batch/decide", map[string]any{"ceremony": id, "credential": ada.Sign(options)}); r.Status != http.StatusOK || r.Body["decided"] != float64(2) {
			t.Fatalf("batch decide: %s, want 2 decided", r)
		}
		if status(a) != asks.StatusDenied || status(c) != asks.StatusDenied || status(tool) != asks.StatusPending {
			t.Fatalf("after the batch: %s %s %s, want denied, denied and the tool call pending", status(a), status(c), status(tool))
		}
	})
}
