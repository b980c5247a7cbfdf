// Package grants holds OAuth for agents: registered clients, codes, access
// and refresh tokens, and the connections they make.
// It stands on the rooms asks, core and people; only the rooms above it
// import it (docs/architecture.md).
package grants

import (
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
)

// Issuer is the grants room's way into the database; it embeds the rooms below
// whose methods it calls.
type Issuer struct {
	*core.Store
	*asks.Lifecycle
	*people.Directory
}

// NewIssuer returns the grants room on c.
func NewIssuer(c *core.Store, as *asks.Lifecycle, pe *people.Directory) *Issuer {
	return &Issuer{Store: c, Lifecycle: as, Directory: pe}
}
