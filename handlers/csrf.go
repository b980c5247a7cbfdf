package handlers

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"
)

const (
	csrfCookie = "cs_csrf"
	csrfHeader = "X-CSRF-Token"
	csrfField  = "_csrf"
	csrfKey    = "csrf"
)

// csrfLabel is what a signed-in browser's token is the HMAC of, keyed by
// its session secret.
const csrfLabel = "countersign csrf token v1"

// csrf guards every state-changing request of the web group, after
// loadSession. The request must come from this service's own origin (its
// Origin header or, without one, Sec-Fetch-Site), must not be multipart
// (nothing here takes a file, and no body is parsed as one), and must
// carry, in the X-CSRF-Token header or the _csrf field of a urlencoded
// form, the token its pages show in <meta name="csrf-token">. For a
// signed-in browser that token is bound to the session: the HMAC of a
// label keyed by the session secret, so a token shown to one session is
// refused in any other. Before sign-in it is the value of the browser's
// HttpOnly cs_csrf cookie.
func (h *Handlers) csrf(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		token := ""
		if v := viewerOf(c); v != nil {
			token = sessionCSRF(v.token)
		} else if ck, err := c.Cookie(csrfCookie); err == nil && len(ck.Value) >= 32 {
			token = ck.Value
		} else {
			b := make([]byte, 32)
			if _, err := rand.Read(b); err != nil {
				return fmt.Errorf("csrf token: %w", err)
			}
			token = base64.RawURLEncoding.EncodeToString(b)
			c.SetCookie(&http.Cookie{Name: csrfCookie, Value: token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: h.secure})
		}
		c.Set(csrfKey, token)
		r := c.Request()
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			return next(c)
		}
		if err := h.sameOrigin(r); err != nil {
			return err
		}
		mediaType, _, _ := mime.ParseMediaType(r.Header.Get(echo.HeaderContentType))
		if strings.HasPrefix(mediaType, "multipart/") {
			return echo.NewHTTPError(http.StatusUnsupportedMediaType, "multipart bodies are not taken here: send a urlencoded form or JSON")
		}
		sent := r.Header.Get(csrfHeader)
		if sent == "" && mediaType == echo.MIMEApplicationForm {
			sent = c.FormValue(csrfField)
		}
		if sent == "" || subtle.ConstantTimeCompare([]byte(sent), []byte(token)) != 1 {
			return echo.NewHTTPError(http.StatusForbidden, "missing or wrong CSRF token: reload the page and try again")
		}
		return next(c)
	}
}

// sessionCSRF is the CSRF token of the session whose secret is session.
func sessionCSRF(session string) string {
	mac := hmac.New(sha256.New, []byte(session))
	mac.Write([]byte(csrfLabel))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// sameOrigin refuses a request a browser sent from another origin: its
// Origin header, when it has one, must be the base URL's origin; without
// one, Sec-Fetch-Site must say same-origin (or none: the person typed or
// bookmarked it). A client that sends neither is not a browser that could
// be tricked into sending cookies, and the token still has to match.
func (h *Handlers) sameOrigin(r *http.Request) error {
	if o := r.Header.Get("Origin"); o != "" {
		if !strings.EqualFold(o, h.origin) {
			return echo.NewHTTPError(http.StatusForbidden, "cross-origin request refused: it did not come from a page of this service")
		}
		return nil
	}
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
		return nil
	}
	return echo.NewHTTPError(http.StatusForbidden, "cross-site request refused: it did not come from a page of this service")
}

// originOf is the origin of baseURL as a browser writes it in an Origin
// header: scheme://host, with the scheme's default port left out.
func originOf(baseURL string) string {
	u, err := url.Parse(baseURL)
	if err != nil || u.Host == "" {
		return ""
	}
	host := strings.ToLower(u.Host)
	if (u.Scheme == "https" && strings.HasSuffix(host, ":443")) || (u.Scheme == "http" && strings.HasSuffix(host, ":80")) {
		host = host[:strings.LastIndex(host, ":")]
	}
	return strings.ToLower(u.Scheme) + "://" + host
}

func csrfToken(c echo.Context) string {
	t, _ := c.Get(csrfKey).(string)
	return t
}
