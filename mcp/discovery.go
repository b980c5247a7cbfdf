package mcp

import (
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/countersign/countersign/models/people"
)

// BearerMethods are the ways an agent token may be sent (RFC 9728 §2): only
// in the Authorization header, never in a query or a form body.
var BearerMethods = []string{"header"}

// ResourceMetadata serves the OAuth protected-resource metadata (RFC 9728) of
// resource, the endpoint's URL: the scopes a token can hold, how it is sent,
// and the authorization server that grants tokens for it (Countersign
// itself, package oauth). Admin-made agent tokens work beside OAuth ones.
// The document is public and may be read from any origin.
func (s *Server) ResourceMetadata(resource string) http.Handler {
	meta := &oauthex.ProtectedResourceMetadata{
		Resource:               resource,
		ScopesSupported:        people.AllScopes,
		BearerMethodsSupported: BearerMethods,
		ResourceName:           "Countersign",
	}
	if s.authorizationServer != "" {
		meta.AuthorizationServers = []string{s.authorizationServer}
	}
	return auth.ProtectedResourceMetadataHandler(meta)
}
