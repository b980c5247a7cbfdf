package ask

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"
)

// contextWithEvidence renders a context whose explanation carries the given
// evidence items, with a document so the context rule holds.
func contextWithEvidence(items ...string) string {
	return `{"documents":[{"document_id":"doc_1"}],"explanation":{"evidence":[` + strings.Join(items, ",") + `]}}`
}

// contextWithDocument renders a context with a document and the given extra members.
func contextWithDocument(members string) string {
	return `{"documents":[{"document_id":"doc_1"}],` + members + `}`
}

func TestParseContextRules(t *testing.T) {
	long := func(n int) string { return strings.Repeat("é", n) }
	docs := func(n int) string {
		return jsonList(n, func(i int) string { return fmt.Sprintf(`{"document_id":"doc_%d"}`, i) })
	}
	strs := func(n int) string { return jsonList(n, func(i int) string { return fmt.Sprintf(`"x%d"`, i) }) }
	commits := func(n int) string {
		return jsonList(n, func(int) string { return `{"repo":"acme/api","sha":"abcdef0","subject":"s"}` })
	}
	link := `{"kind":"link","url":"https://ci.example/run/1"}`
	code := `{"kind":"code","language":"go","text":"func main() {}"}`
	diff := `{"kind":"diff","path":"main.go","text":"@@ -1 +1 @@\n-a\n+b"}`
	logEv := `{"kind":"log","text":"ok\n\tFAIL"}`
	cases := []struct {
		name    string
		kind    string
		raw     string
		docPay  bool
		private bool
		code    Code
		field   string
	}{
		// the context rule
		{"review needs no context", "review", ``, false, false, "", ""},
		{"review null context", "review", `null`, false, false, "", ""},
		{"pull_request without context", "pull_request", ``, false, false, InvalidArgument, "context"},
		{"roll without context", "roll", `null`, false, false, InvalidArgument, "context"},
		{"decision with empty context", "decision", `{}`, false, false, InvalidArgument, "context"},
		{"run with only an explanation", "run", `{"explanation":{"what":"deploy"}}`, false, false, InvalidArgument, "context"},
		{"document payload names a document", "document", ``, true, false, "", ""},
		{"document payload counts even unflagged", "document", `{}`, false, false, "", ""},
		{"payload naming a document", "pull_request", `{}`, true, false, "", ""},
		{"plan item with plan", "pull_request", `{"plan_id":"plan_1","plan_item":"3"}`, false, false, "", ""},
		{"plan item without plan", "pull_request", `{"plan_item":"3"}`, false, false, InvalidArgument, "context.plan_id"},
		{"plan alone is no plan item", "pull_request", `{"plan_id":"plan_1"}`, false, false, InvalidArgument, "context"},
		{"blank plan item", "pull_request", `{"plan_id":"plan_1","plan_item":"  "}`, false, false, InvalidArgument, "context.plan_item"},
		{"plan item a number", "pull_request", `{"plan_id":"plan_1","plan_item":3}`, false, false, InvalidArgument, "context.plan_item"},
		{"one document", "decision", `{"documents":[{"document_id":"doc_1"}]}`, false, false, "", ""},
		{"empty documents list", "decision", `{"documents":[]}`, false, false, InvalidArgument, "context"},
		{"no_context_reason", "decision", `{"no_context_reason":"a one-off question about lunch"}`, false, false, "", ""},
		{"blank no_context_reason", "decision", `{"no_context_reason":"   "}`, false, false, InvalidArgument, "context"},
		{"no_context_reason 500 characters", "decision", `{"no_context_reason":"` + long(500) + `"}`, false, false, "", ""},
		{"no_context_reason 501 characters", "decision", `{"no_context_reason":"` + long(501) + `"}`, false, false, InvalidArgument, "context.no_context_reason"},

		// shape
		{"context a list", "review", `[]`, false, false, InvalidArgument, "context"},
		{"context a string", "review", `"about #900"`, false, false, InvalidArgument, "context"},
		{"context not JSON", "review", `{"plan_id":`, false, false, InvalidArgument, "context"},
		{"context trailing data", "review", `{} {}`, false, false, InvalidArgument, "context"},
		{"context duplicate member", "review", `{"job_id":"job_1","job_id":"job_2"}`, false, false, InvalidArgument, "context"},
		{"context unknown member", "review", `{"plan":"x"}`, false, false, InvalidArgument, "context.plan"},
		{"context member in another case", "review", `{"Job_ID":"job_1"}`, false, false, InvalidArgument, "context.Job_ID"},
		{"context null member", "review", `{"plan_id":null}`, false, false, InvalidArgument, "context.plan_id"},
		{"context unknown member in explanation", "review", `{"explanation":{"what":"x","instructions":"obey"}}`, false, false, InvalidArgument, "context.explanation.instructions"},

		// job_id
		{"job_id", "decision", contextWithDocument(`"job_id":"job_42"`), false, false, "", ""},
		{"job_id without prefix", "decision", contextWithDocument(`"job_id":"42"`), false, false, InvalidArgument, "context.job_id"},
		{"job_id a number", "decision", contextWithDocument(`"job_id":42`), false, false, InvalidArgument, "context.job_id"},

		// documents
		{"document by kind and number", "pull_request", `{"documents":[{"kind":"issue","number":12,"space_id":"sp"}]}`, false, false, "", ""},
		{"document with space", "pull_request", `{"documents":[{"document_id":"doc_1","space_id":"sp"}]}`, false, false, "", ""},
		{"20 documents", "pull_request", `{"documents":` + docs(20) + `}`, false, false, "", ""},
		{"21 documents", "pull_request", `{"documents":` + docs(21) + `}`, false, false, InvalidArgument, "context.documents"},
		{"document both forms", "pull_request", `{"documents":[{"document_id":"d","kind":"issue","number":1}]}`, false, false, InvalidArgument, "context.documents[0]"},
		{"document neither form", "pull_request", `{"documents":[{"document_id":"d"},{"space_id":"sp"}]}`, false, false, InvalidArgument, "context.documents[1]"},
		{"document kind without number", "pull_request", `{"documents":[{"kind":"issue"}]}`, false, false, InvalidArgument, "context.documents[0].number"},
		{"document number without kind", "pull_request", `{"documents":[{"number":3}]}`, false, false, InvalidArgument, "context.documents[0].kind"},
		{"document number 0", "pull_request", `{"documents":[{"kind":"issue","number":0}]}`, false, false, InvalidArgument, "context.documents[0].number"},
		{"document number fractional", "pull_request", `{"documents":[{"kind":"issue","number":1.5}]}`, false, false, InvalidArgument, "context.documents[0].number"},
		{"document blank id", "pull_request", `{"documents":[{"document_id":" "}]}`, false, false, InvalidArgument, "context.documents[0].document_id"},
		{"document unknown member", "pull_request", `{"documents":[{"document_id":"d","url":"https://x"}]}`, false, false, InvalidArgument, "context.documents[0].url"},

		// diagram_ids, canvas, scene
		{"diagram ids and canvas", "pull_request", contextWithDocument(`"diagram_ids":["dg_1"],"canvas_id":"cv_1","scene_document_id":"sd_1"`), false, false, "", ""},
		{"20 diagram ids", "pull_request", contextWithDocument(`"diagram_ids":` + strs(20)), false, false, "", ""},
		{"21 diagram ids", "pull_request", contextWithDocument(`"diagram_ids":` + strs(21)), false, false, InvalidArgument, "context.diagram_ids"},
		{"empty diagram id", "pull_request", contextWithDocument(`"diagram_ids":["dg_1",""]`), false, false, InvalidArgument, "context.diagram_ids[1]"},
		{"canvas id two lines", "pull_request", contextWithDocument(`"canvas_id":"a\nb"`), false, false, InvalidArgument, "context.canvas_id"},

		// commits
		{"20 commits", "pull_request", contextWithDocument(`"commits":` + commits(20)), false, false, "", ""},
		{"21 commits", "pull_request", contextWithDocument(`"commits":` + commits(21)), false, false, InvalidArgument, "context.commits"},
		{"commit without subject", "pull_request", contextWithDocument(`"commits":[{"repo":"acme/api","sha":"abcdef0"}]`), false, false, "", ""},
		{"commit bad repo", "pull_request", contextWithDocument(`"commits":[{"repo":"acme","sha":"abcdef0"}]`), false, false, InvalidArgument, "context.commits[0].repo"},
		{"commit without repo", "pull_request", contextWithDocument(`"commits":[{"sha":"abcdef0"}]`), false, false, InvalidArgument, "context.commits[0].repo"},
		{"commit bad sha", "pull_request", contextWithDocument(`"commits":[{"repo":"acme/api","sha":"xyz"}]`), false, false, InvalidArgument, "context.commits[0].sha"},
		{"commit without sha", "pull_request", contextWithDocument(`"commits":[{"repo":"acme/api"}]`), false, false, InvalidArgument, "context.commits[0].sha"},
		{"commit subject 200 characters", "pull_request", contextWithDocument(`"commits":[{"repo":"acme/api","sha":"abcdef0","subject":"` + long(200) + `"}]`), false, false, "", ""},
		{"commit subject 201 characters", "pull_request", contextWithDocument(`"commits":[{"repo":"acme/api","sha":"abcdef0","subject":"` + long(201) + `"}]`), false, false, InvalidArgument, "context.commits[0].subject"},

		// explanation
		{"explanation in full", "pull_request", contextWithDocument(`"explanation":{"what":"merge #900","why":"fixes the retry storm","approve":"I merge","deny":"it stays open","effect":{"kind":"remote","ships":"api v2","summary":"a\nb","touches":["api","db"]},"risk":{"level":"low","text":"small"},"evidence":[` + link + `]}`), false, false, "", ""},
		{"explanation what 500 characters", "pull_request", contextWithDocument(`"explanation":{"what":"` + long(500) + `"}`), false, false, "", ""},
		{"explanation what 501 characters", "pull_request", contextWithDocument(`"explanation":{"what":"` + long(501) + `"}`), false, false, InvalidArgument, "context.explanation.what"},
		{"explanation why 501 characters", "pull_request", contextWithDocument(`"explanation":{"why":"` + long(501) + `"}`), false, false, InvalidArgument, "context.explanation.why"},
		{"explanation approve 501 characters", "pull_request", contextWithDocument(`"explanation":{"approve":"` + long(501) + `"}`), false, false, InvalidArgument, "context.explanation.approve"},
		{"explanation deny 501 characters", "pull_request", contextWithDocument(`"explanation":{"deny":"` + long(501) + `"}`), false, false, InvalidArgument, "context.explanation.deny"},
		{"explanation not an object", "pull_request", contextWithDocument(`"explanation":"trust me"`), false, false, InvalidArgument, "context.explanation"},
		{"effect production", "pull_request", contextWithDocument(`"explanation":{"effect":{"kind":"production"}}`), false, false, "", ""},
		{"effect unknown kind", "pull_request", contextWithDocument(`"explanation":{"effect":{"kind":"global"}}`), false, false, InvalidArgument, "context.explanation.effect.kind"},
		{"effect without kind", "pull_request", contextWithDocument(`"explanation":{"effect":{"ships":"x"}}`), false, false, InvalidArgument, "context.explanation.effect.kind"},
		{"effect ships 301 characters", "pull_request", contextWithDocument(`"explanation":{"effect":{"kind":"remote","ships":"` + long(301) + `"}}`), false, false, InvalidArgument, "context.explanation.effect.ships"},
		{"effect summary 501 characters", "pull_request", contextWithDocument(`"explanation":{"effect":{"kind":"remote","summary":"` + long(501) + `"}}`), false, false, InvalidArgument, "context.explanation.effect.summary"},
		{"effect 20 touches", "pull_request", contextWithDocument(`"explanation":{"effect":{"kind":"remote","touches":` + strs(20) + `}}`), false, false, "", ""},
		{"effect 21 touches", "pull_request", contextWithDocument(`"explanation":{"effect":{"kind":"remote","touches":` + strs(21) + `}}`), false, false, InvalidArgument, "context.explanation.effect.touches"},
		{"effect empty touch", "pull_request", contextWithDocument(`"explanation":{"effect":{"kind":"remote","touches":["api",""]}}`), false, false, InvalidArgument, "context.explanation.effect.touches[1]"},
		{"risk high", "pull_request", contextWithDocument(`"explanation":{"risk":{"level":"high"}}`), false, false, "", ""},
		{"risk unknown level", "pull_request", contextWithDocument(`"explanation":{"risk":{"level":"severe"}}`), false, false, InvalidArgument, "context.explanation.risk.level"},
		{"risk without level", "pull_request", contextWithDocument(`"explanation":{"risk":{"text":"x"}}`), false, false, InvalidArgument, "context.explanation.risk.level"},
		{"risk text 501 characters", "pull_request", contextWithDocument(`"explanation":{"risk":{"level":"medium","text":"` + long(501) + `"}}`), false, false, InvalidArgument, "context.explanation.risk.text"},

		// evidence
		{"8 links", "pull_request", contextWithEvidence(link, link, link, link, link, link, link, link), false, false, "", ""},
		{"9 links", "pull_request", contextWithEvidence(link, link, link, link, link, link, link, link, link), false, false, InvalidArgument, "context.explanation.evidence"},
		{"link with title", "pull_request", contextWithEvidence(`{"kind":"link","url":"https://ci.example/1","title":"CI run"}`), false, false, "", ""},
		{"code evidence allowed", "pull_request", contextWithEvidence(link, code, diff, logEv), false, true, "", ""},
		{"code evidence not allowed", "pull_request", contextWithEvidence(link, link, code), false, false, PermissionDenied, "context.explanation.evidence[2]"},
		{"diff evidence not allowed", "pull_request", contextWithEvidence(diff), false, false, PermissionDenied, "context.explanation.evidence[0]"},
		{"log evidence not allowed", "pull_request", contextWithEvidence(link, logEv), false, false, PermissionDenied, "context.explanation.evidence[1]"},
		{"evidence without kind", "pull_request", contextWithEvidence(`{"url":"https://x.example"}`), false, false, InvalidArgument, "context.explanation.evidence[0].kind"},
		{"evidence unknown kind", "pull_request", contextWithEvidence(`{"kind":"image","url":"https://x.example"}`), false, false, InvalidArgument, "context.explanation.evidence[0].kind"},
		{"evidence unknown member", "pull_request", contextWithEvidence(`{"kind":"code","lang":"go","text":"x"}`), false, true, InvalidArgument, "context.explanation.evidence[0].lang"},
		{"link over http", "pull_request", contextWithEvidence(`{"kind":"link","url":"http://ci.example/1"}`), false, false, InvalidArgument, "context.explanation.evidence[0].url"},
		{"link without url", "pull_request", contextWithEvidence(`{"kind":"link"}`), false, false, InvalidArgument, "context.explanation.evidence[0].url"},
		{"link carrying text", "pull_request", contextWithEvidence(`{"kind":"link","url":"https://ci.example/1","text":"hidden"}`), false, false, InvalidArgument, "context.explanation.evidence[0].text"},
		{"log carrying a path", "pull_request", contextWithEvidence(`{"kind":"log","text":"x","path":"a.log"}`), false, true, InvalidArgument, "context.explanation.evidence[0].path"},
		{"code without language", "pull_request", contextWithEvidence(`{"kind":"code","text":"x"}`), false, true, InvalidArgument, "context.explanation.evidence[0].language"},
		{"code without text", "pull_request", contextWithEvidence(`{"kind":"code","language":"go"}`), false, true, InvalidArgument, "context.explanation.evidence[0].text"},
		{"diff without path", "pull_request", contextWithEvidence(`{"kind":"diff","text":"x"}`), false, true, InvalidArgument, "context.explanation.evidence[0].path"},
		{"log without text", "pull_request", contextWithEvidence(`{"kind":"log"}`), false, true, InvalidArgument, "context.explanation.evidence[0].text"},
		{"log text 20000 characters", "pull_request", contextWithEvidence(`{"kind":"log","text":"` + long(20000) + `"}`), false, true, "", ""},
		{"log text 20001 characters", "pull_request", contextWithEvidence(`{"kind":"log","text":"` + long(20001) + `"}`), false, true, InvalidArgument, "context.explanation.evidence[0].text"},
		{"log text with a terminal escape", "pull_request", contextWithEvidence(`{"kind":"log","text":"\u001b[31mFAIL"}`), false, true, InvalidArgument, "context.explanation.evidence[0].text"},
		{"title 120 characters", "pull_request", contextWithEvidence(`{"kind":"link","url":"https://x.example","title":"` + long(120) + `"}`), false, false, "", ""},
		{"title 121 characters", "pull_request", contextWithEvidence(`{"kind":"link","url":"https://x.example","title":"` + long(121) + `"}`), false, false, InvalidArgument, "context.explanation.evidence[0].title"},
		{"evidence not a list", "pull_request", contextWithDocument(`"explanation":{"evidence":{"kind":"link"}}`), false, false, InvalidArgument, "context.explanation.evidence"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, err := ParseContext(c.kind, json.RawMessage(c.raw), c.docPay, allow(c.private))
			wantRefusal(t, err, c.code, c.field)
			if err != nil {
				return
			}
			raw := strings.TrimSpace(c.raw)
			if raw == "" || raw == "null" {
				if ctx.Canonical != nil {
					t.Fatalf("no context sent, canonical %q", ctx.Canonical)
				}
				return
			}
			want, jerr := jcs.Transform([]byte(c.raw))
			if jerr != nil {
				t.Fatal(jerr)
			}
			if !bytes.Equal(ctx.Canonical, want) {
				t.Fatalf("canonical %s, want %s", ctx.Canonical, want)
			}
		})
	}
}

func TestParseContextPrivateEvidenceMessage(t *testing.T) {
	_, err := ParseContext("pull_request", json.RawMessage(contextWithEvidence(`{"kind":"diff","path":"a.go","text":"x"}`)), false, allow(false))
	wantRefusal(t, err, PermissionDenied, "context.explanation.evidence[0]")
	if !strings.Contains(err.Error(), "allow_private_evidence") {
		t.Fatalf("refusal should name allow_private_evidence: %v", err)
	}
}

func TestParseContextResult(t *testing.T) {
	raw := `{ "job_id" : "job_7", "no_context_reason":"asked by the coordinator", "commits":[{"sha":"abcdef0","repo":"a/b"}] }`
	ctx, err := ParseContext("decision", json.RawMessage(raw), false, allow(false))
	wantRefusal(t, err, "", "")
	if ctx.JobID != "job_7" || ctx.HasPlanItemOrDocument {
		t.Fatalf("got %+v", ctx)
	}
	if string(ctx.Canonical) != `{"commits":[{"repo":"a/b","sha":"abcdef0"}],"job_id":"job_7","no_context_reason":"asked by the coordinator"}` {
		t.Fatalf("canonical %s", ctx.Canonical)
	}

	for _, c := range []struct {
		kind   string
		raw    string
		docPay bool
		want   bool
	}{
		{"pull_request", `{"plan_id":"p","plan_item":"i"}`, false, true},
		{"pull_request", `{"documents":[{"kind":"issue","number":4}]}`, false, true},
		{"pull_request", `{"no_context_reason":"r"}`, true, true},
		{"document", ``, false, true},
		{"review", ``, false, false},
		{"review", `{"plan_id":"p"}`, false, false},
	} {
		ctx, err := ParseContext(c.kind, json.RawMessage(c.raw), c.docPay, allow(false))
		wantRefusal(t, err, "", "")
		if ctx.HasPlanItemOrDocument != c.want {
			t.Errorf("%s %s: HasPlanItemOrDocument %v, want %v", c.kind, c.raw, ctx.HasPlanItemOrDocument, c.want)
		}
		if c.raw == "" && (ctx.Canonical != nil || ctx.JobID != "") {
			t.Errorf("no context: %+v", ctx)
		}
	}
}

func TestParseContextRequiredMessage(t *testing.T) {
	_, err := ParseContext("run", nil, false, allow(false))
	wantRefusal(t, err, InvalidArgument, "context")
	for _, s := range []string{"plan_item", "documents", "no_context_reason"} {
		if !strings.Contains(err.Error(), s) {
			t.Fatalf("refusal should name %s: %v", s, err)
		}
	}
}

// allow answers allow_private_evidence with b.
func allow(b bool) func() (bool, error) { return func() (bool, error) { return b, nil } }

// A member sent empty is checked as text; a member left out is missing. The
// typed context cannot tell the two apart, so the validator reads the JSON sent.
func TestParseContextTellsEmptyFromLeftOut(t *testing.T) {
	allow := func() (bool, error) { return true, nil }
	cases := []struct {
		name, raw, field, says string
	}{
		{"code text left out", contextWithEvidence(`{"kind":"code","language":"go"}`), "context.explanation.evidence[0].text", "required for code evidence"},
		{"code text empty", contextWithEvidence(`{"kind":"code","language":"go","text":""}`), "context.explanation.evidence[0].text", "required: a non-empty text"},
		{"link with an empty text", contextWithEvidence(`{"kind":"link","url":"https://ci.example/1","text":""}`), "context.explanation.evidence[0].text", "carries only url"},
		{"document id empty", `{"documents":[{"document_id":""}]}`, "context.documents[0].document_id", "required: a non-empty text"},
		{"document id empty beside a kind", `{"documents":[{"document_id":"","kind":"issue"}]}`, "context.documents[0]", "not both"},
		{"document kind empty", `{"documents":[{"kind":"","number":3}]}`, "context.documents[0].kind", "required: a non-empty text"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseContext("pull_request", json.RawMessage(c.raw), false, allow)
			wantRefusal(t, err, InvalidArgument, c.field)
			if !strings.Contains(err.Error(), c.says) {
				t.Fatalf("refusal %q does not say %q", err, c.says)
			}
		})
	}
}
