// Package oidc holds the OpenID provider: its signing keys, the CIBA clients
// with the people each may ask, spent client assertions, CIBA requests with
// the pings they owe, and the access tokens they end in.
// It stands on the rooms asks and core; only the rooms above it import it
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
