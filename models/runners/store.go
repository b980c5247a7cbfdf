// Package runners holds runners: enrolment, their tokens and keys, and the
// signed reports of the runs they carry out.
// It stands on the rooms asks and core; only the rooms above it import it
// (docs/architecture.md).
package runners

import (
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
)

// Registry is the runners room's way into the database; it embeds the rooms below
// whose methods it calls.
type Registry struct {
	*core.Store
	*asks.Lifecycle
}

// NewRegistry returns the runners room on c.
func NewRegistry(c *core.Store, as *asks.Lifecycle) *Registry {
	return &Registry{Store: c, Lifecycle: as}
}
