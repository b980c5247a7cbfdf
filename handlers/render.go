package handlers

import (
	"bytes"
	"net/http"
	"net/url"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/views"
)

// render writes a templ component as the response, with the request's context.
func (h *Handlers) render(c echo.Context, status int, component templ.Component) error {
	var buf bytes.Buffer
	if err := component.Render(c.Request().Context(), &buf); err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.HTMLBlob(status, buf.Bytes())
}

// page is the frame every page shares: its title, the CSRF token and who is signed in.
func (h *Handlers) page(c echo.Context, title, nav string) views.Page {
	p := views.Page{Title: title, Nav: nav, CSRF: csrfToken(c)}
	if v := viewerOf(c); v != nil {
		p.Viewer = v.view()
	}
	if f, err := c.Cookie(flashCookie); err == nil && f.Value != "" {
		p.Flash = flashes[f.Value]
		c.SetCookie(&http.Cookie{Name: flashCookie, Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: h.secure})
	}
	return p
}

const flashCookie = "cs_flash"

// flashes are the one-line notices a redirect can carry, by key: a cookie
// never carries text of its own to render.
var flashes = map[string]string{
	"signed-in":              "Signed in.",
	"invite-revoked":         "Invite revoked: its link no longer works.",
	"passkey-added":          "Passkey added.",
	"passkey-renamed":        "Passkey renamed.",
	"passkey-removed":        "Passkey removed.",
	"away-set":               "You are away: your asks go to your delegate until you come back or the time passes.",
	"away-ended":             "Welcome back: your asks come to you again.",
	"member-updated":         "Member updated.",
	"member-removed":         "Member removed.",
	"agent-disabled":         "Agent disabled: its token stops working and its open asks are cancelled.",
	"agent-reenabled":        "Agent re-enabled: its token works again. The asks cancelled when it was blocked stay cancelled.",
	"agent-deleted":          "Agent deleted.",
	"runner-disabled":        "Runner disabled: its token stops working and its runs that had not ended failed.",
	"ciba-client-revoked":    "CIBA client revoked: it can no longer authenticate, and its open asks were cancelled.",
	"client-disconnected":    "Client disconnected: its tokens stop working and its open asks are cancelled.",
	"policy-revoked":         "Auto-approve is off: asks wait for you again.",
	"window-revoked":         "Window turned off: its asks wait for you again.",
	"work-item-added":        "Item added.",
	"work-item-renamed":      "Item saved.",
	"work-item-moved":        "Item moved.",
	"work-column-added":      "Column added.",
	"work-column-renamed":    "Column renamed.",
	"work-column-removed":    "Column removed.",
	"channel-on":             "Saved: new asks reach you there too, besides your devices.",
	"channel-off":            "Turned off: that channel tells you of nothing more.",
	"channel-test":           "Test queued: it should arrive within a minute.",
	"shared-channel-saved":   "Channel saved.",
	"shared-channel-removed": "Channel removed: nothing more is posted there.",
	"shared-channel-test":    "Test queued: it should arrive within a minute; if not, it shows under dead letters below.",
}

// redirectWithFlash sends the browser to a relative URL with a notice.
func (h *Handlers) redirectWithFlash(c echo.Context, to, flash string) error {
	c.SetCookie(&http.Cookie{Name: flashCookie, Value: flash, Path: "/", MaxAge: 60, HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: h.secure})
	return c.Redirect(http.StatusSeeOther, localPath(to))
}

// localPath keeps a redirect on this site: p is kept only when it is a path
// of this site by every reading a browser might give it (see isLocalPath), and
// becomes "/" otherwise.
func localPath(p string) string {
	if !isLocalPath(p) {
		return "/"
	}
	return p
}

// maxUnescapes is how many rounds of percent-decoding isLocalPath looks
// through; a value still changing after them is refused.
const maxUnescapes = 4

// isLocalPath says whether p may be a redirect target: a path that starts
// with exactly one "/", not followed by "/" or "\", made of printable ASCII
// other than "\" (no control character, space or other character a browser
// strips or rewrites), and which stays so through up to maxUnescapes rounds of
// percent-decoding (so "/%2F/evil" and "/%09/evil" are refused too). The page
// script's localPath (web/redirect.js) applies the same rule; both are held
// to handlers/testdata/redirects.json.
func isLocalPath(p string) bool {
	for range maxUnescapes {
		if len(p) == 0 || p[0] != '/' || (len(p) > 1 && (p[1] == '/' || p[1] == '\\')) {
			return false
		}
		for i := 0; i < len(p); i++ {
			if p[i] < 0x21 || p[i] > 0x7e || p[i] == '\\' {
				return false
			}
		}
		d, err := url.PathUnescape(p)
		if err != nil {
			return false
		}
		if d == p {
			return true
		}
		p = d
	}
	return false
}
