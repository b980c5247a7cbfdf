package views_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/a-h/templ"
	"golang.org/x/net/html"

	"github.com/countersign/countersign/static"
	"github.com/countersign/countersign/views"
)

const xss = `"'><script>alert(1)</script>`

// escapedXSS is how xss reads in the page's source once escaped.
var escapedXSS = html.EscapeString(xss)

var now = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// render renders a component and parses it as a browser would.
func render(t *testing.T, c templ.Component) (string, *html.Node) {
	t.Helper()
	var buf bytes.Buffer
	if err := c.Render(context.Background(), &buf); err != nil {
		t.Fatalf("render: %v", err)
	}
	doc, err := html.Parse(strings.NewReader(buf.String()))
	if err != nil {
		t.Fatalf("parse the rendered page: %v", err)
	}
	return buf.String(), doc
}

// findAll returns the elements under n for which match is true, in document order.
func findAll(n *html.Node, match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && match(n) {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return out
}

func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

func hasAttr(key, val string) func(*html.Node) bool {
	return func(n *html.Node) bool { v, ok := attr(n, key); return ok && v == val }
}

func text(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// baseAsk is a pending pull request ask the viewer may decide.
func baseAsk(t *testing.T) views.Ask {
	t.Helper()
	p, err := views.DecodePayload("pull_request", `{"pull_request":{"head":"abcdef1234567","number":900,"repo":"acme/web","title":"Fix login"}}`)
	if err != nil {
		t.Fatal(err)
	}
	return views.Ask{
		ID: "appr_test", Kind: "pull_request", Title: "Merge acme/web#900", Summary: "Fixes the login redirect.",
		ApproveMeans: "I merge #900", DenyMeans: "#900 stays open",
		PayloadSHA256: strings.Repeat("ab", 32), Payload: p,
		AgentLabel: "ci bot", Requester: "agent:bot", Status: "pending",
		CreatedAt: now.Add(-time.Hour), ExpiresAt: now.Add(time.Hour), Now: now, CanDecide: true,
		Timeline: []views.Event{{Seq: 7, At: now.Add(-time.Hour), Actor: "agent:bot", By: "agent", Step: "created", To: "pending"}},
	}
}

func withContext(t *testing.T, a views.Ask, ctx any) views.Ask {
	t.Helper()
	c, err := views.DecodeContext(mustJSON(t, ctx))
	if err != nil {
		t.Fatal(err)
	}
	a.Context = c
	return a
}

func TestAskTextIsRenderedAsTextNeverAsMarkup(t *testing.T) {
	cases := []struct {
		name string
		ask  func(t *testing.T) views.Ask
	}{
		{"title", func(t *testing.T) views.Ask { a := baseAsk(t); a.Title = xss; return a }},
		{"summary", func(t *testing.T) views.Ask { a := baseAsk(t); a.Summary = xss; return a }},
		{"approve means", func(t *testing.T) views.Ask { a := baseAsk(t); a.ApproveMeans = xss; return a }},
		{"deny means", func(t *testing.T) views.Ask { a := baseAsk(t); a.DenyMeans = xss; return a }},
		{"agent label", func(t *testing.T) views.Ask { a := baseAsk(t); a.AgentLabel = xss; return a }},
		{"note of a question", func(t *testing.T) views.Ask {
			a := baseAsk(t)
			a.Status, a.Note, a.CanDecide = "question", xss, false
			return a
		}},
		{"note of a decision", func(t *testing.T) views.Ask {
			a := baseAsk(t)
			d := now
			a.Status, a.Decision, a.DecidedBy, a.DecidedAt, a.Note, a.CanDecide = "denied", "deny", "ada", &d, xss, false
			return a
		}},
		{"timeline note", func(t *testing.T) views.Ask {
			a := baseAsk(t)
			a.Timeline = append(a.Timeline, views.Event{Seq: 8, At: now, Actor: "agent:bot", By: "agent", Step: "step", Note: xss})
			return a
		}},
		{"pull request title in the payload", func(t *testing.T) views.Ask {
			a := baseAsk(t)
			p, err := views.DecodePayload("pull_request", mustJSON(t, map[string]any{"pull_request": map[string]any{
				"repo": "acme/web", "number": 1, "head": "abcdef1", "title": xss}}))
			if err != nil {
				t.Fatal(err)
			}
			a.Payload = p
			return a
		}},
		{"option label", func(t *testing.T) views.Ask {
			a := baseAsk(t)
			p, err := views.DecodePayload("decision", mustJSON(t, map[string]any{"decision": map[string]any{"options": []string{"keep", xss}}}))
			if err != nil {
				t.Fatal(err)
			}
			a.Kind, a.Payload = "decision", p
			return a
		}},
		{"code evidence text and language", func(t *testing.T) views.Ask {
			return withContext(t, baseAsk(t), map[string]any{"explanation": map[string]any{"evidence": []any{
				map[string]any{"kind": "code", "language": xss, "text": xss}}}})
		}},
		{"diff evidence text and path", func(t *testing.T) views.Ask {
			return withContext(t, baseAsk(t), map[string]any{"explanation": map[string]any{"evidence": []any{
				map[string]any{"kind": "diff", "path": xss, "text": "+" + xss}}}})
		}},
		{"log evidence text and title", func(t *testing.T) views.Ask {
			return withContext(t, baseAsk(t), map[string]any{"explanation": map[string]any{"evidence": []any{
				map[string]any{"kind": "log", "title": xss, "text": xss}}}})
		}},
		{"explanation words", func(t *testing.T) views.Ask {
			return withContext(t, baseAsk(t), map[string]any{"explanation": map[string]any{
				"what": xss, "why": xss, "approve": xss, "deny": xss,
				"effect": map[string]any{"kind": "remote", "ships": xss, "summary": xss, "touches": []string{xss}},
				"risk":   map[string]any{"level": "high", "text": xss}}})
		}},
		{"risk level", func(t *testing.T) views.Ask {
			return withContext(t, baseAsk(t), map[string]any{"explanation": map[string]any{"risk": map[string]any{"level": xss}}})
		}},
		{"context ids", func(t *testing.T) views.Ask {
			return withContext(t, baseAsk(t), map[string]any{
				"plan_id": xss, "plan_item": xss, "job_id": xss, "canvas_id": xss, "scene_document_id": xss,
				"documents": []any{map[string]any{"document_id": xss, "space_id": xss}}, "diagram_ids": []string{xss},
				"commits": []any{map[string]any{"repo": xss, "sha": xss, "subject": xss}}, "no_context_reason": xss})
		}},
		{"link", func(t *testing.T) views.Ask {
			a := baseAsk(t)
			a.Links = []string{"https://example.com/" + xss}
			return a
		}},
	}
	for _, tc := range cases {
		t.Run("a "+tc.name+" of "+xss+" shows as text", func(t *testing.T) {
			page, doc := render(t, views.Approval(views.Page{Title: "ask"}, tc.ask(t)))
			if strings.Contains(page, "<script>alert(1)") {
				t.Fatalf("the page holds the script as markup:\n%s", page)
			}
			if !strings.Contains(page, escapedXSS) && !strings.Contains(page, strings.ReplaceAll(escapedXSS, "&#39;", "%27")) {
				t.Fatalf("the page does not show the text escaped (%s):\n%s", escapedXSS, page)
			}
			for _, s := range findAll(doc, func(n *html.Node) bool { return n.Data == "script" }) {
				if src, _ := attr(s, "src"); src != static.Path("app.js") || text(s) != "" {
					t.Fatalf("a script element other than the page script: src=%q text=%q", src, text(s))
				}
			}
			for _, n := range findAll(doc, func(*html.Node) bool { return true }) {
				for _, a := range n.Attr {
					if strings.HasPrefix(a.Key, "on") {
						t.Fatalf("<%s> has an event handler attribute %s=%q", n.Data, a.Key, a.Val)
					}
				}
			}
		})
	}
}

func TestEachKindRendersItsFields(t *testing.T) {
	runExpiry := now.Add(30 * time.Minute)
	cases := []struct {
		kind    string
		payload map[string]any
		want    []string // texts the payload section shows
	}{
		{"pull_request", map[string]any{"repo": "acme/web", "number": 900, "head": "abcdef1234567", "title": "Fix login redirect"},
			[]string{"acme/web#900", "abcdef1234567", "Fix login redirect"}},
		{"roll", map[string]any{
			"deployments": []string{"web-eu", "web-us"}, "main_commit": "1111111aaaa", "running_commit": "2222222bbbb",
			"prs": []any{map[string]any{"number": 41, "title": "Faster search"}}, "migrations": []string{"0042_add_index"},
			"other_commits": []any{map[string]any{"sha": "3333333cccc", "subject": "Bump deps"}}, "behind": 5,
			"gate_tree": "4444444dddd", "gate": "canary 10% for 15 min", "steps": []string{"drain eu", "roll eu"}, "rollback": "redeploy 2222222"},
			[]string{"web-eu", "web-us", "1111111aaaa", "2222222bbbb", "#41", "Faster search", "0042_add_index", "3333333cccc", "Bump deps",
				"5 commits", "4444444dddd", "canary 10% for 15 min", "drain eu", "roll eu", "redeploy 2222222"}},
		{"review", map[string]any{"url": "https://review.example.com/r/77"}, []string{"https://review.example.com/r/77"}},
		{"document", map[string]any{"document_id": "doc_9", "space_id": "space_3", "version": 4}, []string{"doc_9", "space_3", "4"}},
		{"document", map[string]any{"document_id": "doc_current"}, []string{"doc_current", "0 (the current version)"}},
		{"decision", map[string]any{"options": []string{"Ship Friday", "Ship Monday", "Hold"}}, []string{"Ship Friday", "Ship Monday", "Hold"}},
		{"run", map[string]any{
			"cmd": "migrate prod", "script_sha256": strings.Repeat("e", 64), "runner_id": "runner-eu-1", "argv": []string{"scripts/migrate.sh", "--to", "v42", "two words"},
			"effect": "production", "runner_public_key": "ed25519:AAAAkey", "expires_at": runExpiry.Unix(), "asked_of": "ada"},
			[]string{"scripts/migrate.sh --to v42 'two words'", "migrate prod", strings.Repeat("e", 64), "runner-eu-1", "production", "ed25519:AAAAkey", "ada",
				runExpiry.Format(time.RFC3339)}},
		{"tool_call", map[string]any{"server": "filesystem", "tool": "write_file", "arguments": map[string]any{"path": "/srv/notes.txt", "content": "hello"}},
			[]string{"write_file", "filesystem", "path", "/srv/notes.txt", "content", "hello"}},
	}
	for _, tc := range cases {
		t.Run("a "+tc.kind+" ask shows "+strings.Join(tc.want, ", "), func(t *testing.T) {
			a := baseAsk(t)
			p, err := views.DecodePayload(tc.kind, mustJSON(t, map[string]any{tc.kind: tc.payload}))
			if err != nil {
				t.Fatal(err)
			}
			a.Kind, a.Payload = tc.kind, p
			_, doc := render(t, views.Approval(views.Page{Title: "ask"}, a))
			sections := findAll(doc, hasAttr("data-testid", "payload"))
			if len(sections) != 1 {
				t.Fatalf("%d payload sections, want 1", len(sections))
			}
			shown := text(sections[0])
			for _, w := range tc.want {
				if !strings.Contains(shown, w) && !hasAttrValue(sections[0], w) {
					t.Errorf("the payload section does not show %q; it shows:\n%s", w, shown)
				}
			}
			if strings.Contains(shown, "canonical payload") {
				t.Errorf("a %s payload fell back to its canonical text", tc.kind)
			}
		})
	}
}

// hasAttrValue says whether any element under n has an attribute equal to v.
func hasAttrValue(n *html.Node, v string) bool {
	return len(findAll(n, func(e *html.Node) bool {
		for _, a := range e.Attr {
			if a.Val == v {
				return true
			}
		}
		return false
	})) > 0
}

func TestTheReviewLinkIsALinkOnlyWhenHTTPS(t *testing.T) {
	cases := []struct {
		url  string
		link bool
	}{
		{"https://review.example.com/r/1", true},
		{"http://review.example.com/r/1", false},
		{"javascript:alert(1)", false},
		{"//review.example.com/r/1", false},
		{"https://user:pw@review.example.com/r/1", false},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s is a link: %t", tc.url, tc.link), func(t *testing.T) {
			a := baseAsk(t)
			a.Kind, a.Payload = "review", views.Payload{Review: &views.Review{URL: tc.url}}
			a = withContext(t, a, map[string]any{"explanation": map[string]any{"evidence": []any{
				map[string]any{"kind": "link", "url": tc.url, "title": "the run"}}}})
			a.Links = []string{tc.url}
			page, doc := render(t, views.Approval(views.Page{Title: "ask"}, a))
			links := findAll(doc, func(n *html.Node) bool { v, _ := attr(n, "href"); return n.Data == "a" && v == tc.url })
			want := 0
			if tc.link {
				want = 3 // the payload, the evidence and the links
			}
			if len(links) != want {
				t.Fatalf("%d links to %s, want %d:\n%s", len(links), tc.url, want, page)
			}
			if !tc.link {
				unlinked := findAll(doc, func(n *html.Node) bool { _, ok := attr(n, "data-unlinked"); return ok })
				if len(unlinked) != 3 {
					t.Fatalf("%d unlinked texts, want 3", len(unlinked))
				}
				for _, u := range unlinked {
					if !strings.Contains(text(u), tc.url) {
						t.Fatalf("unlinked text %q does not show %s", text(u), tc.url)
					}
				}
			}
		})
	}
}

func TestEvidenceIsShownByKind(t *testing.T) {
	a := withContext(t, baseAsk(t), map[string]any{"explanation": map[string]any{
		"what": "Merge the fix", "why": "Users are stuck", "approve": "I merge", "deny": "It waits",
		"effect": map[string]any{"kind": "local_write", "ships": "web 1.2", "summary": "one file", "touches": []string{"auth/login.go"}},
		"risk":   map[string]any{"level": "medium", "text": "login flow"},
		"evidence": []any{
			map[string]any{"kind": "code", "language": "go", "text": "return nil"},
			map[string]any{"kind": "diff", "path": "auth/login.go", "text": "@@ -1,2 +1,2 @@\n-old line\n+new line\n same line\n"},
			map[string]any{"kind": "log", "text": "PASS ok 0.3s"},
			map[string]any{"kind": "link", "url": "https://ci.example.com/runs/5", "title": "CI run"},
		}}})
	_, doc := render(t, views.Approval(views.Page{Title: "ask"}, a))

	explanation := text(findAll(doc, hasAttr("data-testid", "explanation"))[0])
	for _, w := range []string{"Merge the fix", "Users are stuck", "I merge", "It waits", "local write", "web 1.2", "one file", "auth/login.go", "login flow"} {
		if !strings.Contains(explanation, w) {
			t.Errorf("the explanation does not show %q", w)
		}
	}
	risk := findAll(doc, hasAttr("data-testid", "risk"))
	if len(risk) != 1 {
		t.Fatalf("%d risk elements, want 1", len(risk))
	}
	if class, _ := attr(risk[0], "class"); class != "risk-medium" {
		t.Errorf("risk class = %q, want risk-medium", class)
	}

	code := findAll(doc, hasAttr("data-evidence", "code"))[0]
	codeEl := findAll(code, func(n *html.Node) bool { return n.Data == "code" && n.Parent.Data == "pre" })
	if len(codeEl) != 1 || text(codeEl[0]) != "return nil" {
		t.Fatalf("code evidence is not one <pre><code> holding the code")
	}
	if class, _ := attr(codeEl[0], "class"); class != "language-go" {
		t.Errorf("code class = %q, want language-go", class)
	}
	if !strings.Contains(text(code), "go") {
		t.Errorf("the code's language is not shown")
	}

	diff := findAll(doc, hasAttr("data-evidence", "diff"))[0]
	pre := findAll(diff, hasAttr("class", "diff"))
	if len(pre) != 1 || pre[0].Data != "pre" {
		t.Fatalf("diff evidence is not in <pre class=diff>")
	}
	wantLines := []struct{ class, text string }{{"hunk", "@@ -1,2 +1,2 @@"}, {"del", "-old line"}, {"add", "+new line"}, {"", " same line"}}
	spans := findAll(pre[0], func(n *html.Node) bool { return n.Data == "span" })
	if len(spans) != len(wantLines) {
		t.Fatalf("%d diff lines, want %d", len(spans), len(wantLines))
	}
	for i, w := range wantLines {
		class, _ := attr(spans[i], "class")
		if class != w.class || text(spans[i]) != w.text {
			t.Errorf("diff line %d = <span class=%q>%q, want class %q, %q", i, class, text(spans[i]), w.class, w.text)
		}
	}
	if !strings.Contains(text(diff), "auth/login.go") {
		t.Errorf("the diff's path is not shown")
	}

	log := findAll(doc, hasAttr("data-evidence", "log"))[0]
	if logPre := findAll(log, func(n *html.Node) bool { return n.Data == "pre" }); len(logPre) != 1 || text(logPre[0]) != "PASS ok 0.3s" {
		t.Errorf("log evidence is not one <pre> holding the log")
	}

	link := findAll(doc, hasAttr("data-evidence", "link"))[0]
	anchors := findAll(link, func(n *html.Node) bool { return n.Data == "a" })
	if len(anchors) != 1 {
		t.Fatalf("%d anchors in link evidence, want 1", len(anchors))
	}
	if href, _ := attr(anchors[0], "href"); href != "https://ci.example.com/runs/5" {
		t.Errorf("link evidence href = %q", href)
	}
	if !strings.Contains(text(link), "CI run") {
		t.Errorf("link evidence title not shown")
	}
}

func TestTheAskPageShowsWhatThePageScriptReads(t *testing.T) {
	a := withContext(t, baseAsk(t), map[string]any{"plan_id": "plan_1", "plan_item": "item_2", "job_id": "job_42",
		"documents":   []any{map[string]any{"document_id": "doc_1"}, map[string]any{"kind": "issue", "number": 12}},
		"diagram_ids": []string{"dia_1"}, "commits": []any{map[string]any{"repo": "acme/web", "sha": "abcdef1", "subject": "Fix"}}})
	page, doc := render(t, views.Approval(views.Page{Title: "ask"}, a))

	status := findAll(doc, hasAttr("data-testid", "status"))
	if len(status) != 1 {
		t.Fatalf("%d status badges, want 1", len(status))
	}
	if s, _ := attr(status[0], "data-status"); s != "pending" {
		t.Errorf("data-status = %q, want pending", s)
	}
	if len(findAll(doc, hasAttr("data-approval", "appr_test"))) != 1 {
		t.Errorf("no section with data-approval=appr_test")
	}
	actions := findAll(doc, func(n *html.Node) bool { _, ok := attr(n, "data-actions"); return ok })
	if len(actions) != 1 {
		t.Fatalf("%d action blocks, want 1", len(actions))
	}
	for _, d := range []struct{ decision, testid string }{{"approve", "approve"}, {"deny", "deny"}, {"not_mine", "not-mine-confirm"}} {
		b := findAll(actions[0], hasAttr("data-decision", d.decision))
		if len(b) != 1 || b[0].Data != "button" {
			t.Fatalf("no button for %s", d.decision)
		}
		if id, _ := attr(b[0], "data-testid"); id != d.testid {
			t.Errorf("button %s has testid %q, want %q", d.decision, id, d.testid)
		}
	}
	means := findAll(doc, hasAttr("data-testid", "means"))
	if len(means) != 1 || !strings.Contains(text(means[0]), "If you approve:") || !strings.Contains(text(means[0]), "I merge #900") ||
		!strings.Contains(text(means[0]), "If you deny:") || !strings.Contains(text(means[0]), "#900 stays open") {
		t.Errorf("approve and deny means are not in the ask's head")
	}
	if len(findAll(actions[0], hasAttr("href", "#question"))) != 1 {
		t.Errorf("the answer bar does not lead to the question form")
	}
	root := findAll(doc, hasAttr("data-approval", "appr_test"))[0]
	if len(findAll(root, func(n *html.Node) bool { _, ok := attr(n, "data-question"); return ok && n.Data == "form" })) != 1 ||
		len(findAll(root, hasAttr("data-testid", "question-text"))) != 1 || len(findAll(root, hasAttr("data-testid", "question"))) != 1 ||
		len(findAll(root, hasAttr("id", "question"))) != 1 {
		t.Errorf("no question form with its textarea and button inside the ask, where the page script reads it")
	}
	if errs := findAll(doc, func(n *html.Node) bool {
		_, ok := attr(n, "data-error")
		_, hidden := attr(n, "hidden")
		return ok && hidden
	}); len(errs) != 1 {
		t.Errorf("%d hidden error boxes, want 1", len(errs))
	}
	live := findAll(doc, func(n *html.Node) bool { _, ok := attr(n, "data-live"); return ok })
	if len(live) != 1 {
		t.Fatalf("%d live wrappers, want 1", len(live))
	}
	if u, _ := attr(live[0], "data-live"); u != "/approvals/appr_test/events?after=7" {
		t.Errorf("data-live = %q", u)
	}
	items := findAll(live[0], func(n *html.Node) bool { _, ok := attr(n, "data-seq"); return ok && n.Data == "li" })
	if len(items) != 1 || items[0].Parent.Data != "ol" {
		t.Fatalf("timeline items = %d, want 1 inside <ol data-timeline>", len(items))
	}
	if seq, _ := attr(items[0], "data-seq"); seq != "7" {
		t.Errorf("data-seq = %q, want 7", seq)
	}
	hash := findAll(doc, hasAttr("data-testid", "payload-sha256"))
	if len(hash) != 1 || text(hash[0]) != a.PayloadSHA256 {
		t.Errorf("the full payload hash is not shown")
	}
	if short := findAll(doc, hasAttr("data-testid", "payload-short")); len(short) != 1 || text(short[0]) != a.PayloadSHA256[:12] {
		t.Errorf("the short payload hash is not shown")
	}
	countdowns := findAll(doc, func(n *html.Node) bool { _, ok := attr(n, "data-countdown"); return ok && n.Data == "time" })
	if len(countdowns) != 1 {
		t.Fatalf("%d countdowns, want 1", len(countdowns))
	}
	if dt, _ := attr(countdowns[0], "datetime"); dt != a.ExpiresAt.Format(time.RFC3339) {
		t.Errorf("countdown datetime = %q", dt)
	}
	ctxText := text(findAll(doc, hasAttr("data-testid", "context"))[0])
	for _, w := range []string{"plan_1", "item_2", "job_42", "doc_1", "issue 12", "dia_1", "acme/web", "abcdef1", "Fix"} {
		if !strings.Contains(ctxText, w) {
			t.Errorf("the context section does not show %q", w)
		}
	}
	for _, w := range []string{"ci bot", "agent:bot", "the owners and admins"} {
		if !strings.Contains(page, w) {
			t.Errorf("the page does not show %q", w)
		}
	}
	if len(findAll(doc, hasAttr("data-testid", "proof"))) != 0 {
		t.Errorf("a proof link on an undecided ask")
	}
}

func TestADecisionAskOffersOneButtonPerOption(t *testing.T) {
	a := baseAsk(t)
	opts := []string{"Ship Friday", "Ship Monday", "Hold"}
	p, err := views.DecodePayload("decision", mustJSON(t, map[string]any{"decision": map[string]any{"options": opts}}))
	if err != nil {
		t.Fatal(err)
	}
	a.Kind, a.Payload = "decision", p
	_, doc := render(t, views.Approval(views.Page{Title: "ask"}, a))
	if n := len(findAll(doc, hasAttr("data-decision", "approve"))); n != 0 {
		t.Errorf("%d approve buttons on a decision ask, want 0", n)
	}
	for i, o := range opts {
		b := findAll(doc, hasAttr("data-testid", fmt.Sprintf("choice-%d", i)))
		if len(b) != 1 {
			t.Fatalf("no choice-%d button", i)
		}
		if d, _ := attr(b[0], "data-decision"); d != fmt.Sprintf("option:%d", i) {
			t.Errorf("choice-%d decides %q", i, d)
		}
		if text(b[0]) != o {
			t.Errorf("choice-%d reads %q, want %q", i, text(b[0]), o)
		}
	}
	if len(findAll(doc, hasAttr("data-testid", "deny"))) != 1 {
		t.Errorf("no deny button")
	}
}

func TestAnAnsweredAskShowsTheDecisionAndNoButtons(t *testing.T) {
	a := baseAsk(t)
	d := now.Add(-time.Minute)
	p, err := views.DecodePayload("decision", `{"decision":{"options":["A","B"]}}`)
	if err != nil {
		t.Fatal(err)
	}
	a.Kind, a.Payload = "decision", p
	a.Status, a.Decision, a.DecidedBy, a.DecidedAt, a.Note, a.HasProof, a.CanDecide = "approved", "option:1", "ada", &d, "B", true, false
	_, doc := render(t, views.Approval(views.Page{Title: "ask"}, a))
	if n := len(findAll(doc, func(n *html.Node) bool { _, ok := attr(n, "data-actions"); return ok })); n != 0 {
		t.Fatalf("%d action blocks on an answered ask", n)
	}
	decision := text(findAll(doc, hasAttr("data-testid", "decision"))[0])
	for _, w := range []string{"Chose option 2: B", "ada", d.Format("2006-01-02 15:04 UTC")} {
		if !strings.Contains(decision, w) {
			t.Errorf("the decision does not show %q: %s", w, decision)
		}
	}
	proof := findAll(doc, hasAttr("data-testid", "proof"))
	if len(proof) != 1 {
		t.Fatalf("no proof link")
	}
	if href, _ := attr(proof[0], "href"); href != "/approvals/appr_test/proof.json" {
		t.Errorf("proof href = %q", href)
	}
	if s, _ := attr(findAll(doc, hasAttr("data-testid", "status"))[0], "data-status"); s != "approved" {
		t.Errorf("data-status = %q, want approved", s)
	}
}

func TestInboxEmptyStateSaysWhatHappensNext(t *testing.T) {
	for _, admin := range []bool{false, true} {
		t.Run(fmt.Sprintf("admin %t", admin), func(t *testing.T) {
			_, doc := render(t, views.Inbox(views.Page{Title: "Inbox"}, views.InboxView{Now: now, MCPURL: "https://cs.example.com/mcp", IsAdmin: admin}))
			empty := findAll(doc, hasAttr("data-testid", "inbox-empty"))
			if len(empty) != 1 {
				t.Fatalf("no empty state")
			}
			s := text(empty[0])
			for _, w := range []string{"appears here", "Turn on notifications", "Send me a test ask", "https://cs.example.com/mcp"} {
				if !strings.Contains(s, w) {
					t.Errorf("the empty state does not say %q: %s", w, s)
				}
			}
			if got := len(findAll(empty[0], hasAttr("href", "/admin/agents"))) == 1; got != admin {
				t.Errorf("link to the agents page shown: %t, want %t", got, admin)
			}
			if got := len(findAll(empty[0], hasAttr("data-testid", "make-agent-token"))) == 1; got != admin {
				t.Errorf("the make-a-token form shown: %t, want %t (only admins make agents)", got, admin)
			}
		})
	}
}

func TestInboxRowsEscapeTextAndCountDown(t *testing.T) {
	rows := []views.AskRow{{ID: "appr_1", Kind: "review", Title: xss, AgentLabel: xss, Requester: "agent:bot", Status: "pending",
		CreatedAt: now.Add(-5 * time.Minute), ExpiresAt: now.Add(2 * time.Hour)}}
	page, doc := render(t, views.Inbox(views.Page{Title: "Inbox"}, views.InboxView{Asks: rows, Now: now}))
	if strings.Contains(page, "<script>alert(1)") || !strings.Contains(page, escapedXSS) {
		t.Fatalf("the inbox does not escape ask text:\n%s", page)
	}
	links := findAll(doc, hasAttr("href", "/approvals/appr_1"))
	if len(links) != 1 {
		t.Fatalf("no link to the ask")
	}
	row := text(links[0])
	for _, w := range []string{"review", "agent:bot", "2h 0m left"} {
		if !strings.Contains(row, w) {
			t.Errorf("the row does not show %q: %s", w, row)
		}
	}
	// Every row of the inbox is open: the pending badge and whom it is for
	// are said once, above the list, not on each row.
	for _, w := range []string{"pending", "for the owners and admins"} {
		if strings.Contains(row, w) {
			t.Errorf("the row repeats %q: %s", w, row)
		}
	}
	if c := findAll(links[0], func(n *html.Node) bool { _, ok := attr(n, "data-countdown"); return ok }); len(c) != 1 {
		t.Errorf("no countdown in the row")
	}
}

func TestAToolCallAskShowsItsArgumentsAsStackedBlocksAndTheCanonicalJSON(t *testing.T) {
	canonical := `{"tool_call":{"arguments":{"content":"\"'><script>alert(1)</script>","count":12345678901234567,"force":true,"opts":{"b":[1,null]},"path":"/etc/hosts"},"server":"filesystem","tool":"write_file"}}`
	p, err := views.DecodePayload("tool_call", canonical)
	if err != nil {
		t.Fatal(err)
	}
	a := baseAsk(t)
	a.Kind, a.Payload = "tool_call", p
	page, doc := render(t, views.Approval(views.Page{Title: "ask"}, a))
	lists := findAll(doc, hasAttr("data-testid", "arguments"))
	if len(lists) != 1 || lists[0].Data != "dl" {
		t.Fatalf("%d argument lists, want 1 <dl>", len(lists))
	}
	var rows [][2]string
	for _, block := range findAll(lists[0], hasAttr("class", "argument")) {
		name := findAll(block, func(n *html.Node) bool { return n.Data == "dt" })
		value := findAll(block, func(n *html.Node) bool { return n.Data == "pre" })
		if len(name) != 1 || len(value) != 1 {
			t.Fatalf("an argument block without one name and one value")
		}
		// A value block that may scroll is reachable by keyboard and named.
		if ti, _ := attr(value[0], "tabindex"); ti != "0" {
			t.Errorf("the value of %s has tabindex %q, want 0", text(name[0]), ti)
		}
		if label, _ := attr(value[0], "aria-label"); label != "The argument "+text(name[0]) {
			t.Errorf("the value of %s is labelled %q", text(name[0]), label)
		}
		rows = append(rows, [2]string{text(name[0]), text(value[0])})
	}
	want := [][2]string{{"content", xss}, {"count", "12345678901234567"}, {"force", "true"}, {"opts", `{"b":[1,null]}`}, {"path", "/etc/hosts"}}
	if fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Errorf("argument rows = %q, want %q", rows, want)
	}
	if c := findAll(doc, hasAttr("data-testid", "canonical")); len(c) != 1 || text(c[0]) != canonical {
		t.Errorf("the canonical JSON shown is not the payload's canonical bytes")
	}
	if tool := findAll(doc, hasAttr("data-testid", "tool")); len(tool) != 1 || text(tool[0]) != "write_file" {
		t.Errorf("the tool is not shown")
	}
	if strings.Contains(page, xss) {
		t.Error("an argument reached the page unescaped")
	}
}
