package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
)

// lcFix is a running service with an agent, bot, and three people of the
// account: ada (owner), bob (member) and cy (admin). Agent steps go over MCP;
// a person's decision goes through models.Store.Decide, as there is no HTTP
// decision route yet.
type lcFix struct {
	env          *apptest.Env
	ctx          context.Context
	bot          *apptest.Client
	botAgent     *people.Agent
	ada, bob, cy *people.Member
	number       int
	payloads     map[string]map[string]any // approval id → the payload it was filed with
}

func newLCFix(t *testing.T, db apptest.Database) *lcFix {
	t.Helper()
	// Its tests expire asks with their own passes: the app's sweeper makes none.
	env := apptest.StartUnswept(t, db, nil)
	agent, token := env.Agent(env.Account.ID, "bot")
	return &lcFix{
		env: env, ctx: context.Background(), bot: env.Connect(token), botAgent: agent,
		ada:      env.Member(env.Account.ID, "ada", core.RoleOwner),
		bob:      env.Member(env.Account.ID, "bob", core.RoleMember),
		cy:       env.Member(env.Account.ID, "cy", core.RoleAdmin),
		number:   900,
		payloads: map[string]map[string]any{},
	}
}

// lcOptions are the options of every decision ask the fixture files.
var lcOptions = []any{"Ship today", "Wait for Monday"}

// file files an ask of kind (pull_request or decision) with c, with the
// extra arguments kv, and returns its id.
func (f *lcFix) file(t *testing.T, c *apptest.Client, kind string, kv ...any) string {
	t.Helper()
	var payload map[string]any
	switch kind {
	case "pull_request":
		f.number++
		payload = specPR("number", f.number)
	case "decision":
		payload = specDecision(lcOptions...)
	default:
		t.Fatalf("no fixture ask of kind %s", kind)
	}
	out := c.OK("approvals_create", specWith(specAsk(kind, payload), kv...))
	id := out["approval_id"].(string)
	f.payloads[id] = payload
	return id
}

// row reads an approval from the store.
func (f *lcFix) row(t *testing.T, id string) *asks.Approval {
	t.Helper()
	a, err := f.env.Store.GetApproval(f.ctx, f.env.Account.ID, id)
	if err != nil {
		t.Fatalf("read %s: %v", id, err)
	}
	return a
}

// events reads an approval's timeline from the store.
func (f *lcFix) events(t *testing.T, id string) []asks.TimelineEvent {
	t.Helper()
	evs, err := f.env.Store.Timeline(f.ctx, f.env.Account.ID, id)
	if err != nil {
		t.Fatalf("timeline of %s: %v", id, err)
	}
	return evs
}

// lcOutcome is what an action came to: a refusal's code, field and text, or
// none.
type lcOutcome struct {
	refused           bool
	code, field, text string
}

func (o lcOutcome) String() string {
	if !o.refused {
		return "accepted"
	}
	return fmt.Sprintf("refused %s on %q: %s", o.code, o.field, o.text)
}

func lcFromErr(err error) lcOutcome {
	if err == nil {
		return lcOutcome{}
	}
	return lcOutcome{refused: true, code: string(core.CodeOf(err)), field: core.FieldOf(err), text: err.Error()}
}

func lcFromResult(r apptest.Result) lcOutcome {
	return lcOutcome{refused: r.IsError, code: r.Code, field: r.Field, text: r.Text}
}

// lcReordered writes v as JSON with every object's keys in reverse order and
// extra white space: the same JSON value spelled differently.
func lcReordered(t *testing.T, v any) json.RawMessage {
	t.Helper()
	var b bytes.Buffer
	var write func(v any)
	write = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Sort(sort.Reverse(sort.StringSlice(keys)))
			b.WriteString("{ ")
			for i, k := range keys {
				if i > 0 {
					b.WriteString(" ,\n ")
				}
				kb, _ := json.Marshal(k)
				b.Write(kb)
				b.WriteString(" : ")
				write(x[k])
			}
			b.WriteString(" }")
		case []any:
			b.WriteString("[ ")
			for i, e := range x {
				if i > 0 {
					b.WriteString(", ")
				}
				write(e)
			}
			b.WriteString(" ]")
		default:
			vb, err := json.Marshal(x)
			if err != nil {
				t.Fatalf("marshal %v: %v", x, err)
			}
			b.Write(vb)
		}
	}
	write(specJSON(t, v))
	return b.Bytes()
}

const lcQuestion = "Which region goes first?"

// lcUnknownApprovalID is shaped like an approval id that no row has.
const lcUnknownApprovalID = "appr_zzzzzzzzzzzzzzzzzzzz"

// do performs act on the ask id. Person verbs go through Store.Decide as
// ada; agent verbs go over MCP as bot. "verb@state" sends expected_state.
func (f *lcFix) do(t *testing.T, id, act string) lcOutcome {
	t.Helper()
	verb, expected, _ := strings.Cut(act, "@")
	decide := func(v asks.Verdict, note string) lcOutcome {
		_, err := f.env.Store.Decide(f.ctx, f.env.Account.ID, id, f.ada, asks.Decision{Verdict: v, Note: note})
		return lcFromErr(err)
	}
	progress := func(step string, kv ...any) lcOutcome {
		args := map[string]any{"approval_id": id, "step": step}
		if expected != "" {
			args["expected_state"] = expected
		}
		return lcFromResult(f.bot.Call("approvals_add_progress", specWith(args, kv...)))
	}
	switch verb {
	case "approve", "deny", "not_mine":
		return decide(asks.Verdict(verb), "")
	case "deny-long-note":
		return decide(asks.VerdictDeny, strings.Repeat("n", 501))
	case "deny-with-note":
		return decide(asks.VerdictDeny, strings.Repeat("n", 500))
	case "question":
		return decide(asks.VerdictQuestion, lcQuestion)
	case "question-blank":
		return decide(asks.VerdictQuestion, "  ")
	case "answered":
		return progress("answered", "note", "eu-west-1 first")
	case "answered-blank":
		return progress("answered")
	case "stale", "step", "done", "failed":
		return progress(verb, "note", verb+" note")
	case "step-long":
		return progress("step", "note", strings.Repeat("n", 501))
	case "step-observed":
		return progress("step", "observed", f.payloads[id])
	case "started":
		return progress("started", "observed", lcReordered(t, f.payloads[id]))
	case "started-other":
		other := specJSON(t, f.payloads[id]).(map[string]any)
		for _, member := range other {
			member.(map[string]any)["title"] = "Something else"
		}
		return progress("started", "observed", other)
	case "started-blind":
		return progress("started")
	case "launch":
		return progress("launch")
	}
	if opt, ok := strings.CutPrefix(verb, "option:"); ok {
		return decide(asks.Verdict("option:"+opt), "")
	}
	t.Fatalf("unknown action %q", act)
	return lcOutcome{}
}

// doAll performs the actions of a path, each of which must be accepted.
func (f *lcFix) doAll(t *testing.T, id string, path []string) {
	t.Helper()
	for _, act := range path {
		if o := f.do(t, id, act); o.refused {
			t.Fatalf("setting up with %s: %s", act, o)
		}
	}
}

func TestLifecycleFollowsEveryRowOfTheStateTable(t *testing.T) {
	rows := []struct {
		kind         string
		path         []string // brings the ask to from
		from         asks.Status
		act          string
		to           asks.Status
		step, by     string
		decision     string
		note         string // the approval's note afterwards
		decidedByAda bool
	}{
		{kind: "pull_request", from: "pending", act: "approve", to: "approved", step: "approved", by: "person", decision: "approve", decidedByAda: true},
		{kind: "pull_request", from: "pending", act: "deny", to: "denied", step: "denied", by: "person", decision: "deny", decidedByAda: true},
		{kind: "pull_request", from: "pending", act: "deny-with-note", to: "denied", step: "denied", by: "person", decision: "deny", note: strings.Repeat("n", 500), decidedByAda: true},
		{kind: "pull_request", from: "pending", act: "question", to: "question", step: "question", by: "person", note: lcQuestion},
		{kind: "pull_request", path: []string{"question"}, from: "question", act: "answered", to: "pending", step: "answered", by: "agent", note: lcQuestion},
		{kind: "pull_request", path: []string{"question", "answered"}, from: "pending", act: "approve", to: "approved", step: "approved", by: "person", decision: "approve", decidedByAda: true},
		{kind: "pull_request", from: "pending", act: "stale@pending", to: "stale", step: "stale", by: "agent"},
		{kind: "pull_request", from: "pending", act: "stale", to: "stale", step: "stale", by: "agent"},
		{kind: "pull_request", path: []string{"question"}, from: "question", act: "stale@question", to: "stale", step: "stale", by: "agent", note: lcQuestion},
		{kind: "pull_request", path: []string{"approve"}, from: "approved", act: "started@approved", to: "in_progress", step: "started", by: "agent", decision: "approve", decidedByAda: true},
		{kind: "pull_request", path: []string{"approve"}, from: "approved", act: "started", to: "in_progress", step: "started", by: "agent", decision: "approve", decidedByAda: true},
		{kind: "pull_request", path: []string{"approve"}, from: "approved", act: "started-other", to: "stale", step: "observed_changed", by: "agent", decision: "approve", note: "observed payload differs from the approved one", decidedByAda: true},
		{kind: "pull_request", path: []string{"approve"}, from: "approved", act: "stale@approved", to: "stale", step: "stale", by: "agent", decision: "approve", decidedByAda: true},
		{kind: "pull_request", path: []string{"approve", "started"}, from: "in_progress", act: "step", to: "in_progress", step: "step", by: "agent", decision: "approve", decidedByAda: true},
		{kind: "pull_request", path: []string{"approve", "started"}, from: "in_progress", act: "done@in_progress", to: "done", step: "done", by: "agent", decision: "approve", decidedByAda: true},
		{kind: "pull_request", path: []string{"approve", "started", "step"}, from: "in_progress", act: "failed", to: "failed", step: "failed", by: "agent", decision: "approve", decidedByAda: true},
		{kind: "pull_request", path: []string{"approve", "started"}, from: "in_progress", act: "stale", to: "stale", step: "stale", by: "agent", decision: "approve", decidedByAda: true},
		{kind: "decision", from: "pending", act: "option:0", to: "approved", step: "approved", by: "person", decision: "option:0", note: "Ship today", decidedByAda: true},
		{kind: "decision", from: "pending", act: "option:1", to: "approved", step: "approved", by: "person", decision: "option:1", note: "Wait for Monday", decidedByAda: true},
		{kind: "decision", from: "pending", act: "deny", to: "denied", step: "denied", by: "person", decision: "deny", decidedByAda: true},
		{kind: "decision", path: []string{"question", "answered"}, from: "pending", act: "option:1", to: "approved", step: "approved", by: "person", decision: "option:1", note: "Wait for Monday", decidedByAda: true},
		{kind: "decision", path: []string{"option:1"}, from: "approved", act: "started", to: "in_progress", step: "started", by: "agent", decision: "option:1", note: "Wait for Monday", decidedByAda: true},
	}
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		f := newLCFix(t, db)
		for _, row := range rows {
			t.Run(fmt.Sprintf("%s on a %s %s ask makes it %s", row.act, row.from, row.kind, row.to), func(t *testing.T) {
				id := f.file(t, f.bot, row.kind)
				f.doAll(t, id, row.path)
				before := f.row(t, id)
				if before.Status != row.from {
					t.Fatalf("after %v the ask is %s, want %s", row.path, before.Status, row.from)
				}
				beforeEvents := len(f.events(t, id))

				if o := f.do(t, id, row.act); o.refused {
					t.Fatalf("%s: %s", row.act, o)
				}
				got := f.bot.OK("approvals_get", map[string]any{"approval_id": id})
				after := f.row(t, id)
				if got["status"] != string(row.to) || after.Status != row.to {
					t.Errorf("status: MCP %v, store %s; want %s", got["status"], after.Status, row.to)
				}
				if after.Version != before.Version+1 {
					t.Errorf("version %d → %d, want one more", before.Version, after.Version)
				}
				timeline, _ := got["timeline"].([]any)
				if len(timeline) != beforeEvents+1 {
					t.Fatalf("timeline has %d events, had %d: want one more", len(timeline), beforeEvents)
				}
				last, _ := timeline[len(timeline)-1].(map[string]any)
				wantActor := "agent:bot"
				if row.by == "person" {
					wantActor = "ada"
				}
				if last["step"] != row.step || last["by"] != row.by || last["actor"] != wantActor || last["from"] != string(row.from) || last["to"] != string(row.to) {
					t.Errorf("last event = %v; want step %s by %s (%s) from %s to %s", last, row.step, row.by, wantActor, row.from, row.to)
				}
				wantDecidedBy := ""
				if row.decidedByAda {
					wantDecidedBy = "ada"
				}
				for _, ch := range []struct{ name, got, want string }{
					{"decision", after.Decision, row.decision},
					{"decided_by", after.DecidedBy, wantDecidedBy},
					{"note", after.Note, row.note},
				} {
					if ch.got != ch.want {
						t.Errorf("%s = %q, want %q", ch.name, ch.got, ch.want)
					}
					if mcpValue, _ := got[ch.name].(string); mcpValue != ch.want {
						t.Errorf("approvals_get %s = %q, want %q", ch.name, mcpValue, ch.want)
					}
				}
				if row.decidedByAda != (after.DecidedAt != nil) {
					t.Errorf("decided_at = %v, want set: %t", after.DecidedAt, row.decidedByAda)
				}
				if after.PayloadSHA256 != before.PayloadSHA256 || after.Payload != before.Payload {
					t.Errorf("the frozen payload changed")
				}
			})
		}
	})
}

func TestLifecycleRefusesEveryOtherMoveAndRecordsNothing(t *testing.T) {
	rows := []struct {
		kind        string
		path        []string
		from        asks.Status
		act         string
		code        core.Code
		field       string
		namesStatus bool // the refusal names the state the ask is in
	}{
		// a person's answer
		{kind: "decision", from: "pending", act: "approve", code: core.InvalidArgument, field: "decision"},
		{kind: "decision", from: "pending", act: "option:2", code: core.InvalidArgument, field: "decision"},
		{kind: "decision", from: "pending", act: "option:x", code: core.InvalidArgument, field: "decision"},
		{kind: "decision", from: "pending", act: "option:-1", code: core.InvalidArgument, field: "decision"},
		{kind: "pull_request", from: "pending", act: "option:0", code: core.InvalidArgument, field: "decision"},
		{kind: "pull_request", from: "pending", act: "question-blank", code: core.InvalidArgument, field: "note"},
		{kind: "pull_request", from: "pending", act: "deny-long-note", code: core.InvalidArgument, field: "note"},
		{kind: "pull_request", path: []string{"approve"}, from: "approved", act: "approve", code: core.FailedPrecondition, namesStatus: true},
		{kind: "pull_request", path: []string{"approve"}, from: "approved", act: "deny", code: core.FailedPrecondition, namesStatus: true},
		{kind: "pull_request", path: []string{"deny"}, from: "denied", act: "approve", code: core.FailedPrecondition, namesStatus: true},
		{kind: "pull_request", path: []string{"question"}, from: "question", act: "approve", code: core.FailedPrecondition, namesStatus: true},
		{kind: "pull_request", path: []string{"question"}, from: "question", act: "deny", code: core.FailedPrecondition, namesStatus: true},
		{kind: "pull_request", path: []string{"question"}, from: "question", act: "question", code: core.FailedPrecondition, namesStatus: true},
		{kind: "decision", path: []string{"option:0"}, from: "approved", act: "option:1", code: core.FailedPrecondition, namesStatus: true},

		// the agent's steps
		{kind: "pull_request", from: "pending", act: "answered", code: core.FailedPrecondition, namesStatus: true},
		{kind: "pull_request", path: []string{"question"}, from: "question", act: "answered-blank", code: core.InvalidArgument, field: "note"},
		{kind: "pull_request", from: "pending", act: "started", code: core.FailedPrecondition, namesStatus: true},
		{kind: "pull_request", from: "pending", act: "step", code: core.FailedPrecondition, namesStatus: true},
		{kind: "pull_request", from: "pending", act: "done", code: core.FailedPrecondition, namesStatus: true},
		{kind: "pull_request", path: []string{"approve"}, from: "approved", act: "step", code: core.FailedPrecondition, namesStatus: true},
		{kind: "pull_request", path: []string{"approve"}, from: "approved", act: "done", code: core.FailedPrecondition, namesStatus: true},
		{kind: "pull_request", path: []string{"approve"}, from: "approved", act: "failed", code: core.FailedPrecondition, namesStatus: true},
		{kind: "pull_request", path: []string{"approve", "started"}, from: "in_progress", act: "started", code: core.FailedPrecondition, namesStatus: true},
		{kind: "pull_request", path: []string{"approve", "started", "done"}, from: "done", act: "step", code: core.FailedPrecondition, namesStatus: true},
		{kind: "pull_request", path: []string{"approve", "started", "failed"}, from: "failed", act: "stale", code: core.FailedPrecondition, namesStatus: true},
		{kind: "pull_request", path: []string{"deny"}, from: "denied", act: "stale", code: core.FailedPrecondition, namesStatus: true},
		{kind: "pull_request", path: []string{"stale"}, from: "stale", act: "stale", code: core.FailedPrecondition, namesStatus: true},
		{kind: "pull_request", path: []string{"approve", "started-other"}, from: "stale", act: "started", code: core.FailedPrecondition, namesStatus: true},
		{kind: "pull_request", path: []string{"approve", "started"}, from: "in_progress", act: "step-long", code: core.InvalidArgument, field: "note"},
		{kind: "pull_request", path: []string{"approve"}, from: "approved", act: "started-blind", code: core.InvalidArgument, field: "observed"},
		{kind: "pull_request", path: []string{"approve", "started"}, from: "in_progress", act: "step-observed", code: core.InvalidArgument, field: "observed"},
		{kind: "pull_request", from: "pending", act: "launch", code: core.InvalidArgument, field: "step"},
		{kind: "pull_request", from: "pending", act: "stale@stale", code: core.InvalidArgument, field: "expected_state"},

		// expected_state as compare-and-set
		{kind: "pull_request", path: []string{"approve"}, from: "approved", act: "stale@pending", code: core.FailedPrecondition, namesStatus: true},
		{kind: "pull_request", path: []string{"question"}, from: "question", act: "stale@pending", code: core.FailedPrecondition, namesStatus: true},
		{kind: "pull_request", from: "pending", act: "answered@question", code: core.FailedPrecondition, namesStatus: true},
		{kind: "pull_request", path: []string{"approve"}, from: "approved", act: "started@pending", code: core.FailedPrecondition, namesStatus: true},
		{kind: "pull_request", path: []string{"approve", "started"}, from: "in_progress", act: "done@approved", code: core.FailedPrecondition, namesStatus: true},
		{kind: "pull_request", path: []string{"approve", "started", "done"}, from: "done", act: "step@in_progress", code: core.FailedPrecondition, namesStatus: true},
		{kind: "pull_request", path: []string{"deny"}, from: "denied", act: "stale@pending", code: core.FailedPrecondition, namesStatus: true},
	}
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		f := newLCFix(t, db)
		for _, row := range rows {
			t.Run(fmt.Sprintf("%s on a %s %s ask is refused", row.act, row.from, row.kind), func(t *testing.T) {
				id := f.file(t, f.bot, row.kind)
				f.doAll(t, id, row.path)
				before := f.row(t, id)
				if before.Status != row.from {
					t.Fatalf("after %v the ask is %s, want %s", row.path, before.Status, row.from)
				}
				beforeEvents := f.events(t, id)

				o := f.do(t, id, row.act)
				if !o.refused || o.code != string(row.code) || o.field != row.field {
					t.Errorf("%s: %s; want %s on %q", row.act, o, row.code, row.field)
				}
				if row.namesStatus && !strings.Contains(o.text, "is "+string(row.from)) {
					t.Errorf("refusal %q does not name the state %s", o.text, row.from)
				}
				after := f.row(t, id)
				if after.Status != before.Status || after.Version != before.Version || after.Note != before.Note || after.Decision != before.Decision {
					t.Errorf("a refused %s changed the ask: %s v%d %q %q → %s v%d %q %q", row.act,
						before.Status, before.Version, before.Decision, before.Note, after.Status, after.Version, after.Decision, after.Note)
				}
				if n := len(f.events(t, id)); n != len(beforeEvents) {
					t.Errorf("a refused %s wrote %d timeline events", row.act, n-len(beforeEvents))
				}
			})
		}
	})
}

func TestLifecycleLetsOnlyThePersonAskedDecide(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		f := newLCFix(t, db)
		other, err := f.env.Store.CreateAccount(f.ctx, "other")
		if err != nil {
			t.Fatalf("create account: %v", err)
		}
		stranger := f.env.Member(other.ID, "dora", core.RoleOwner)

		cases := []struct {
			name    string
			askedOf string
			who     *people.Member
			allowed bool
		}{
			{"the person an ask is asked of decides it", "bob", f.bob, true},
			{"an owner cannot decide an ask asked of somebody else", "bob", f.ada, false},
			{"an admin cannot decide an ask asked of somebody else", "bob", f.cy, false},
			{"a member cannot decide an ask asked of somebody else", "ada", f.bob, false},
			{"an owner decides an ask asked of nobody in particular", "", f.ada, true},
			{"an admin decides an ask asked of nobody in particular", "", f.cy, true},
			{"a plain member cannot decide an ask asked of nobody in particular", "", f.bob, false},
			{"an owner of another account cannot decide it", "", stranger, false},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				for _, verdict := range []asks.Verdict{asks.VerdictApprove, asks.VerdictDeny, asks.VerdictQuestion} {
					id := f.file(t, f.bot, "pull_request", "asked_of", tc.askedOf)
					before, events := f.row(t, id), len(f.events(t, id))
					_, err := f.env.Store.Decide(f.ctx, f.env.Account.ID, id, tc.who, asks.Decision{Verdict: verdict, Note: "why?"})
					after := f.row(t, id)
					if tc.allowed {
						if err != nil {
							t.Fatalf("%s: %v", verdict, err)
						}
						if after.Status == asks.StatusPending || (verdict != asks.VerdictQuestion && after.DecidedBy != tc.who.Subject) {
							t.Errorf("%s: status %s decided_by %q", verdict, after.Status, after.DecidedBy)
						}
						continue
					}
					if core.CodeOf(err) != core.PermissionDenied || core.FieldOf(err) != "approval_id" {
						t.Errorf("%s: %v; want PERMISSION_DENIED on approval_id", verdict, err)
					}
					if after.Status != before.Status || after.Version != before.Version || len(f.events(t, id)) != events {
						t.Errorf("%s: a refused decision changed the ask (%s v%d → %s v%d)", verdict, before.Status, before.Version, after.Status, after.Version)
					}
				}
			})
		}
		t.Run("a decision under another account's id finds nothing", func(t *testing.T) {
			id := f.file(t, f.bot, "pull_request")
			_, err := f.env.Store.Decide(f.ctx, other.ID, id, stranger, asks.Decision{Verdict: asks.VerdictApprove})
			if core.CodeOf(err) != core.NotFound {
				t.Errorf("got %v; want NOT_FOUND", err)
			}
			if a := f.row(t, id); a.Status != asks.StatusPending {
				t.Errorf("status %s, want pending", a.Status)
			}
		})
	})
}

func TestLifecycleNotMineDeniesAndBlocksTheAgent(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		f := newLCFix(t, db)
		_, otherToken := f.env.Agent(f.env.Account.ID, "helper")
		helper := f.env.Connect(otherToken)

		target := f.file(t, f.bot, "pull_request")
		pending := f.file(t, f.bot, "pull_request")
		question := f.file(t, f.bot, "decision")
		f.doAll(t, question, []string{"question"})
		approved := f.file(t, f.bot, "pull_request")
		f.doAll(t, approved, []string{"approve"})
		denied := f.file(t, f.bot, "pull_request")
		f.doAll(t, denied, []string{"deny"})
		helpers := f.file(t, helper, "pull_request")

		if o := f.do(t, target, "not_mine"); o.refused {
			t.Fatalf("not_mine: %s", o)
		}
		a := f.row(t, target)
		if a.Status != asks.StatusDenied || a.Decision != "not_mine" || a.DecidedBy != "ada" {
			t.Errorf("not_mine ask: status %s decision %q decided_by %q; want denied, not_mine, ada", a.Status, a.Decision, a.DecidedBy)
		}
		evs := f.events(t, target)
		if last := evs[len(evs)-1]; last.Step != "not_mine" || last.ActorKind != "person" || last.Actor != "ada" || last.ToStatus != asks.StatusDenied {
			t.Errorf("last event = %+v", last)
		}

		agent, err := f.env.Store.AgentByName(f.ctx, f.env.Account.ID, "bot")
		if err != nil {
			t.Fatalf("read agent: %v", err)
		}
		if !agent.Disabled || !strings.Contains(agent.DisabledReason, "ada") {
			t.Errorf("agent disabled=%t reason=%q; want disabled by ada", agent.Disabled, agent.DisabledReason)
		}
		r, err := apptest.CallTool(f.ctx, f.bot.Session, "approvals_list", map[string]any{})
		mustBeStopped(t, "the blocked agent's next call", r, err)

		for _, tc := range []struct {
			id   string
			want asks.Status
			what string
		}{
			{pending, asks.StatusCancelled, "its other pending ask"},
			{question, asks.StatusCancelled, "its ask in question"},
			{approved, asks.StatusApproved, "its approved ask"},
			{denied, asks.StatusDenied, "its denied ask"},
			{helpers, asks.StatusPending, "another agent's ask"},
		} {
			a := f.row(t, tc.id)
			if a.Status != tc.want {
				t.Errorf("%s is %s, want %s", tc.what, a.Status, tc.want)
			}
			evs := f.events(t, tc.id)
			last := evs[len(evs)-1]
			if tc.want == asks.StatusCancelled && (last.Step != "cancelled" || last.ActorKind != "system" || !strings.Contains(last.Note, "not mine")) {
				t.Errorf("%s: last event = %+v; want cancelled by the system, saying not mine", tc.what, last)
			}
			if tc.want != asks.StatusCancelled && last.Step == "cancelled" {
				t.Errorf("%s got a cancelled event", tc.what)
			}
		}
		// Another agent is not touched.
		if out := helper.OK("approvals_get", map[string]any{"approval_id": helpers}); out["status"] != "pending" {
			t.Errorf("the other agent reads its ask as %v", out["status"])
		}
	})
}

func TestLifecycleSupersedesAnEarlierAsk(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		f := newLCFix(t, db)
		again := func(t *testing.T, c *apptest.Client, earlier string) apptest.Result {
			t.Helper()
			f.number++
			return c.Call("approvals_create", specWith(specAsk("pull_request", specPR("number", f.number)), "supersedes", earlier))
		}

		for _, tc := range []struct {
			path []string
			from asks.Status
		}{
			{nil, asks.StatusPending},
			{[]string{"question"}, asks.StatusQuestion},
		} {
			t.Run("an open "+string(tc.from)+" ask goes stale", func(t *testing.T) {
				earlier := f.file(t, f.bot, "pull_request")
				f.doAll(t, earlier, tc.path)
				before := f.row(t, earlier)
				r := again(t, f.bot, earlier)
				if r.IsError {
					t.Fatalf("supersede: %s", r)
				}
				later := r.Out["approval_id"].(string)
				if r.Out["supersedes"] != earlier {
					t.Errorf("supersedes = %v, want %s", r.Out["supersedes"], earlier)
				}
				got := f.bot.OK("approvals_get", map[string]any{"approval_id": earlier})
				if got["status"] != "stale" || got["superseded_by"] != later {
					t.Errorf("earlier: status %v superseded_by %v; want stale, %s", got["status"], got["superseded_by"], later)
				}
				if a := f.row(t, earlier); a.Version != before.Version+1 {
					t.Errorf("version %d → %d", before.Version, a.Version)
				}
				timeline := got["timeline"].([]any)
				last := timeline[len(timeline)-1].(map[string]any)
				if last["step"] != "superseded" || last["by"] != "system" || last["from"] != string(tc.from) || last["to"] != "stale" || !strings.Contains(fmt.Sprint(last["note"]), later) {
					t.Errorf("earlier's last event = %v; want superseded by the system, naming %s", last, later)
				}
				created := f.events(t, later)
				if len(created) != 1 || created[0].Step != "created" || !strings.Contains(created[0].Note, earlier) {
					t.Errorf("later's timeline = %+v; want a created event naming %s", created, earlier)
				}
			})
		}

		for _, tc := range []struct {
			path []string
			from asks.Status
		}{
			{[]string{"deny"}, asks.StatusDenied},
			{[]string{"approve"}, asks.StatusApproved},
			{[]string{"approve", "started", "done"}, asks.StatusDone},
		} {
			t.Run("a "+string(tc.from)+" ask is only linked", func(t *testing.T) {
				earlier := f.file(t, f.bot, "pull_request")
				f.doAll(t, earlier, tc.path)
				before, events := f.row(t, earlier), len(f.events(t, earlier))
				r := again(t, f.bot, earlier)
				if r.IsError {
					t.Fatalf("supersede: %s", r)
				}
				after := f.row(t, earlier)
				if after.Status != tc.from || after.SupersededBy != r.Out["approval_id"] {
					t.Errorf("earlier: status %s superseded_by %q; want %s, %v", after.Status, after.SupersededBy, tc.from, r.Out["approval_id"])
				}
				if n := len(f.events(t, earlier)); n != events {
					t.Errorf("linking wrote %d timeline events on the earlier ask", n-events)
				}
				if after.Decision != before.Decision || after.Note != before.Note {
					t.Errorf("linking changed the decision: %q %q → %q %q", before.Decision, before.Note, after.Decision, after.Note)
				}
			})
		}

		other, err := f.env.Store.CreateAccount(f.ctx, "other")
		if err != nil {
			t.Fatalf("create account: %v", err)
		}
		_, strangerToken := f.env.Agent(other.ID, "stranger")
		stranger := f.env.Connect(strangerToken)
		strangersAsk := f.file(t, stranger, "pull_request")
		_, helperToken := f.env.Agent(f.env.Account.ID, "helper")
		helper := f.env.Connect(helperToken)
		helpersAsk := f.file(t, helper, "pull_request")
		superseded := f.file(t, f.bot, "pull_request")
		if r := again(t, f.bot, superseded); r.IsError {
			t.Fatalf("supersede: %s", r)
		}

		for _, tc := range []struct {
			name    string
			earlier string
			code    core.Code
		}{
			{"an unknown id is not found", lcUnknownApprovalID, core.NotFound},
			{"another account's ask is not found", strangersAsk, core.NotFound},
			{"an ask superseded already is refused", superseded, core.FailedPrecondition},
		} {
			t.Run(tc.name, func(t *testing.T) {
				approvals, events := specCounts(t, f.env)
				var earlierBefore *asks.Approval
				if tc.earlier != lcUnknownApprovalID && tc.earlier != strangersAsk {
					earlierBefore = f.row(t, tc.earlier)
				}
				r := again(t, f.bot, tc.earlier)
				specRefused(t, r, tc.code, "supersedes")
				if a, e := specCounts(t, f.env); a != approvals || e != events {
					t.Errorf("a refused supersede wrote %d approvals and %d events", a-approvals, e-events)
				}
				if earlierBefore != nil {
					if after := f.row(t, tc.earlier); after.Status != earlierBefore.Status || after.Version != earlierBefore.Version || after.SupersededBy != earlierBefore.SupersededBy {
						t.Errorf("the earlier ask changed: %+v → %+v", earlierBefore, after)
					}
				}
			})
		}
		// Seed 001: supersedes names "an earlier approval of the same
		// account", so another agent of the account may ask again for one.
		t.Run("another agent's ask of the account goes stale, its timeline naming who asked again", func(t *testing.T) {
			r := again(t, f.bot, helpersAsk)
			if r.IsError {
				t.Fatalf("bot supersedes helper's ask: %s", r)
			}
			later := r.Out["approval_id"].(string)
			got := helper.OK("approvals_get", map[string]any{"approval_id": helpersAsk})
			if got["status"] != "stale" || got["superseded_by"] != later {
				t.Errorf("helper reads its ask as %v superseded_by %v; want stale, %s", got["status"], got["superseded_by"], later)
			}
			timeline := got["timeline"].([]any)
			last := timeline[len(timeline)-1].(map[string]any)
			if last["step"] != "superseded" || last["note"] != "asked again as "+later+" by agent:bot" {
				t.Errorf("helper's ask's last event = %v; want superseded, naming %s and agent:bot", last, later)
			}
			if out := f.bot.OK("approvals_get", map[string]any{"approval_id": later}); out["requester"] != "agent:bot" || out["supersedes"] != helpersAsk {
				t.Errorf("the new ask = requester %v, supersedes %v; want agent:bot, %s", out["requester"], out["supersedes"], helpersAsk)
			}
		})
		var foreign asks.Approval
		if err := f.env.Store.DB().Table("approvals").Where("id = ?", strangersAsk).Take(&foreign).Error; err != nil {
			t.Fatalf("read the other account's ask: %v", err)
		}
		if foreign.Status != asks.StatusPending || foreign.SupersededBy != "" {
			t.Errorf("the other account's ask: %s superseded_by %q", foreign.Status, foreign.SupersededBy)
		}
	})
}

func TestLifecycleExpiresAsksThatOutliveTheirLife(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		f := newLCFix(t, db)
		toDecide := f.file(t, f.bot, "pull_request")
		toAnswer := f.file(t, f.bot, "pull_request")
		f.doAll(t, toAnswer, []string{"question"})
		toWithdraw := f.file(t, f.bot, "pull_request")
		swept := []string{f.file(t, f.bot, "pull_request"), f.file(t, f.bot, "decision"), f.file(t, f.bot, "pull_request")}
		f.doAll(t, swept[1], []string{"question"})
		approved := f.file(t, f.bot, "pull_request")
		f.doAll(t, approved, []string{"approve"})

		if n, err := f.env.Store.ExpireDue(f.ctx); err != nil || n != 0 {
			t.Fatalf("ExpireDue before any life ran out = %d, %v; want 0", n, err)
		}
		expiresAt := f.row(t, toDecide).ExpiresAt
		f.env.Store.SetClock(func() time.Time { return expiresAt.Add(time.Minute) })

		mustExpire := func(t *testing.T, id string, from asks.Status, o lcOutcome) {
			t.Helper()
			if !o.refused || o.code != string(core.FailedPrecondition) || !strings.Contains(o.text, "expired") {
				t.Errorf("%s; want FAILED_PRECONDITION saying it expired", o)
			}
			a := f.row(t, id)
			if a.Status != asks.StatusExpired || a.Decision != "" || a.DecidedBy != "" {
				t.Errorf("status %s decision %q decided_by %q; want expired and undecided", a.Status, a.Decision, a.DecidedBy)
			}
			evs := f.events(t, id)
			last := evs[len(evs)-1]
			if last.Step != "expired" || last.ActorKind != "system" || last.FromStatus != from || last.ToStatus != asks.StatusExpired {
				t.Errorf("last event = %+v; want expired by the system from %s", last, from)
			}
		}
		t.Run("an expired ask can never be approved", func(t *testing.T) {
			mustExpire(t, toDecide, asks.StatusPending, f.do(t, toDecide, "approve"))
		})
		t.Run("an ask in question cannot be answered past its life", func(t *testing.T) {
			mustExpire(t, toAnswer, asks.StatusQuestion, f.do(t, toAnswer, "answered"))
		})
		t.Run("an ask cannot be withdrawn past its life", func(t *testing.T) {
			mustExpire(t, toWithdraw, asks.StatusPending, f.do(t, toWithdraw, "stale@pending"))
		})
		t.Run("ExpireDue expires the rest and counts them", func(t *testing.T) {
			n, err := f.env.Store.ExpireDue(f.ctx)
			if err != nil || n != len(swept) {
				t.Fatalf("ExpireDue = %d, %v; want %d", n, err, len(swept))
			}
			for i, id := range swept {
				a := f.row(t, id)
				evs := f.events(t, id)
				if last := evs[len(evs)-1]; a.Status != asks.StatusExpired || last.Step != "expired" || last.ActorKind != "system" {
					t.Errorf("swept ask %d: status %s, last event %+v", i, a.Status, last)
				}
			}
			if a := f.row(t, approved); a.Status != asks.StatusApproved {
				t.Errorf("an approved ask became %s: only open asks expire", a.Status)
			}
			if n, err := f.env.Store.ExpireDue(f.ctx); err != nil || n != 0 {
				t.Errorf("ExpireDue again = %d, %v; want 0", n, err)
			}
			got := f.bot.OK("approvals_list", map[string]any{"status": "expired"})
			if list := got["approvals"].([]any); len(list) != 6 {
				t.Errorf("approvals_list status expired lists %d, want 6", len(list))
			}
		})
		for _, tc := range []struct {
			act string
			id  string
		}{
			{"approve", swept[0]}, {"deny", swept[0]}, {"not_mine", swept[0]}, {"question", swept[0]},
			{"option:0", swept[1]}, {"answered", swept[1]}, {"stale", swept[2]}, {"stale@pending", swept[2]},
			{"started", swept[2]}, {"step", swept[2]},
		} {
			t.Run("an expired ask refuses "+tc.act+" and records nothing", func(t *testing.T) {
				before, events := f.row(t, tc.id), len(f.events(t, tc.id))
				o := f.do(t, tc.id, tc.act)
				if !o.refused || o.code != string(core.FailedPrecondition) || !strings.Contains(o.text, "is expired") {
					t.Errorf("%s: %s; want FAILED_PRECONDITION naming the state expired", tc.act, o)
				}
				if after := f.row(t, tc.id); after.Status != asks.StatusExpired || after.Version != before.Version || len(f.events(t, tc.id)) != events {
					t.Errorf("%s changed an expired ask", tc.act)
				}
			})
		}
		t.Run("an approved ask still starts: only open asks expire", func(t *testing.T) {
			if o := f.do(t, approved, "started@approved"); o.refused {
				t.Fatalf("started: %s", o)
			}
			if a := f.row(t, approved); a.Status != asks.StatusInProgress {
				t.Errorf("status %s, want in_progress", a.Status)
			}
		})
	})
}

func TestLifecycleCancelsOpenAsks(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		f := newLCFix(t, db)

		t.Run("an admin cancels an open ask", func(t *testing.T) {
			for _, path := range [][]string{nil, {"question"}} {
				id := f.file(t, f.bot, "pull_request")
				f.doAll(t, id, path)
				from := f.row(t, id).Status
				a, err := f.env.Store.Cancel(f.ctx, f.env.Account.ID, id, "cy", "wrong repository")
				if err != nil {
					t.Fatalf("cancel a %s ask: %v", from, err)
				}
				got := f.bot.OK("approvals_get", map[string]any{"approval_id": id})
				if a.Status != asks.StatusCancelled || got["status"] != "cancelled" {
					t.Errorf("cancel a %s ask: status %s / %v", from, a.Status, got["status"])
				}
				timeline := got["timeline"].([]any)
				last := timeline[len(timeline)-1].(map[string]any)
				if last["step"] != "cancelled" || last["by"] != "admin" || last["actor"] != "cy" || last["from"] != string(from) || last["note"] != "wrong repository" {
					t.Errorf("last event = %v", last)
				}
			}
		})
		t.Run("a closed or active ask cannot be cancelled", func(t *testing.T) {
			for _, path := range [][]string{{"approve"}, {"approve", "started"}, {"deny"}, {"stale"}} {
				id := f.file(t, f.bot, "pull_request")
				f.doAll(t, id, path)
				before, events := f.row(t, id), len(f.events(t, id))
				_, err := f.env.Store.Cancel(f.ctx, f.env.Account.ID, id, "cy", "")
				if core.CodeOf(err) != core.FailedPrecondition || !strings.Contains(err.Error(), "is "+string(before.Status)) {
					t.Errorf("cancel a %s ask: %v; want FAILED_PRECONDITION naming it", before.Status, err)
				}
				if after := f.row(t, id); after.Status != before.Status || after.Version != before.Version || len(f.events(t, id)) != events {
					t.Errorf("a refused cancel changed a %s ask", before.Status)
				}
			}
			if _, err := f.env.Store.Cancel(f.ctx, f.env.Account.ID, lcUnknownApprovalID, "cy", ""); core.CodeOf(err) != core.NotFound {
				t.Errorf("cancel an unknown ask: %v; want NOT_FOUND", err)
			}
		})
		t.Run("disabling an agent cancels its open asks", func(t *testing.T) {
			_, token := f.env.Agent(f.env.Account.ID, "leaky")
			leaky := f.env.Connect(token)
			open := []string{f.file(t, leaky, "pull_request"), f.file(t, leaky, "decision")}
			f.doAll(t, open[1], []string{"question"})
			approved := f.file(t, leaky, "pull_request")
			f.doAll(t, approved, []string{"approve"})
			bots := f.file(t, f.bot, "pull_request")

			agent, err := f.env.Store.DisableAgent(f.ctx, f.env.Account.ID, "leaky", "token leaked", "cy")
			if err != nil || !agent.Disabled {
				t.Fatalf("disable: %v %+v", err, agent)
			}
			for _, id := range open {
				a := f.row(t, id)
				evs := f.events(t, id)
				last := evs[len(evs)-1]
				if a.Status != asks.StatusCancelled || last.Step != "cancelled" || last.ActorKind != "system" || last.Actor != "cy" || !strings.Contains(last.Note, "token leaked") {
					t.Errorf("open ask: status %s, last event %+v", a.Status, last)
				}
			}
			if a := f.row(t, approved); a.Status != asks.StatusApproved {
				t.Errorf("the approved ask became %s", a.Status)
			}
			if a := f.row(t, bots); a.Status != asks.StatusPending {
				t.Errorf("another agent's ask became %s", a.Status)
			}
			r, err := apptest.CallTool(f.ctx, leaky.Session, "approvals_get", map[string]any{"approval_id": approved})
			mustBeStopped(t, "the disabled agent's next call", r, err)
			mustBe401(t, rawPost(t, f.env, token, leaky.Session.ID(), protocolOf(leaky), toolCallBody(t, "approvals_list", map[string]any{})), "tools/call of the disabled agent")
			// Disabling twice changes nothing.
			approvals, events := specCounts(t, f.env)
			if _, err := f.env.Store.DisableAgent(f.ctx, f.env.Account.ID, "leaky", "again", "cy"); err != nil {
				t.Errorf("disable twice: %v", err)
			}
			if a, e := specCounts(t, f.env); a != approvals || e != events {
				t.Errorf("disabling twice wrote %d events", e-events)
			}
		})
	})
}
