package handlers_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/audit"
	"github.com/countersign/countersign/models/people"
)

// Re-enabling a blocked agent takes an owner's or admin's passkey over a
// prompt made for that agent: a member cannot begin one, a post without the
// assertion or with a prompt made for another agent is refused and changes
// nothing, an agent that is not disabled is refused, and two confirmations
// of the same agent at once turn it on once, with one line in the audit log.
func TestReenablingAnAgentTakesAPasskeyPromptMadeForThatAgent(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		p := newPeople(t, db)
		ctx := context.Background()
		acct := p.env.Account.ID
		for _, name := range []string{"deploy-bot", "docs-bot"} {
			p.env.Agent(acct, name)
			if _, err := p.env.Store.DisableAgent(ctx, acct, name, "not mine: ada", "ada"); err != nil {
				t.Fatal(err)
			}
		}
		disabled := func(name string) bool {
			a, err := p.env.Store.AgentByName(ctx, acct, name)
			if err != nil {
				t.Fatal(err)
			}
			return a.Disabled
		}
		reenabled := func() []asks.TimelineEvent {
			events, _, err := p.env.Store.Audit(ctx, acct, audit.AuditFilter{Step: people.StepAgentReenabled})
			if err != nil {
				t.Fatal(err)
			}
			return events
		}
		begin := func(b *apptest.Browser, name string) apptest.Response {
			return b.Post("/admin/agents/"+name+"/reenable/begin", map[string]any{})
		}

		if r := begin(p.bob, "deploy-bot"); r.Status != http.StatusForbidden {
			t.Errorf("bob, a member, begins a re-enable: %s", r)
		}
		if r := p.ada.Post("/admin/agents/deploy-bot/reenable", map[string]any{}); r.Status != http.StatusForbidden || !strings.Contains(string(r.Raw), "passkey") {
			t.Errorf("an unsigned re-enable is answered %s", r)
		}
		r := begin(p.ada, "deploy-bot")
		if r.Status != http.StatusOK {
			t.Fatalf("ada begins a re-enable: %s", r)
		}
		ceremony, options := r.Ceremony()
		if r := p.ada.Post("/admin/agents/docs-bot/reenable", map[string]any{"ceremony": ceremony, "credential": p.ada.Sign(options)}); r.Status != http.StatusForbidden {
			t.Errorf("a prompt made for deploy-bot re-enables docs-bot: %s", r)
		}
		if !disabled("deploy-bot") || !disabled("docs-bot") || len(reenabled()) != 0 {
			t.Fatalf("a refused re-enable changed an agent or the audit log")
		}

		// Two confirmations of deploy-bot at once: it is turned on once.
		var prompts [2]apptest.Response
		for i := range prompts {
			if prompts[i] = begin(p.ada, "deploy-bot"); prompts[i].Status != http.StatusOK {
				t.Fatalf("begin: %s", prompts[i])
			}
		}
		var wg sync.WaitGroup
		var answers [2]apptest.Response
		for i := range prompts {
			ceremony, options := prompts[i].Ceremony()
			credential := p.ada.Sign(options)
			wg.Go(func() {
				answers[i] = p.ada.Post("/admin/agents/deploy-bot/reenable", map[string]any{"ceremony": ceremony, "credential": credential})
			})
		}
		wg.Wait()
		ok := 0
		for _, a := range answers {
			if a.Status == http.StatusOK {
				ok++
			}
		}
		if ok != 1 {
			t.Fatalf("two confirmations at once: %s and %s, want exactly one to re-enable", answers[0], answers[1])
		}
		if disabled("deploy-bot") || !disabled("docs-bot") {
			t.Fatalf("after the re-enable: deploy-bot disabled %t, docs-bot disabled %t", disabled("deploy-bot"), disabled("docs-bot"))
		}
		events := reenabled()
		if len(events) != 1 || events[0].Actor != "ada" || events[0].ActorKind != asks.ActorAdmin || !strings.Contains(events[0].Note, "agent deploy-bot re-enabled") ||
			!strings.Contains(events[0].Note, "not mine: ada") {
			t.Fatalf("the audit log holds %+v, want one re-enable by ada naming the agent and why it was blocked", events)
		}
		if r := begin(p.ada, "deploy-bot"); r.Status != http.StatusConflict {
			t.Errorf("a re-enable of an enabled agent begins: %s", r)
		}
	})
}
