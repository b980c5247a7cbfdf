// Package oidc holds the OpenID provider: its signing keys, the CIBA clients
// with the people each may ask, and the client assertions already spent.
// It stands on the room core; only the rooms above it import it
// (docs/architecture.md).
package oidc

import (
	"github.com/countersign/countersign/models/core"
)

// Provider is the oidc room's way into the database; it embeds the rooms
// below whose methods it calls.
type Provider struct {
	*core.Store
	keyMaker keyMakerBox
}

// NewProvider returns the oidc room on c.
func NewProvider(c *core.Store) *Provider {
	return &Provider{Store: c}
}
