package handlers

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/passkey"
	"github.com/countersign/countersign/proof"
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

// InvitePage shows an invite that can still be used.
func (h *Handlers) InvitePage(c echo.Context) error {
	ctx := c.Request().Context()
	token := c.Param("token")
	inv, err := h.store.InviteByToken(ctx, token)
	if err != nil {
		return err
	}
	acct, err := h.store.AccountByID(ctx, inv.AccountID)
	if err != nil {
		return err
	}
	setup := inv.CreatedBy == models.SetupInviter
	return h.render(c, http.StatusOK, views.Invite(h.page(c, "Join "+acct.Name, ""), views.InviteView{
		Token: token, AccountName: acct.Name, Role: string(inv.Role), Subject: inv.Subject, Setup: setup,
	}))
}

type inviteBegin struct {
	Subject     string `json:"subject"`
	DisplayName string `json:"display_name"`
	DeviceName  string `json:"device_name"`
}

// inviteCeremony is kept server-side between the two halves of registration.
type inviteCeremony struct {
	PersonID    string          `json:"person_id"`
	Subject     string          `json:"subject"`
	DisplayName string          `json:"display_name"`
	DeviceName  string          `json:"device_name"`
	Session     json.RawMessage `json:"session"`
}

// InviteBegin checks the chosen subject and answers the options of a new passkey.
func (h *Handlers) InviteBegin(c echo.Context) error {
	ctx := c.Request().Context()
	token := c.Param("token")
	inv, err := h.store.InviteByToken(ctx, token)
	if err != nil {
		return err
	}
	var in inviteBegin
	if err := readJSON(c, &in); err != nil {
		return err
	}
	in.Subject = strings.TrimSpace(in.Subject)
	if inv.Subject != "" {
		in.Subject = inv.Subject
	}
	if err := models.CheckSubject(in.Subject); err != nil {
		return err
	}
	if err := checkName("display_name", in.DisplayName); err != nil {
		return err
	}
	if err := checkName("device_name", in.DeviceName); err != nil {
		return err
	}
	personID := models.NewPersonID()
	switch existing, err := h.store.PersonBySubject(ctx, in.Subject); {
	case err == nil && inv.Subject == "":
		return models.Invalid("subject", "%q is taken; choose another", in.Subject)
	case err == nil:
		personID = existing.ID
	case models.CodeOf(err) != models.NotFound:
		return err
	}
	u := &passkey.User{ID: personID, Subject: in.Subject, DisplayName: in.DisplayName}
	if keys, err := h.store.DeviceKeys(ctx, personID); err == nil {
		u.Keys = keys
	}
	options, session, err := h.rp.BeginRegistration(u)
	if err != nil {
		return err
	}
	state, _ := json.Marshal(inviteCeremony{PersonID: personID, Subject: in.Subject, DisplayName: in.DisplayName, DeviceName: in.DeviceName, Session: session})
	id, err := h.store.SaveCeremony(ctx, "invite", models.HashToken(token), state)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"ceremony": id, "options": options})
}

// InviteFinish stores the new passkey, spends the invite and signs the person in.
func (h *Handlers) InviteFinish(c echo.Context) error {
	ctx := c.Request().Context()
	token := c.Param("token")
	var reply ceremonyReply
	if err := readJSON(c, &reply); err != nil {
		return err
	}
	raw, forInvite, err := h.store.TakeCeremony(ctx, reply.Ceremony, "invite")
	if err != nil {
		return err
	}
	if forInvite != models.HashToken(token) {
		return models.Refuse(models.FailedPrecondition, "ceremony", "this passkey prompt was made for another invite; start again")
	}
	var st inviteCeremony
	if err := json.Unmarshal(raw, &st); err != nil {
		return err
	}
	u := &passkey.User{ID: st.PersonID, Subject: st.Subject, DisplayName: st.DisplayName}
	key, err := h.rp.FinishRegistration(u, st.Session, reply.Credential, deviceName(st.DeviceName, c))
	if err != nil {
		return err
	}
	m, err := h.store.AcceptInvite(ctx, token, st.PersonID, st.Subject, st.DisplayName, *key)
	if err != nil {
		return err
	}
	if err := h.startSession(c, m.ID, m.AccountID); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]string{"redirect": "/"})
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

func decodeB64(s string) ([]byte, error) {
	var b proof.B64
	if err := json.Unmarshal([]byte(`"`+s+`"`), &b); err != nil {
		return nil, err
	}
	return b, nil
}
