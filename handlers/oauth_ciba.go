package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/oauth"
)

// cibaRoutes serve the OpenID CIBA endpoints clients call with their own
// credentials, server to server: the backchannel authentication endpoint
// and introspection. The CIBA grant is the token endpoint's (OAuthToken).
func (h *Handlers) cibaRoutes(e *echo.Echo) {
	if h.oauth == nil {
		return
	}
	e.POST(oauth.BackchannelPath, h.OAuthBackchannel)
	e.POST(oauth.IntrospectPath, h.OAuthIntrospect)
}

// OAuthBackchannel is the backchannel authentication endpoint (CIBA §7).
func (h *Handlers) OAuthBackchannel(c echo.Context) error {
	form, _, e := oauthForm(c)
	if e != nil {
		return oauthFailed(c, e)
	}
	answer, e := h.oauth.Backchannel(c.Request().Context(), c.Request().Header, form)
	if e != nil {
		if e.Status >= 500 {
			h.log.Error("ciba backchannel", "err", e.Description)
		}
		return oauthFailed(c, e)
	}
	return oauthAnswer(c, http.StatusOK, answer)
}

// OAuthIntrospect is the introspection endpoint (RFC 7662) for the access
// tokens CIBA requests end in.
func (h *Handlers) OAuthIntrospect(c echo.Context) error {
	form, _, e := oauthForm(c)
	if e != nil {
		return oauthFailed(c, e)
	}
	answer, e := h.oauth.Introspect(c.Request().Context(), c.Request().Header, form)
	if e != nil {
		return oauthFailed(c, e)
	}
	return oauthAnswer(c, http.StatusOK, answer)
}

// cibaToken answers the token endpoint's CIBA grant.
func (h *Handlers) cibaToken(c echo.Context) error {
	form := c.Request().PostForm
	answer, e := h.oauth.CIBAToken(c.Request().Context(), c.Request().Header, form)
	if e != nil {
		if e.Status >= 500 {
			h.log.Error("ciba token", "err", e.Description)
		}
		return oauthFailed(c, e)
	}
	return oauthAnswer(c, http.StatusOK, answer)
}
