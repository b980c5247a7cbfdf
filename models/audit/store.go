// Package audit holds the audit trail: queries over every room's timeline
// events and the hash chain that seals them.
// It stands on the rooms asks, core, grants, oidc, people, policy, rules
// and runners; only the rooms above it import it (docs/architecture.md).
package audit

import (
	"github.com/countersign/countersign/models/core"
)

// Trail is the audit room's way into the database; it embeds the rooms below
// whose methods it calls.
type Trail struct {
	*core.Store
}

// NewTrail returns the audit room on c.
func NewTrail(c *core.Store) *Trail {
	return &Trail{Store: c}
}
