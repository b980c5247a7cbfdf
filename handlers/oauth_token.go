package handlers

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/countersign/countersign/oauth"
)

// oauthAnswer writes an OAuth JSON answer, never cached (RFC 6749 §5.1).
func oauthAnswer(c echo.Context, status int, v any) error {
	c.Response().Header().Set("Cache-Control", "no-store")
	c.Response().Header().Set("Pragma", "no-cache")
	return c.JSON(status, v)
}

func oauthFailed(c echo.Context, e *oauth.Error) error {
	if e.RetryAfter > 0 {
		c.Response().Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(e.RetryAfter.Seconds()))))
	}
	if e.Challenge != "" {
		c.Response().Header().Set(echo.HeaderWWWAuthenticate, e.Challenge)
	}
	return oauthAnswer(c, e.Status, e)
}

// oauthForm reads a token or revocation request: a urlencoded form, and the
// public client's id from the form or from HTTP Basic with an empty secret.
func oauthForm(c echo.Context) (url.Values, string, *oauth.Error) {
	if err := c.Request().ParseForm(); err != nil {
		return nil, "", &oauth.Error{Code: "invalid_request", Description: "the body must be a urlencoded form", Status: http.StatusBadRequest}
	}
	form := c.Request().PostForm
	clientID := form.Get("client_id")
	if user, _, ok := c.Request().BasicAuth(); ok {
		if u, err := url.QueryUnescape(user); err == nil {
			user = u
		}
		if clientID != "" && clientID != user {
			return nil, "", &oauth.Error{Code: "invalid_client", Description: "client_id differs between the form and HTTP Basic", Status: http.StatusUnauthorized}
		}
		clientID = user
	}
	return form, clientID, nil
}

// OAuthToken is the token endpoint: authorization_code (PKCE) and
// refresh_token grants of public clients, and the CIBA grant of the
// confidential CIBA clients.
func (h *Handlers) OAuthToken(c echo.Context) error {
	form, clientID, e := oauthForm(c)
	if e != nil {
		return oauthFailed(c, e)
	}
	if form.Get("grant_type") == oauth.CIBAGrantType {
		return h.limitClientFailures(h.cibaToken)(c)
	}
	answer, e := h.oauth.Token(c.Request().Context(), form, clientID)
	if e != nil {
		if e.Status >= 500 {
			h.log.Error("oauth token", "client", clientID, "err", e.Description)
		}
		return oauthFailed(c, e)
	}
	return oauthAnswer(c, http.StatusOK, answer)
}

// OAuthRevoke is the revocation endpoint (RFC 7009): 200 whether or not the
// token existed.
func (h *Handlers) OAuthRevoke(c echo.Context) error {
	form, clientID, e := oauthForm(c)
	if e != nil {
		return oauthFailed(c, e)
	}
	if e := h.oauth.Revoke(c.Request().Context(), form.Get("token"), clientID); e != nil {
		return oauthFailed(c, e)
	}
	return c.NoContent(http.StatusOK)
}

// registrationKey is the registration limit's key for a client address:
// its network, not the address, for one machine holds many addresses (every
// loopback address, an IPv6 /64 and more): all of 127.0.0.0/8 is one key,
// another IPv4 address its /24, an IPv6 address its /48.
func registrationKey(addr string) string {
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return addr
	}
	ip = ip.Unmap()
	bits := 48
	switch {
	case ip.IsLoopback():
		return "loopback"
	case ip.Is4():
		bits = 24
	}
	p, _ := ip.Prefix(bits)
	return p.String()
}

// OAuthRegister is dynamic client registration (RFC 7591), for clients that
// have no metadata document: capped per client address, and every client so
// registered is shown as unverified when a person is asked.
func (h *Handlers) OAuthRegister(c echo.Context) error {
	ok, wait := h.registrations.take(registrationKey(h.clientAddress(c.Request())), time.Now())
	if !ok {
		secs := int(math.Ceil(wait.Seconds()))
		c.Response().Header().Set("Retry-After", strconv.Itoa(secs))
		return oauthFailed(c, &oauth.Error{Code: "too_many_requests", Status: http.StatusTooManyRequests,
			Description: fmt.Sprintf("too many client registrations from this address; try again in %d s", secs)})
	}
	var m oauthex.ClientRegistrationMetadata
	if err := json.NewDecoder(http.MaxBytesReader(c.Response(), c.Request().Body, 16<<10)).Decode(&m); err != nil {
		return oauthFailed(c, &oauth.Error{Code: "invalid_client_metadata", Description: "the body must be the client's metadata as JSON, at most 16 KB", Status: http.StatusBadRequest})
	}
	out, e := h.oauth.Register(c.Request().Context(), &m)
	if e != nil {
		return oauthFailed(c, e)
	}
	return oauthAnswer(c, http.StatusCreated, out)
}
