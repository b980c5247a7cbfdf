// Package asks holds an ask's record and its one state machine: the
// Approval, its timeline, the transitions table and the moves along it,
// verdicts and decision challenges.
// It stands on the room core; only the rooms above it import it
// (docs/architecture.md).
package asks

import (
	"github.com/countersign/countersign/models/core"
)

// Lifecycle is the asks room's way into the database; it embeds the rooms below
// whose methods it calls.
type Lifecycle struct {
	*core.Store
	// moved are told of each move of an ask (OnMove).
	moved []MoveListener
}

// NewLifecycle returns the asks room on c.
func NewLifecycle(c *core.Store) *Lifecycle {
	return &Lifecycle{Store: c}
}
