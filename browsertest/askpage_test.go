package browsertest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/ask"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/rules"
)

// A phone in portrait: 390×844 CSS px (an iPhone 12 to 15), then the
// narrowest phone (320 px).
const (
	phoneWidth, phoneHeight = 390, 844
	narrowWidth             = 320
)

// phoneAsk is one ask the phone test opens: its page, and whether its
// page offers the person an answer (a question waiting for its agent does not).
type phoneAsk struct {
	name    string
	id      string
	answers bool
	verb    string // the approve control's words; "" where the answer is a choice or words
}

// rect is an element's box in the viewport.
const rectOf = `(sel) => { const e = document.querySelector(sel); if (!e) return null; const r = e.getBoundingClientRect();
	return {top: r.top, bottom: r.bottom, left: r.left, right: r.right, width: r.width, height: r.height}; }`

type box struct{ Top, Bottom, Left, Right, Width, Height float64 }

func (p *Page) box(sel string) *box {
	p.t.Helper()
	return Eval[*box](p, fmt.Sprintf(`(%s)(%s)`, rectOf, jsString(sel)))
}

// inView fails unless the element sel matches is wholly inside the viewport.
func inView(p *Page, sel, what string) *box {
	p.t.Helper()
	b := p.box(sel)
	if b == nil {
		p.Fatalf("%s: nothing matches %s", what, sel)
	}
	w, h := Eval[float64](p, `innerWidth`), Eval[float64](p, `innerHeight`)
	if b.Top < -0.5 || b.Left < -0.5 || b.Bottom > h+0.5 || b.Right > w+0.5 || b.Width == 0 || b.Height == 0 {
		p.t.Errorf("%s (%s) is not wholly on the %gx%g screen: top %.0f, bottom %.0f, left %.0f, right %.0f",
			what, sel, w, h, b.Top, b.Bottom, b.Left, b.Right)
	}
	return b
}

// answerOnTheFirstScreen checks, with the page not scrolled, that the
// answer control and the words of what answering does are on the screen,
// the words not under the bar; then that the bar is still on screen at the
// bottom of the page.
func answerOnTheFirstScreen(p *Page, a phoneAsk) {
	p.t.Helper()
	Eval[bool](p, `window.scrollTo(0, 0), true`)
	if !a.answers {
		inView(p, "[data-testid=question-asked]", "the question asked")
		inView(p, "[data-testid=why-no-answer]", "why there is no answer to give")
		return
	}
	bar := inView(p, "[data-testid=answer-bar]", "the answer bar")
	control := `[data-testid=answer-bar] :is(.codes, .choices, .answers, .answer-box) :is(button, textarea)`
	inView(p, control, "the answer control")
	// What the first screen says is on the screen and not under the bar.
	for _, part := range []struct{ sel, what string }{
		{"[data-testid=status]", "the kind and state badges"},
		{"[data-testid=title]", "the title"},
		{"[data-testid=who]", "who asks"},
		{"[data-testid=means]", `"If you approve" and "If you deny"`},
		{"[data-testid=deadline] time[data-countdown]", "the time left"},
	} {
		if b := inView(p, part.sel, part.what); b.Bottom > bar.Top+0.5 {
			p.t.Errorf("%s ends at %.0f px, under the answer bar from %.0f px", part.what, b.Bottom, bar.Top)
		}
	}
	if got := p.Text("[data-testid=means] dt"); !strings.HasPrefix(got, "If you ") {
		p.t.Errorf("the first line of what answering does reads %q", got)
	}
	Eval[bool](p, `window.scrollTo(0, document.documentElement.scrollHeight), true`)
	if Eval[float64](p, `scrollY`) == 0 && Eval[bool](p, `document.documentElement.scrollHeight > innerHeight + 1`) {
		p.t.Errorf("the page did not scroll")
	}
	inView(p, "[data-testid=answer-bar]", "the answer bar at the bottom of the page")
	inView(p, control, "the answer control at the bottom of the page")
	Eval[bool](p, `window.scrollTo(0, 0), true`)
}

// namesWhatIsSigned checks, with the page not scrolled, that the approve
// control carries the verb of the kind; that the payload card is on the
// first screen, above the answer bar and above the agent's prose; that the
// hash is inside "exactly as signed"; that every time reads in one format
// (the viewer's zone); and that no token such as eu-west-1 breaks across
// lines, at 390 px and at 320 px.
func namesWhatIsSigned(p *Page, a phoneAsk) {
	p.t.Helper()
	Eval[bool](p, `window.scrollTo(0, 0), true`)
	if a.answers && a.verb != "" {
		if p.Count("[data-testid=approve]") == 1 {
			if got := p.Text("[data-testid=approve]"); got != a.verb {
				p.t.Errorf("the approve button reads %q, want %q", got, a.verb)
			}
		} else if got, want := p.Text("#check-code-label"), "To "+strings.ToLower(a.verb[:1])+a.verb[1:]+", tap"; !strings.HasPrefix(got, want) {
			p.t.Errorf("the check codes are introduced as %q, want it to start %q", got, want)
		}
	}
	first := inView(p, "[data-testid=payload-card] dd > div", "the payload card's first line")
	if bar := p.box("[data-testid=answer-bar]"); bar != nil && first.Bottom > bar.Top+0.5 {
		p.t.Errorf("the payload card's first line ends at %.0f px, under the answer bar from %.0f px", first.Bottom, bar.Top)
	}
	card := p.box("[data-testid=payload-card]")
	for _, prose := range []string{"[data-testid=summary]", "[data-testid=explanation]"} {
		if b := p.box(prose); b != nil && b.Top < card.Bottom {
			p.t.Errorf("the agent's prose %s starts at %.0f px, above the end of the payload card at %.0f px", prose, b.Top, card.Bottom)
		}
	}
	if !Eval[bool](p, `!!document.querySelector("details.as-signed [data-testid=payload-sha256]")`) {
		p.t.Errorf("the payload hash is not inside \"Exactly as signed\"")
	}
	if utc := Eval[[]string](p, `[...document.querySelectorAll("main time")].filter(t => !t.hasAttribute("data-countdown") && t.innerText.includes("UTC")).map(t => t.innerText)`); len(utc) > 0 {
		p.t.Errorf("times in two formats on one screen: %q read in UTC beside local times", utc)
	}
	for _, width := range []int64{phoneWidth, narrowWidth} {
		p.Emulate(width, phoneHeight)
		if broken := Eval[[]string](p, `[...document.querySelectorAll(".tok")].filter(t => t.checkVisibility() && t.innerText.length <= 24 &&
			t.getBoundingClientRect().height > 1.5 * parseFloat(getComputedStyle(t).lineHeight)).map(t => t.innerText)`); len(broken) > 0 {
			p.t.Errorf("at %d px tokens break across lines: %q", width, broken)
		}
	}
	p.Emulate(phoneWidth, phoneHeight)
}

// shownHash opens "Exactly as signed", as a person taps it, and reads the
// payload hash shown inside.
func shownHash(p *Page) string {
	p.t.Helper()
	if !Eval[bool](p, `document.querySelector("details.as-signed").open`) {
		p.Click("details.as-signed > summary")
	}
	p.WaitVisible("[data-testid=payload-sha256]")
	return p.Text("[data-testid=payload-sha256]")
}

// holdsNarrowAndLarge checks that the page needs no sideways scroll at
// 320 px and at 200 % text, and that no button's text overflows it or the
// screen. The header's menu is a row that scrolls sideways by itself: what
// is scrolled out of it is still one swipe away, and the page stays put.
func holdsNarrowAndLarge(p *Page, what string) {
	p.t.Helper()
	for _, v := range []struct {
		name  string
		width int64
		text  string
	}{{"320 px", narrowWidth, ""}, {"200 % text", phoneWidth, "200%"}, {"320 px and 200 % text", narrowWidth, "200%"}} {
		p.Emulate(v.width, phoneHeight)
		Eval[bool](p, fmt.Sprintf(`document.documentElement.style.fontSize = %s, true`, jsString(v.text)))
		width, inner := Eval[int](p, `document.documentElement.scrollWidth`), Eval[int](p, `innerWidth`)
		if width > inner {
			wide := Eval[[]string](p, `[...document.querySelectorAll("body *")].filter(e => e.checkVisibility() && e.getBoundingClientRect().right > innerWidth + 0.5).slice(0, 6).map(e => e.tagName.toLowerCase() + (e.className ? "." + String(e.className).replace(/ /g, ".") : "") + " (right edge " + Math.round(e.getBoundingClientRect().right) + " px)")`)
			p.t.Errorf("%s at %s: scrollWidth %d > innerWidth %d: it scrolls sideways; too wide: %q", what, v.name, width, inner, wide)
		}
		if v.name == "200 % text" {
			largeTextBar(p, what)
		}
		over := Eval[[]string](p, `[...document.querySelectorAll("button")].filter(b => b.checkVisibility() && !b.closest(".menu") && (b.scrollWidth > b.clientWidth + 1 || b.getBoundingClientRect().right > innerWidth + 0.5)).map(b => b.innerText.trim().slice(0, 40))`)
		if len(over) > 0 {
			p.t.Errorf("%s at %s: buttons overflow: %q", what, v.name, over)
		}
	}
	Eval[bool](p, `document.documentElement.style.fontSize = "", true`)
	p.Emulate(phoneWidth, phoneHeight)
}

// largeTextBar checks, at 200 % text with the page not scrolled, that the
// answer bar takes at most 40 % of the screen, and that the title (its
// first line at least) is on the screen above it.
func largeTextBar(p *Page, what string) {
	p.t.Helper()
	bar := p.box("[data-testid=answer-bar]")
	if bar == nil {
		return
	}
	Eval[bool](p, `window.scrollTo(0, 0), true`)
	bar = p.box("[data-testid=answer-bar]")
	h := Eval[float64](p, `innerHeight`)
	if bar.Height > 0.4*h+0.5 {
		p.t.Errorf("%s at 200 %% text: the answer bar is %.0f px high, %.0f %% of the %.0f px screen (at most 40 %%)", what, bar.Height, 100*bar.Height/h, h)
	}
	// A long title takes several lines at 200 %: its first line, at least,
	// is on the screen and not under the bar.
	line := Eval[float64](p, `parseFloat(getComputedStyle(document.querySelector("[data-testid=title]")).lineHeight)`)
	if title := p.box("[data-testid=title]"); title == nil || title.Top < -0.5 || title.Top+min(line, title.Height) > bar.Top+0.5 {
		p.t.Errorf("%s at 200 %% text: the title (%+v, lines of %.0f px) is not on the screen above the answer bar from %.0f px", what, title, line, bar.Top)
	}
}

// targetsFitAFinger fails on any control smaller than 44×44 CSS px on the
// phone: buttons, fields, checkboxes, folds, the menu's links and the
// answer bar's. Links inside running text are exempt (WCAG 2.5.8).
func targetsFitAFinger(p *Page, what string) {
	p.t.Helper()
	small := Eval[[]string](p, `[...document.querySelectorAll("button, input:not([type=hidden]), select, textarea, summary, nav a, .answer-bar a, .asks a")]
		.filter(e => e.checkVisibility() && !e.closest(".visually-hidden, [tabindex='-1']")).filter(e => { const r = e.getBoundingClientRect(); return r.width < 43.5 || r.height < 43.5; })
		.map(e => { const r = e.getBoundingClientRect(); return e.tagName.toLowerCase() + (e.type ? "[" + e.type + "]" : "") + " " + JSON.stringify((e.innerText || e.name || e.value || "").trim().slice(0, 30)) + " " + Math.round(r.width) + "x" + Math.round(r.height); })`)
	if len(small) > 0 {
		p.t.Errorf("%s has controls under 44x44 px on a phone: %q", what, small)
	}
}

// accessible runs axe-core on the page in the light and the dark scheme
// and fails on every serious or critical violation, and checks the
// controls' size.
func accessible(p *Page, what string) {
	p.t.Helper()
	for _, scheme := range []string{"light", "dark"} {
		p.ColorScheme(scheme)
		if found := p.Axe(); len(found) > 0 {
			lines := make([]string, len(found))
			for i, v := range found {
				lines[i] = "  " + v.String()
			}
			p.t.Errorf("axe-core finds %d serious or critical violations on %s in the %s scheme:\n%s", len(found), what, scheme, strings.Join(lines, "\n"))
		}
	}
	p.ColorScheme("light")
	targetsFitAFinger(p, what)
}

// longProse is the agent's explanation of a production roll: long, as
// agents write them, all unsigned.
const longProse = "This roll takes api and worker from the running commit to main. It carries the login fix, the rate limiter and two migrations. " +
	"The migrations add a column with a default and an index built concurrently, so no table is locked. The rate limiter is behind a flag that stays off. " +
	"I checked the canary for an hour: the error rate stayed at 0.02 % and p99 latency at 180 ms. " +
	"If something goes wrong I stop the roll."

// fileEveryKind files one ask of every kind and state the phone shows, and
// returns them in the order the test opens them.
func fileEveryKind(t *testing.T, b *board) []phoneAsk {
	s := b.service
	var asks []phoneAsk
	add := func(name, id string, answers bool) {
		asks = append(asks, phoneAsk{name: name, id: id, answers: answers})
	}
	verb := func(v string) { asks[len(asks)-1].verb = v }

	pr, _ := s.ask(apptest.ExplainedPullRequestAsk())
	add("a pull request with an explanation and evidence", pr, true)
	verb("Approve merge")

	roll, _ := s.ask(map[string]any{
		"kind": "roll", "title": "Roll api and worker to main (2 migrations, 14 commits behind) in production",
		"summary":       "The weekly train: the login fix, the rate limiter behind its flag, and two additive migrations.",
		"agent":         "release train",
		"approve_means": "I roll api, then worker, to main in production, one at a time, watching errors between them; I stop at the first failure",
		"deny_means":    "Nothing rolls; production keeps running the current commit and I report why on the release issue",
		"payload": map[string]any{"roll": map[string]any{
			"deployments": []string{"api-production-eu-west-1", "worker-production-eu-west-1", "api-production-us-east-1", "worker-production-us-east-1", "cron-production-eu-west-1"}, "main_commit": "9f8e7d6c5b4a39281706f5e4d3c2b1a098765432",
			"running_commit": "0123456789abcdef0123456789abcdef01234567", "behind": 14,
			"prs":        []map[string]any{{"number": 900, "title": "Fix the login redirect loop"}, {"number": 901, "title": "Rate limit the sign-in endpoint behind a flag"}},
			"migrations": []string{"0042_add_sessions_rotated_at_with_a_default_value.sql", "0043_index_sessions_on_rotated_at_concurrently.sql"},
			"steps":      []string{"roll api-production-eu-west-1", "watch errors for ten minutes", "roll worker-production-eu-west-1"},
			"rollback":   "redeploy the previous image; the migrations are additive",
		}},
		"context": map[string]any{"plan_id": "plan_train", "plan_item": "item_48", "job_id": "job_train_2026_48", "explanation": map[string]any{
			"what": longProse, "why": longProse, "effect": map[string]any{"kind": "production", "summary": longProse},
			"risk": map[string]any{"level": "high", "text": "Two migrations on the sessions table."},
		}},
	})
	add("a production roll with long prose", roll, true)
	verb("Approve roll")

	review, _ := s.ask(map[string]any{"kind": "review", "title": "Review the rate limiter design before the release", "approve_means": "I start building it", "deny_means": "I rework the design",
		"payload": map[string]any{"review": map[string]any{"url": "https://docs.example.com/design/rate-limiter-with-a-very-long-path-name/that-goes-on-and-on"}},
		"context": map[string]any{"no_context_reason": "a design review"}})
	add("a review", review, true)
	verb("Approve review")

	doc, _ := s.ask(map[string]any{"kind": "document", "title": "Publish the Q4 plan", "approve_means": "I publish version 3 to the team", "deny_means": "It stays a draft",
		"payload": map[string]any{"document": map[string]any{"document_id": "doc_q4_plan_with_a_long_identifier_0123456789", "space_id": "space_1", "version": 3}}})
	add("a document", doc, true)
	verb("Approve document")

	decision, _ := s.ask(map[string]any{"kind": "decision", "title": "When do we ship 2.4?", "agent": "release planner",
		"approve_means": "I schedule the release on the day you pick", "deny_means": "No release is scheduled",
		"payload": map[string]any{"decision": map[string]any{"options": []string{"Friday", "Monday, after the audit of the payment flows is done", "Hold"}}},
		"context": map[string]any{"no_context_reason": "a release date, nothing planned yet"}})
	add("a decision", decision, true)

	runner := s.env.EnrollRunner(s.env.Account.ID, "deploy-eu-west-1-production")
	run, _ := s.ask(runner.Ask("ada", strings.Repeat("ab", 32), []string{"migrate.sh", "--target", "production-eu-west-1", "--tables", "sessions,users,audit_log_entries_2026"}, "production", 10*time.Minute))
	add("a production run", run, true)
	verb("Run migrate.sh")
	remote, _ := s.ask(runner.Ask("ada", strings.Repeat("cd", 32), []string{"backup.sh", "--to", "s3://backups-eu/db"}, "remote", 20*time.Minute))
	add("a remote run", remote, true)
	verb("Run backup.sh")

	tool, _ := s.ask(map[string]any{
		"kind": "tool_call", "title": "Call write_file on filesystem", "agent": "gate: filesystem",
		"approve_means": "The call runs once, with exactly these arguments", "deny_means": "The call is refused and nothing runs",
		"payload": map[string]any{"tool_call": map[string]any{"server": "filesystem", "tool": "write_file", "arguments": map[string]any{
			"path":    "/srv/www/acme-production/config/a-rather-long-directory-name/another-long-directory-name/settings.production.json",
			"content": strings.Repeat(`{"feature_flags":{"rate_limiter":false,"login_fix":true},"replicas":3} `, 20),
			"options": map[string]any{"mode": "0644", "create_parents": true, "backup": map[string]any{"keep": 5, "suffix": ".bak"}},
		}}},
	})
	add("a tool call with long arguments", tool, true)
	verb("Allow write_file")

	advisory, _ := b.request(map[string]any{"kind": "memory_change", "title": "Remember that deploys happen on Tuesdays",
		"description": "You said so in the last planning meeting; I would keep it in my notes.", "proposal": map[string]any{"mode": "advisory"}})
	add("an advisory request", advisory, true)
	verb("Approve proposal")
	move, _ := b.request(b.move("done"))
	add("a work_move command request", move, true)
	verb("Approve move")
	choices, _ := b.request(map[string]any{"kind": "agent_request", "title": "Which branch do I release from?",
		"proposal": map[string]any{"mode": "advisory"}, "question": map[string]any{"choices": []string{"main", "release-2.4", "release-2.4-hotfix-for-the-login-redirect"}}})
	add("a question with choices", choices, true)
	words, _ := b.request(map[string]any{"kind": "agent_request", "title": "What should the release notes lead with?",
		"proposal": map[string]any{"mode": "advisory"}, "question": map[string]any{}})
	add("a question answered in words", words, true)

	policy := s.agent.OK("approvals_request_auto_approve", map[string]any{
		"until": time.Now().Add(2 * time.Hour).UTC().Format(time.RFC3339), "device": "ada's laptop", "scope": map[string]any{"ask_kinds": []string{"review", "document"}},
	})
	add("a policy request", policy["approval_id"].(string), true)
	verb("Turn on auto-approve")

	// A rule change ada proposes on the Rules page: her own, no agent's.
	ada, err := s.env.Store.MemberBySubject(context.Background(), s.env.Account.ID, "ada")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := s.env.Store.ProposeRuleChange(context.Background(), ada, models.RuleChange{Action: models.RuleChangeRemove, RuleID: rules.RuleRoll})
	if err != nil {
		t.Fatal(err)
	}
	add("a rule change", rc.ID, true)
	verb("Approve rule change")

	// A question to the agent, waiting for its answer; and one answered.
	waiting, _ := s.ask(pullRequestAsk(950, "aaaaaaaaaaaaa"))
	answered, _ := s.ask(pullRequestAsk(951, "bbbbbbbbbbbbb"))
	for _, id := range []string{waiting, answered} {
		s.askAQuestion(id, "Which test covers the Safari redirect?")
	}
	s.agent.OK("approvals_add_progress", map[string]any{"approval_id": answered, "step": "answered", "note": "TestSafariRedirect in auth/redirect_test.go", "expected_state": "question"})
	add("a question waiting for the agent", waiting, false)
	verb("Approve merge")
	add("an answered question", answered, true)
	verb("Approve merge")
	return asks
}

// askAQuestion asks the agent a question on the ask's page, signed with
// the page's passkey; the page stays on the ask.
func (s *service) askAQuestion(id, question string) {
	s.t.Helper()
	p := s.page
	p.Go("/approvals/" + id)
	p.WaitVisible("[data-testid=status]")
	p.Type("[data-testid=question-text]", question)
	p.ClickToLoad("[data-testid=question]", "/approvals/"+id, "[data-testid=status]")
	p.WaitFor("the status question", statusIs("question"))
}

// The phone moment (issue 19): every kind of ask, at 390×844, shows its
// answer and what answering does on the first screen, keeps the answer in
// view to the bottom of the page, holds at 320 px and 200 % text, and
// passes axe-core in light and dark; so does every other page. The inbox is
// soonest deadline first and marks what a policy kept asking; a decision
// moves on to the next ask; the check code of a risky ask must be picked
// right before anything is signed.
func TestEveryAskAnswersOnThePhoneFirstScreen(t *testing.T) {
	b := startBoard(t, apptest.SQLite)
	s, p := b.service, b.page
	ctx := context.Background()
	if err := s.env.Store.SetAllowPrivateEvidence(ctx, s.env.Account.ID, true); err != nil {
		t.Fatal(err)
	}
	p.Emulate(phoneWidth, phoneHeight)

	// A policy on reviews, signed first, so that a review about a release
	// is kept asking and the inbox says so.
	pol := s.agent.OK("approvals_request_auto_approve", map[string]any{
		"until": time.Now().Add(time.Hour).UTC().Format(time.RFC3339), "device": "ada's phone", "scope": map[string]any{"ask_kinds": []string{"review"}},
	})
	p.Go("/approvals/" + pol["approval_id"].(string))
	p.WaitVisible("[data-testid=approve]")
	p.ClickToLoad("[data-testid=approve]", "/approvals/"+pol["approval_id"].(string)+"/receipt", "[data-testid=receipt]")
	kept, _ := s.ask(map[string]any{"kind": "review", "title": "Review the release notes of 2.4", "approve_means": "I publish them", "deny_means": "I rewrite them",
		"payload": map[string]any{"review": map[string]any{"url": "https://docs.example.com/notes/2.4"}}})

	asks := fileEveryKind(t, b)
	for _, a := range asks {
		t.Run(a.name, func(t *testing.T) {
			p := p.For(t)
			p.Emulate(phoneWidth, phoneHeight)
			p.Go("/approvals/" + a.id)
			p.WaitVisible("[data-testid=status]")
			answerOnTheFirstScreen(p, a)
			namesWhatIsSigned(p, a)
			if a.name == "a tool call with long arguments" {
				if got := p.Text("[data-testid=who]"); !strings.HasPrefix(got, "agent:bot · calls itself gate: filesystem") {
					t.Errorf("who asks reads %q, want the verified agent first, then what it calls itself", got)
				}
			}
			if a.name == "a production roll with long prose" {
				if got := p.Text("[data-testid=card-more] summary"); got != "+2 more" {
					t.Errorf("the roll's five deployments fold after three as %q, want +2 more", got)
				}
			}
			if a.name == "a rule change" {
				if got := p.Text("[data-testid=title]"); got != "Remove the rule 'a roll needs two people'" {
					t.Errorf("the rule change is headed %q", got)
				}
				if got := p.Text("[data-testid=who]"); got != "ada, on the Rules page" {
					t.Errorf("the rule change comes from %q", got)
				}
				if n := p.Count("[data-testid=not-mine], [data-testid=not-mine-sheet]"); n != 0 {
					t.Errorf("ada's own rule change offers Not mine")
				}
			}
			if strings.HasPrefix(a.name, "a question") && a.answers {
				if got := p.Text("[data-testid=means] dt"); got != "If you answer:" {
					t.Errorf("a question's answer is introduced as %q, want If you answer: (it has no Approve button)", got)
				}
			}
			if a.name == "an answered question" {
				got := p.Text("[data-testid=exchange]")
				if !strings.Contains(got, "You asked\nWhich test covers the Safari redirect?") || !strings.Contains(got, "The agent answered\nTestSafariRedirect") {
					t.Errorf("the answered question reads %q, want You asked … / The agent answered …", got)
				}
				if b, bar := p.box("[data-testid=exchange]"), p.box("[data-testid=answer-bar]"); b == nil || b.Bottom > bar.Top {
					t.Errorf("the question and its answer are not above the answer bar")
				}
				inView(p, "[data-testid=exchange]", "the question and its answer")
				head := p.Text(".ask-head")
				for _, said := range []string{"Which test covers the Safari redirect?", "TestSafariRedirect"} {
					if n := strings.Count(head, said); n != 1 {
						t.Errorf("the first screen shows %q %d times, want once", said, n)
					}
				}
			}
			if t.Name() == "TestEveryAskAnswersOnThePhoneFirstScreen/a_production_roll_with_long_prose" {
				shoot(p, "ask", false)
			}
			accessible(p, "the page of "+a.name)
			holdsNarrowAndLarge(p, "the page of "+a.name)
		})
	}

	t.Run("the inbox is soonest deadline first, compact, and marks what a policy kept asking", func(t *testing.T) {
		p := p.For(t)
		p.Go("/")
		p.WaitVisible("[data-approval-row]")
		deadlines := Eval[[]string](p, `[...document.querySelectorAll("[data-approval-row]")].map(r => r.dataset.expires)`)
		for i := 1; i < len(deadlines); i++ {
			if deadlines[i] < deadlines[i-1] {
				t.Fatalf("the inbox is not soonest deadline first: %q", deadlines)
			}
		}
		if first := p.Attr("[data-approval-row]", "data-approval-row"); first != asks[5].id {
			t.Errorf("the first row is %s, want the production run with 10 minutes left (%s)", first, asks[5].id)
		}
		if n := p.Count("[data-approval-row] .status-pending"); n != 0 {
			t.Errorf("%d rows repeat the pending badge", n)
		}
		if got := p.Text(fmt.Sprintf("[data-approval-row=%s] [data-testid=policy-skipped]", jsString(kept))); !strings.Contains(got, "a roll or release") {
			t.Errorf("the review a policy kept asking is marked %q", got)
		}
		if n := p.Count("[data-testid=policy-skipped]"); n != 2 {
			t.Errorf("%d rows marked as kept asking by a policy, want the 2 reviews about a release", n)
		}
		shoot(p, "inbox", false)
	})

	t.Run("every other page passes axe-core and holds on the phone", func(t *testing.T) {
		p := p.For(t)
		for _, path := range []string{"/", "/history", "/work", "/sessions", "/policies", "/devices",
			"/admin", "/admin/members", "/admin/agents", "/admin/runners", "/admin/rules", "/admin/channels", "/admin/audit", "/approvals/" + pol["approval_id"].(string)} {
			p.Go(path)
			p.WaitVisible("main h1, main h2")
			accessible(p, path)
			holdsNarrowAndLarge(p, path)
		}
		out := browser.Open(t, s.env.URL)
		out.Emulate(phoneWidth, phoneHeight)
		out.Go("/signin")
		out.WaitVisible("[data-action=sign-in]")
		accessible(out, "the sign-in page")
		holdsNarrowAndLarge(out, "the sign-in page")
	})

	t.Run("a wrong check code signs nothing and says so; the right one signs", func(t *testing.T) {
		p := p.For(t)
		tool := asks[7]
		p.Go("/approvals/" + tool.id)
		p.WaitVisible("[data-testid=check-codes]")
		right := s.env.CheckCode(tool.id)
		codes := Eval[[]string](p, `[...document.querySelectorAll("[data-check-code]")].map(b => b.dataset.checkCode)`)
		if len(codes) != 3 || codes[0] == codes[1] || codes[1] == codes[2] || codes[0] == codes[2] || !strings.Contains(strings.Join(codes, ","), right) {
			t.Fatalf("the page offers the codes %q; want three distinct, among them %s", codes, right)
		}
		if n := p.Count("[data-testid=approve]"); n != 0 {
			t.Errorf("a tool call offers a plain Approve beside its check codes")
		}
		wrong := codes[0]
		if wrong == right {
			wrong = codes[1]
		}
		signCount := func() float64 { return p.Credentials()[0].SignCount }
		before := signCount()
		s.expected = func(e string) bool { return strings.Contains(e, "409") }
		Eval[bool](p, `window.stillThisPage = true`)
		p.Click("[data-testid=check-code-" + wrong + "]")
		p.WaitVisible("[data-testid=answer-bar] [data-error]")
		if got := p.Text("[data-testid=answer-bar] [data-error]"); !strings.Contains(got, "not this ask's check code: nothing was signed") {
			t.Errorf("a wrong pick says %q", got)
		}
		if !Eval[bool](p, `window.stillThisPage === true`) || signCount() != before {
			t.Fatalf("a wrong pick left the page or moved the passkey's sign count (%g, was %g)", signCount(), before)
		}
		if got := s.get(tool.id); got["status"] != "pending" || got["check_code"] != right {
			t.Fatalf("after a wrong pick approvals_get = %v, check_code %v; want pending, %s", got["status"], got["check_code"], right)
		}
		// The right pick signs once; its receipt names the check code, and
		// leads on to the ask with the soonest deadline: the production run.
		p.ClickToLoad("[data-testid=check-code-"+right+"]", "/approvals/"+tool.id+"/receipt", "[data-testid=receipt]")
		if got := p.Text("[data-testid=receipt-check]"); !strings.Contains(got, "check code "+right) {
			t.Errorf("the receipt's check says %q, want the check code %s", got, right)
		}
		p.WaitFor("the way on after the receipt", `getComputedStyle(document.querySelector("[data-testid=receipt-next]")).visibility === "visible"`)
		if got := p.Text("[data-testid=receipt-go-on]"); !strings.HasPrefix(got, "Next: ") || !strings.HasSuffix(got, " waiting →") {
			t.Errorf("the receipt leads on with %q, want Next: N waiting →", got)
		}
		p.ClickToLoad("[data-testid=receipt-go-on]", "/approvals/"+asks[5].id, "[data-testid=status]")
		if got := signCount(); got != before+1 {
			t.Errorf("the passkey signed %g times, want once", got-before)
		}
		if got := s.get(tool.id); got["status"] != "approved" || got["decision"] != "approve" {
			t.Fatalf("after the right pick approvals_get = %v %v", got["status"], got["decision"])
		}
		if ask.CheckCode(fmt.Sprint(s.get(tool.id)["payload_sha256"])) != right {
			t.Errorf("the check code is not the one derived from the payload hash")
		}
	})
}
