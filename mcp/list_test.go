package mcp_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
)

// lsIDs lists with args and returns the ids in the order given and the
// next_page_token; a refusal fails the test.
func lsIDs(t *testing.T, c *apptest.Client, args map[string]any) ([]string, string) {
	t.Helper()
	out := c.OK("approvals_list", args)
	list, ok := out["approvals"].([]any)
	if !ok {
		t.Fatalf("approvals_list: no approvals list in %v", out)
	}
	ids := make([]string, 0, len(list))
	for _, a := range list {
		ids = append(ids, a.(map[string]any)["approval_id"].(string))
	}
	next, _ := out["next_page_token"].(string)
	return ids, next
}

// lsWant returns the ids of asks, newest first, for which keep is true.
func lsWant(asks []lsAsk, keep func(a lsAsk) bool) []string {
	var out []string
	for i := len(asks) - 1; i >= 0; i-- {
		if keep(asks[i]) {
			out = append(out, asks[i].id)
		}
	}
	return out
}

// lsAsk is an ask filed for the listing tests, with what it is bound to.
type lsAsk struct {
	id, kind, status string
	repo             string // as filed in the payload
	number           int
	head             string
	sha              string
	jobID            string
}

// lsWorld is an account with asks in every state, of several kinds and
// bindings, plus another account with asks of its own.
type lsWorld struct {
	env    *apptest.Env
	bot    *apptest.Client
	other  *apptest.Client
	asks   []lsAsk // oldest first
	theirs []lsAsk
}

const (
	lsHeadA = "aaaaaaa1111111"
	lsHeadB = "bbbbbbb2222222"
)

func newLSWorld(t *testing.T, db apptest.Database) *lsWorld {
	t.Helper()
	ctx := context.Background()
	// The world expires an ask with its own pass: the app's sweeper makes none.
	env := apptest.StartUnswept(t, db, nil)
	ada := env.Member(env.Account.ID, "ada", core.RoleOwner)
	_, token := env.Agent(env.Account.ID, "bot")
	w := &lsWorld{env: env, bot: env.Connect(token)}

	file := func(c *apptest.Client, kind string, payload map[string]any, jobID string) lsAsk {
		args := specAsk(kind, payload)
		if jobID != "" {
			args["context"] = specWith(specPlanItem(), "job_id", jobID)
		}
		out := c.OK("approvals_create", args)
		a := lsAsk{id: out["approval_id"].(string), kind: kind, status: "pending", sha: out["payload_sha256"].(string), jobID: jobID}
		if pr, ok := payload["pull_request"].(map[string]any); ok {
			a.repo, a.number, a.head = pr["repo"].(string), pr["number"].(int), pr["head"].(string)
		}
		return a
	}
	decide := func(id string, v asks.Verdict, note string) {
		t.Helper()
		if _, err := env.Store.Decide(ctx, env.Account.ID, id, ada, asks.Decision{Verdict: v, Note: note}); err != nil {
			t.Fatalf("decide %s: %v", v, err)
		}
	}
	progress := func(a lsAsk, payload map[string]any, steps ...string) {
		t.Helper()
		for _, step := range steps {
			args := map[string]any{"approval_id": a.id, "step": step}
			if step == "started" {
				args["observed"] = payload
			}
			w.bot.OK("approvals_add_progress", args)
		}
	}

	// expired first: its life runs out when the clock moves past it, and
	// every later ask lives from the moved clock on.
	expiring := file(w.bot, "review", specReview("https://example.com/expired"), "")
	env.Store.SetClock(func() time.Time { return time.Now().Add(8 * 24 * time.Hour) })
	if n, err := env.Store.ExpireDue(ctx); err != nil || n != 1 {
		t.Fatalf("ExpireDue = %d, %v; want 1", n, err)
	}
	if got, err := env.Store.GetApproval(ctx, env.Account.ID, expiring.id); err != nil || got.Status != asks.StatusExpired {
		t.Fatalf("the ask whose life ran out: %v %v; want expired", got, err)
	}
	expiring.status = "expired"
	w.asks = append(w.asks, expiring)

	type spec struct {
		kind    string
		payload map[string]any
		job     string
		status  string
	}
	pr := func(repo string, number int, head string) map[string]any {
		return specPR("repo", repo, "number", number, "head", head)
	}
	same := specReview("https://example.com/same")
	for _, s := range []spec{
		{"pull_request", pr("Acme/Web", 900, lsHeadA), "job_1", "pending"},
		{"pull_request", pr(" acme/web ", 900, " "+lsHeadB+" "), "", "question"},
		{"pull_request", pr("acme/WEB", 901, lsHeadA), "job_1", "approved"},
		{"pull_request", pr("acme/api", 900, lsHeadA), "", "denied"},
		{"pull_request", pr("Acme/Web", 902, lsHeadB), "job_2", "in_progress"},
		{"roll", specRoll(), "job_1", "done"},
		{"decision", specDecision("Ship", "Wait"), "job_1", "failed"},
		{"document", specDocument(), "", "stale"},
		{"review", same, "job_2", "cancelled"},
		{"review", same, "", "pending"},
		{"decision", specDecision("Left", "Right"), "job_2", "pending"},
		{"pull_request", pr("other/repo", 900, lsHeadA), "", "approved"},
	} {
		a := file(w.bot, s.kind, s.payload, s.job)
		switch s.status {
		case "question":
			decide(a.id, asks.VerdictQuestion, "why?")
		case "approved":
			decide(a.id, asks.VerdictApprove, "")
		case "denied":
			decide(a.id, asks.VerdictDeny, "")
		case "in_progress", "done", "failed":
			verdict := asks.VerdictApprove
			if s.kind == "decision" {
				verdict = "option:1"
			}
			decide(a.id, verdict, "")
			steps := map[string][]string{"in_progress": {"started"}, "done": {"started", "done"}, "failed": {"started", "failed"}}[s.status]
			progress(a, s.payload, steps...)
		case "stale":
			progress(a, s.payload, "stale")
		case "cancelled":
			if _, err := env.Store.Cancel(ctx, env.Account.ID, a.id, "ada", "not needed"); err != nil {
				t.Fatalf("cancel: %v", err)
			}
		}
		a.status = s.status
		w.asks = append(w.asks, a)
	}
	for _, a := range w.asks {
		if got := w.row(t, a.id); got != a.status {
			t.Fatalf("fixture ask %s (%s) is %s, want %s", a.id, a.kind, got, a.status)
		}
	}

	other, err := env.Store.CreateAccount(ctx, "other")
	if err != nil {
		t.Fatalf("create account: %v", err)
	}
	_, otherToken := env.Agent(other.ID, "bot")
	w.other = env.Connect(otherToken)
	for _, s := range []spec{
		{"pull_request", pr("Acme/Web", 900, lsHeadA), "job_1", "pending"},
		{"review", same, "job_2", "pending"},
	} {
		w.theirs = append(w.theirs, file(w.other, s.kind, s.payload, s.job))
	}
	return w
}

func (w *lsWorld) row(t *testing.T, id string) string {
	t.Helper()
	var a asks.Approval
	if err := w.env.Store.DB().Table("approvals").Where("id = ?", id).Take(&a).Error; err != nil {
		t.Fatalf("read %s: %v", id, err)
	}
	return string(a.Status)
}

func TestListFiltersByStatusKindAndBinding(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		w := newLSWorld(t, db)
		trimLower := func(s string) string { return strings.ToLower(strings.TrimSpace(s)) }
		in := func(list ...string) func(a lsAsk) bool {
			return func(a lsAsk) bool { return slices.Contains(list, a.status) }
		}
		cases := []struct {
			name string
			args map[string]any
			keep func(a lsAsk) bool
		}{
			{"no filter lists everything newest first", map[string]any{}, func(lsAsk) bool { return true }},
			{"open is pending and question", map[string]any{"status": "open"}, in("pending", "question")},
			{"active is approved and in_progress", map[string]any{"status": "active"}, in("approved", "in_progress")},
			{"closed is denied, done, failed, stale, cancelled and expired", map[string]any{"status": "closed"}, in("denied", "done", "failed", "stale", "cancelled", "expired")},
			{"kind review", map[string]any{"kind": "review"}, func(a lsAsk) bool { return a.kind == "review" }},
			{"kind decision", map[string]any{"kind": "decision"}, func(a lsAsk) bool { return a.kind == "decision" }},
			{"kind roll", map[string]any{"kind": "roll"}, func(a lsAsk) bool { return a.kind == "roll" }},
			{"kind auto_approve lists none yet", map[string]any{"kind": "auto_approve"}, func(lsAsk) bool { return false }},
			{"repo in any case, trimmed", map[string]any{"repo": "  ACME/web "}, func(a lsAsk) bool { return trimLower(a.repo) == "acme/web" }},
			{"repo of another owner", map[string]any{"repo": "acme/api"}, func(a lsAsk) bool { return a.repo == "acme/api" }},
			{"repo nobody filed", map[string]any{"repo": "acme/none"}, func(lsAsk) bool { return false }},
			{"number", map[string]any{"number": 900}, func(a lsAsk) bool { return a.number == 900 }},
			{"repo and number", map[string]any{"repo": "acme/web", "number": 900}, func(a lsAsk) bool { return trimLower(a.repo) == "acme/web" && a.number == 900 }},
			{"head exactly", map[string]any{"head": lsHeadA}, func(a lsAsk) bool { return strings.TrimSpace(a.head) == lsHeadA }},
			{"head trimmed, on an ask filed with spaces", map[string]any{"head": "  " + lsHeadB + "\t"}, func(a lsAsk) bool { return strings.TrimSpace(a.head) == lsHeadB }},
			{"head in another case matches nothing", map[string]any{"head": strings.ToUpper(lsHeadA)}, func(lsAsk) bool { return false }},
			{"head prefix matches nothing", map[string]any{"head": lsHeadA[:7]}, func(lsAsk) bool { return false }},
			{"repo, number and head", map[string]any{"repo": "ACME/WEB", "number": 900, "head": lsHeadB}, func(a lsAsk) bool {
				return trimLower(a.repo) == "acme/web" && a.number == 900 && strings.TrimSpace(a.head) == lsHeadB
			}},
			{"job_id", map[string]any{"job_id": "job_1"}, func(a lsAsk) bool { return a.jobID == "job_1" }},
			{"job_id nobody named", map[string]any{"job_id": "job_9"}, func(lsAsk) bool { return false }},
			{"status and repo", map[string]any{"status": "active", "repo": "acme/web"}, func(a lsAsk) bool {
				return trimLower(a.repo) == "acme/web" && (a.status == "approved" || a.status == "in_progress")
			}},
			{"kind and job_id", map[string]any{"kind": "decision", "job_id": "job_1"}, func(a lsAsk) bool { return a.kind == "decision" && a.jobID == "job_1" }},
			{"status, kind and job_id", map[string]any{"status": "open", "kind": "decision", "job_id": "job_2"}, func(a lsAsk) bool {
				return a.kind == "decision" && a.jobID == "job_2" && a.status == "pending"
			}},
			{"a binding filter never matches another kind", map[string]any{"kind": "review", "repo": "acme/web"}, func(lsAsk) bool { return false }},
			{"number never matches another kind", map[string]any{"kind": "decision", "number": 900}, func(lsAsk) bool { return false }},
			{"head never matches another kind", map[string]any{"kind": "roll", "head": lsHeadA}, func(lsAsk) bool { return false }},
			{"job_id with a status it has none of", map[string]any{"job_id": "job_2", "status": "denied"}, func(lsAsk) bool { return false }},
		}
		for _, st := range asks.AllStatuses {
			cases = append(cases, struct {
				name string
				args map[string]any
				keep func(a lsAsk) bool
			}{"status " + string(st), map[string]any{"status": string(st)}, in(string(st))})
		}
		// payload_sha256 matches whatever kind carries the payload.
		for _, kind := range []string{"pull_request", "roll", "decision", "document", "review"} {
			i := slices.IndexFunc(w.asks, func(a lsAsk) bool { return a.kind == kind })
			sha := w.asks[i].sha
			cases = append(cases, struct {
				name string
				args map[string]any
				keep func(a lsAsk) bool
			}{"payload_sha256 of a " + kind, map[string]any{"payload_sha256": sha}, func(a lsAsk) bool { return a.sha == sha }})
		}

		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				want := lsWant(w.asks, tc.keep)
				got, next := lsIDs(t, w.bot, tc.args)
				if !slices.Equal(got, want) {
					t.Errorf("listed %v, want %v", got, want)
				}
				if next != "" {
					t.Errorf("next_page_token %q on a short list", next)
				}
			})
		}

		t.Run("two asks of one payload both match its payload_sha256", func(t *testing.T) {
			var sha string
			var want []string
			for i := len(w.asks) - 1; i >= 0; i-- {
				if a := w.asks[i]; a.kind == "review" && a.status == "cancelled" {
					sha = a.sha
				}
			}
			for i := len(w.asks) - 1; i >= 0; i-- {
				if w.asks[i].sha == sha {
					want = append(want, w.asks[i].id)
				}
			}
			got, _ := lsIDs(t, w.bot, map[string]any{"payload_sha256": sha})
			if len(want) != 2 || !slices.Equal(got, want) {
				t.Errorf("listed %v, want the two reviews of one url %v", got, want)
			}
		})
	})
}

func TestListRefusesBadFilters(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		env := apptest.Start(t, db, nil)
		_, token := env.Agent(env.Account.ID, "bot")
		c := env.Connect(token)
		c.OK("approvals_create", specAsk("pull_request", specPR()))
		for _, tc := range []struct {
			name  string
			args  map[string]any
			field string
		}{
			{"a payload_sha256 in upper case", map[string]any{"payload_sha256": strings.ToUpper(specSHA64)}, "payload_sha256"},
			{"a payload_sha256 of 63 characters", map[string]any{"payload_sha256": specSHA64[1:]}, "payload_sha256"},
			{"a payload_sha256 that is not hex", map[string]any{"payload_sha256": strings.Repeat("z", 64)}, "payload_sha256"},
			{"page_size 201", map[string]any{"page_size": 201}, "page_size"},
			{"a negative page_size", map[string]any{"page_size": -1}, "page_size"},
			{"a garbage page_token", map[string]any{"page_token": "not-a-token"}, "page_token"},
			{"a page_token of the right shape and a bad number", map[string]any{"page_token": "djE6eA"}, "page_token"}, // "v1:x"
			{"an unknown status", map[string]any{"status": "waiting"}, "status"},
			{"an unknown kind", map[string]any{"kind": "merge"}, "kind"},
			{"a negative number", map[string]any{"number": -1}, "number"},
			{"a page_size as a string", map[string]any{"page_size": "50"}, "page_size"},
			{"a page_size past any integer", map[string]any{"page_size": 1e30}, "page_size"},
			{"a number past int64", map[string]any{"number": 1e20}, "number"},
			{"an argument the tool does not take", map[string]any{"limit": 5}, "limit"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				specRefused(t, c.Call("approvals_list", tc.args), core.InvalidArgument, tc.field)
			})
		}
	})
}

func TestListPagesWithoutDuplicatesOrGaps(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		env := apptest.Start(t, db, nil)
		_, token := env.Agent(env.Account.ID, "bot")
		c := env.Connect(token)
		const total = 120
		var all []string // newest first
		for i := range total {
			out := c.OK("approvals_create", specAsk("pull_request", specPR("number", i+1)))
			all = append([]string{out["approval_id"].(string)}, all...)
		}
		// Another account's asks are interleaved in the table and never show.
		other, err := env.Store.CreateAccount(context.Background(), "other")
		if err != nil {
			t.Fatalf("create account: %v", err)
		}
		_, otherToken := env.Agent(other.ID, "bot")
		theirs := env.Connect(otherToken)
		for i := range 5 {
			theirs.OK("approvals_create", specAsk("pull_request", specPR("number", i+1)))
		}

		for _, tc := range []struct {
			name  string
			size  any // page_size sent; nil sends none
			pages []int
		}{
			{"page_size 0 means 50", 0, []int{50, 50, 20}},
			{"no page_size means 50", nil, []int{50, 50, 20}},
			{"page_size 50", 50, []int{50, 50, 20}},
			{"page_size 1", 1, nil}, // 120 pages of 1
			{"page_size 120 fits on one page", 120, []int{120}},
			{"page_size 119 leaves one", 119, []int{119, 1}},
			{"page_size 200", 200, []int{120}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				var got []string
				var sizes []int
				token := ""
				for range total + 1 {
					args := map[string]any{}
					if tc.size != nil {
						args["page_size"] = tc.size
					}
					if token != "" {
						args["page_token"] = token
					}
					ids, next := lsIDs(t, c, args)
					got = append(got, ids...)
					sizes = append(sizes, len(ids))
					if next == "" {
						break
					}
					token = next
				}
				if !slices.Equal(got, all) {
					t.Errorf("pages gave %d ids, want the %d asks newest first, each once", len(got), len(all))
				}
				want := tc.pages
				if want == nil {
					want = slices.Repeat([]int{1}, total)
				}
				if !slices.Equal(sizes, want) {
					t.Errorf("page sizes %v, want %v", sizes, want)
				}
			})
		}

		t.Run("a filter holds across pages", func(t *testing.T) {
			// Every ask of the account is of acme/web, and so are the other
			// account's: pages of 25 of the filter give the account's 120.
			var got []string
			token := ""
			for range 10 {
				args := map[string]any{"page_size": 25, "repo": "ACME/web"}
				if token != "" {
					args["page_token"] = token
				}
				ids, next := lsIDs(t, c, args)
				got = append(got, ids...)
				if next == "" {
					break
				}
				token = next
			}
			if !slices.Equal(got, all) {
				t.Errorf("filtered pages gave %d ids, want %d", len(got), len(all))
			}
		})
		t.Run("another account lists only its own", func(t *testing.T) {
			ids, next := lsIDs(t, theirs, map[string]any{"page_size": 200})
			if len(ids) != 5 || next != "" {
				t.Errorf("the other account lists %d (next %q), want its 5", len(ids), next)
			}
			for _, id := range ids {
				if slices.Contains(all, id) {
					t.Errorf("the other account lists %s of the default account", id)
				}
			}
		})
	})
}

func TestListNeverShowsAnotherAccountsAsks(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		w := newLSWorld(t, db)
		theirs := map[string]bool{}
		for _, a := range w.theirs {
			theirs[a.id] = true
		}
		for _, args := range []map[string]any{
			{},
			{"page_size": 200},
			{"status": "open"},
			{"status": "pending"},
			{"kind": "pull_request"},
			{"kind": "review"},
			{"repo": "acme/web"},
			{"repo": "acme/web", "number": 900, "head": lsHeadA},
			{"payload_sha256": w.theirs[0].sha},
			{"payload_sha256": w.theirs[1].sha},
			{"job_id": "job_1"},
			{"job_id": "job_2"},
		} {
			t.Run(fmt.Sprintf("filter %v", args), func(t *testing.T) {
				ids, _ := lsIDs(t, w.bot, args)
				for _, id := range ids {
					if theirs[id] {
						t.Errorf("lists %s of the other account", id)
					}
				}
				// And the other account's agent, with the same filter, sees only its own.
				mine, _ := lsIDs(t, w.other, args)
				for _, id := range mine {
					if !theirs[id] {
						t.Errorf("the other account lists %s", id)
					}
				}
			})
		}
		t.Run("the other account's agent finds its own by binding", func(t *testing.T) {
			ids, _ := lsIDs(t, w.other, map[string]any{"repo": "acme/web", "number": 900, "head": lsHeadA})
			if !slices.Equal(ids, []string{w.theirs[0].id}) {
				t.Errorf("listed %v, want %s", ids, w.theirs[0].id)
			}
		})
	})
}
