// Package ops holds the running service's upkeep: SQLite backups, the ACME
// certificate cache and the registry of running instances.
// It stands on the room core; only the rooms above it import it
// (docs/architecture.md).
package ops

import (
	"github.com/countersign/countersign/models/core"
)

// Upkeep is the ops room's way into the database; it embeds the rooms below
// whose methods it calls.
type Upkeep struct {
	*core.Store
}

// NewUpkeep returns the ops room on c.
func NewUpkeep(c *core.Store) *Upkeep {
	return &Upkeep{Store: c}
}
