package handlers

import (
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/passkey"
	"github.com/countersign/countersign/views"
)

// SignInPage offers the passkey sign-in.
func (h *Handlers) SignInPage(c echo.Context) error {
	if viewerOf(c) != nil {
		return c.Redirect(http.StatusSeeOther, localPath(c.QueryParam("next")))
	}
	next := localPath(c.QueryParam("next"))
	return h.render(c, http.StatusOK, views.SignIn(h.page(c, "Sign in", ""), next, h.signInAsk(c, next)))
}

// SignInBegin answers the options of a discoverable passkey sign-in.
func (h *Handlers) SignInBegin(c echo.Context) error {
	options, session, err := h.rp.BeginSignIn()
	if err != nil {
		return err
	}
	return h.beginCeremony(c, "signin", "", options, json.RawMessage(session))
}

// SignInFinish checks the passkey assertion and starts a session in the
// person's first account.
func (h *Handlers) SignInFinish(c echo.Context) error {
	ctx := c.Request().Context()
	var reply ceremonyReply
	if err := readJSON(c, &reply, maxWebBody); err != nil {
		return err
	}
	var session json.RawMessage
	if err := h.takeCeremony(c, reply.Ceremony, "signin", "", &session); err != nil {
		return err
	}
	a, err := h.rp.FinishSignIn(session, reply.Credential, func(personID string) (*passkey.User, error) {
		return h.user(ctx, personID)
	})
	if err != nil {
		return err
	}
	if err := h.store.UseDeviceKey(ctx, a.PersonID, a.CredentialID, a.SignCount, a.Credential); err != nil {
		return err
	}
	if err := h.signInFirstAccount(c, a.PersonID); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]string{"redirect": "/"})
}
