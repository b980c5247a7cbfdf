package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"
	"golang.org/x/time/rate"

	"github.com/countersign/countersign/oauth"
)

// The cap on dynamic client registrations per client network (see
// registrationKey): anyone may register a client, so a few at once and then
// one a minute.
const (
	registrationRate  = rate.Limit(1.0 / 60)
	registrationBurst = 5
)

// The cap on failed client authentications at the CIBA endpoints, per
// client address: a client that mistypes its secret a few times is let
// through, one that guesses is held to ten a minute, and past the cap even
// the right credentials wait (429), so guessing gains nothing by speed.
const (
	clientFailureRate  = rate.Limit(10.0 / 60)
	clientFailureBurst = 10
)

// ServeOAuth makes the service the OAuth authorization server of its own
// MCP endpoint (package oauth); without it, there is none.
func (h *Handlers) ServeOAuth(o *oauth.Server) {
	h.oauth = o
	h.registrations = newAddressLimiter(registrationRate, registrationBurst)
	h.clientFailures = newAddressLimiter(clientFailureRate, clientFailureBurst)
}

// oauthRoutes serves the authorization server's metadata (RFC 8414) and the
// endpoints clients call without a session (token, registration,
// revocation). The person's authorization page is in the signed-in group.
func (h *Handlers) oauthRoutes(e *echo.Echo) {
	if h.oauth == nil {
		return
	}
	e.GET(oauth.MetadataPath, h.OAuthMetadata, allowAnyOrigin)
	e.OPTIONS(oauth.MetadataPath, noContent, allowAnyOrigin)
	e.GET(oauth.OpenIDConfigurationPath, h.OpenIDConfiguration, allowAnyOrigin)
	e.OPTIONS(oauth.OpenIDConfigurationPath, noContent, allowAnyOrigin)
	e.GET(oauth.JWKSPath, h.OpenIDJWKS, allowAnyOrigin)
	e.OPTIONS(oauth.JWKSPath, noContent, allowAnyOrigin)
	for path, handler := range map[string]echo.HandlerFunc{
		oauth.TokenPath: h.OAuthToken, oauth.RegisterPath: h.OAuthRegister, oauth.RevokePath: h.OAuthRevoke,
	} {
		e.POST(path, handler, allowAnyOrigin)
		e.OPTIONS(path, noContent, allowAnyOrigin)
	}
}

// allowAnyOrigin lets browser-based clients read the answer: the endpoints
// take no cookies, so no origin gains anything by it.
func allowAnyOrigin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Access-Control-Allow-Origin", "*")
		h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
		h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, MCP-Protocol-Version")
		return next(c)
	}
}

func noContent(c echo.Context) error { return c.NoContent(http.StatusNoContent) }

// OAuthMetadata serves the authorization server metadata (RFC 8414).
func (h *Handlers) OAuthMetadata(c echo.Context) error {
	doc, err := h.oauth.MetadataDocument()
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "public, max-age=3600")
	return c.JSON(http.StatusOK, doc)
}

// OpenIDConfiguration serves the OpenID Provider metadata (OpenID Connect
// Discovery 1.0) of the CIBA provider.
func (h *Handlers) OpenIDConfiguration(c echo.Context) error {
	c.Response().Header().Set("Cache-Control", "public, max-age=3600")
	return c.JSON(http.StatusOK, h.oauth.OpenIDConfiguration(c.Request().Context()))
}

// OpenIDJWKS serves the provider's public signing keys. It is cached for
// minutes only: a rotation must reach verifiers within its overlap.
func (h *Handlers) OpenIDJWKS(c echo.Context) error {
	set, err := h.oauth.JWKS(c.Request().Context())
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "public, max-age=300")
	c.Response().Header().Set(echo.HeaderContentType, "application/jwk-set+json")
	return c.JSON(http.StatusOK, set)
}
