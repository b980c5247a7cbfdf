// Package rules holds who must answer an ask: approval rules and the
// requirement they make, quorum and countersigning, reminders, escalation
// and away.
// It stands on the rooms asks, core, outbox and people; only the rooms above
// it import it (docs/architecture.md).
package rules

import (
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/outbox"
	"github.com/countersign/countersign/models/people"
)

// Book is the rules room's way into the database; it embeds the rooms below
// whose methods it calls.
type Book struct {
	*core.Store
	*asks.Lifecycle
	*outbox.Queue
	*people.Directory
}

// NewBook returns the rules room on c.
func NewBook(c *core.Store, as *asks.Lifecycle, ou *outbox.Queue, pe *people.Directory) *Book {
	return &Book{Store: c, Lifecycle: as, Queue: ou, Directory: pe}
}
