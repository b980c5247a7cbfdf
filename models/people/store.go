// Package people holds who may act: accounts, people and their subjects,
// members and roles, passkeys, web sessions, invites, agents and agent
// tokens.
// It stands on the rooms asks, core and outbox; only the rooms above it
// import it (docs/architecture.md).
package people

import (
	"time"

	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/outbox"
)

// Directory is the people room's way into the database; it embeds the rooms below
// whose methods it calls.
type Directory struct {
	*core.Store
	*asks.Lifecycle
	*outbox.Queue
	// sessionIdle ends a web session unused for this long (COUNTERSIGN_SESSION_IDLE_WEB).
	sessionIdle time.Duration
	// agentTokens remembers on PostgreSQL which agent a token belongs to; nil on SQLite.
	agentTokens *agentTokens
}

// NewDirectory returns the people room on c.
func NewDirectory(c *core.Store, al *asks.Lifecycle, ou *outbox.Queue) *Directory {
	d := &Directory{Store: c, Lifecycle: al, Queue: ou, sessionIdle: DefaultSessionIdle}
	if c.Dialect() == core.Postgres {
		d.agentTokens = newAgentTokens()
		c.Changes().Subscribe(d.agentTokens.forget)
	}
	return d
}

// SessionIdle is how long an unused web session lives.
func (s *Directory) SessionIdle() time.Duration { return s.sessionIdle }
