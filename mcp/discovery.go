package mcp

import (
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/countersign/countersign/models"
)

// BearerMethods are the ways an agent token may be sent (RFC 9728 §2): only
// in the Authorization header, never in a query or a form body.
var BearerMethods = []string{"header"}

// ResourceMetadata serves the OAuth protected-resource metadata (RFC 9728) of
// resource, the endpoint's URL: the scopes an agent token can hold and how it
// is sent. It names no authorization_servers, on purpose: Countersign issues
// its own agent tokens (an admin makes them on /admin/agents or with
// `countersign agent create`) and runs no OAuth authorization server, so a
// client has nowhere to start an OAuth flow and must be given a token.
// The document is public and may be read from any origin.
func (s *Server) ResourceMetadata(resource string) http.Handler {
	return auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource:               resource,
		ScopesSupported:        models.AllScopes,
		BearerMethodsSupported: BearerMethods,
		ResourceName:           "Countersign",
	})
}
