package models

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

// askvWant checks that err is nil when code is "", and otherwise a refusal
// with that code about that field.
func askvWant(t *testing.T, err error, code Code, field string) {
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

// askvJSONList renders n JSON values made by f as a JSON list.
func askvJSONList(n int, f func(i int) string) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = f(i)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

var askvTestNow = time.Unix(1_800_000_000, 0).UTC()

const (
	askvSHA40  = "0123456789abcdef0123456789abcdef01234567"
	askvSHA64  = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	askvPRBody = `"repo":"acme/api","number":900,"head":"` + askvSHA40 + `","title":"Add retries"`
	askvRollOK = `"deployments":["api"],"main_commit":"1234567","running_commit":"abcdef0"`
)

func askvPR(members string) string   { return `{"pull_request":{` + members + `}}` }
func askvRoll(members string) string { return `{"roll":{` + members + `}}` }
func askvDoc(members string) string  { return `{"document":{` + members + `}}` }
func askvDec(options string) string  { return `{"decision":{"options":` + options + `}}` }

// askvRun renders a run payload: a whole pin (read_only, expiring 30 minutes
// after askvTestNow) with the members of override replaced or added, and
// those named in drop left out.
func askvRun(override map[string]string, drop ...string) string {
	m := map[string]string{
		"cmd":               `"./deploy.sh api"`,
		"script_sha256":     `"` + askvSHA64 + `"`,
		"runner_id":         `"runner_1"`,
		"argv":              `["deploy.sh","api"]`,
		"effect":            `"read_only"`,
		"runner_public_key": `"ed25519:AAAAC3NzaC1lZDI1NTE5AAAAIG"`,
		"expires_at":        fmt.Sprint(askvTestNow.Add(30 * time.Minute).Unix()),
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

func askvExp(d time.Duration) string { return fmt.Sprint(askvTestNow.Add(d).Unix()) }

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
		{"pull_request ok", "pull_request", askvPR(askvPRBody), "", ""},
		{"payload missing", "pull_request", ``, InvalidArgument, "payload"},
		{"payload null", "pull_request", `null`, InvalidArgument, "payload"},
		{"payload a list", "pull_request", `[` + askvPR(askvPRBody) + `]`, InvalidArgument, "payload"},
		{"payload a string", "pull_request", `"x"`, InvalidArgument, "payload"},
		{"payload empty object", "pull_request", `{}`, InvalidArgument, "payload"},
		{"payload not JSON", "pull_request", `{"pull_request":`, InvalidArgument, "payload"},
		{"payload trailing data", "pull_request", askvPR(askvPRBody) + ` {}`, InvalidArgument, "payload"},
		{"payload trailing garbage", "pull_request", askvPR(askvPRBody) + `x`, InvalidArgument, "payload"},
		{"payload duplicate member", "pull_request", askvPR(askvPRBody + `,"repo":"evil/api"`), InvalidArgument, "payload"},
		{"payload duplicate member by escape", "pull_request", askvPR(askvPRBody + `,"rep\u006f":"evil/api"`), InvalidArgument, "payload"},
		{"payload invalid UTF-8", "pull_request", askvPR(`"repo":"acme/api","number":900,"head":"` + askvSHA40 + `","title":"a` + "\xff" + `"`), InvalidArgument, "payload"},
		{"payload lone surrogate", "pull_request", askvPR(`"repo":"acme/api","number":900,"head":"` + askvSHA40 + `","title":"a\ud800"`), InvalidArgument, "payload"},
		{"payload member of another kind", "pull_request", askvRoll(askvRollOK), InvalidArgument, "payload.roll"},
		{"payload second member", "pull_request", `{"pull_request":{` + askvPRBody + `},"note":"x"}`, InvalidArgument, "payload.note"},
		{"payload member not an object", "pull_request", `{"pull_request":"acme/api#900"}`, InvalidArgument, "payload.pull_request"},
		{"payload member null", "pull_request", `{"pull_request":null}`, InvalidArgument, "payload.pull_request"},

		// pull_request
		{"pr unknown member", "pull_request", askvPR(askvPRBody + `,"labels":["x"]`), InvalidArgument, "payload.pull_request.labels"},
		{"pr member spelled in another case", "pull_request", askvPR(`"Repo":"acme/api","number":900,"head":"` + askvSHA40 + `","title":"t"`), InvalidArgument, "payload.pull_request.Repo"},
		{"pr null member", "pull_request", askvPR(`"repo":"acme/api","number":900,"head":"` + askvSHA40 + `","title":null`), InvalidArgument, "payload.pull_request.title"},
		{"pr repo with dots, dashes, underscores", "pull_request", askvPR(`"repo":"my.org-1/my_repo.go","number":1,"head":"abcdef0","title":"t"`), "", ""},
		{"pr repo missing", "pull_request", askvPR(`"number":900,"head":"` + askvSHA40 + `","title":"t"`), InvalidArgument, "payload.pull_request.repo"},
		{"pr repo blank", "pull_request", askvPR(`"repo":"  ","number":900,"head":"` + askvSHA40 + `","title":"t"`), InvalidArgument, "payload.pull_request.repo"},
		{"pr repo without slash", "pull_request", askvPR(`"repo":"acme","number":900,"head":"` + askvSHA40 + `","title":"t"`), InvalidArgument, "payload.pull_request.repo"},
		{"pr repo with two slashes", "pull_request", askvPR(`"repo":"acme/api/x","number":900,"head":"` + askvSHA40 + `","title":"t"`), InvalidArgument, "payload.pull_request.repo"},
		{"pr repo with a space inside", "pull_request", askvPR(`"repo":"acme/my api","number":900,"head":"` + askvSHA40 + `","title":"t"`), InvalidArgument, "payload.pull_request.repo"},
		{"pr repo with empty name", "pull_request", askvPR(`"repo":"acme/","number":900,"head":"` + askvSHA40 + `","title":"t"`), InvalidArgument, "payload.pull_request.repo"},
		{"pr repo dot-dot part", "pull_request", askvPR(`"repo":"../api","number":900,"head":"` + askvSHA40 + `","title":"t"`), InvalidArgument, "payload.pull_request.repo"},
		{"pr repo a number", "pull_request", askvPR(`"repo":7,"number":900,"head":"` + askvSHA40 + `","title":"t"`), InvalidArgument, "payload.pull_request.repo"},
		{"pr number 1", "pull_request", askvPR(`"repo":"a/b","number":1,"head":"abcdef0","title":"t"`), "", ""},
		{"pr number 1.0 is the integer 1", "pull_request", askvPR(`"repo":"a/b","number":1.0,"head":"abcdef0","title":"t"`), "", ""},
		{"pr number 9e2 is the integer 900", "pull_request", askvPR(`"repo":"a/b","number":9e2,"head":"abcdef0","title":"t"`), "", ""},
		{"pr number 2^53-1", "pull_request", askvPR(`"repo":"a/b","number":9007199254740991,"head":"abcdef0","title":"t"`), "", ""},
		{"pr number 2^53 beyond the safe range", "pull_request", askvPR(`"repo":"a/b","number":9007199254740992,"head":"abcdef0","title":"t"`), InvalidArgument, "payload.pull_request.number"},
		{"pr number missing", "pull_request", askvPR(`"repo":"a/b","head":"abcdef0","title":"t"`), InvalidArgument, "payload.pull_request.number"},
		{"pr number 0", "pull_request", askvPR(`"repo":"a/b","number":0,"head":"abcdef0","title":"t"`), InvalidArgument, "payload.pull_request.number"},
		{"pr number -0", "pull_request", askvPR(`"repo":"a/b","number":-0,"head":"abcdef0","title":"t"`), InvalidArgument, "payload.pull_request.number"},
		{"pr number negative", "pull_request", askvPR(`"repo":"a/b","number":-3,"head":"abcdef0","title":"t"`), InvalidArgument, "payload.pull_request.number"},
		{"pr number 1.5", "pull_request", askvPR(`"repo":"a/b","number":1.5,"head":"abcdef0","title":"t"`), InvalidArgument, "payload.pull_request.number"},
		{"pr number 15e-1", "pull_request", askvPR(`"repo":"a/b","number":15e-1,"head":"abcdef0","title":"t"`), InvalidArgument, "payload.pull_request.number"},
		{"pr number a string", "pull_request", askvPR(`"repo":"a/b","number":"900","head":"abcdef0","title":"t"`), InvalidArgument, "payload.pull_request.number"},
		{"pr number true", "pull_request", askvPR(`"repo":"a/b","number":true,"head":"abcdef0","title":"t"`), InvalidArgument, "payload.pull_request.number"},
		{"pr head 7 hex", "pull_request", askvPR(`"repo":"a/b","number":1,"head":"abcdef0","title":"t"`), "", ""},
		{"pr head 64 hex", "pull_request", askvPR(`"repo":"a/b","number":1,"head":"` + askvSHA64 + `","title":"t"`), "", ""},
		{"pr head missing", "pull_request", askvPR(`"repo":"a/b","number":1,"title":"t"`), InvalidArgument, "payload.pull_request.head"},
		{"pr head 6 hex", "pull_request", askvPR(`"repo":"a/b","number":1,"head":"abcdef","title":"t"`), InvalidArgument, "payload.pull_request.head"},
		{"pr head 65 hex", "pull_request", askvPR(`"repo":"a/b","number":1,"head":"` + askvSHA64 + `0","title":"t"`), InvalidArgument, "payload.pull_request.head"},
		{"pr head not hex", "pull_request", askvPR(`"repo":"a/b","number":1,"head":"abcdefg","title":"t"`), InvalidArgument, "payload.pull_request.head"},
		{"pr head upper-case", "pull_request", askvPR(`"repo":"a/b","number":1,"head":"ABCDEF0","title":"t"`), InvalidArgument, "payload.pull_request.head"},
		{"pr title missing", "pull_request", askvPR(`"repo":"a/b","number":1,"head":"abcdef0"`), InvalidArgument, "payload.pull_request.title"},
		{"pr title blank", "pull_request", askvPR(`"repo":"a/b","number":1,"head":"abcdef0","title":" "`), InvalidArgument, "payload.pull_request.title"},
		{"pr title two lines", "pull_request", askvPR(`"repo":"a/b","number":1,"head":"abcdef0","title":"a\nb"`), InvalidArgument, "payload.pull_request.title"},
		{"pr title with a control character", "pull_request", askvPR(`"repo":"a/b","number":1,"head":"abcdef0","title":"a\u001bb"`), InvalidArgument, "payload.pull_request.title"},
		{"pr title with a bidi override", "pull_request", askvPR(`"repo":"a/b","number":1,"head":"abcdef0","title":"a\u202eb"`), InvalidArgument, "payload.pull_request.title"},
		{"pr title 300 characters", "pull_request", askvPR(`"repo":"a/b","number":1,"head":"abcdef0","title":"` + long(300) + `"`), "", ""},
		{"pr title 301 characters", "pull_request", askvPR(`"repo":"a/b","number":1,"head":"abcdef0","title":"` + long(301) + `"`), InvalidArgument, "payload.pull_request.title"},

		// roll
		{"roll minimal", "roll", askvRoll(askvRollOK), "", ""},
		{"roll full train", "roll", askvRoll(askvRollOK + `,"prs":[{"number":1,"title":"A"},{"number":2,"title":"B"}],"migrations":["0042_add_index.sql"],"other_commits":[{"sha":"abcdef1","subject":"bump deps"}],"behind":3,"gate_tree":"tree 1a2b","gate":"ci green on main","steps":["drain","roll","verify"],"rollback":"roll back to abcdef0"`), "", ""},
		{"roll unknown member", "roll", askvRoll(askvRollOK + `,"canary":true`), InvalidArgument, "payload.roll.canary"},
		{"roll unknown member inside prs", "roll", askvRoll(askvRollOK + `,"prs":[{"number":1,"title":"A"},{"number":2,"title":"B","url":"https://x"}]`), InvalidArgument, "payload.roll.prs[1].url"},
		{"roll deployments missing", "roll", askvRoll(`"main_commit":"1234567","running_commit":"abcdef0"`), InvalidArgument, "payload.roll.deployments"},
		{"roll deployments empty", "roll", askvRoll(`"deployments":[],"main_commit":"1234567","running_commit":"abcdef0"`), InvalidArgument, "payload.roll.deployments"},
		{"roll 20 deployments", "roll", askvRoll(`"deployments":` + askvJSONList(20, func(i int) string { return fmt.Sprintf(`"d%d"`, i) }) + `,"main_commit":"1234567","running_commit":"abcdef0"`), "", ""},
		{"roll 21 deployments", "roll", askvRoll(`"deployments":` + askvJSONList(21, func(i int) string { return fmt.Sprintf(`"d%d"`, i) }) + `,"main_commit":"1234567","running_commit":"abcdef0"`), InvalidArgument, "payload.roll.deployments"},
		{"roll empty deployment", "roll", askvRoll(`"deployments":["api",""],"main_commit":"1234567","running_commit":"abcdef0"`), InvalidArgument, "payload.roll.deployments[1]"},
		{"roll deployment not a string", "roll", askvRoll(`"deployments":["api",3],"main_commit":"1234567","running_commit":"abcdef0"`), InvalidArgument, "payload.roll.deployments[1]"},
		{"roll deployments not a list", "roll", askvRoll(`"deployments":"api","main_commit":"1234567","running_commit":"abcdef0"`), InvalidArgument, "payload.roll.deployments"},
		{"roll main_commit missing", "roll", askvRoll(`"deployments":["api"],"running_commit":"abcdef0"`), InvalidArgument, "payload.roll.main_commit"},
		{"roll main_commit not a sha", "roll", askvRoll(`"deployments":["api"],"main_commit":"main","running_commit":"abcdef0"`), InvalidArgument, "payload.roll.main_commit"},
		{"roll running_commit missing", "roll", askvRoll(`"deployments":["api"],"main_commit":"1234567"`), InvalidArgument, "payload.roll.running_commit"},
		{"roll running_commit not a sha", "roll", askvRoll(`"deployments":["api"],"main_commit":"1234567","running_commit":"12345"`), InvalidArgument, "payload.roll.running_commit"},
		{"roll 200 prs", "roll", askvRoll(askvRollOK + `,"prs":` + askvJSONList(200, func(i int) string { return fmt.Sprintf(`{"number":%d,"title":"t"}`, i+1) })), "", ""},
		{"roll 201 prs", "roll", askvRoll(askvRollOK + `,"prs":` + askvJSONList(201, func(i int) string { return fmt.Sprintf(`{"number":%d,"title":"t"}`, i+1) })), InvalidArgument, "payload.roll.prs"},
		{"roll pr number 0", "roll", askvRoll(askvRollOK + `,"prs":[{"number":0,"title":"A"}]`), InvalidArgument, "payload.roll.prs[0].number"},
		{"roll pr number 2.5", "roll", askvRoll(askvRollOK + `,"prs":[{"number":2.5,"title":"A"}]`), InvalidArgument, "payload.roll.prs[0].number"},
		{"roll pr number missing", "roll", askvRoll(askvRollOK + `,"prs":[{"title":"A"}]`), InvalidArgument, "payload.roll.prs[0].number"},
		{"roll pr title missing", "roll", askvRoll(askvRollOK + `,"prs":[{"number":1,"title":"A"},{"number":2}]`), InvalidArgument, "payload.roll.prs[1].title"},
		{"roll 200 migrations", "roll", askvRoll(askvRollOK + `,"migrations":` + askvJSONList(200, func(i int) string { return fmt.Sprintf(`"m%d"`, i) })), "", ""},
		{"roll 201 migrations", "roll", askvRoll(askvRollOK + `,"migrations":` + askvJSONList(201, func(i int) string { return fmt.Sprintf(`"m%d"`, i) })), InvalidArgument, "payload.roll.migrations"},
		{"roll empty migration", "roll", askvRoll(askvRollOK + `,"migrations":[""]`), InvalidArgument, "payload.roll.migrations[0]"},
		{"roll 200 other commits", "roll", askvRoll(askvRollOK + `,"other_commits":` + askvJSONList(200, func(int) string { return `{"sha":"abcdef1","subject":"s"}` })), "", ""},
		{"roll 201 other commits", "roll", askvRoll(askvRollOK + `,"other_commits":` + askvJSONList(201, func(int) string { return `{"sha":"abcdef1","subject":"s"}` })), InvalidArgument, "payload.roll.other_commits"},
		{"roll other commit bad sha", "roll", askvRoll(askvRollOK + `,"other_commits":[{"sha":"HEAD","subject":"s"}]`), InvalidArgument, "payload.roll.other_commits[0].sha"},
		{"roll other commit subject missing", "roll", askvRoll(askvRollOK + `,"other_commits":[{"sha":"abcdef1"}]`), InvalidArgument, "payload.roll.other_commits[0].subject"},
		{"roll behind 0", "roll", askvRoll(askvRollOK + `,"behind":0`), "", ""},
		{"roll behind negative", "roll", askvRoll(askvRollOK + `,"behind":-1`), InvalidArgument, "payload.roll.behind"},
		{"roll behind fractional", "roll", askvRoll(askvRollOK + `,"behind":0.5`), InvalidArgument, "payload.roll.behind"},
		{"roll behind a string", "roll", askvRoll(askvRollOK + `,"behind":"3"`), InvalidArgument, "payload.roll.behind"},
		{"roll gate_tree two lines", "roll", askvRoll(askvRollOK + `,"gate_tree":"a\nb"`), InvalidArgument, "payload.roll.gate_tree"},
		{"roll gate 300 characters", "roll", askvRoll(askvRollOK + `,"gate":"` + long(300) + `"`), "", ""},
		{"roll gate 301 characters", "roll", askvRoll(askvRollOK + `,"gate":"` + long(301) + `"`), InvalidArgument, "payload.roll.gate"},
		{"roll rollback two lines", "roll", askvRoll(askvRollOK + `,"rollback":"a\r\nb"`), InvalidArgument, "payload.roll.rollback"},
		{"roll 50 steps", "roll", askvRoll(askvRollOK + `,"steps":` + askvJSONList(50, func(i int) string { return fmt.Sprintf(`"s%d"`, i) })), "", ""},
		{"roll 51 steps", "roll", askvRoll(askvRollOK + `,"steps":` + askvJSONList(51, func(i int) string { return fmt.Sprintf(`"s%d"`, i) })), InvalidArgument, "payload.roll.steps"},
		{"roll step two lines", "roll", askvRoll(askvRollOK + `,"steps":["ok","a\nb"]`), InvalidArgument, "payload.roll.steps[1]"},
		{"roll step 301 characters", "roll", askvRoll(askvRollOK + `,"steps":["` + long(301) + `"]`), InvalidArgument, "payload.roll.steps[0]"},

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
		{"document id only", "document", askvDoc(`"document_id":"doc_1"`), "", ""},
		{"document full, version 0", "document", askvDoc(`"document_id":"doc_1","space_id":"sp_1","version":0`), "", ""},
		{"document version 7", "document", askvDoc(`"document_id":"doc_1","version":7`), "", ""},
		{"document id missing", "document", askvDoc(`"space_id":"sp_1"`), InvalidArgument, "payload.document.document_id"},
		{"document id blank", "document", askvDoc(`"document_id":"  "`), InvalidArgument, "payload.document.document_id"},
		{"document version negative", "document", askvDoc(`"document_id":"doc_1","version":-1`), InvalidArgument, "payload.document.version"},
		{"document version fractional", "document", askvDoc(`"document_id":"doc_1","version":1.5`), InvalidArgument, "payload.document.version"},
		{"document version a string", "document", askvDoc(`"document_id":"doc_1","version":"2"`), InvalidArgument, "payload.document.version"},
		{"document space_id a number", "document", askvDoc(`"document_id":"doc_1","space_id":5`), InvalidArgument, "payload.document.space_id"},
		{"document unknown member", "document", askvDoc(`"document_id":"doc_1","body":"text"`), InvalidArgument, "payload.document.body"},

		// decision
		{"decision 2 options", "decision", askvDec(`["Ship","Wait"]`), "", ""},
		{"decision 4 options", "decision", askvDec(`["a","b","c","d"]`), "", ""},
		{"decision options differing by case", "decision", askvDec(`["Yes","yes"]`), "", ""},
		{"decision 80 characters", "decision", askvDec(`["` + long(80) + `","b"]`), "", ""},
		{"decision options missing", "decision", `{"decision":{}}`, InvalidArgument, "payload.decision.options"},
		{"decision 1 option", "decision", askvDec(`["Ship"]`), InvalidArgument, "payload.decision.options"},
		{"decision 5 options", "decision", askvDec(`["a","b","c","d","e"]`), InvalidArgument, "payload.decision.options"},
		{"decision same option twice", "decision", askvDec(`["Ship","Wait","Ship"]`), InvalidArgument, "payload.decision.options[2]"},
		{"decision same option after trim", "decision", askvDec(`["Ship"," Ship "]`), InvalidArgument, "payload.decision.options[1]"},
		{"decision empty option", "decision", askvDec(`["","Wait"]`), InvalidArgument, "payload.decision.options[0]"},
		{"decision blank option", "decision", askvDec(`["Ship","  "]`), InvalidArgument, "payload.decision.options[1]"},
		{"decision 81 characters", "decision", askvDec(`["a","` + long(81) + `"]`), InvalidArgument, "payload.decision.options[1]"},
		{"decision option two lines", "decision", askvDec(`["a","b\nc"]`), InvalidArgument, "payload.decision.options[1]"},
		{"decision options not a list", "decision", askvDec(`"a,b"`), InvalidArgument, "payload.decision.options"},
		{"decision option not a string", "decision", askvDec(`["a",2]`), InvalidArgument, "payload.decision.options[1]"},

		// run: the pin
		{"run pinned", "run", askvRun(nil), "", ""},
		{"run pinned without cmd", "run", askvRun(nil, "cmd"), "", ""},
		{"run cmd over lines", "run", askvRun(map[string]string{"cmd": `"set -e\n\t./deploy.sh api"`}), "", ""},
		{"run cmd-only", "run", `{"run":{"cmd":"./deploy.sh api"}}`, InvalidArgument, "payload.run"},
		{"run empty", "run", `{"run":{}}`, InvalidArgument, "payload.run"},
		{"run cmd and argv without script or runner", "run", askvRun(nil, "script_sha256", "runner_id"), InvalidArgument, "payload.run"},
		{"run pin without runner_id", "run", askvRun(nil, "runner_id"), InvalidArgument, "payload.run.runner_id"},
		{"run pin without script_sha256", "run", askvRun(nil, "script_sha256"), InvalidArgument, "payload.run.script_sha256"},
		{"run pin with empty runner_id", "run", askvRun(map[string]string{"runner_id": `""`}), InvalidArgument, "payload.run.runner_id"},
		{"run pin without argv", "run", askvRun(nil, "argv"), InvalidArgument, "payload.run.argv"},
		{"run pin with empty argv", "run", askvRun(map[string]string{"argv": `[]`}), InvalidArgument, "payload.run.argv"},
		{"run pin without effect", "run", askvRun(nil, "effect"), InvalidArgument, "payload.run.effect"},
		{"run pin without runner_public_key", "run", askvRun(nil, "runner_public_key"), InvalidArgument, "payload.run.runner_public_key"},
		{"run pin without expires_at", "run", askvRun(nil, "expires_at"), InvalidArgument, "payload.run.expires_at"},
		{"run pin without asked_of", "run", askvRun(nil, "asked_of"), InvalidArgument, "payload.run.asked_of"},
		{"run pin names the first missing", "run", askvRun(nil, "argv", "effect", "asked_of"), InvalidArgument, "payload.run.argv"},
		{"run unknown member", "run", askvRun(map[string]string{"env": `{"A":"1"}`}), InvalidArgument, "payload.run.env"},
		{"run cmd 2000 characters", "run", askvRun(map[string]string{"cmd": `"` + strings.Repeat("x", 2000) + `"`}), "", ""},
		{"run cmd 2001 characters", "run", askvRun(map[string]string{"cmd": `"` + strings.Repeat("x", 2001) + `"`}), InvalidArgument, "payload.run.cmd"},
		{"run cmd with a control character", "run", askvRun(map[string]string{"cmd": `"a\u0000b"`}), InvalidArgument, "payload.run.cmd"},
		{"run script_sha256 upper-case", "run", askvRun(map[string]string{"script_sha256": `"` + strings.ToUpper(askvSHA64) + `"`}), InvalidArgument, "payload.run.script_sha256"},
		{"run script_sha256 63 characters", "run", askvRun(map[string]string{"script_sha256": `"` + askvSHA64[1:] + `"`}), InvalidArgument, "payload.run.script_sha256"},
		{"run script_sha256 65 characters", "run", askvRun(map[string]string{"script_sha256": `"` + askvSHA64 + `0"`}), InvalidArgument, "payload.run.script_sha256"},
		{"run runner_id two lines", "run", askvRun(map[string]string{"runner_id": `"a\nb"`}), InvalidArgument, "payload.run.runner_id"},
		{"run argv[0] in a subfolder", "run", askvRun(map[string]string{"argv": `["ops/deploy.sh","../x"]`}), "", ""},
		{"run argv[0] with dots in a name", "run", askvRun(map[string]string{"argv": `["deploy..v2.sh"]`}), "", ""},
		{"run argv[0] empty", "run", askvRun(map[string]string{"argv": `["","api"]`}), InvalidArgument, "payload.run.argv[0]"},
		{"run argv[0] climbs out", "run", askvRun(map[string]string{"argv": `["../bin/rm"]`}), InvalidArgument, "payload.run.argv[0]"},
		{"run argv[0] climbs out midway", "run", askvRun(map[string]string{"argv": `["ops/../../etc/x.sh"]`}), InvalidArgument, "payload.run.argv[0]"},
		{"run argv[0] climbs out with backslashes", "run", askvRun(map[string]string{"argv": `["ops\\..\\..\\x.ps1"]`}), InvalidArgument, "payload.run.argv[0]"},
		{"run argv[0] two lines", "run", askvRun(map[string]string{"argv": `["a\nb"]`}), InvalidArgument, "payload.run.argv[0]"},
		{"run argv entry with NUL", "run", askvRun(map[string]string{"argv": `["deploy.sh","a\u0000b"]`}), InvalidArgument, "payload.run.argv[1]"},
		{"run argv entry not a string", "run", askvRun(map[string]string{"argv": `["deploy.sh",1]`}), InvalidArgument, "payload.run.argv[1]"},
		{"run effect local_write", "run", askvRun(map[string]string{"effect": `"local_write"`}), "", ""},
		{"run effect remote", "run", askvRun(map[string]string{"effect": `"remote"`}), "", ""},
		{"run effect unknown", "run", askvRun(map[string]string{"effect": `"destroy"`}), InvalidArgument, "payload.run.effect"},
		{"run effect in another case", "run", askvRun(map[string]string{"effect": `"Read_Only"`}), InvalidArgument, "payload.run.effect"},
		{"run runner_public_key blank", "run", askvRun(map[string]string{"runner_public_key": `"  "`}), InvalidArgument, "payload.run.runner_public_key"},
		{"run asked_of blank", "run", askvRun(map[string]string{"asked_of": `" "`}), InvalidArgument, "payload.run.asked_of"},

		// run: expires_at
		{"run expires in 60 minutes", "run", askvRun(map[string]string{"expires_at": askvExp(60 * time.Minute)}), "", ""},
		{"run expires in 61 minutes", "run", askvRun(map[string]string{"expires_at": askvExp(61 * time.Minute)}), InvalidArgument, "payload.run.expires_at"},
		{"run expires in 1 second", "run", askvRun(map[string]string{"expires_at": askvExp(time.Second)}), "", ""},
		{"run expires now", "run", askvRun(map[string]string{"expires_at": askvExp(0)}), InvalidArgument, "payload.run.expires_at"},
		{"run expired", "run", askvRun(map[string]string{"expires_at": askvExp(-time.Minute)}), InvalidArgument, "payload.run.expires_at"},
		{"run production expires in 15 minutes", "run", askvRun(map[string]string{"effect": `"production"`, "expires_at": askvExp(15 * time.Minute)}), "", ""},
		{"run production expires in 16 minutes", "run", askvRun(map[string]string{"effect": `"production"`, "expires_at": askvExp(16 * time.Minute)}), InvalidArgument, "payload.run.expires_at"},
		{"run remote expires in 16 minutes", "run", askvRun(map[string]string{"effect": `"remote"`, "expires_at": askvExp(16 * time.Minute)}), "", ""},
		{"run expires_at fractional", "run", askvRun(map[string]string{"expires_at": askvExp(30*time.Minute) + ".5"}), InvalidArgument, "payload.run.expires_at"},
		{"run expires_at a string", "run", askvRun(map[string]string{"expires_at": `"` + askvExp(30*time.Minute) + `"`}), InvalidArgument, "payload.run.expires_at"},
		{"run expires_at RFC 3339", "run", askvRun(map[string]string{"expires_at": `"2027-01-15T08:30:00Z"`}), InvalidArgument, "payload.run.expires_at"},

		// run: roll
		{"run carrying a roll", "run", askvRun(map[string]string{"roll": `{` + askvRollOK + `,"steps":["drain","roll"]}`}), "", ""},
		{"run roll checked as payload.roll", "run", askvRun(map[string]string{"roll": `{"deployments":["api"],"main_commit":"nope","running_commit":"abcdef0"}`}), InvalidArgument, "payload.run.roll.main_commit"},
		{"run roll unknown member", "run", askvRun(map[string]string{"roll": `{` + askvRollOK + `,"force":true}`}), InvalidArgument, "payload.run.roll.force"},
		{"run roll without deployments", "run", askvRun(map[string]string{"roll": `{"main_commit":"1234567","running_commit":"abcdef0"}`}), InvalidArgument, "payload.run.roll.deployments"},
		{"run roll null", "run", askvRun(map[string]string{"roll": `null`}), InvalidArgument, "payload.run.roll"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := ParsePayload(c.kind, json.RawMessage(c.payload), askvTestNow)
			askvWant(t, err, c.code, c.field)
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
	_, err := ParsePayload("auto_approve", json.RawMessage(`{"auto_approve":{}}`), askvTestNow)
	if err == nil || !strings.Contains(err.Error(), "approvals_request_auto_approve") {
		t.Fatalf("auto_approve refusal should point at approvals_request_auto_approve: %v", err)
	}
	_, err = ParsePayload("merge", json.RawMessage(`{"merge":{}}`), askvTestNow)
	for _, k := range []string{"pull_request", "roll", "review", "document", "decision", "run"} {
		if err == nil || !strings.Contains(err.Error(), k) {
			t.Fatalf("unknown kind refusal should list %s: %v", k, err)
		}
	}
}

func TestParsePayloadCmdOnlyHint(t *testing.T) {
	const hint = "a run with cmd only is refused since 2026-10-18: file a decision and run the command yourself after the approve"
	for _, raw := range []string{`{"run":{"cmd":"make deploy"}}`, askvRun(nil, "script_sha256", "runner_id")} {
		_, err := ParsePayload("run", json.RawMessage(raw), askvTestNow)
		askvWant(t, err, InvalidArgument, "payload.run")
		if !strings.Contains(err.Error(), hint) {
			t.Fatalf("cmd-only refusal lacks the seed's hint: %v", err)
		}
	}
}

func TestParsePayloadPullRequestBindings(t *testing.T) {
	raw := askvPR(`"repo":"  Acme/API ","number":9e2,"head":" ` + askvSHA40 + "\\n" + `","title":"Add retries"`)
	p, err := ParsePayload("pull_request", json.RawMessage(raw), askvTestNow)
	askvWant(t, err, "", "")
	if p.Repo != "Acme/API" || p.Number != 900 || p.Head != askvSHA40 {
		t.Fatalf("bindings %q %d %q", p.Repo, p.Number, p.Head)
	}
	if !p.ExpiresAt.IsZero() || p.Run != nil {
		t.Fatalf("a pull_request sets no life and no pin: %v %v", p.ExpiresAt, p.Run)
	}
	// The payload is kept as sent: the canonical bytes hold the untrimmed repo and the number as JCS writes it.
	if !bytes.Contains(p.Canonical, []byte(`"repo":"  Acme/API "`)) || !bytes.Contains(p.Canonical, []byte(`"number":900`)) {
		t.Fatalf("canonical %s", p.Canonical)
	}

	p, err = ParsePayload("decision", json.RawMessage(askvDec(`["a","b"]`)), askvTestNow)
	askvWant(t, err, "", "")
	if p.Repo != "" || p.Number != 0 || p.Head != "" || !p.ExpiresAt.IsZero() || p.Run != nil {
		t.Fatalf("a decision binds nothing: %+v", p)
	}
}

func TestParsePayloadRunPin(t *testing.T) {
	raw := askvRun(map[string]string{"effect": `"production"`, "expires_at": askvExp(10 * time.Minute), "argv": `["ops/deploy.sh","api","--fast"]`})
	p, err := ParsePayload("run", json.RawMessage(raw), askvTestNow)
	askvWant(t, err, "", "")
	want := RunPin{
		ScriptSHA256:    askvSHA64,
		RunnerID:        "runner_1",
		Argv:            []string{"ops/deploy.sh", "api", "--fast"},
		Effect:          "production",
		RunnerPublicKey: "ed25519:AAAAC3NzaC1lZDI1NTE5AAAAIG",
		ExpiresAt:       askvTestNow.Add(10 * time.Minute),
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
	_, err := ParsePayload("pull_request", json.RawMessage(askvPR(`"repo":"a/b"`)), askvTestNow)
	var e *Error
	if !errors.As(err, &e) || e.Msg == "" || !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("want an INVALID_ARGUMENT *Error with a message, got %#v", err)
	}
}

func TestParsePayloadSameHashForOrderAndWhiteSpace(t *testing.T) {
	a := askvPR(`"repo":"acme/api","number":900,"head":"` + askvSHA40 + `","title":"Add retries"`)
	b := "{\n  \"pull_request\" : {\t\"title\" : \"Add retries\", \"head\":\"" + askvSHA40 + "\",\r\n \"number\" : 900 ,\"repo\":\"acme/api\" }\n}\n"
	pa, err := ParsePayload("pull_request", json.RawMessage(a), askvTestNow)
	askvWant(t, err, "", "")
	pb, err := ParsePayload("pull_request", json.RawMessage(b), askvTestNow)
	askvWant(t, err, "", "")
	if pa.SHA256 != pb.SHA256 || !bytes.Equal(pa.Canonical, pb.Canonical) {
		t.Fatalf("hashes differ: %s %s", pa.SHA256, pb.SHA256)
	}
	c := askvPR(`"repo":"acme/api","number":900,"head":"` + askvSHA40 + `","title":"Add retries!"`)
	pc, err := ParsePayload("pull_request", json.RawMessage(c), askvTestNow)
	askvWant(t, err, "", "")
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
		v, ok, big := askvExactInt(c.in)
		if ok != c.ok || big != c.big || (ok && !big && v != c.v) {
			t.Errorf("askvExactInt(%q) = %d %v %v, want %d %v %v", c.in, v, ok, big, c.v, c.ok, c.big)
		}
	}
}
