// Package outbox tells people of asks: Web Push subscriptions, people's
// other channels and the account's shared ones, one durable outbox for
// pushes and channel messages, and the one-time links they carry.
// It stands on the rooms asks and core; only the rooms above it import it
// (docs/architecture.md).
package outbox

import (
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
)

// Queue is the outbox room's way into the database; it embeds the rooms below
// whose methods it calls.
type Queue struct {
	*core.Store
	*asks.Lifecycle
	// PushCap is the fatigue cap on ask pushes (SetPushCap).
	PushCap PushCap
}

// NewQueue returns the outbox room on c.
func NewQueue(c *core.Store, as *asks.Lifecycle) *Queue {
	return &Queue{Store: c, Lifecycle: as}
}
