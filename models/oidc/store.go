// Package oidc holds the OpenID provider: its signing keys, the CIBA clients
// and the people each may ask, CIBA requests and the access tokens they end in.
// It stands on the rooms asks and core; only the top room imports it
// (docs/architecture.md).
package oidc

import (
	"github.com/countersign/countersign/models/core"
)

// Provider is the oidc room's way into the database.
type Provider struct {
	*core.Store
}

// NewProvider returns the oidc room on c.
func NewProvider(c *core.Store) *Provider {
	return &Provider{Store: c}
}
