package handlers

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

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
	e.POST(oauth.BackchannelPath, h.OAuthBackchannel, h.limitClientFailures)
	e.POST(oauth.IntrospectPath, h.OAuthIntrospect, h.limitClientFailures)
}

// limitClientFailures holds an address that failed client authentication
// too often (clientFailureRate): its requests get 429 and Retry-After,
// whatever credentials they carry, until its bucket refills; each
// invalid_client answer spends a token.
func (h *Handlers) limitClientFailures(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		key := h.clientKey(c.Request())
		if wait := h.clientFailures.wait(key, time.Now()); wait > 0 {
			secs := int(math.Ceil(wait.Seconds()))
			c.Response().Header().Set("Retry-After", strconv.Itoa(secs))
			return oauthAnswer(c, http.StatusTooManyRequests, &oauth.Error{Code: "slow_down", Status: http.StatusTooManyRequests,
				Description: fmt.Sprintf("too many failed client authentications from this address; try again in %d s", secs)})
		}
		err := next(c)
		if c.Response().Status == http.StatusUnauthorized {
			h.clientFailures.take(key, time.Now())
		}
		return err
	}
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
