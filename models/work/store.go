// Package work holds an agent's work: sessions and heartbeats, the requests
// it files and the work board.
// It stands on the rooms asks, core and people; only the rooms above it
// import it (docs/architecture.md).
package work

import (
	"time"

	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
)

// Tracker is the work room's way into the database; it embeds the rooms below
// whose methods it calls.
type Tracker struct {
	*core.Store
	*asks.Lifecycle
	// agentIdle ends an agent session that has not heartbeated for this long (COUNTERSIGN_SESSION_IDLE).
	agentIdle time.Duration
	// beats are heartbeat times noted and not yet written (see FlushHeartbeats).
	beats *heartbeats
}

// NewTracker returns the work room on c.
func NewTracker(c *core.Store, al *asks.Lifecycle) *Tracker {
	return &Tracker{Store: c, Lifecycle: al, agentIdle: DefaultAgentIdle, beats: newHeartbeats()}
}
