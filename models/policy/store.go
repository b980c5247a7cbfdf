// Package policy holds auto-approve policies: the request that enables one,
// the windows a person opens from an ask, their scope, their state and the
// asks they approved.
// It stands on the rooms asks, core and people; only the rooms above
// it import it (docs/architecture.md).
package policy

import (
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
)

// Policies is the policy room's way into the database; it embeds the rooms below
// whose methods it calls.
type Policies struct {
	*core.Store
	*asks.Lifecycle
}

// NewPolicies returns the policy room on c.
func NewPolicies(c *core.Store, as *asks.Lifecycle) *Policies {
	return &Policies{Store: c, Lifecycle: as}
}
