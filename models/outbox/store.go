// Package outbox holds Web Push delivery: people's push subscriptions, the
// durable push outbox and the one-time push links.
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
