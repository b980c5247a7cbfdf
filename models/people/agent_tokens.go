package people

import (
	"sync"
	"time"

	"github.com/countersign/countersign/models/core"
)

// agentTokens remembers, on PostgreSQL, which agent a bearer token belongs
// to, so that an MCP request is authenticated without a round trip to the
// database (one of the handful an ask costs). It is trusted only while the
// change feed hears every instance: each write that stops or changes an
// agent publishes AgentsChanged, which empties it on every instance (on the
// writer's own at commit, on the others through NOTIFY); while this
// instance's listener is down nothing is read from it or put in it, and the
// ChangesMissed of its reconnection empties it. An entry also lives at most
// agentTokenLife, for a change made by hand in SQL. On SQLite there is none:
// a CLI in another process may disable an agent, and no feed joins the two
// processes, while the query costs no network round trip.
type agentTokens struct {
	mu     sync.Mutex
	gen    uint64 // moves on every emptying, so a lookup that raced one is not kept
	agents map[string]knownAgent
}

type knownAgent struct {
	agent Agent
	until time.Time
}

const (
	// agentTokenLife bounds how long an agent is remembered.
	agentTokenLife = 5 * time.Second
	// agentTokensMax bounds how many are: past it, all are forgotten. Only
	// tokens that name an agent are remembered, so strangers cannot fill it.
	agentTokensMax = 10_000
)

func newAgentTokens() *agentTokens { return &agentTokens{agents: map[string]knownAgent{}} }

// get returns the agent remembered for a token hash; live says the change
// feed hears every instance now.
func (t *agentTokens) get(hash string, live bool, now time.Time) (*Agent, bool) {
	if t == nil || !live {
		return nil, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	k, ok := t.agents[hash]
	if !ok || !now.Before(k.until) {
		return nil, false
	}
	a := k.agent
	return &a, true
}

// generation is taken before the database is read, for put.
func (t *agentTokens) generation() uint64 {
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.gen
}

// put remembers the agent read for a token hash, unless an emptying came
// between the read (which began at generation gen) and now: the read may
// predate the change that emptied it.
func (t *agentTokens) put(hash string, a Agent, gen uint64, live bool, now time.Time) {
	if t == nil || !live {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if gen != t.gen {
		return
	}
	if len(t.agents) >= agentTokensMax {
		clear(t.agents)
	}
	t.agents[hash] = knownAgent{agent: a, until: now.Add(agentTokenLife)}
}

// forget empties it, on a change to agents or a change that went unheard.
func (t *agentTokens) forget(c core.Change) {
	if c.Kind != core.AgentsChanged && c.Kind != core.ChangesMissed {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.gen++
	clear(t.agents)
}
