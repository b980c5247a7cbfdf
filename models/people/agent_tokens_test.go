package people

import (
	"testing"
	"time"

	"github.com/countersign/countersign/models/core"
)

// TestAgentTokensKeepNothingTheyCannotTrust covers the rules the MCP test
// of two instances cannot time: a read that raced a change is not kept,
// nothing is read or kept while the feed is deaf, entries end, and only
// agent changes and missed changes empty it.
func TestAgentTokensKeepNothingTheyCannotTrust(t *testing.T) {
	now := time.Now()
	bot := Agent{ID: "agt_1", Name: "bot"}

	tokens := newAgentTokens()
	gen := tokens.generation()
	tokens.forget(core.Change{Kind: core.AgentsChanged}) // a disable commits while the read runs
	tokens.put("h", bot, gen, true, now)
	if _, ok := tokens.get("h", true, now); ok {
		t.Error("a read begun before an agent changed was kept")
	}

	tokens.put("h", bot, tokens.generation(), false, now)
	if _, ok := tokens.get("h", true, now); ok {
		t.Error("a read made while the listener was down was kept")
	}

	tokens.put("h", bot, tokens.generation(), true, now)
	if a, ok := tokens.get("h", true, now); !ok || a.ID != bot.ID {
		t.Fatalf("a read with nothing between was not kept: %v, %v", a, ok)
	}
	if _, ok := tokens.get("h", false, now); ok {
		t.Error("a kept agent was used while the listener was down")
	}
	if _, ok := tokens.get("h", true, now.Add(agentTokenLife)); ok {
		t.Errorf("an agent was used %s after it was read", agentTokenLife)
	}
	for _, kind := range []core.ChangeKind{core.ApprovalChanged, core.OutboxQueued, core.SessionsEnded, core.RunsChanged} {
		tokens.forget(core.Change{Kind: kind})
		if _, ok := tokens.get("h", true, now); !ok {
			t.Errorf("a %s change emptied the agent tokens", kind)
		}
	}
	tokens.forget(core.Change{Kind: core.ChangesMissed})
	if _, ok := tokens.get("h", true, now); ok {
		t.Error("missed changes left the agent tokens as they were")
	}

	var none *agentTokens // SQLite
	none.put("h", bot, none.generation(), true, now)
	if _, ok := none.get("h", true, now); ok {
		t.Error("SQLite remembered a token")
	}
}
