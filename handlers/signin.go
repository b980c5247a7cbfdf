package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/passkey"
	"github.com/countersign/countersign/views"
)

// SignInPage offers the passkey sign-in.
func (h *Handlers) SignInPage(c echo.Context) error {
	if viewerOf(c) != nil {
		return c.Redirect(http.StatusSeeOther, localPath(c.QueryParam("next")))
	}
	return h.render(c, http.StatusOK, views.SignIn(h.page(c, "Sign in", ""), localPath(c.QueryParam("next"))))
}

// SignInBegin answers the options of a discoverable passkey sign-in.
func (h *Handlers) SignInBegin(c echo.Context) error {
	options, session, err := h.rp.BeginSignIn()
	if err != nil {
		return err
	}
	id, err := h.store.SaveCeremony(c.Request().Context(), "signin", "", session)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"ceremony": id, "options": options})
}

// SignInFinish checks the passkey assertion and starts a session in the
// person's first account.
func (h *Handlers) SignInFinish(c echo.Context) error {
	ctx := c.Request().Context()
	var reply ceremonyReply
	if err := readJSON(c, &reply, maxWebBody); err != nil {
		return err
	}
	session, _, err := h.store.TakeCeremony(ctx, reply.Ceremony, "signin")
	if err != nil {
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
	accounts, err := h.store.Memberships(ctx, a.PersonID)
	if err != nil {
		return err
	}
	if len(accounts) == 0 {
		return models.Refuse(models.PermissionDenied, "", "this passkey's person is no longer a member of any account")
	}
	if err := h.startSession(c, a.PersonID, accounts[0].AccountID); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]string{"redirect": "/"})
}
