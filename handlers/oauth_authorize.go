package handlers

import (
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models/people"
	"github.com/countersign/countersign/oauth"
	"github.com/countersign/countersign/views"
)

// OAuthAuthorize shows the consent page of an authorization request to the
// signed-in person; anyone else signs in with their passkey first, and comes
// back here. A request whose client or redirect URI
// cannot be trusted is refused on the page; any other bad request goes back
// to the client as an OAuth error.
func (h *Handlers) OAuthAuthorize(c echo.Context) error {
	q := c.QueryParams()
	if viewerOf(c) == nil {
		// Back here after the sign-in, with the query written the one way
		// url.Values writes it (a space as '+'): a client's %20 would read as
		// a space once unescaped, which the sign-in's next refuses.
		return c.Redirect(http.StatusSeeOther, "/signin?next="+url.QueryEscape(oauth.AuthorizePath+"?"+q.Encode()))
	}
	r, e := h.oauth.ParseAuthorize(c.Request().Context(), q)
	if e != nil {
		return h.authorizeRefused(c, r, e)
	}
	return h.consentPage(c, http.StatusOK, r, r.Scopes, "")
}

// OAuthConsent is the person's answer on the consent page: deny, or approve
// with the scopes they kept, which connects the client as an agent for them
// and sends the browser back with a code. Only the body is read: the
// authorization request's own parameters, each once, exactly one decision,
// and the grants the person left ticked.
func (h *Handlers) OAuthConsent(c echo.Context) error {
	ctx := c.Request().Context()
	if err := c.Request().ParseForm(); err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, "the form could not be read")
	}
	form := c.Request().PostForm
	if len(form["decision"]) != 1 {
		return echo.NewHTTPError(http.StatusBadRequest, "The answer must be exactly one of Connect or Cancel: reload the page and choose again.")
	}
	q := url.Values{}
	for _, name := range oauth.AuthorizeParams {
		if v, ok := form[name]; ok {
			q[name] = v
		}
	}
	r, e := h.oauth.ParseAuthorize(ctx, q)
	if e != nil {
		return h.authorizeRefused(c, r, e)
	}
	if form.Get("decision") != "approve" {
		return c.Redirect(http.StatusSeeOther, r.ErrorRedirect(h.oauth.Issuer(), &oauth.Error{Code: "access_denied", Description: "the person did not connect the client"}))
	}
	v := viewerOf(c)
	to, err := h.oauth.Approve(ctx, r, v.account.ID, v.member.Subject, form["grant"])
	if msg, status, ok := refusalOf(err); ok {
		return h.consentPage(c, status, r, form["grant"], msg)
	}
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, to)
}

// authorizeRefused answers a bad authorization request: on the page when
// there is no trusted redirect URI, or when nobody vetted the client (it
// registered itself, so its redirect URI is its own word: sending errors
// there before the person has seen anything makes the service an open
// redirector, RFC 9700 §4.11.2); else back to the client.
func (h *Handlers) authorizeRefused(c echo.Context, r *oauth.Request, e *oauth.Error) error {
	if r == nil || !r.Client.Verified {
		return echo.NewHTTPError(e.Status, "This app's sign-in request cannot be used: "+e.Description)
	}
	return c.Redirect(http.StatusSeeOther, r.ErrorRedirect(h.oauth.Issuer(), e))
}

// consentPage shows the consent page of r with the scopes of kept ticked
// (all asked for, the first time; the person's choice, when it is shown
// again with a refusal).
func (h *Handlers) consentPage(c echo.Context, status int, r *oauth.Request, kept []string, refusal string) error {
	v := viewerOf(c)
	view := views.ConsentView{ClientName: r.Client.Name, RedirectHost: r.RedirectHost(), Unverified: !r.Client.Verified,
		ClientHost: r.Client.Host, AccountName: v.account.Name, Subject: v.member.Subject, Error: refusal,
		ScopeRule: people.ToolScopeRule}
	for _, f := range r.Form() {
		view.Request = append(view.Request, views.HiddenField{Name: f[0], Value: f[1]})
	}
	for _, s := range r.Scopes {
		view.Scopes = append(view.Scopes, views.ScopeChoice{Name: s, Means: views.ScopeMeaning(s), Kept: slices.Contains(kept, s)})
	}
	// The form posts here and is answered with a redirect to the client:
	// form-action must allow the redirect's origin as well, or the browser
	// stops at it.
	c.Response().Header().Set("Content-Security-Policy", strings.Replace(ContentSecurityPolicy,
		"form-action 'self'", "form-action 'self' "+formTarget(r.RedirectURI), 1))
	return h.render(c, status, views.Consent(h.page(c, "Connect "+r.Client.Name, ""), view))
}

// formTarget is the CSP source of a redirect URI: its origin, or its
// scheme for an app's own.
func formTarget(redirect string) string {
	u, err := url.Parse(redirect)
	if err != nil {
		return ""
	}
	if u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return u.Scheme + ":"
	}
	return u.Scheme + "://" + u.Host
}

// DisconnectClient is a person taking back a client they connected: its
// tokens are revoked and its agent disabled.
func (h *Handlers) DisconnectClient(c echo.Context) error {
	v := viewerOf(c)
	err := h.store.DisconnectOAuthClient(c.Request().Context(), v.account.ID, v.member.ID, c.Param("agent"), v.member.Subject)
	if msg, status, ok := refusalOf(err); ok {
		return h.devicesPage(c, status, msg)
	}
	if err != nil {
		return err
	}
	return h.redirectWithFlash(c, "/devices", "client-disconnected")
}
