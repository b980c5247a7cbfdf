package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// ProtectedResourcePath is where the OAuth protected-resource metadata
// (RFC 9728) lives: of the whole service at this path, of the MCP endpoint at
// this path followed by /mcp (RFC 9728 §3.1 inserts the well-known segment
// before the resource's path).
const ProtectedResourcePath = "/.well-known/oauth-protected-resource"

// AgentEndpoint is what agents reach: the MCP endpoint at /mcp, and the
// protected-resource metadata of a resource URL.
type AgentEndpoint interface {
	http.Handler
	ResourceMetadata(resource string) http.Handler
}

// wellKnownRoutes serves the metadata documents, and answers every other
// /.well-known/ path with a JSON 404, never the sign-in redirect: a client
// looking for an OAuth authorization server (there is none) is told so
// plainly instead of being sent to a page. So are /register, /authorize and
// /token, the endpoints a client of the 2025-03-26 authorization spec assumes
// at the origin when it finds no authorization server metadata (the MCP
// Inspector registers there after a 401): it shows that reason rather than
// a CSRF refusal of the web pages.
func (h *Handlers) wellKnownRoutes(e *echo.Echo, agents AgentEndpoint) {
	e.Any(ProtectedResourcePath, echo.WrapHandler(agents.ResourceMetadata(h.baseURL)))
	e.Any(ProtectedResourcePath+"/mcp", echo.WrapHandler(agents.ResourceMetadata(h.baseURL+"/mcp")))
	noAuthorizationServer := func(c echo.Context) error {
		return c.JSON(http.StatusNotFound, map[string]string{"error": "NOT_FOUND", "field": "",
			"message": "nothing here: Countersign runs no OAuth authorization server; an admin gives each agent its token"})
	}
	e.Any("/.well-known/*", noAuthorizationServer)
	for _, path := range []string{"/register", "/authorize", "/token"} {
		e.Any(path, noAuthorizationServer)
	}
}
