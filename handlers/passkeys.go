package handlers

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/passkey"
	"github.com/countersign/countersign/views"
)

// ceremonyReply is what a browser posts to finish a passkey ceremony.
type ceremonyReply struct {
	Ceremony   string          `json:"ceremony"`
	Credential json.RawMessage `json:"credential"`
}

// readJSON reads a JSON body of at most maxWebBody bytes into v.
func readJSON(c echo.Context, v any) error { return readJSONUpTo(c, v, maxWebBody) }

// user loads a person with their live passkeys, as WebAuthn sees them.
func (h *Handlers) user(ctx context.Context, personID string) (*passkey.User, error) {
	p, err := h.store.PersonByID(ctx, personID)
	if err != nil {
		return nil, err
	}
	keys, err := h.store.DeviceKeys(ctx, personID)
	if err != nil {
		return nil, err
	}
	return &passkey.User{ID: p.ID, Subject: p.Subject, DisplayName: p.DisplayName, Keys: keys}, nil
}

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
	if err := readJSON(c, &reply); err != nil {
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

// SignOut ends the session.
func (h *Handlers) SignOut(c echo.Context) error {
	if v := viewerOf(c); v != nil {
		if err := h.store.DeleteSession(c.Request().Context(), v.token); err != nil {
			return err
		}
	}
	h.clearSession(c)
	return c.Redirect(http.StatusSeeOther, "/signin")
}

func checkName(field, s string) error {
	if len([]rune(s)) > 64 || strings.ContainsAny(s, "\r\n\t") {
		return models.Invalid(field, "one line of at most 64 characters")
	}
	return nil
}

// deviceName is the name given, or one guessed from the browser.
func deviceName(given string, c echo.Context) string {
	if s := strings.TrimSpace(given); s != "" {
		return s
	}
	ua := c.Request().UserAgent()
	for _, d := range []string{"iPhone", "iPad", "Macintosh", "Android", "Windows", "Linux"} {
		if strings.Contains(ua, d) {
			if d == "Macintosh" {
				return "Mac"
			}
			return d
		}
	}
	return "Passkey"
}
