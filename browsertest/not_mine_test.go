package browsertest

import (
	"context"
	"strings"
	"testing"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
)

// On the phone (390×844) "Not mine" is behind More. It opens a sheet that
// names the agent and how many of its other open asks it cancels; "Keep
// the ask" signs and changes nothing; the sheet's own button signs, blocks
// the agent and cancels its other asks. Admin → Agents then shows the agent
// blocked, with Re-enable, which one of the admin's passkeys confirms: the
// token works again, the audit log says who re-enabled it with which
// passkey, and the asks it cancelled stay cancelled. A re-enable posted
// without the passkey's assertion is refused and changes nothing.
func TestNotMineConfirmsThenAnAdminReenablesTheAgentWithAPasskey(t *testing.T) {
	s := start(t, apptest.SQLite)
	p := s.page
	ctx := context.Background()
	p.Emulate(phoneWidth, phoneHeight)
	s.signUp("ada", core.RoleOwner)
	_, token := s.env.Agent(s.env.Account.ID, "deploy-bot")
	bot := s.env.Connect(token)
	file := func(c *apptest.Client, number int, head string) string {
		out := c.OK("approvals_create", pullRequestAsk(number, head))
		return out["approval_id"].(string)
	}
	id := file(bot, 900, "abcdef1234567")
	others := []string{file(bot, 901, "bbbbbbbbbbbbb"), file(bot, 902, "ccccccccccccc")}
	unrelated := file(s.agent, 903, "ddddddddddddd") // another agent's ask: not cancelled
	signCount := func() float64 { return p.Credentials()[0].SignCount }
	status := func(id string) *asks.Approval {
		a, err := s.env.Store.GetApproval(ctx, s.env.Account.ID, id)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	agent := func() *people.Agent {
		a, err := s.env.Store.AgentByName(ctx, s.env.Account.ID, "deploy-bot")
		if err != nil {
			t.Fatal(err)
		}
		return a
	}

	p.Go("/approvals/" + id)
	p.WaitVisible("[data-testid=more] summary")
	if Eval[bool](p, `document.querySelector("[data-testid=not-mine]").checkVisibility()`) {
		t.Errorf("Not mine shows before More is opened")
	}
	openSheet := func() {
		p.Click("[data-testid=more] summary")
		p.WaitVisible("[data-testid=not-mine]")
		p.Click("[data-testid=not-mine]")
		p.WaitVisible("[data-testid=not-mine-sheet]")
	}
	openSheet()
	if got := p.Text("#not-mine-title"); got != "Block agent:deploy-bot?" {
		t.Errorf("the sheet is headed %q", got)
	}
	if got, want := p.Text("[data-testid=not-mine-what]"), "This denies the ask and blocks agent:deploy-bot: its token stops working and 2 other open asks of it are cancelled."; got != want {
		t.Errorf("the sheet says %q, want %q", got, want)
	}
	inView(p, "[data-testid=not-mine-confirm]", "the sheet's Deny and block button")
	accessible(p, "the ask page with the Not mine sheet open")

	before := signCount()
	p.Click("[data-testid=not-mine-cancel]")
	p.WaitFor("the sheet to close", `!document.querySelector("[data-testid=not-mine-sheet]").open`)
	if a := status(id); a.Status != asks.StatusPending || signCount() != before || agent().Disabled {
		t.Fatalf("Keep the ask left the ask %s, the agent disabled %t, the passkey signed %g times", a.Status, agent().Disabled, signCount()-before)
	}

	openSheet()
	Eval[bool](p, `window.browsertestClickedHere = true`)
	p.Click("[data-testid=not-mine-confirm]")
	p.WaitFor("the page to move on after Not mine", `!window.browsertestClickedHere && document.readyState === "complete"`)
	if got := signCount(); got != before+1 {
		t.Errorf("Not mine signed %g times, want once", got-before)
	}
	if a := status(id); a.Status != asks.StatusDenied || a.Decision != "not_mine" {
		t.Fatalf("after Not mine the ask is %s (%s), want denied as not mine", a.Status, a.Decision)
	}
	for _, o := range others {
		if a := status(o); a.Status != asks.StatusCancelled {
			t.Errorf("the agent's other ask %s is %s, want cancelled", o, a.Status)
		}
	}
	if a := status(unrelated); a.Status != asks.StatusPending {
		t.Errorf("another agent's ask is %s, want still pending", a.Status)
	}
	if !agent().Disabled {
		t.Fatalf("Not mine left the agent enabled")
	}

	p.Go("/admin/agents")
	p.WaitVisible("[data-agent=deploy-bot] [data-testid=agent-blocked]")
	if got := p.Text("[data-agent=deploy-bot] [data-testid=disabled-reason]"); got != "not mine: ada" {
		t.Errorf("the blocked agent's reason reads %q", got)
	}
	accessible(p, "Admin → Agents with a blocked agent")

	// Without the passkey's assertion the server refuses.
	s.expected = func(e string) bool { return strings.Contains(e, "403") }
	if msg := evalAwait[string](p, `fetch("/admin/agents/deploy-bot/reenable", {method: "POST", headers: {"Content-Type": "application/json", Accept: "application/json",
		"X-CSRF-Token": document.querySelector('meta[name="csrf-token"]').content}, body: "{}"}).then((r) => r.text().then((t) => r.status + " " + t))`); !strings.HasPrefix(msg, "403 ") || !strings.Contains(msg, "passkey") {
		t.Errorf("an unsigned re-enable is answered %q", msg)
	}
	if !agent().Disabled {
		t.Fatalf("an unsigned re-enable turned the agent on")
	}

	before = signCount()
	p.ClickToLoad("[data-testid=reenable-deploy-bot]", "/admin/agents", ".flash")
	if got := p.Text(".flash"); !strings.HasPrefix(got, "Agent re-enabled") {
		t.Errorf("after Re-enable the page says %q", got)
	}
	if got := signCount(); got != before+1 {
		t.Errorf("Re-enable signed %g times, want once", got-before)
	}
	if a := agent(); a.Disabled || a.DisabledReason != "" {
		t.Fatalf("after Re-enable the agent is disabled %t (%q)", a.Disabled, a.DisabledReason)
	}
	if n := p.Count("[data-agent=deploy-bot] [data-testid=agent-blocked], [data-testid=reenable-deploy-bot]"); n != 0 {
		t.Errorf("the re-enabled agent still shows as blocked")
	}
	again := file(s.env.Connect(token), 904, "eeeeeeeeeeeee")
	if a := status(again); a.Status != asks.StatusPending {
		t.Errorf("the re-enabled agent's new ask is %s", a.Status)
	}
	for _, o := range others {
		if a := status(o); a.Status != asks.StatusCancelled {
			t.Errorf("re-enabling brought back the cancelled ask %s (%s)", o, a.Status)
		}
	}

	p.Go("/admin/audit?step=" + people.StepAgentReenabled)
	p.WaitVisible("main h1")
	if got := p.Text("main"); !strings.Contains(got, "agent deploy-bot re-enabled with passkey") || !strings.Contains(got, "not mine: ada") || !strings.Contains(got, "ada") {
		t.Errorf("the audit log does not record the re-enable with who, which passkey and why it was blocked:\n%s", got)
	}
}
