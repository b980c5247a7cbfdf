package ask

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gowebpki/jcs"
)

// wantRefusal checks that err is nil when code is "", and otherwise a refusal
// with that code about that field.
func wantRefusal(t *testing.T, err error, code Code, field string) {
	t.Helper()
	if code == "" {
		if err != nil {
			t.Fatalf("want success, got %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("want %s on %q, got success", code, field)
	}
	if CodeOf(err) != code || FieldOf(err) != field {
		t.Fatalf("want %s on %q, got %s on %q (%v)", code, field, CodeOf(err), FieldOf(err), err)
	}
}

// jsonList renders n JSON values made by f as a JSON list.
func jsonList(n int, f func(i int) string) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = f(i)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

var testNow = time.Unix(1_800_000_000, 0).UTC()

const (
	sha40       = "0123456789abcdef0123456789abcdef01234567"
	sha64       = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	prMembers   = `"repo":"acme/api","number":900,"head":"` + sha40 + `","title":"Add retries"`
	rollMembers = `"deployments":["api"],"main_commit":"1234567","running_commit":"abcdef0"`
)

func pullRequestJSON(members string) string { return `{"pull_request":{` + members + `}}` }
func rollJSON(members string) string        { return `{"roll":{` + members + `}}` }
func documentJSON(members string) string    { return `{"document":{` + members + `}}` }
func decisionJSON(options string) string    { return `{"decision":{"options":` + options + `}}` }

// runJSON renders a run payload: a whole pin (read_only, expiring 30 minutes
// after testNow) with the members of override replaced or added, and
// those named in drop left out.
func runJSON(override map[string]string, drop ...string) string {
	m := map[string]string{
		"cmd":               `"./deploy.sh api"`,
		"script_sha256":     `"` + sha64 + `"`,
		"runner_id":         `"runner_1"`,
		"argv":              `["deploy.sh","api"]`,
		"effect":            `"read_only"`,
		"runner_public_key": `"ed25519:AAAAC3NzaC1lZDI1NTE5AAAAIG"`,
		"expires_at":        fmt.Sprint(testNow.Add(30 * time.Minute).Unix()),
		"asked_of":          `"person_ada"`,
	}
	for k, v := range override {
		m[k] = v
	}
	for _, k := range drop {
		delete(m, k)
	}
	var parts []string
	for _, k := range []string{"cmd", "script_sha256", "runner_id", "argv", "effect", "runner_public_key", "expires_at", "asked_of", "roll"} {
		if v, ok := m[k]; ok {
			parts = append(parts, fmt.Sprintf("%q:%s", k, v))
			delete(m, k)
		}
	}
	for k, v := range m { // members the list above does not know
		parts = append(parts, fmt.Sprintf("%q:%s", k, v))
	}
	return `{"run":{` + strings.Join(parts, ",") + `}}`
}

func expiresIn(d time.Duration) string { return fmt.Sprint(testNow.Add(d).Unix()) }

func TestParsePayloadRules(t *testing.T) {
	long := func(n int) string { return strings.Repeat("é", n) }
	cases := []struct {
		name    string
		kind    string
		payload string
		code    Code
		field   string
	}{
		// kind
		{"kind auto_approve is filed elsewhere", "auto_approve", `{"auto_approve":{}}`, InvalidArgument, "kind"},
		{"kind unknown", "merge", `{"merge":{}}`, InvalidArgument, "kind"},
		{"kind empty", "", `{"pull_request":{}}`, InvalidArgument, "kind"},

		// payload envelope
		{"pull_request ok", "pull_request", pullRequestJSON(prMembers), "", ""},
		{"payload missing", "pull_request", ``, InvalidArgument, "payload"},
		{"payload null", "pull_request", `null`, InvalidArgument, "payload"},
		{"payload a list", "pull_request", `[` + pullRequestJSON(prMembers) + `]`, InvalidArgument, "payload"},
		{"payload a string", "pull_request", `"x"`, InvalidArgument, "payload"},
		{"payload empty object", "pull_request", `{}`, InvalidArgument, "payload"},
		{"payload not JSON", "pull_request", `{"pull_request":`, InvalidArgument, "payload"},
		{"payload trailing data", "pull_request", pullRequestJSON(prMembers) + ` {}`, InvalidArgument, "payload"},
		{"payload trailing garbage", "pull_request", pullRequestJSON(prMembers) + `x`, InvalidArgument, "payload"},
		{"payload duplicate member", "pull_request", pullRequestJSON(prMembers + `,"repo":"evil/api"`), InvalidArgument, "payload"},
		{"payload duplicate member by escape", "pull_request", pullRequestJSON(prMembers + `,"rep\u006f":"evil/api"`), InvalidArgument, "payload"},
		{"payload invalid UTF-8", "pull_request", pullRequestJSON(`"repo":"acme/api","number":900,"head":"` + sha40 + `","title":"a` + "\xff" + `"`), InvalidArgument, "payload"},
		{"payload lone surrogate", "pull_request", pullRequestJSON(`"repo":"acme/api","number":900,"head":"` + sha40 + `","title":"a\ud800"`), InvalidArgument, "payload"},
		{"payload member of another kind", "pull_request", rollJSON(rollMembers), InvalidArgument, "payload.roll"},
		{"payload second member", "pull_request", `{"pull_request":{` + prMembers + `},"note":"x"}`, InvalidArgument, "payload.note"},
		{"payload member not an object", "pull_request", `{"pull_request":"acme/api#900"}`, InvalidArgument, "payload.pull_request"},
		{"payload member null", "pull_request", `{"pull_request":null}`, InvalidArgument, "payload.pull_request"},

		// pull_request
		{"pr unknown member", "pull_request", pullRequestJSON(prMembers + `,"labels":["x"]`), InvalidArgument, "payload.pull_request.labels"},
		{"pr member spelled in another case", "pull_request", pullRequestJSON(`"Repo":"acme/api","number":900,"head":"` + sha40 + `","title":"t"`), InvalidArgument, "payload.pull_request.Repo"},
		{"pr null member", "pull_request", pullRequestJSON(`"repo":"acme/api","number":900,"head":"` + sha40 + `","title":null`), InvalidArgument, "payload.pull_request.title"},
		{"pr repo with dots, dashes, underscores", "pull_request", pullRequestJSON(`"repo":"my.org-1/my_repo.go","number":1,"head":"abcdef0","title":"t"`), "", ""},
		{"pr repo missing", "pull_request", pullRequestJSON(`"number":900,"head":"` + sha40 + `","title":"t"`), InvalidArgument, "payload.pull_request.repo"},
		{"pr repo blank", "pull_request", pullRequestJSON(`"repo":"  ","number":900,"head":"` + sha40 + `","title":"t"`), InvalidArgument, "payload.pull_request.repo"},
		{"pr repo without slash", "pull_request", pullRequestJSON(`"repo":"acme","number":900,"head":"` + sha40 + `","title":"t"`), InvalidArgument, "payload.pull_request.repo"},
		{"pr repo with two slashes", "pull_request", pullRequestJSON(`"repo":"acme/api/x","number":900,"head":"` + sha40 + `","title":"t"`), InvalidArgument, "payload.pull_request.repo"},
		{"pr repo with a space inside", "pull_request", pullRequestJSON(`"repo":"acme/my api","number":900,"head":"` + sha40 + `","title":"t"`), InvalidArgument, "payload.pull_request.repo"},
		{"pr repo with empty name", "pull_request", pullRequestJSON(`"repo":"acme/","number":900,"head":"` + sha40 + `","title":"t"`), InvalidArgument, "payload.pull_request.repo"},
		{"pr repo dot-dot part", "pull_request", pullRequestJSON(`"repo":"../api","number":900,"head":"` + sha40 + `","title":"t"`), InvalidArgument, "payload.pull_request.repo"},
		{"pr repo a number", "pull_request", pullRequestJSON(`"repo":7,"number":900,"head":"` + sha40 + `","title":"t"`), InvalidArgument, "payload.pull_request.repo"},
		{"pr number 1", "pull_request", pullRequestJSON(`"repo":"a/b","number":1,"head":"abcdef0","title":"t"`), "", ""},
		{"pr number 1.0 is the integer 1", "pull_request", pullRequestJSON(`"repo":"a/b","number":1.0,"head":"abcdef0","title":"t"`), "", ""},
		{"pr number 9e2 is the integer 900", "pull_request", pullRequestJSON(`"repo":"a/b","number":9e2,"head":"abcdef0","title":"t"`), "", ""},
		{"pr number 2^53-1", "pull_request", pullRequestJSON(`"repo":"a/b","number":9007199254740991,"head":"abcdef0","title":"t"`), "", ""},
		{"pr number 2^53 beyond the safe range", "pull_request", pullRequestJSON(`"repo":"a/b","number":9007199254740992,"head":"abcdef0","title":"t"`), InvalidArgument, "payload.pull_request.number"},
		{"pr number missing", "pull_request", pullRequestJSON(`"repo":"a/b","head":"abcdef0","title":"t"`), InvalidArgument, "payload.pull_request.number"},
		{"pr number 0", "pull_request", pullRequestJSON(`"repo":"a/b","number":0,"head":"abcdef0","title":"t"`), InvalidArgument, "payload.pull_request.number"},
		{"pr number -0", "pull_request", pullRequestJSON(`"repo":"a/b","number":-0,"head":"abcdef0","title":"t"`), InvalidArgument, "payload.pull_request.number"},
		{"pr number negative", "pull_request", pullRequestJSON(`"repo":"a/b","number":-3,"head":"abcdef0","title":"t"`), InvalidArgument, "payload.pull_request.number"},
		{"pr number 1.5", "pull_request", pullRequestJSON(`"repo":"a/b","number":1.5,"head":"abcdef0","title":"t"`), InvalidArgument, "payload.pull_request.number"},
		{"pr number 15e-1", "pull_request", pullRequestJSON(`"repo":"a/b","number":15e-1,"head":"abcdef0","title":"t"`), InvalidArgument, "payload.pull_request.number"},
		{"pr number a string", "pull_request", pullRequestJSON(`"repo":"a/b","number":"900","head":"abcdef0","title":"t"`), InvalidArgument, "payload.pull_request.number"},
		{"pr number true", "pull_request", pullRequestJSON(`"repo":"a/b","number":true,"head":"abcdef0","title":"t"`), InvalidArgument, "payload.pull_request.number"},
		{"pr head 7 hex", "pull_request", pullRequestJSON(`"repo":"a/b","number":1,"head":"abcdef0","title":"t"`), "", ""},
		{"pr head 64 hex", "pull_request", pullRequestJSON(`"repo":"a/b","number":1,"head":"` + sha64 + `","title":"t"`), "", ""},
		{"pr head missing", "pull_request", pullRequestJSON(`"repo":"a/b","number":1,"title":"t"`), InvalidArgument, "payload.pull_request.head"},
		{"pr head 6 hex", "pull_request", pullRequestJSON(`"repo":"a/b","number":1,"head":"abcdef","title":"t"`), InvalidArgument, "payload.pull_request.head"},
		{"pr head 65 hex", "pull_request", pullRequestJSON(`"repo":"a/b","number":1,"head":"` + sha64 + `0","title":"t"`), InvalidArgument, "payload.pull_request.head"},
		{"pr head not hex", "pull_request", pullRequestJSON(`"repo":"a/b","number":1,"head":"abcdefg","title":"t"`), InvalidArgument, "payload.pull_request.head"},
		{"pr head upper-case", "pull_request", pullRequestJSON(`"repo":"a/b","number":1,"head":"ABCDEF0","title":"t"`), InvalidArgument, "payload.pull_request.head"},
		{"pr title missing", "pull_request", pullRequestJSON(`"repo":"a/b","number":1,"head":"abcdef0"`), InvalidArgument, "payload.pull_request.title"},
		{"pr title blank", "pull_request", pullRequestJSON(`"repo":"a/b","number":1,"head":"abcdef0","title":" "`), InvalidArgument, "payload.pull_request.title"},
		{"pr title two lines", "pull_request", pullRequestJSON(`"repo":"a/b","number":1,"head":"abcdef0","title":"a\nb"`), InvalidArgument, "payload.pull_request.title"},
		{"pr title with a control character", "pull_request", pullRequestJSON(`"repo":"a/b","number":1,"head":"abcdef0","title":"a\u001bb"`), InvalidArgument, "payload.pull_request.title"},
		{"pr title with a bidi override", "pull_request", pullRequestJSON(`"repo":"a/b","number":1,"head":"abcdef0","title":"a\u202eb"`), InvalidArgument, "payload.pull_request.title"},
		{"pr title 300 characters", "pull_request", pullRequestJSON(`"repo":"a/b","number":1,"head":"abcdef0","title":"` + long(300) + `"`), "", ""},
		{"pr title 301 characters", "pull_request", pullRequestJSON(`"repo":"a/b","number":1,"head":"abcdef0","title":"` + long(301) + `"`), InvalidArgument, "payload.pull_request.title"},

		// roll
		{"roll minimal", "roll", rollJSON(rollMembers), "", ""},
		{"roll full train", "roll", rollJSON(rollMembers + `,"prs":[{"number":1,"title":"A"},{"number":2,"title":"B"}],"migrations":["0042_add_index.sql"],"other_commits":[{"sha":"abcdef1","subject":"bump deps"}],"behind":3,"gate_tree":"tree 1a2b","gate":"ci green on main","steps":["drain","roll","verify"],"rollback":"roll back to abcdef0"`), "", ""},
		{"roll unknown member", "roll", rollJSON(rollMembers + `,"canary":true`), InvalidArgument, "payload.roll.canary"},
		{"roll unknown member inside prs", "roll", rollJSON(rollMembers + `,"prs":[{"number":1,"title":"A"},{"number":2,"title":"B","url":"https://x"}]`), InvalidArgument, "payload.roll.prs[1].url"},
		{"roll deployments missing", "roll", rollJSON(`"main_commit":"1234567","running_commit":"abcdef0"`), InvalidArgument, "payload.roll.deployments"},
		{"roll deployments empty", "roll", rollJSON(`"deployments":[],"main_commit":"1234567","running_commit":"abcdef0"`), InvalidArgument, "payload.roll.deployments"},
		{"roll 20 deployments", "roll", rollJSON(`"deployments":` + jsonList(20, func(i int) string { return fmt.Sprintf(`"d%d"`, i) }) + `,"main_commit":"1234567","running_commit":"abcdef0"`), "", ""},
		{"roll 21 deployments", "roll", rollJSON(`"deployments":` + jsonList(21, func(i int) string { return fmt.Sprintf(`"d%d"`, i) }) + `,"main_commit":"1234567","running_commit":"abcdef0"`), InvalidArgument, "payload.roll.deployments"},
		{"roll empty deployment", "roll", rollJSON(`"deployments":["api",""],"main_commit":"1234567","running_commit":"abcdef0"`), InvalidArgument, "payload.roll.deployments[1]"},
		{"roll deployment not a string", "roll", rollJSON(`"deployments":["api",3],"main_commit":"1234567","running_commit":"abcdef0"`), InvalidArgument, "payload.roll.deployments[1]"},
		{"roll deployments not a list", "roll", rollJSON(`"deployments":"api","main_commit":"1234567","running_commit":"abcdef0"`), InvalidArgument, "payload.roll.deployments"},
		{"roll main_commit missing", "roll", rollJSON(`"deployments":["api"],"running_commit":"abcdef0"`), InvalidArgument, "payload.roll.main_commit"},
		{"roll main_commit not a sha", "roll", rollJSON(`"deployments":["api"],"main_commit":"main","running_commit":"abcdef0"`), InvalidArgument, "payload.roll.main_commit"},
		{"roll running_commit missing", "roll", rollJSON(`"deployments":["api"],"main_commit":"1234567"`), InvalidArgument, "payload.roll.running_commit"},
		{"roll running_commit not a sha", "roll", rollJSON(`"deployments":["api"],"main_commit":"1234567","running_commit":"12345"`), InvalidArgument, "payload.roll.running_commit"},
		{"roll 200 prs", "roll", rollJSON(rollMembers + `,"prs":` + jsonList(200, func(i int) string { return fmt.Sprintf(`{"number":%d,"title":"t"}`, i+1) })), "", ""},
		{"roll 201 prs", "roll", rollJSON(rollMembers + `,"prs":` + jsonList(201, func(i int) string { return fmt.Sprintf(`{"number":%d,"title":"t"}`, i+1) })), InvalidArgument, "payload.roll.prs"},
		{"roll pr number 0", "roll", rollJSON(rollMembers + `,"prs":[{"number":0,"title":"A"}]`), InvalidArgument, "payload.roll.prs[0].number"},
		{"roll pr number 2.5", "roll", rollJSON(rollMembers + `,"prs":[{"number":2.5,"title":"A"}]`), InvalidArgument, "payload.roll.prs[0].number"},
		{"roll pr number missing", "roll", rollJSON(rollMembers + `,"prs":[{"title":"A"}]`), InvalidArgument, "payload.roll.prs[0].number"},
		{"roll pr title missing", "roll", rollJSON(rollMembers + `,"prs":[{"number":1,"title":"A"},{"number":2}]`), InvalidArgument, "payload.roll.prs[1].title"},
		{"roll 200 migrations", "roll", rollJSON(rollMembers + `,"migrations":` + jsonList(200, func(i int) string { return fmt.Sprintf(`"m%d"`, i) })), "", ""},
		{"roll 201 migrations", "roll", rollJSON(rollMembers + `,"migrations":` + jsonList(201, func(i int) string { return fmt.Sprintf(`"m%d"`, i) })), InvalidArgument, "payload.roll.migrations"},
		{"roll empty migration", "roll", rollJSON(rollMembers + `,"migrations":[""]`), InvalidArgument, "payload.roll.migrations[0]"},
		{"roll 200 other commits", "roll", rollJSON(rollMembers + `,"other_commits":` + jsonList(200, func(int) string { return `{"sha":"abcdef1","subject":"s"}` })), "", ""},
		{"roll 201 other commits", "roll", rollJSON(rollMembers + `,"other_commits":` + jsonList(201, func(int) string { return `{"sha":"abcdef1","subject":"s"}` })), InvalidArgument, "payload.roll.other_commits"},
		{"roll other commit bad sha", "roll", rollJSON(rollMembers + `,"other_commits":[{"sha":"HEAD","subject":"s"}]`), InvalidArgument, "payload.roll.other_commits[0].sha"},
		{"roll other commit subject missing", "roll", rollJSON(rollMembers + `,"other_commits":[{"sha":"abcdef1"}]`), InvalidArgument, "payload.roll.other_commits[0].subject"},
		{"roll behind 0", "roll", rollJSON(rollMembers + `,"behind":0`), "", ""},
		{"roll behind negative", "roll", rollJSON(rollMembers + `,"behind":-1`), InvalidArgument, "payload.roll.behind"},
		{"roll behind fractional", "roll", rollJSON(rollMembers + `,"behind":0.5`), InvalidArgument, "payload.roll.behind"},
		{"roll behind a string", "roll", rollJSON(rollMembers + `,"behind":"3"`), InvalidArgument, "payload.roll.behind"},
		{"roll gate_tree two lines", "roll", rollJSON(rollMembers + `,"gate_tree":"a\nb"`), InvalidArgument, "payload.roll.gate_tree"},
		{"roll gate 300 characters", "roll", rollJSON(rollMembers + `,"gate":"` + long(300) + `"`), "", ""},
		{"roll gate 301 characters", "roll", rollJSON(rollMembers + `,"gate":"` + long(301) + `"`), InvalidArgument, "payload.roll.gate"},
		{"roll rollback two lines", "roll", rollJSON(rollMembers + `,"rollback":"a\r\nb"`), InvalidArgument, "payload.roll.rollback"},
		{"roll 50 steps", "roll", rollJSON(rollMembers + `,"steps":` + jsonList(50, func(i int) string { return fmt.Sprintf(`"s%d"`, i) })), "", ""},
		{"roll 51 steps", "roll", rollJSON(rollMembers + `,"steps":` + jsonList(51, func(i int) string { return fmt.Sprintf(`"s%d"`, i) })), InvalidArgument, "payload.roll.steps"},
		{"roll step two lines", "roll", rollJSON(rollMembers + `,"steps":["ok","a\nb"]`), InvalidArgument, "payload.roll.steps[1]"},
		{"roll step 301 characters", "roll", rollJSON(rollMembers + `,"steps":["` + long(301) + `"]`), InvalidArgument, "payload.roll.steps[0]"},

		// review
		{"review https url", "review", `{"review":{"url":"https://github.com/acme/api/pull/900#discussion"}}`, "", ""},
		{"review url missing", "review", `{"review":{}}`, InvalidArgument, "payload.review.url"},
		{"review http url", "review", `{"review":{"url":"http://github.com/acme/api"}}`, InvalidArgument, "payload.review.url"},
		{"review relative url", "review", `{"review":{"url":"/acme/api/pull/900"}}`, InvalidArgument, "payload.review.url"},
		{"review url without host", "review", `{"review":{"url":"https:///path"}}`, InvalidArgument, "payload.review.url"},
		{"review url with user info", "review", `{"review":{"url":"https://github.com@evil.example/x"}}`, InvalidArgument, "payload.review.url"},
		{"review url with a space", "review", `{"review":{"url":"https://github.com/a b"}}`, InvalidArgument, "payload.review.url"},
		{"review unknown member", "review", `{"review":{"url":"https://github.com/","title":"x"}}`, InvalidArgument, "payload.review.title"},

		// document
		{"document id only", "document", documentJSON(`"document_id":"doc_1"`), "", ""},
		{"document full, version 0", "document", documentJSON(`"document_id":"doc_1","space_id":"sp_1","version":0`), "", ""},
		{"document version 7", "document", documentJSON(`"document_id":"doc_1","version":7`), "", ""},
		{"document id missing", "document", documentJSON(`"space_id":"sp_1"`), InvalidArgument, "payload.document.document_id"},
		{"document id blank", "document", documentJSON(`"document_id":"  "`), InvalidArgument, "payload.document.document_id"},
		{"document version negative", "document", documentJSON(`"document_id":"doc_1","version":-1`), InvalidArgument, "payload.document.version"},
		{"document version fractional", "document", documentJSON(`"document_id":"doc_1","version":1.5`), InvalidArgument, "payload.document.version"},
		{"document version a string", "document", documentJSON(`"document_id":"doc_1","version":"2"`), InvalidArgument, "payload.document.version"},
		{"document space_id a number", "document", documentJSON(`"document_id":"doc_1","space_id":5`), InvalidArgument, "payload.document.space_id"},
		{"document unknown member", "document", documentJSON(`"document_id":"doc_1","body":"text"`), InvalidArgument, "payload.document.body"},

		// decision
		{"decision 2 options", "decision", decisionJSON(`["Ship","Wait"]`), "", ""},
		{"decision 4 options", "decision", decisionJSON(`["a","b","c","d"]`), "", ""},
		{"decision options differing by case", "decision", decisionJSON(`["Yes","yes"]`), "", ""},
		{"decision 80 characters", "decision", decisionJSON(`["` + long(80) + `","b"]`), "", ""},
		{"decision options missing", "decision", `{"decision":{}}`, InvalidArgument, "payload.decision.options"},
		{"decision 1 option", "decision", decisionJSON(`["Ship"]`), InvalidArgument, "payload.decision.options"},
		{"decision 5 options", "decision", decisionJSON(`["a","b","c","d","e"]`), InvalidArgument, "payload.decision.options"},
		{"decision same option twice", "decision", decisionJSON(`["Ship","Wait","Ship"]`), InvalidArgument, "payload.decision.options[2]"},
		{"decision same option after trim", "decision", decisionJSON(`["Ship"," Ship "]`), InvalidArgument, "payload.decision.options[1]"},
		{"decision empty option", "decision", decisionJSON(`["","Wait"]`), InvalidArgument, "payload.decision.options[0]"},
		{"decision blank option", "decision", decisionJSON(`["Ship","  "]`), InvalidArgument, "payload.decision.options[1]"},
		{"decision 81 characters", "decision", decisionJSON(`["a","` + long(81) + `"]`), InvalidArgument, "payload.decision.options[1]"},
		{"decision option two lines", "decision", decisionJSON(`["a","b\nc"]`), InvalidArgument, "payload.decision.options[1]"},
		{"decision options not a list", "decision", decisionJSON(`"a,b"`), InvalidArgument, "payload.decision.options"},
		{"decision option not a string", "decision", decisionJSON(`["a",2]`), InvalidArgument, "payload.decision.options[1]"},

		// run: the pin
		{"run pinned", "run", runJSON(nil), "", ""},
		{"run pinned without cmd", "run", runJSON(nil, "cmd"), "", ""},
		{"run cmd over lines", "run", runJSON(map[string]string{"cmd": `"set -e\n\t./deploy.sh api"`}), "", ""},
		{"run cmd-only", "run", `{"run":{"cmd":"./deploy.sh api"}}`, InvalidArgument, "payload.run"},
		{"run empty", "run", `{"run":{}}`, InvalidArgument, "payload.run"},
		{"run cmd and argv without script or runner", "run", runJSON(nil, "script_sha256", "runner_id"), InvalidArgument, "payload.run"},
		{"run pin without runner_id", "run", runJSON(nil, "runner_id"), InvalidArgument, "payload.run.runner_id"},
		{"run pin without script_sha256", "run", runJSON(nil, "script_sha256"), InvalidArgument, "payload.run.script_sha256"},
		{"run pin with empty runner_id", "run", runJSON(map[string]string{"runner_id": `""`}), InvalidArgument, "payload.run.runner_id"},
		{"run pin without argv", "run", runJSON(nil, "argv"), InvalidArgument, "payload.run.argv"},
		{"run pin with empty argv", "run", runJSON(map[string]string{"argv": `[]`}), InvalidArgument, "payload.run.argv"},
		{"run pin without effect", "run", runJSON(nil, "effect"), InvalidArgument, "payload.run.effect"},
		{"run pin without runner_public_key", "run", runJSON(nil, "runner_public_key"), InvalidArgument, "payload.run.runner_public_key"},
		{"run pin without expires_at", "run", runJSON(nil, "expires_at"), InvalidArgument, "payload.run.expires_at"},
		{"run pin without asked_of", "run", runJSON(nil, "asked_of"), InvalidArgument, "payload.run.asked_of"},
		{"run pin names the first missing", "run", runJSON(nil, "argv", "effect", "asked_of"), InvalidArgument, "payload.run.argv"},
		{"run unknown member", "run", runJSON(map[string]string{"env": `{"A":"1"}`}), InvalidArgument, "payload.run.env"},
		{"run cmd 2000 characters", "run", runJSON(map[string]string{"cmd": `"` + strings.Repeat("x", 2000) + `"`}), "", ""},
		{"run cmd 2001 characters", "run", runJSON(map[string]string{"cmd": `"` + strings.Repeat("x", 2001) + `"`}), InvalidArgument, "payload.run.cmd"},
		{"run cmd with a control character", "run", runJSON(map[string]string{"cmd": `"a\u0000b"`}), InvalidArgument, "payload.run.cmd"},
		{"run script_sha256 upper-case", "run", runJSON(map[string]string{"script_sha256": `"` + strings.ToUpper(sha64) + `"`}), InvalidArgument, "payload.run.script_sha256"},
		{"run script_sha256 63 characters", "run", runJSON(map[string]string{"script_sha256": `"` + sha64[1:] + `"`}), InvalidArgument, "payload.run.script_sha256"},
		{"run script_sha256 65 characters", "run", runJSON(map[string]string{"script_sha256": `"` + sha64 + `0"`}), InvalidArgument, "payload.run.script_sha256"},
		{"run runner_id two lines", "run", runJSON(map[string]string{"runner_id": `"a\nb"`}), InvalidArgument, "payload.run.runner_id"},
		{"run argv[0] in a subfolder", "run", runJSON(map[string]string{"argv": `["ops/deploy.sh","../x"]`}), "", ""},
		{"run argv[0] with dots in a name", "run", runJSON(map[string]string{"argv": `["deploy..v2.sh"]`}), "", ""},
		{"run argv[0] empty", "run", runJSON(map[string]string{"argv": `["","api"]`}), InvalidArgument, "payload.run.argv[0]"},
		{"run argv[0] climbs out", "run", runJSON(map[string]string{"argv": `["../bin/rm"]`}), InvalidArgument, "payload.run.argv[0]"},
		{"run argv[0] climbs out midway", "run", runJSON(map[string]string{"argv": `["ops/../../etc/x.sh"]`}), InvalidArgument, "payload.run.argv[0]"},
		{"run argv[0] climbs out with backslashes", "run", runJSON(map[string]string{"argv": `["ops\\..\\..\\x.ps1"]`}), InvalidArgument, "payload.run.argv[0]"},
		{"run argv[0] two lines", "run", runJSON(map[string]string{"argv": `["a\nb"]`}), InvalidArgument, "payload.run.argv[0]"},
		{"run argv entry with NUL", "run", runJSON(map[string]string{"argv": `["deploy.sh","a\u0000b"]`}), InvalidArgument, "payload.run.argv[1]"},
		{"run argv entry not a string", "run", runJSON(map[string]string{"argv": `["deploy.sh",1]`}), InvalidArgument, "payload.run.argv[1]"},
		{"run effect local_write", "run", runJSON(map[string]string{"effect": `"local_write"`}), "", ""},
		{"run effect remote", "run", runJSON(map[string]string{"effect": `"remote"`}), "", ""},
		{"run effect unknown", "run", runJSON(map[string]string{"effect": `"destroy"`}), InvalidArgument, "payload.run.effect"},
		{"run effect in another case", "run", runJSON(map[string]string{"effect": `"Read_Only"`}), InvalidArgument, "payload.run.effect"},
		{"run runner_public_key blank", "run", runJSON(map[string]string{"runner_public_key": `"  "`}), InvalidArgument, "payload.run.runner_public_key"},
		{"run asked_of blank", "run", runJSON(map[string]string{"asked_of": `" "`}), InvalidArgument, "payload.run.asked_of"},

		// run: expires_at
		{"run expires in 60 minutes", "run", runJSON(map[string]string{"expires_at": expiresIn(60 * time.Minute)}), "", ""},
		{"run expires in 61 minutes", "run", runJSON(map[string]string{"expires_at": expiresIn(61 * time.Minute)}), InvalidArgument, "payload.run.expires_at"},
		{"run expires in 1 second", "run", runJSON(map[string]string{"expires_at": expiresIn(time.Second)}), "", ""},
		{"run expires now", "run", runJSON(map[string]string{"expires_at": expiresIn(0)}), InvalidArgument, "payload.run.expires_at"},
		{"run expired", "run", runJSON(map[string]string{"expires_at": expiresIn(-time.Minute)}), InvalidArgument, "payload.run.expires_at"},
		{"run production expires in 15 minutes", "run", runJSON(map[string]string{"effect": `"production"`, "expires_at": expiresIn(15 * time.Minute)}), "", ""},
		{"run production expires in 16 minutes", "run", runJSON(map[string]string{"effect": `"production"`, "expires_at": expiresIn(16 * time.Minute)}), InvalidArgument, "payload.run.expires_at"},
		{"run remote expires in 16 minutes", "run", runJSON(map[string]string{"effect": `"remote"`, "expires_at": expiresIn(16 * time.Minute)}), "", ""},
		{"run expires_at fractional", "run", runJSON(map[string]string{"expires_at": expiresIn(30*time.Minute) + ".5"}), InvalidArgument, "payload.run.expires_at"},
		{"run expires_at a string", "run", runJSON(map[string]string{"expires_at": `"` + expiresIn(30*time.Minute) + `"`}), InvalidArgument, "payload.run.expires_at"},
		{"run expires_at RFC 3339", "run", runJSON(map[string]string{"expires_at": `"2027-01-15T08:30:00Z"`}), InvalidArgument, "payload.run.expires_at"},

		// run: roll
		{"run carrying a roll", "run", runJSON(map[string]string{"roll": `{` + rollMembers + `,"steps":["drain","roll"]}`}), "", ""},
		{"run roll checked as payload.roll", "run", runJSON(map[string]string{"roll": `{"deployments":["api"],"main_commit":"nope","running_commit":"abcdef0"}`}), InvalidArgument, "payload.run.roll.main_commit"},
		{"run roll unknown member", "run", runJSON(map[string]string{"roll": `{` + rollMembers + `,"force":true}`}), InvalidArgument, "payload.run.roll.force"},
		{"run roll without deployments", "run", runJSON(map[string]string{"roll": `{"main_commit":"1234567","running_commit":"abcdef0"}`}), InvalidArgument, "payload.run.roll.deployments"},
		{"run roll null", "run", runJSON(map[string]string{"roll": `null`}), InvalidArgument, "payload.run.roll"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := ParsePayload(c.kind, json.RawMessage(c.payload), testNow)
			wantRefusal(t, err, c.code, c.field)
			if err != nil {
				return
			}
			want, jerr := jcs.Transform([]byte(c.payload))
			if jerr != nil {
				t.Fatal(jerr)
			}
			if !bytes.Equal(p.Canonical, want) {
				t.Fatalf("canonical %s, want %s", p.Canonical, want)
			}
			if len(p.SHA256) != 64 || strings.ToLower(p.SHA256) != p.SHA256 {
				t.Fatalf("sha256 %q", p.SHA256)
			}
			if (c.kind == "run") != (p.Run != nil) {
				t.Fatalf("Run = %v for kind %s", p.Run, c.kind)
			}
		})
	}
}

func TestParsePayloadKindMessages(t *testing.T) {
	_, err := ParsePayload("auto_approve", json.RawMessage(`{"auto_approve":{}}`), testNow)
	if err == nil || !strings.Contains(err.Error(), "approvals_request_auto_approve") {
		t.Fatalf("auto_approve refusal should point at approvals_request_auto_approve: %v", err)
	}
	_, err = ParsePayload("merge", json.RawMessage(`{"merge":{}}`), testNow)
	for _, k := range []string{"pull_request", "roll", "review", "document", "decision", "run"} {
		if err == nil || !strings.Contains(err.Error(), k) {
			t.Fatalf("unknown kind refusal should list %s: %v", k, err)
		}
	}
}

func TestParsePayloadCmdOnlyHint(t *testing.T) {
	const hint = "a run with cmd only is refused since 2026-10-18: file a decision and run the command yourself after the approve"
	for _, raw := range []string{`{"run":{"cmd":"make deploy"}}`, runJSON(nil, "script_sha256", "runner_id")} {
		_, err := ParsePayload("run", json.RawMessage(raw), testNow)
		wantRefusal(t, err, InvalidArgument, "payload.run")
		if !strings.Contains(err.Error(), hint) {
			t.Fatalf("cmd-only refusal lacks the seed's hint: %v", err)
		}
	}
}

func TestParsePayloadPullRequestBindings(t *testing.T) {
	raw := pullRequestJSON(`"repo":"  Acme/API ","number":9e2,"head":" ` + sha40 + "\\n" + `","title":"Add retries"`)
	p, err := ParsePayload("pull_request", json.RawMessage(raw), testNow)
	wantRefusal(t, err, "", "")
	if p.Repo != "Acme/API" || p.Number != 900 || p.Head != sha40 {
		t.Fatalf("bindings %q %d %q", p.Repo, p.Number, p.Head)
	}
	if !p.ExpiresAt.IsZero() || p.Run != nil {
		t.Fatalf("a pull_request sets no life and no pin: %v %v", p.ExpiresAt, p.Run)
	}
	// The payload is kept as sent: the canonical bytes hold the untrimmed repo and the number as JCS writes it.
	if !bytes.Contains(p.Canonical, []byte(`"repo":"  Acme/API "`)) || !bytes.Contains(p.Canonical, []byte(`"number":900`)) {
		t.Fatalf("canonical %s", p.Canonical)
	}

	p, err = ParsePayload("decision", json.RawMessage(decisionJSON(`["a","b"]`)), testNow)
	wantRefusal(t, err, "", "")
	if p.Repo != "" || p.Number != 0 || p.Head != "" || !p.ExpiresAt.IsZero() || p.Run != nil {
		t.Fatalf("a decision binds nothing: %+v", p)
	}
}

func TestParsePayloadRunPin(t *testing.T) {
	raw := runJSON(map[string]string{"effect": `"production"`, "expires_at": expiresIn(10 * time.Minute), "argv": `["ops/deploy.sh","api","--fast"]`})
	p, err := ParsePayload("run", json.RawMessage(raw), testNow)
	wantRefusal(t, err, "", "")
	want := RunPin{
		ScriptSHA256:    sha64,
		RunnerID:        "runner_1",
		Argv:            []string{"ops/deploy.sh", "api", "--fast"},
		Effect:          "production",
		RunnerPublicKey: "ed25519:AAAAC3NzaC1lZDI1NTE5AAAAIG",
		ExpiresAt:       testNow.Add(10 * time.Minute),
		AskedOf:         "person_ada",
	}
	got := *p.Run
	if got.ScriptSHA256 != want.ScriptSHA256 || got.RunnerID != want.RunnerID || strings.Join(got.Argv, "\x00") != strings.Join(want.Argv, "\x00") ||
		got.Effect != want.Effect || got.RunnerPublicKey != want.RunnerPublicKey || !got.ExpiresAt.Equal(want.ExpiresAt) || got.AskedOf != want.AskedOf {
		t.Fatalf("pin %+v, want %+v", got, want)
	}
	if !p.ExpiresAt.Equal(want.ExpiresAt) {
		t.Fatalf("Payload.ExpiresAt %v, want %v", p.ExpiresAt, want.ExpiresAt)
	}
	if p.Repo != "" || p.Number != 0 || p.Head != "" {
		t.Fatalf("a run binds no pull request: %+v", p)
	}
}

func TestParsePayloadRefusalsAreErrors(t *testing.T) {
	_, err := ParsePayload("pull_request", json.RawMessage(pullRequestJSON(`"repo":"a/b"`)), testNow)
	var e *Refusal
	if !errors.As(err, &e) || e.Msg == "" || !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("want an INVALID_ARGUMENT *Refusal with a message, got %#v", err)
	}
}

func TestParsePayloadSameHashForOrderAndWhiteSpace(t *testing.T) {
	a := pullRequestJSON(`"repo":"acme/api","number":900,"head":"` + sha40 + `","title":"Add retries"`)
	b := "{\n  \"pull_request\" : {\t\"title\" : \"Add retries\", \"head\":\"" + sha40 + "\",\r\n \"number\" : 900 ,\"repo\":\"acme/api\" }\n}\n"
	pa, err := ParsePayload("pull_request", json.RawMessage(a), testNow)
	wantRefusal(t, err, "", "")
	pb, err := ParsePayload("pull_request", json.RawMessage(b), testNow)
	wantRefusal(t, err, "", "")
	if pa.SHA256 != pb.SHA256 || !bytes.Equal(pa.Canonical, pb.Canonical) {
		t.Fatalf("hashes differ: %s %s", pa.SHA256, pb.SHA256)
	}
	c := pullRequestJSON(`"repo":"acme/api","number":900,"head":"` + sha40 + `","title":"Add retries!"`)
	pc, err := ParsePayload("pull_request", json.RawMessage(c), testNow)
	wantRefusal(t, err, "", "")
	if pc.SHA256 == pa.SHA256 {
		t.Fatal("a different title must hash differently")
	}
}

func TestParsePayloadExactInt(t *testing.T) {
	cases := []struct {
		in      string
		v       int64
		ok, big bool
	}{
		{"0", 0, true, false}, {"-0", 0, true, false}, {"0.0", 0, true, false}, {"0e99999999", 0, true, false},
		{"1", 1, true, false}, {"1.0", 1, true, false}, {"1e3", 1000, true, false}, {"1E+3", 1000, true, false},
		{"12.50e1", 125, true, false}, {"-7", -7, true, false}, {"150e-2", 0, false, false}, {"15e-1", 0, false, false},
		{"1.5", 0, false, false}, {"1e-400", 0, false, false}, {"9007199254740991", 9007199254740991, true, false},
		{"1e16", 0, true, true}, {"1e400", 0, true, true}, {"1e9999999999", 0, true, true}, {"x", 0, false, false},
	}
	for _, c := range cases {
		v, ok, big := exactInt(c.in)
		if ok != c.ok || big != c.big || (ok && !big && v != c.v) {
			t.Errorf("exactInt(%q) = %d %v %v, want %d %v %v", c.in, v, ok, big, c.v, c.ok, c.big)
		}
	}
}
