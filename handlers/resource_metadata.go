package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// ProtectedResourcePath is where the OAuth protected-resource metadata
// (RFC 9728) lives: at this path followed by /mcp (RFC 9728 §3.1 inserts the
// well-known segment before the resource's path), and at this path alone for
// clients that look at the origin. Both name the one resource, the MCP
// endpoint: a client that reads the origin's document asks for a token for
// /mcp, the only audience the authorization server grants.
const ProtectedResourcePath = "/.well-known/oauth-protected-resource"

// AgentEndpoint is what agents reach: the MCP endpoint at /mcp, and the
// protected-resource metadata of a resource URL.
type AgentEndpoint interface {
	http.Handler
	ResourceMetadata(resource string) http.Handler
}

// wellKnownRoutes serves the metadata documents, and answers every other
// /.well-known/ path with a JSON 404, never the sign-in redirect. So are
// /register, /authorize and /token at the origin, the endpoints a client of
// the 2025-03-26 authorization spec assumes when it finds no authorization
// server metadata: they point to the metadata, whose endpoints are under
// /oauth/, rather than answer with a CSRF refusal of the web pages.
func (h *Handlers) wellKnownRoutes(e *echo.Echo, agents AgentEndpoint) {
	metadata := echo.WrapHandler(agents.ResourceMetadata(h.baseURL + "/mcp"))
	e.Any(ProtectedResourcePath, metadata)
	e.Any(ProtectedResourcePath+"/mcp", metadata)
	message := "nothing here: Countersign runs no OAuth authorization server; an admin gives each agent its token"
	if h.oauth != nil {
		message = "nothing here: Countersign's OAuth endpoints are named in /.well-known/oauth-authorization-server"
	}
	notHere := func(c echo.Context) error {
		return c.JSON(http.StatusNotFound, map[string]string{"error": "NOT_FOUND", "field": "", "message": message})
	}
	e.Any("/.well-known/*", notHere)
	for _, path := range []string{"/register", "/authorize", "/token"} {
		e.Any(path, notHere)
	}
}
