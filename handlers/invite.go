package handlers

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
	"github.com/countersign/countersign/passkey"
	"github.com/countersign/countersign/views"
)

// Ceremony kinds of the invite page: registering a new person's first
// passkey, or an existing person signing in to accept an add-role invite.
const (
	ceremonyInvite       = "invite"
	ceremonyInviteAccept = "invite_accept"
)

// InvitePage shows an invite that can still be used: a new person makes a
// passkey; the person an add-role invite names signs in with one they have.
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
	setup := inv.CreatedBy == people.SetupInviter
	view := views.InviteView{Token: token, AccountName: acct.Name, Role: string(inv.Role), Subject: inv.Subject, Setup: setup,
		AddRole: inv.Kind == people.InviteAddRole}
	status := http.StatusOK
	if m, err := h.memberHere(c, inv); err != nil {
		return err
	} else if m != nil {
		view.MemberHere, status = m.Subject, http.StatusConflict
	}
	return h.render(c, status, views.Invite(h.page(c, "Join "+acct.Name, ""), view))
}

// memberHere is the member of the invite's account this browser is signed
// in as (in any account of theirs), nil when it is signed in as nobody who
// is. One person's second identity must not count as a second person, so
// an invite is never accepted in such a browser.
func (h *Handlers) memberHere(c echo.Context, inv *people.Invite) (*people.Member, error) {
	v := viewerOf(c)
	if v == nil {
		return nil, nil
	}
	m, err := h.store.MemberByID(c.Request().Context(), inv.AccountID, v.member.ID)
	if core.CodeOf(err) == core.NotFound {
		return nil, nil
	}
	return m, err
}

// notMemberHere refuses to go on with an invite in a browser signed in as
// a member of its account (memberHere), saying why.
func (h *Handlers) notMemberHere(c echo.Context, inv *people.Invite) error {
	m, err := h.memberHere(c, inv)
	if err != nil || m == nil {
		return err
	}
	acct, err := h.store.AccountByID(c.Request().Context(), inv.AccountID)
	if err != nil {
		return err
	}
	return core.Refuse(core.FailedPrecondition, "invite", "%s", views.MemberHereRefusal(m.Subject, acct.Name))
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

// InviteBegin checks the chosen subject and answers the options of a new
// person's first passkey. A subject that is already a person's is refused:
// an invite never registers a passkey onto an existing person.
func (h *Handlers) InviteBegin(c echo.Context) error {
	ctx := c.Request().Context()
	token := c.Param("token")
	inv, err := h.store.InviteByToken(ctx, token)
	if err != nil {
		return err
	}
	if inv.Kind != people.InviteNewPerson {
		return core.Refuse(core.FailedPrecondition, "invite", "this invite adds a role to %s, who accepts it by signing in with their own passkey", inv.Subject)
	}
	if err := h.notMemberHere(c, inv); err != nil {
		return err
	}
	var in inviteBegin
	if err := readJSON(c, &in, maxWebBody); err != nil {
		return err
	}
	in.Subject = strings.TrimSpace(in.Subject)
	if inv.Subject != "" {
		in.Subject = inv.Subject
	}
	if err := people.CheckSubject(in.Subject); err != nil {
		return err
	}
	if err := checkName("display_name", in.DisplayName); err != nil {
		return err
	}
	if err := checkName("device_name", in.DeviceName); err != nil {
		return err
	}
	switch _, err := h.store.PersonBySubject(ctx, in.Subject); {
	case err == nil && inv.Subject != "":
		return core.Refuse(core.FailedPrecondition, "subject", "%q is already a person: this invite cannot add a passkey to them; ask for an add-role invite, which they accept with their own passkey", in.Subject)
	case err == nil:
		return core.Invalid("subject", "%q is taken; choose another", in.Subject)
	case core.CodeOf(err) != core.NotFound:
		return err
	}
	if err := h.store.SubjectFree(ctx, in.Subject); err != nil { // "Bob" while bob exists
		return err
	}
	u := &passkey.User{ID: people.NewPersonID(), Subject: in.Subject, DisplayName: in.DisplayName}
	options, session, err := h.rp.BeginRegistration(u)
	if err != nil {
		return err
	}
	return h.beginCeremony(c, ceremonyInvite, core.HashToken(token), options,
		inviteCeremony{PersonID: u.ID, Subject: in.Subject, DisplayName: in.DisplayName, DeviceName: in.DeviceName, Session: session})
}

// InviteFinish stores the new person with their passkey, spends the invite
// and signs them in.
func (h *Handlers) InviteFinish(c echo.Context) error {
	ctx := c.Request().Context()
	token := c.Param("token")
	var reply ceremonyReply
	if err := readJSON(c, &reply, maxWebBody); err != nil {
		return err
	}
	var st inviteCeremony
	if err := h.takeCeremony(c, reply.Ceremony, ceremonyInvite, core.HashToken(token), &st); err != nil {
		return err
	}
	if err := h.notMemberHereOf(c, token); err != nil {
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

// InviteAcceptBegin answers the options of a sign-in with a passkey the
// person already has, to accept an add-role invite.
func (h *Handlers) InviteAcceptBegin(c echo.Context) error {
	ctx := c.Request().Context()
	token := c.Param("token")
	inv, err := h.store.InviteByToken(ctx, token)
	if err != nil {
		return err
	}
	if inv.Kind != people.InviteAddRole {
		return core.Refuse(core.FailedPrecondition, "invite", "this invite is for a new person, who accepts it by making a passkey")
	}
	if err := h.notMemberHere(c, inv); err != nil {
		return err
	}
	options, session, err := h.rp.BeginSignIn()
	if err != nil {
		return err
	}
	return h.beginCeremony(c, ceremonyInviteAccept, core.HashToken(token), options, json.RawMessage(session))
}

// InviteAcceptFinish checks the assertion, gives the person who signed the
// invite's role when the invite names them, and signs them into the account.
func (h *Handlers) InviteAcceptFinish(c echo.Context) error {
	ctx := c.Request().Context()
	token := c.Param("token")
	var reply ceremonyReply
	if err := readJSON(c, &reply, maxWebBody); err != nil {
		return err
	}
	var session json.RawMessage
	if err := h.takeCeremony(c, reply.Ceremony, ceremonyInviteAccept, core.HashToken(token), &session); err != nil {
		return err
	}
	if err := h.notMemberHereOf(c, token); err != nil {
		return err
	}
	a, err := h.rp.FinishSignIn(session, reply.Credential, func(personID string) (*passkey.User, error) {
		return h.user(ctx, personID)
	})
	if err != nil {
		return err
	}
	m, err := h.store.AcceptRoleInvite(ctx, token, people.PasskeyUse{
		PersonID: a.PersonID, CredentialID: a.CredentialID, SignCount: a.SignCount, Credential: a.Credential,
	})
	if err != nil {
		return err
	}
	if err := h.startSession(c, m.ID, m.AccountID); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]string{"redirect": "/"})
}

// notMemberHereOf is notMemberHere for the invite of token, checked again
// as a ceremony finishes: the browser may have signed in meanwhile.
func (h *Handlers) notMemberHereOf(c echo.Context, token string) error {
	inv, err := h.store.InviteByToken(c.Request().Context(), token)
	if err != nil {
		return err
	}
	return h.notMemberHere(c, inv)
}
