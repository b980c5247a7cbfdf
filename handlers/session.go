package handlers

import (
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
	"github.com/countersign/countersign/views"
)

const (
	sessionCookie = "cs_session"
	viewerKey     = "viewer"
)

// viewer is the signed-in person, as a member of the account they use.
type viewer struct {
	member  *people.Member
	account *people.Account
	token   string
}

func (v *viewer) view() *views.Viewer {
	return &views.Viewer{PersonID: v.member.ID, Subject: v.member.Subject, DisplayName: v.member.DisplayName,
		Role: string(v.member.Role), AccountID: v.account.ID, AccountName: v.account.Name}
}

func (v *viewer) isAdmin() bool {
	return v.member.Role == core.RoleOwner || v.member.Role == core.RoleAdmin
}

func viewerOf(c echo.Context) *viewer {
	v, _ := c.Get(viewerKey).(*viewer)
	return v
}

// loadSession finds the signed-in person from the session cookie, if any.
func (h *Handlers) loadSession(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		ck, err := c.Cookie(sessionCookie)
		if err != nil || ck.Value == "" {
			return next(c)
		}
		ctx := c.Request().Context()
		ws, err := h.store.SessionByToken(ctx, ck.Value)
		if err != nil {
			if core.CodeOf(err) == "" {
				return err
			}
			h.clearSession(c)
			return next(c)
		}
		m, err := h.store.MemberByID(ctx, ws.AccountID, ws.PersonID)
		if err != nil {
			if core.CodeOf(err) == "" {
				return err
			}
			_ = h.store.DeleteSession(ctx, ck.Value)
			h.clearSession(c)
			return next(c)
		}
		acct, err := h.store.AccountByID(ctx, ws.AccountID)
		if err != nil {
			return err
		}
		c.Set(viewerKey, &viewer{member: m, account: acct, token: ck.Value})
		return next(c)
	}
}

// startSession signs a person in with a fresh session id (never a reused
// one). The CSRF token changes with it, since it is bound to the session:
// the answer carries the new one in X-CSRF-Token for a script that goes on
// without loading a page.
func (h *Handlers) startSession(c echo.Context, personID, accountID string) error {
	if ck, err := c.Cookie(sessionCookie); err == nil && ck.Value != "" {
		if err := h.store.DeleteSession(c.Request().Context(), ck.Value); err != nil {
			return err
		}
	}
	token, err := h.store.CreateSession(c.Request().Context(), personID, accountID)
	if err != nil {
		return err
	}
	c.SetCookie(&http.Cookie{Name: sessionCookie, Value: token, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode,
		Secure: h.secure, MaxAge: int(people.SessionAbsolute.Seconds())})
	c.Set(csrfKey, sessionCSRF(token))
	c.Response().Header().Set(csrfHeader, sessionCSRF(token))
	return nil
}

func (h *Handlers) clearSession(c echo.Context) {
	c.SetCookie(&http.Cookie{Name: sessionCookie, Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: h.secure})
}

// requirePerson sends a visitor who is not signed in to the sign-in page
// (or answers 401 to a script).
func (h *Handlers) requirePerson(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if viewerOf(c) != nil {
			return next(c)
		}
		if wantsJSON(c) || c.Request().Method != http.MethodGet {
			return echo.NewHTTPError(http.StatusUnauthorized, "sign in first")
		}
		return c.Redirect(http.StatusSeeOther, "/signin?next="+url.QueryEscape(c.Request().URL.RequestURI()))
	}
}

// requireAdmin lets only owners and admins of the account through.
func (h *Handlers) requireAdmin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !viewerOf(c).isAdmin() {
			return core.Refuse(core.PermissionDenied, "", "only owners and admins of this account can do this")
		}
		return next(c)
	}
}
