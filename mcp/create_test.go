package mcp_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gowebpki/jcs"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
)

// Shapes of seed 001's approvals_create, shared by create_test.go,
// lifecycle_test.go and list_test.go. Every helper here starts with "spec" so
// that it does not collide with the helpers of other test files.

const (
	specSHA40 = "0123456789abcdef0123456789abcdef01234567"
	specSHA64 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
)

// specDrop as a value in specWith removes the argument.
var specDrop = &struct{ drop bool }{true}

// specWith returns a copy of args with the given key/value pairs set (or
// removed, for specDrop).
func specWith(args map[string]any, kv ...any) map[string]any {
	out := maps.Clone(args)
	for i := 0; i+1 < len(kv); i += 2 {
		k := kv[i].(string)
		if kv[i+1] == specDrop {
			delete(out, k)
			continue
		}
		out[k] = kv[i+1]
	}
	return out
}

// specPlanItem is a context that names a plan item.
func specPlanItem() map[string]any { return map[string]any{"plan_id": "plan_1", "plan_item": "item_2"} }

// specAsk is a well-formed ask of kind with payload, its words set and a
// context naming a plan item.
func specAsk(kind string, payload any) map[string]any {
	return map[string]any{
		"kind":          kind,
		"title":         "Ask for " + kind,
		"summary":       "What the " + kind + " ask means.",
		"approve_means": "I go ahead",
		"deny_means":    "I leave it be",
		"payload":       payload,
		"context":       specPlanItem(),
	}
}

// specPRBody is the member of a pull_request payload; mods change it.
func specPRBody(mods ...any) map[string]any {
	return specWith(map[string]any{"repo": "acme/web", "number": 900, "head": specSHA40, "title": "Fix login redirect"}, mods...)
}

func specPR(mods ...any) map[string]any { return map[string]any{"pull_request": specPRBody(mods...)} }

func specRollBody(mods ...any) map[string]any {
	return specWith(map[string]any{"deployments": []any{"api"}, "main_commit": "1234567", "running_commit": "abcdef0"}, mods...)
}

func specRoll(mods ...any) map[string]any { return map[string]any{"roll": specRollBody(mods...)} }

func specReview(url string, mods ...any) map[string]any {
	return map[string]any{"review": specWith(map[string]any{"url": url}, mods...)}
}

func specDocument(mods ...any) map[string]any {
	return map[string]any{"document": specWith(map[string]any{"document_id": "doc_1", "space_id": "space_1", "version": 3}, mods...)}
}

func specDecision(options ...any) map[string]any {
	return map[string]any{"decision": map[string]any{"options": options}}
}

// specRunBody is a whole pin: read_only, asked of askedOf, expiring ahead
// after now.
func specRunBody(askedOf string, ahead time.Duration, mods ...any) map[string]any {
	return specWith(map[string]any{
		"cmd":               "./deploy.sh api",
		"script_sha256":     specSHA64,
		"runner_id":         "runner_1",
		"argv":              []any{"deploy.sh", "api"},
		"effect":            "read_only",
		"runner_public_key": "ed25519:AAAAC3NzaC1lZDI1NTE5AAAAIG",
		"expires_at":        time.Now().Add(ahead).Unix(),
		"asked_of":          askedOf,
	}, mods...)
}

func specRun(askedOf string, ahead time.Duration, mods ...any) map[string]any {
	return map[string]any{"run": specRunBody(askedOf, ahead, mods...)}
}

// specList is n values made by f.
func specList(n int, f func(i int) any) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = f(i)
	}
	return out
}

// specCanonical is the RFC 8785 form of v, as a client marshals it, and its
// lower-case hex SHA-256, computed here and not by Countersign.
func specCanonical(t testing.TB, v any) ([]byte, string) {
	t.Helper()
	var raw []byte
	switch x := v.(type) {
	case json.RawMessage:
		raw = x
	default:
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		raw = b
	}
	canonical, err := jcs.Transform(raw)
	if err != nil {
		t.Fatalf("jcs: %v", err)
	}
	sum := sha256.Sum256(canonical)
	return canonical, hex.EncodeToString(sum[:])
}

// specCounts is how many approvals and timeline events the database holds.
func specCounts(t testing.TB, env *apptest.Env) (approvals, events int64) {
	t.Helper()
	db := env.Store.DB()
	if err := db.Table("approvals").Count(&approvals).Error; err != nil {
		t.Fatalf("count approvals: %v", err)
	}
	if err := db.Table("events").Count(&events).Error; err != nil {
		t.Fatalf("count events: %v", err)
	}
	return approvals, events
}

// specRefused fails unless r is a refusal with code about field.
func specRefused(t testing.TB, r apptest.Result, code core.Code, field string) {
	t.Helper()
	if !r.IsError || r.Code != string(code) || r.Field != field {
		t.Errorf("got %s; want isError with %s on %q", r, code, field)
	}
}

// specRaw reads the named members of a tool result's JSON text exactly as
// the service wrote them.
func specRaw(t testing.TB, r apptest.Result) map[string]json.RawMessage {
	t.Helper()
	var out map[string]json.RawMessage
	if err := json.Unmarshal([]byte(r.Text), &out); err != nil {
		t.Fatalf("result text is not a JSON object: %v: %s", err, r.Text)
	}
	return out
}

// specTime reads an RFC 3339 time of a tool output.
func specTime(t testing.TB, out map[string]any, name string) time.Time {
	t.Helper()
	s, _ := out[name].(string)
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("%s = %v: %v", name, out[name], err)
	}
	return at
}

// specJSON normalises a value through JSON, as a client reads it back.
func specJSON(t testing.TB, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("unmarshal: %v", err)
	}
	return out
}

// createCase is one call of approvals_create: code "" means accepted.
type createCase struct {
	name  string
	args  map[string]any
	code  core.Code
	field string
	text  string // a part of the refusal's text, when it matters
}

func specCreateCases() []createCase {
	long := func(n int) string { return strings.Repeat("é", n) }
	pr := specAsk("pull_request", specPR())
	https := func(i int) any { return fmt.Sprintf("https://example.com/%d", i) }
	doc := func(i int) any { return map[string]any{"document_id": fmt.Sprintf("doc_%d", i)} }
	commit := func(i int) any {
		return map[string]any{"repo": "acme/web", "sha": fmt.Sprintf("%07x", i+1), "subject": fmt.Sprintf("commit %d", i)}
	}
	diagram := func(i int) any { return fmt.Sprintf("dia_%d", i) }
	link := func(int) any {
		return map[string]any{"kind": "link", "url": "https://ci.example.com/run/1", "title": "CI run"}
	}
	withCtx := func(kv ...any) map[string]any { return specWith(pr, "context", specWith(specPlanItem(), kv...)) }
	evidence := func(items ...any) map[string]any {
		return withCtx("explanation", map[string]any{"what": "merge #900", "evidence": items})
	}
	code := map[string]any{"kind": "code", "language": "go", "text": "return nil"}
	diff := map[string]any{"kind": "diff", "path": "web/login.go", "text": "-a\n+b"}
	logItem := map[string]any{"kind": "log", "text": "PASS"}
	run := func(ahead time.Duration, mods ...any) map[string]any {
		return specWith(specAsk("run", specRun("ada", ahead, mods...)), "asked_of", "ada")
	}
	const cmdOnlyHint = "file a decision and run the command yourself"

	return []createCase{
		// kind
		{name: "an unknown kind is refused", args: specAsk("merge", map[string]any{"merge": map[string]any{}}), code: core.InvalidArgument, field: "kind"},
		{name: "an auto_approve ask is sent to approvals_request_auto_approve", args: specAsk("auto_approve", map[string]any{"auto_approve": map[string]any{}}),
			code: core.InvalidArgument, field: "kind", text: "approvals_request_auto_approve"},
		{name: "an empty kind is refused", args: specWith(pr, "kind", ""), code: core.InvalidArgument, field: "kind"},
		{name: "an authorization ask is refused: only the CIBA provider files it", args: specAsk("authorization", map[string]any{"authorization": map[string]any{
			"client": map[string]any{"id": "cli_1", "name": "Shop"}, "scope": "openid"}}), code: core.InvalidArgument, field: "kind"},

		// title, summary, approve_means, deny_means, agent
		{name: "a missing title is refused", args: specWith(pr, "title", ""), code: core.InvalidArgument, field: "title"},
		{name: "a blank title is refused", args: specWith(pr, "title", "   "), code: core.InvalidArgument, field: "title"},
		{name: "a title of 120 characters is accepted", args: specWith(pr, "title", long(120))},
		{name: "a title of 121 characters is refused", args: specWith(pr, "title", long(121)), code: core.InvalidArgument, field: "title"},
		{name: "a title over two lines is refused", args: specWith(pr, "title", "Merge #900\nand roll"), code: core.InvalidArgument, field: "title"},
		{name: "a summary of 500 characters is accepted", args: specWith(pr, "summary", long(500))},
		{name: "a summary of 501 characters is refused", args: specWith(pr, "summary", long(501)), code: core.InvalidArgument, field: "summary"},
		{name: "a missing approve_means is refused", args: specWith(pr, "approve_means", specDrop), code: core.InvalidArgument, field: "approve_means"},
		{name: "an approve_means of 300 characters is accepted", args: specWith(pr, "approve_means", long(300))},
		{name: "an approve_means of 301 characters is refused", args: specWith(pr, "approve_means", long(301)), code: core.InvalidArgument, field: "approve_means"},
		{name: "a missing deny_means is refused", args: specWith(pr, "deny_means", ""), code: core.InvalidArgument, field: "deny_means"},
		{name: "a deny_means of 300 characters is accepted", args: specWith(pr, "deny_means", long(300))},
		{name: "a deny_means of 301 characters is refused", args: specWith(pr, "deny_means", long(301)), code: core.InvalidArgument, field: "deny_means"},
		{name: "an agent label of 64 characters is accepted", args: specWith(pr, "agent", long(64))},
		{name: "an agent label of 65 characters is refused", args: specWith(pr, "agent", long(65)), code: core.InvalidArgument, field: "agent"},

		// links
		{name: "20 https links are accepted", args: specWith(pr, "links", specList(20, https))},
		{name: "21 links are refused", args: specWith(pr, "links", specList(21, https)), code: core.InvalidArgument, field: "links"},
		{name: "an http link is refused", args: specWith(pr, "links", []any{"http://example.com/900"}), code: core.InvalidArgument, field: "links[0]"},
		{name: "a relative link is refused", args: specWith(pr, "links", []any{"https://example.com/1", "/pull/900"}), code: core.InvalidArgument, field: "links[1]"},

		// asked_of
		{name: "asked_of a subject nobody has is refused", args: specWith(pr, "asked_of", "nobody"), code: core.InvalidArgument, field: "asked_of"},
		{name: "asked_of a member's subject is accepted", args: specWith(pr, "asked_of", "ada")},

		// pull_request
		{name: "a pull_request payload is accepted", args: pr},
		{name: "an unknown top-level member beside pull_request is refused", args: specWith(pr, "payload", map[string]any{"pull_request": specPRBody(), "extra": map[string]any{}}),
			code: core.InvalidArgument, field: "payload.extra"},
		{name: "an unknown member inside pull_request is refused", args: specWith(pr, "payload", specPR("url", "https://example.com")),
			code: core.InvalidArgument, field: "payload.pull_request.url"},
		{name: "a member spelled in another case inside pull_request is refused", args: specWith(pr, "payload", specPR("repo", specDrop, "Repo", "acme/web")),
			code: core.InvalidArgument, field: "payload.pull_request.Repo"},
		{name: "a pull_request payload with a second member is refused", args: specWith(pr, "payload", map[string]any{"pull_request": specPRBody(), "roll": specRollBody()}),
			code: core.InvalidArgument, field: "payload.roll"},
		{name: "a pull_request payload under another member name is refused", args: specWith(pr, "payload", map[string]any{"pullrequest": specPRBody()}),
			code: core.InvalidArgument, field: "payload.pullrequest"},
		{name: "a pull_request number that is not an integer is refused", args: specWith(pr, "payload", specPR("number", 900.5)),
			code: core.InvalidArgument, field: "payload.pull_request.number"},
		{name: "a pull_request number sent as a string is refused", args: specWith(pr, "payload", specPR("number", "900")),
			code: core.InvalidArgument, field: "payload.pull_request.number"},
		{name: "a pull_request number of 0 is refused", args: specWith(pr, "payload", specPR("number", 0)),
			code: core.InvalidArgument, field: "payload.pull_request.number"},
		{name: "a pull_request without repo is refused", args: specWith(pr, "payload", specPR("repo", specDrop)),
			code: core.InvalidArgument, field: "payload.pull_request.repo"},
		{name: "a pull_request head that is not a sha is refused", args: specWith(pr, "payload", specPR("head", "main")),
			code: core.InvalidArgument, field: "payload.pull_request.head"},

		// roll
		{name: "a roll payload is accepted", args: specAsk("roll", specRoll())},
		{name: "a roll train is accepted", args: specAsk("roll", specRoll(
			"prs", []any{map[string]any{"number": 900, "title": "Fix login"}}, "migrations", []any{"0042_add_index"},
			"other_commits", []any{map[string]any{"sha": "abcdef1", "subject": "Bump deps"}}, "behind", 2,
			"gate_tree", "tree 1", "gate", "canary green", "steps", []any{"canary", "all"}, "rollback", "roll back to abcdef0"))},
		{name: "a roll without deployments is refused", args: specAsk("roll", specRoll("deployments", specDrop)),
			code: core.InvalidArgument, field: "payload.roll.deployments"},
		{name: "an unknown member inside roll is refused", args: specAsk("roll", specRoll("canary", "10%")),
			code: core.InvalidArgument, field: "payload.roll.canary"},
		{name: "an unknown member inside a roll pr is refused", args: specAsk("roll", specRoll("prs", []any{map[string]any{"number": 900, "title": "x", "url": "https://x.example"}})),
			code: core.InvalidArgument, field: "payload.roll.prs[0].url"},
		{name: "an unknown top-level member beside roll is refused", args: specAsk("roll", map[string]any{"roll": specRollBody(), "note": "x"}),
			code: core.InvalidArgument, field: "payload.note"},

		// review
		{name: "a review payload is accepted", args: specAsk("review", specReview("https://github.com/acme/web/pull/900"))},
		{name: "a review url over http is refused", args: specAsk("review", specReview("http://github.com/acme/web/pull/900")),
			code: core.InvalidArgument, field: "payload.review.url"},
		{name: "a relative review url is refused", args: specAsk("review", specReview("/acme/web/pull/900")),
			code: core.InvalidArgument, field: "payload.review.url"},
		{name: "an unknown member inside review is refused", args: specAsk("review", specReview("https://github.com/acme/web/pull/900", "title", "x")),
			code: core.InvalidArgument, field: "payload.review.title"},
		{name: "a review payload under two members is refused", args: specAsk("review", map[string]any{"review": map[string]any{"url": "https://x.example"}, "document": specDocument()["document"]}),
			code: core.InvalidArgument, field: "payload.document"},

		// document
		{name: "a document payload is accepted", args: specAsk("document", specDocument())},
		{name: "a document version 0 is accepted", args: specAsk("document", specDocument("version", 0))},
		{name: "a negative document version is refused", args: specAsk("document", specDocument("version", -1)),
			code: core.InvalidArgument, field: "payload.document.version"},
		{name: "a document without document_id is refused", args: specAsk("document", specDocument("document_id", specDrop)),
			code: core.InvalidArgument, field: "payload.document.document_id"},
		{name: "an unknown member inside document is refused", args: specAsk("document", specDocument("url", "https://x.example")),
			code: core.InvalidArgument, field: "payload.document.url"},

		// decision
		{name: "a decision of 2 options is accepted", args: specAsk("decision", specDecision("Ship today", "Wait for Monday"))},
		{name: "a decision of 4 options of 80 characters is accepted", args: specAsk("decision", specDecision(long(80), "b", "c", "d"))},
		{name: "a decision of 1 option is refused", args: specAsk("decision", specDecision("Ship today")),
			code: core.InvalidArgument, field: "payload.decision.options"},
		{name: "a decision of 5 options is refused", args: specAsk("decision", specDecision("a", "b", "c", "d", "e")),
			code: core.InvalidArgument, field: "payload.decision.options"},
		{name: "a decision with the same option twice is refused", args: specAsk("decision", specDecision("Ship", "Wait", "Ship")),
			code: core.InvalidArgument, field: "payload.decision.options[2]"},
		{name: "a decision with options equal once trimmed is refused", args: specAsk("decision", specDecision("Ship", " Ship ")),
			code: core.InvalidArgument, field: "payload.decision.options[1]"},
		{name: "a decision option of 81 characters is refused", args: specAsk("decision", specDecision("a", long(81))),
			code: core.InvalidArgument, field: "payload.decision.options[1]"},
		{name: "an unknown member inside decision is refused", args: specAsk("decision", map[string]any{"decision": map[string]any{"options": []any{"a", "b"}, "default": 0}}),
			code: core.InvalidArgument, field: "payload.decision.default"},

		// run
		{name: "a run with cmd only is refused with the seed's hint", args: specAsk("run", map[string]any{"run": map[string]any{"cmd": "./deploy.sh api"}}),
			code: core.InvalidArgument, field: "payload.run", text: cmdOnlyHint},
		{name: "a well-formed pinned run is refused until its runner is enrolled", args: run(30 * time.Minute),
			code: core.FailedPrecondition, field: "payload.run.runner_id", text: `"runner_1"`},
		{name: "a pinned production run 14 minutes ahead passes validation", args: run(14*time.Minute, "effect", "production"),
			code: core.FailedPrecondition, field: "payload.run.runner_id", text: `"runner_1"`},
		{name: "a pinned run without runner_id is refused", args: run(30*time.Minute, "runner_id", ""),
			code: core.InvalidArgument, field: "payload.run.runner_id"},
		{name: "a run expiring 61 minutes ahead is refused", args: run(61 * time.Minute),
			code: core.InvalidArgument, field: "payload.run.expires_at"},
		{name: "a production run expiring 16 minutes ahead is refused", args: run(16*time.Minute, "effect", "production"),
			code: core.InvalidArgument, field: "payload.run.expires_at"},
		{name: "a run asked of a subject nobody has is refused", args: specWith(specAsk("run", specRun("nobody", 30*time.Minute)), "asked_of", specDrop),
			code: core.InvalidArgument, field: "asked_of"},
		{name: "a run whose asked_of differs from its payload's is refused", args: specWith(run(30*time.Minute), "asked_of", "bob"),
			code: core.InvalidArgument, field: "asked_of"},
		{name: "an unknown member inside run is refused", args: run(30*time.Minute, "env", map[string]any{"A": "1"}),
			code: core.InvalidArgument, field: "payload.run.env"},
		{name: "an unknown top-level member beside run is refused", args: specWith(run(30*time.Minute), "payload", map[string]any{"run": specRunBody("ada", 30*time.Minute), "x": 1}),
			code: core.InvalidArgument, field: "payload.x"},

		// context: the plan item or document rule
		{name: "a pull_request ask without context is refused", args: specWith(pr, "context", specDrop), code: core.InvalidArgument, field: "context"},
		{name: "a roll ask without context is refused", args: specWith(specAsk("roll", specRoll()), "context", specDrop), code: core.InvalidArgument, field: "context"},
		{name: "a decision ask without context is refused", args: specWith(specAsk("decision", specDecision("a", "b")), "context", specDrop), code: core.InvalidArgument, field: "context"},
		{name: "a run ask without context is refused", args: specWith(run(30*time.Minute), "context", specDrop), code: core.InvalidArgument, field: "context"},
		{name: "a run ask with a no_context_reason reaches the runner check", args: specWith(run(30*time.Minute), "context", map[string]any{"no_context_reason": "a one-off fix"}),
			code: core.FailedPrecondition, field: "payload.run.runner_id"},
		{name: "a document ask without context is accepted: its payload names a document", args: specWith(specAsk("document", specDocument()), "context", specDrop)},
		{name: "a review ask without context is accepted", args: specWith(specAsk("review", specReview("https://github.com/acme/web/pull/900")), "context", specDrop)},
		{name: "a pull_request ask with a plan_id and no plan_item is refused", args: specWith(pr, "context", map[string]any{"plan_id": "plan_1"}),
			code: core.InvalidArgument, field: "context"},
		{name: "a pull_request ask naming a document is accepted", args: specWith(pr, "context", map[string]any{"documents": []any{doc(0)}})},
		{name: "a pull_request ask naming a document by kind and number is accepted", args: specWith(pr, "context", map[string]any{"documents": []any{map[string]any{"kind": "issue", "number": 12}}})},
		{name: "a pull_request ask with a no_context_reason is accepted", args: specWith(pr, "context", map[string]any{"no_context_reason": "a hotfix outside any plan"})},
		{name: "a blank no_context_reason is refused", args: specWith(pr, "context", map[string]any{"no_context_reason": "   "}),
			code: core.InvalidArgument, field: "context"},
		{name: "20 documents are accepted", args: withCtx("documents", specList(20, doc))},
		{name: "21 documents are refused", args: withCtx("documents", specList(21, doc)), code: core.InvalidArgument, field: "context.documents"},
		{name: "20 commits are accepted", args: withCtx("commits", specList(20, commit))},
		{name: "21 commits are refused", args: withCtx("commits", specList(21, commit)), code: core.InvalidArgument, field: "context.commits"},
		{name: "20 diagram_ids are accepted", args: withCtx("diagram_ids", specList(20, diagram))},
		{name: "21 diagram_ids are refused", args: withCtx("diagram_ids", specList(21, diagram)), code: core.InvalidArgument, field: "context.diagram_ids"},
		{name: "an unknown member of context is refused", args: withCtx("ticket", "T-1"), code: core.InvalidArgument, field: "context.ticket"},

		// context: explanation evidence
		{name: "8 evidence items are accepted", args: evidence(specList(8, link)...)},
		{name: "9 evidence items are refused", args: evidence(specList(9, link)...), code: core.InvalidArgument, field: "context.explanation.evidence"},
		{name: "link evidence is accepted without private evidence", args: evidence(link(0))},
		{name: "code evidence is refused without private evidence", args: evidence(code), code: core.PermissionDenied, field: "context.explanation.evidence[0]", text: "allow_private_evidence"},
		{name: "diff evidence is refused without private evidence", args: evidence(link(0), diff), code: core.PermissionDenied, field: "context.explanation.evidence[1]"},
		{name: "log evidence is refused without private evidence", args: evidence(link(0), link(1), logItem), code: core.PermissionDenied, field: "context.explanation.evidence[2]"},

		// context: job_id
		{name: "a job_id starting with job_ is accepted", args: withCtx("job_id", "job_42")},
		{name: "a job_id not starting with job_ is refused", args: withCtx("job_id", "42"), code: core.InvalidArgument, field: "context.job_id"},
	}
}

func TestCreateChecksEveryRuleOfSeed001(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		env := apptest.Start(t, db, nil)
		env.Member(env.Account.ID, "ada", core.RoleOwner)
		env.Member(env.Account.ID, "bob", core.RoleMember)
		_, token := env.Agent(env.Account.ID, "bot")
		c := env.Connect(token)

		for _, tc := range specCreateCases() {
			t.Run(tc.name, func(t *testing.T) {
				approvals, events := specCounts(t, env)
				r := c.Call("approvals_create", tc.args)
				afterApprovals, afterEvents := specCounts(t, env)
				if tc.code == "" {
					if r.IsError {
						t.Fatalf("refused: %s", r)
					}
					if afterApprovals != approvals+1 || afterEvents != events+1 {
						t.Errorf("approvals %d → %d, events %d → %d; want one more of each", approvals, afterApprovals, events, afterEvents)
					}
					if r.Out["kind"] != tc.args["kind"] || r.Out["status"] != "pending" || r.Out["requester"] != "agent:bot" {
						t.Errorf("created kind=%v status=%v requester=%v", r.Out["kind"], r.Out["status"], r.Out["requester"])
					}
					want, _ := tc.args["asked_of"].(string)
					if got, _ := r.Out["asked_of"].(string); got != want {
						t.Errorf("asked_of = %q, want %q", got, want)
					}
					return
				}
				specRefused(t, r, tc.code, tc.field)
				if tc.text != "" && !strings.Contains(r.Text, tc.text) {
					t.Errorf("refusal %q does not say %q", r.Text, tc.text)
				}
				if afterApprovals != approvals || afterEvents != events {
					t.Errorf("a refused create wrote: approvals %d → %d, events %d → %d", approvals, afterApprovals, events, afterEvents)
				}
			})
		}
	})
}

func TestCreateTakesPrivateEvidenceOnlyWhenTheAccountAllowsIt(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		env := apptest.Start(t, db, nil)
		_, token := env.Agent(env.Account.ID, "bot")
		c := env.Connect(token)
		items := map[string]map[string]any{
			"code": {"kind": "code", "language": "go", "text": "return nil", "title": "the fix"},
			"diff": {"kind": "diff", "path": "web/login.go", "text": "-a\n+b"},
			"log":  {"kind": "log", "text": "PASS\nok acme/web 0.2s"},
			"link": {"kind": "link", "url": "https://ci.example.com/run/1"},
		}
		ask := func(item map[string]any) map[string]any {
			return specWith(specAsk("pull_request", specPR()), "context",
				specWith(specPlanItem(), "explanation", map[string]any{"what": "merge #900", "evidence": []any{item}}))
		}
		for _, allow := range []bool{false, true, false} {
			if err := env.Store.SetAllowPrivateEvidence(ctx, env.Account.ID, allow); err != nil {
				t.Fatalf("set allow_private_evidence: %v", err)
			}
			for _, kind := range []string{"code", "diff", "log", "link"} {
				t.Run(fmt.Sprintf("%s evidence with allow_private_evidence %t", kind, allow), func(t *testing.T) {
					args := ask(items[kind])
					approvals, _ := specCounts(t, env)
					r := c.Call("approvals_create", args)
					after, _ := specCounts(t, env)
					if kind != "link" && !allow {
						specRefused(t, r, core.PermissionDenied, "context.explanation.evidence[0]")
						if after != approvals {
							t.Errorf("a refused create wrote %d approvals", after-approvals)
						}
						return
					}
					if r.IsError {
						t.Fatalf("refused: %s", r)
					}
					got := c.OK("approvals_get", map[string]any{"approval_id": r.Out["approval_id"]})
					if want := specJSON(t, args["context"]); !reflect.DeepEqual(got["context"], want) {
						t.Errorf("context = %v, want %v", got["context"], want)
					}
				})
			}
		}
	})
}

func TestCreateReturnsEverythingItWasGiven(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		for _, tc := range []struct {
			name string
			ttl  string // COUNTERSIGN_ASK_TTL, "" for the default
			life time.Duration
		}{
			{"with the default life of 7 days", "", 7 * 24 * time.Hour},
			{"with COUNTERSIGN_ASK_TTL=1h", "1h", time.Hour},
		} {
			t.Run(tc.name, func(t *testing.T) {
				var overrides map[string]string
				if tc.ttl != "" {
					overrides = map[string]string{"COUNTERSIGN_ASK_TTL": tc.ttl}
				}
				env := apptest.Start(t, db, overrides)
				env.Member(env.Account.ID, "ada", core.RoleOwner)
				_, token := env.Agent(env.Account.ID, "release-bot")
				c := env.Connect(token)

				payload := specPR("repo", "Acme/Web", "title", "Fix the login redirect (ü, 日本)")
				askContext := map[string]any{
					"plan_id": "plan_1", "plan_item": "item_2", "job_id": "job_42",
					"documents":         []any{map[string]any{"document_id": "doc_1", "space_id": "space_1"}, map[string]any{"kind": "issue", "number": 12}},
					"diagram_ids":       []any{"dia_1", "dia_2"},
					"canvas_id":         "canvas_1",
					"scene_document_id": "scene_1",
					"commits":           []any{map[string]any{"repo": "acme/web", "sha": specSHA40, "subject": "Fix redirect"}},
					"explanation": map[string]any{
						"what": "Merge #900.", "why": "Logins loop.", "approve": "I merge it.", "deny": "It stays open.",
						"effect":   map[string]any{"kind": "remote", "ships": "web 1.2.3", "summary": "The login page redirects once.", "touches": []any{"login"}},
						"risk":     map[string]any{"level": "low", "text": "One handler."},
						"evidence": []any{map[string]any{"kind": "link", "url": "https://ci.example.com/run/7", "title": "CI run"}},
					},
				}
				args := map[string]any{
					"kind":          "pull_request",
					"title":         "Merge acme/web#900",
					"summary":       "Fixes the login redirect.\nNo migration.",
					"approve_means": "I merge #900; nothing rolls",
					"deny_means":    "#900 stays open",
					"agent":         "release bot on ci-7",
					"asked_of":      "ada",
					"links":         []any{"https://github.com/acme/web/pull/900", "https://ci.example.com/run/7"},
					"payload":       payload,
					"context":       askContext,
				}
				wantPayload, wantSHA := specCanonical(t, payload)
				wantContext, _ := specCanonical(t, askContext)

				before := time.Now()
				created := c.Call("approvals_create", args)
				after := time.Now()
				if created.IsError {
					t.Fatalf("refused: %s", created)
				}
				id, _ := created.Out["approval_id"].(string)
				if !strings.HasPrefix(id, "appr_") {
					t.Fatalf("approval_id = %q", id)
				}
				got := c.Call("approvals_get", map[string]any{"approval_id": id})
				if got.IsError {
					t.Fatalf("approvals_get: %s", got)
				}
				for _, r := range []struct {
					from string
					res  apptest.Result
				}{{"approvals_create", created}, {"approvals_get", got}} {
					out := r.res.Out
					for _, name := range []string{"kind", "title", "summary", "approve_means", "deny_means", "asked_of"} {
						if out[name] != args[name] {
							t.Errorf("%s: %s = %q, want %q", r.from, name, out[name], args[name])
						}
					}
					checks := []struct {
						name      string
						got, want any
					}{
						{"approval_id", out["approval_id"], id},
						{"account_id", out["account_id"], env.Account.ID},
						{"agent", out["agent"], args["agent"]},
						{"links", out["links"], specJSON(t, args["links"])},
						{"context", out["context"], specJSON(t, askContext)},
						{"payload", out["payload"], specJSON(t, payload)},
						{"payload_sha256", out["payload_sha256"], wantSHA},
						{"requester", out["requester"], "agent:release-bot"},
						{"status", out["status"], "pending"},
						{"decision", out["decision"], nil},
						{"decided_by", out["decided_by"], nil},
						{"note", out["note"], nil},
					}
					for _, ch := range checks {
						if !reflect.DeepEqual(ch.got, ch.want) {
							t.Errorf("%s: %s = %v, want %v", r.from, ch.name, ch.got, ch.want)
						}
					}
					raw := specRaw(t, r.res)
					if !bytes.Equal(raw["payload"], wantPayload) {
						t.Errorf("%s: payload bytes %s, want the canonical %s", r.from, raw["payload"], wantPayload)
					}
					if !bytes.Equal(raw["context"], wantContext) {
						t.Errorf("%s: context bytes %s, want %s", r.from, raw["context"], wantContext)
					}
					createdAt, expiresAt := specTime(t, out, "created_at"), specTime(t, out, "expires_at")
					if createdAt.Before(before.Add(-time.Second)) || createdAt.After(after.Add(time.Second)) {
						t.Errorf("%s: created_at %s is not the time of the call (%s to %s)", r.from, createdAt, before, after)
					}
					if d := expiresAt.Sub(createdAt); d < tc.life-time.Millisecond || d > tc.life+time.Millisecond {
						t.Errorf("%s: expires_at %s is %s after created_at, want %s", r.from, expiresAt, d, tc.life)
					}
				}
				if !reflect.DeepEqual(created.Out, got.Out) {
					t.Errorf("approvals_create answered\n%v\nand approvals_get right after\n%v\nwant the same", created.Out, got.Out)
				}
				timeline, _ := got.Out["timeline"].([]any)
				if len(timeline) != 1 {
					t.Fatalf("timeline = %v, want the created event", timeline)
				}
				ev, _ := timeline[0].(map[string]any)
				if ev["step"] != "created" || ev["to"] != "pending" || ev["by"] != "agent" || ev["actor"] != "agent:release-bot" {
					t.Errorf("created event = %v", ev)
				}
			})
		}
	})
}

func TestCreateHashesThePayloadWhateverItsKeyOrder(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		env := apptest.Start(t, db, nil)
		_, token := env.Agent(env.Account.ID, "bot")
		c := env.Connect(token)
		base := specAsk("pull_request", nil)

		sent := []json.RawMessage{
			json.RawMessage(`{"pull_request":{"repo":"acme/web","number":900,"head":"` + specSHA40 + `","title":"Fix login redirect"}}`),
			json.RawMessage(`{ "pull_request" : { "title" : "Fix login redirect", "head":"` + specSHA40 + `",
				"number": 900, "repo": "acme/web" } }`),
			json.RawMessage(`{"pull_request":{"number":900,"title":"Fix login redirect","repo":"acme/web","head":"` + specSHA40 + `"}}`),
		}
		_, want := specCanonical(t, sent[0])
		for i, p := range sent {
			out := c.OK("approvals_create", specWith(base, "payload", p))
			if out["payload_sha256"] != want {
				t.Errorf("payload %d: payload_sha256 %v, want %s", i, out["payload_sha256"], want)
			}
		}

		// The text is hashed as sent: NFC and NFD spellings are two payloads.
		nfc := c.OK("approvals_create", specWith(base, "payload", specPR("title", "Caf\u00e9")))
		nfd := c.OK("approvals_create", specWith(base, "payload", specPR("title", "Cafe\u0301")))
		if nfc["payload_sha256"] == nfd["payload_sha256"] {
			t.Errorf("NFC and NFD titles hash the same: %v", nfc["payload_sha256"])
		}
		for _, tc := range []struct {
			out   map[string]any
			title string
		}{{nfc, "Caf\u00e9"}, {nfd, "Cafe\u0301"}} {
			if _, sum := specCanonical(t, specPR("title", tc.title)); tc.out["payload_sha256"] != sum {
				t.Errorf("title %q: payload_sha256 %v, want %s", tc.title, tc.out["payload_sha256"], sum)
			}
		}
	})
}

func TestCreateRefusesAnAskMissingARequiredArgument(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		env := apptest.Start(t, db, nil)
		_, token := env.Agent(env.Account.ID, "bot")
		c := env.Connect(token)
		for _, name := range []string{"kind", "title", "payload"} {
			t.Run("without "+name, func(t *testing.T) {
				approvals, events := specCounts(t, env)
				r := c.Call("approvals_create", specWith(specAsk("pull_request", specPR()), name, specDrop))
				// The input schema refuses it before the tool runs; the refusal
				// still names the argument in the field position.
				if !r.IsError || r.Code != string(core.InvalidArgument) || r.Field != name {
					t.Errorf("got %s; want INVALID_ARGUMENT on field %q", r, name)
				}
				if a, e := specCounts(t, env); a != approvals || e != events {
					t.Errorf("a refused create wrote %d approvals", a-approvals)
				}
			})
		}
	})
}

func TestCreateReturnsTheCanonicalBytesOfThePayload(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		env := apptest.Start(t, db, nil)
		_, token := env.Agent(env.Account.ID, "bot")
		c := env.Connect(token)
		payload := specPR("title", "Use <b> & </b> in the header")
		wantBytes, wantSHA := specCanonical(t, payload)

		created := c.Call("approvals_create", specAsk("pull_request", payload))
		if created.IsError {
			t.Fatalf("refused: %s", created)
		}
		got := c.Call("approvals_get", map[string]any{"approval_id": created.Out["approval_id"]})
		if got.Out["payload_sha256"] != wantSHA {
			t.Errorf("payload_sha256 = %v, want %s", got.Out["payload_sha256"], wantSHA)
		}
		raw := specRaw(t, got)["payload"]
		if again, sum := specCanonical(t, raw); !bytes.Equal(again, wantBytes) || sum != wantSHA {
			t.Errorf("the returned payload is another JSON value: %s", raw)
		}
		var stored string
		if err := env.Store.DB().Table("approvals").Select("payload").Where("id = ?", created.Out["approval_id"]).Scan(&stored).Error; err != nil {
			t.Fatalf("read payload: %v", err)
		}
		if stored != string(wantBytes) {
			t.Errorf("stored payload %s, want the canonical %s", stored, wantBytes)
		}
		if !bytes.Equal(raw, wantBytes) {
			t.Errorf("approvals_get returns the payload as %s, not its canonical bytes %s", raw, wantBytes)
		}
	})
}

func TestCreateRefusesDuplicateMemberNames(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		env := apptest.Start(t, db, nil)
		_, token := env.Agent(env.Account.ID, "bot")
		c := env.Connect(token)
		words := `"kind":"pull_request","title":"Merge #900","approve_means":"I merge #900","deny_means":"#900 stays open"`
		pr := `"number":900,"head":"` + specSHA40 + `","title":"Fix login redirect"`
		for _, tc := range []struct {
			name, args, field string
		}{
			{"a repo named twice in the payload", `{` + words + `,"context":{"plan_id":"p","plan_item":"i"},
				"payload":{"pull_request":{"repo":"acme/web","repo":"evil/web",` + pr + `}}}`, "payload.pull_request.repo"},
			{"a plan_item named twice in the context", `{` + words + `,"context":{"plan_id":"p","plan_item":"i","plan_item":"j"},
				"payload":{"pull_request":{"repo":"acme/web",` + pr + `}}}`, "context.plan_item"},
			{"a summary named twice beside text full of colons, quotes and backslashes", `{` + words + `,"summary":"C:\\dir\\ \"a\": {b: c}\\",
				"context":{"plan_id":"p","plan_item":"i"},"payload":{"pull_request":{"repo":"acme/web",` + pr + `}},"summary":"other"}`, "summary"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				approvals, _ := specCounts(t, env)
				r := c.Call("approvals_create", json.RawMessage(tc.args))
				after, _ := specCounts(t, env)
				specRefused(t, r, core.InvalidArgument, tc.field)
				if after != approvals {
					t.Errorf("a refused create wrote %d approvals", after-approvals)
				}
			})
		}
	})
}
