package handlers_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
)

// columnOf is the column an item is in now.
func columnOf(t *testing.T, env *apptest.Env, itemID string) string {
	t.Helper()
	it, err := env.Store.GetWorkItem(context.Background(), env.Account.ID, itemID)
	if err != nil {
		t.Fatalf("read item %s: %v", itemID, err)
	}
	return it.ColumnKey
}

// historyActions lists the actions on an item's history, oldest first, with
// the approval of each that has one.
func historyActions(t *testing.T, env *apptest.Env, itemID string) string {
	t.Helper()
	h, err := env.Store.WorkItemHistory(context.Background(), env.Account.ID, itemID)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range h {
		s := e.Action + " by " + e.Actor
		if e.ApprovalID != "" {
			s += " for " + e.ApprovalID
		}
		out = append(out, s)
	}
	return strings.Join(out, "; ")
}

func seeOther(t *testing.T, res *http.Response, to string) {
	t.Helper()
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != to {
		t.Fatalf("answer %d to %q, want 303 to %s", res.StatusCode, res.Header.Get("Location"), to)
	}
}

func TestTheWorkBoardPage(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		f := newFixture(t, db)
		for _, c := range [][2]string{{"doing", "Doing <b>now</b>"}, {"done", "Done"}} {
			if _, err := f.env.Store.AddColumn(ctx, f.env.Account.ID, c[0], c[1]); err != nil {
				t.Fatal(err)
			}
		}
		bob := signIn(t, f.env, f.member)
		ada := signIn(t, f.env, f.owner)

		t.Run("every member sees the board, linked from the navigation; only owners and admins get the column forms", func(t *testing.T) {
			for _, tc := range []struct {
				b      *browser
				manage bool
			}{{bob, false}, {ada, true}} {
				res, body := tc.b.get("/work")
				if res.StatusCode != http.StatusOK {
					t.Fatalf("GET /work: %d", res.StatusCode)
				}
				if strings.Contains(body, "<b>now</b>") || !strings.Contains(body, "Doing &lt;b&gt;now&lt;/b&gt;") {
					t.Fatal("the column name is not escaped text")
				}
				doc := parseHTML(t, body)
				for _, path := range []string{"/work", "/sessions"} {
					// One in the header's menu, one under the phone's tab bar's More.
					if len(elements(doc, func(n *html.Node) bool { return n.Data == "a" && attrOf(n, "href") == path && inNav(n) })) != 2 {
						t.Errorf("no navigation link to %s in the menu and the tab bar", path)
					}
				}
				if got := len(elements(doc, byAttr("data-testid", "add-column"))) == 1; got != tc.manage {
					t.Errorf("add-column form shown: %t, want %t", got, tc.manage)
				}
			}
		})

		var itemID string
		t.Run("a member adds an item with the CSRF token; without it nothing is stored", func(t *testing.T) {
			form := url.Values{"column": {"doing"}, "title": {"Fix <i>login</i>"}, "description": {"the redirect"}}
			if res, _ := bob.post("/work/items", form, false); res.StatusCode != http.StatusForbidden {
				t.Fatalf("without CSRF: %d", res.StatusCode)
			}
			board, _ := f.env.Store.WorkBoard(ctx, f.env.Account.ID, "")
			if len(board.Items) != 0 {
				t.Fatal("an item was stored without the CSRF token")
			}
			res, _ := bob.post("/work/items", form, true)
			seeOther(t, res, "/work")
			board, _ = f.env.Store.WorkBoard(ctx, f.env.Account.ID, "")
			if len(board.Items) != 1 || board.Items[0].Title != "Fix <i>login</i>" || board.Items[0].ColumnKey != "doing" {
				t.Fatalf("items = %+v", board.Items)
			}
			itemID = board.Items[0].ID
			_, body := bob.get("/work")
			doc := parseHTML(t, body)
			col := elements(doc, byAttr("data-column", "doing"))
			if len(col) != 1 || len(elements(col[0], byAttr("data-item", itemID))) != 1 || strings.Contains(body, "<i>login</i>") {
				t.Fatal("the item is not shown, escaped, in its column")
			}
			res, body = bob.post("/work/items", url.Values{"column": {"nowhere"}, "title": {"x"}}, true)
			if res.StatusCode != http.StatusNotFound || !strings.Contains(body, `data-testid="refusal"`) {
				t.Fatalf("an item in no column: %d", res.StatusCode)
			}
		})

		t.Run("a member moves and renames an item on their own word, and its history says so", func(t *testing.T) {
			seeOther(t, first(bob.post("/work/items/"+itemID+"/move", url.Values{"column": {"done"}}, true)), "/work")
			if got := columnOf(t, f.env, itemID); got != "done" {
				t.Fatalf("column after the move = %s", got)
			}
			if res, body := bob.post("/work/items/"+itemID+"/move", url.Values{"column": {"done"}}, true); res.StatusCode != http.StatusConflict ||
				!strings.Contains(body, "already in column") {
				t.Fatalf("a move to its own column: %d", res.StatusCode)
			}
			seeOther(t, first(bob.post("/work/items/"+itemID+"/rename", url.Values{"title": {"Fix sign-in"}, "description": {"d"}}, true)), "/work/items/"+itemID)
			if res, _ := bob.post("/work/items/"+itemID+"/rename", url.Values{"title": {""}}, true); res.StatusCode != http.StatusBadRequest {
				t.Fatalf("an empty title: %d", res.StatusCode)
			}
			if got := historyActions(t, f.env, itemID); got != "created by bob; moved by bob; renamed by bob" {
				t.Fatalf("history = %s", got)
			}
			_, body := bob.get("/work/items/" + itemID)
			doc := parseHTML(t, body)
			if lines := elements(doc, func(n *html.Node) bool { return n.Data == "li" && attrOf(n, "data-action") != "" }); len(lines) != 3 {
				t.Fatalf("%d history lines shown", len(lines))
			}
		})

		t.Run("a member cannot manage columns; an admin adds, renames and removes an empty one", func(t *testing.T) {
			if res, _ := bob.post("/work/columns", url.Values{"key": {"later"}, "name": {"Later"}}, true); res.StatusCode != http.StatusForbidden {
				t.Fatalf("a member adds a column: %d", res.StatusCode)
			}
			if res, _ := bob.post("/work/columns/done/rename", url.Values{"name": {"Finished"}}, true); res.StatusCode != http.StatusForbidden {
				t.Fatalf("a member renames a column: %d", res.StatusCode)
			}
			admin := signIn(t, f.env, f.admin)
			seeOther(t, first(admin.post("/work/columns", url.Values{"key": {"later"}, "name": {"Later"}}, true)), "/work")
			seeOther(t, first(admin.post("/work/columns/later/rename", url.Values{"name": {"Some day"}}, true)), "/work")
			if res, body := admin.post("/work/columns/done/remove", nil, true); res.StatusCode != http.StatusConflict || !strings.Contains(body, `data-testid="refusal"`) {
				t.Fatalf("removing a column with an item: %d", res.StatusCode)
			}
			if res, _ := admin.post("/work/columns", url.Values{"key": {"Bad Key"}, "name": {"x"}}, true); res.StatusCode != http.StatusBadRequest {
				t.Fatalf("a bad key: %d", res.StatusCode)
			}
			seeOther(t, first(admin.post("/work/columns/later/remove", nil, true)), "/work")
			board, _ := f.env.Store.WorkBoard(ctx, f.env.Account.ID, "")
			var keys []string
			for _, c := range board.Columns {
				keys = append(keys, c.Key+"="+c.Name)
			}
			if got := strings.Join(keys, ","); got != "doing=Doing <b>now</b>,done=Done" {
				t.Fatalf("columns = %s", got)
			}
		})

		t.Run("an item moved by an approved request names the request in its history", func(t *testing.T) {
			bot := f.env.Connect(f.token)
			req := bot.OK("approval_request", map[string]any{"kind": "work_change", "title": "Back to doing",
				"proposal": map[string]any{"mode": "command", "command": map[string]any{"method": "work_move",
					"input": map[string]any{"itemId": itemID, "columnKey": "doing"}}}, "idempotencyKey": "k"})
			id := req["approvalId"].(string)
			if _, err := f.env.Store.Decide(ctx, f.env.Account.ID, id, f.owner, asks.Decision{Verdict: asks.VerdictApprove}); err != nil {
				t.Fatal(err)
			}
			_, body := bob.get("/work/items/" + itemID)
			by := elements(parseHTML(t, body), byAttr("data-testid", "moved-by"))
			if len(by) != 1 || attrOf(by[0], "href") != "/approvals/"+id {
				t.Fatalf("moved-by links = %d", len(by))
			}
		})

		t.Run("another account's item is not found, and cannot be moved", func(t *testing.T) {
			acct, err := f.env.Store.CreateAccount(ctx, "elsewhere")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.env.Store.AddColumn(ctx, acct.ID, "done", "Done"); err != nil {
				t.Fatal(err)
			}
			eve := signIn(t, f.env, f.env.Member(acct.ID, "eve", core.RoleOwner))
			if res, body := eve.get("/work/items/" + itemID); res.StatusCode != http.StatusNotFound || strings.Contains(body, "Fix sign-in") {
				t.Fatalf("GET another account's item: %d", res.StatusCode)
			}
			if res, _ := eve.post("/work/items/"+itemID+"/move", url.Values{"column": {"done"}}, true); res.StatusCode != http.StatusNotFound {
				t.Fatalf("moving another account's item: %d", res.StatusCode)
			}
			if got := columnOf(t, f.env, itemID); got != "doing" {
				t.Fatalf("the item moved to %s", got)
			}
		})
	})
}

func TestTheSessionsPageListsWaitingSessionsFirst(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		f := newFixture(t, db)
		bot := f.env.Connect(f.token)
		ended := bot.OK("session_start", map[string]any{"label": "done already"})["sessionId"].(string)
		bot.OK("session_end", map[string]any{"sessionId": ended})
		waiting := bot.OK("session_start", map[string]any{"label": "needs <b>you</b>"})["sessionId"].(string)
		active := bot.OK("session_start", map[string]any{"label": "just working"})["sessionId"].(string)
		bot.OK("session_heartbeat", map[string]any{"sessionId": active})
		req := bot.OK("approval_request", map[string]any{"kind": "agent_request", "title": "Which <i>branch</i>?",
			"proposal": map[string]any{"mode": "advisory"}, "question": map[string]any{}, "sessionId": waiting, "idempotencyKey": "q"})

		res, body := signIn(t, f.env, f.member).get("/sessions")
		if res.StatusCode != http.StatusOK {
			t.Fatalf("GET /sessions: %d", res.StatusCode)
		}
		if strings.Contains(body, "<b>you</b>") || strings.Contains(body, "<i>branch</i>") {
			t.Fatal("a label or a title is not escaped")
		}
		doc := parseHTML(t, body)
		rows := elements(doc, func(n *html.Node) bool { return attrOf(n, "data-session") != "" })
		var order []string
		for _, r := range rows {
			order = append(order, attrOf(r, "data-session")+"="+attrOf(r, "data-state"))
		}
		want := []string{waiting + "=waiting", active + "=active", ended + "=ended"}
		if strings.Join(order, " ") != strings.Join(want, " ") {
			t.Fatalf("sessions shown %v, want %v", order, want)
		}
		links := elements(rows[0], func(n *html.Node) bool { return n.Data == "a" })
		if len(links) != 1 || attrOf(links[0], "href") != "/approvals/"+req["approvalId"].(string) {
			t.Fatalf("the waiting session's request is not one tap away: %d links", len(links))
		}
		if len(elements(rows[1], func(n *html.Node) bool { return n.Data == "a" })) != 0 {
			t.Fatal("an active session links to asks")
		}
		for _, r := range rows {
			if len(elements(r, byAttr("data-testid", "heartbeat"))) != 1 {
				t.Fatal("a session without its last heartbeat")
			}
		}
		acct, err := f.env.Store.CreateAccount(context.Background(), "elsewhere")
		if err != nil {
			t.Fatal(err)
		}
		_, body = signIn(t, f.env, f.env.Member(acct.ID, "eve", core.RoleOwner)).get("/sessions")
		if strings.Contains(body, waiting) || strings.Contains(body, "just working") {
			t.Fatal("another account's sessions are shown")
		}
	})
}

// first is the response of a (response, body) pair.
func first(res *http.Response, _ string) *http.Response { return res }

// inNav says whether n sits inside the main navigation.
func inNav(n *html.Node) bool {
	for p := n.Parent; p != nil; p = p.Parent {
		if p.Data == "nav" {
			return true
		}
	}
	return false
}
