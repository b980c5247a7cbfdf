package handlers

import (
	"crypto/rand"
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
	"github.com/countersign/countersign/passkey"
)

// Removing a passkey is signed, as adding one is: a session cookie alone
// could otherwise strip the person of their other devices. The Remove
// button runs an assertion, by one of the person's live passkeys (the one
// removed may sign), over a remove-device challenge that names the passkey
// to remove; the prompt lasts five minutes, is used once, and works only in
// the session that began it.

// deviceRemoveCeremony is kept server-side between the two halves of the
// remove-device assertion.
type deviceRemoveCeremony struct {
	CredentialID string          `json:"credential_id"` // the passkey to remove
	SessionHash  string          `json:"session_hash"`  // the session that began it
	Nonce        []byte          `json:"nonce"`
	Session      json.RawMessage `json:"session"`
}

func (st *deviceRemoveCeremony) beganIn() string { return st.SessionHash }

// unsignedRemoval refuses a removal that carries no remove-device assertion.
func unsignedRemoval() error {
	return core.Refuse(core.PermissionDenied, "credential",
		"removing a passkey takes a confirmation with one of your passkeys: press Remove on the devices page and confirm")
}

// DeviceRemoveBegin answers the options of an assertion, by one of the
// signed-in person's passkeys, over a challenge that names the passkey to
// remove. A passkey that is not theirs, or their last, is refused here.
func (h *Handlers) DeviceRemoveBegin(c echo.Context) error {
	ctx := c.Request().Context()
	v := viewerOf(c)
	id := c.Param("id")
	if err := h.store.CheckDeviceKeyRemoval(ctx, v.member.ID, id); err != nil {
		return err
	}
	u, err := h.user(ctx, v.member.ID)
	if err != nil {
		return err
	}
	nonce := make([]byte, 32)
	if _, err := rand.Read(nonce); err != nil {
		return err
	}
	options, session, err := h.rp.BeginDeviceRemove(u, passkey.DeviceRemoveChallenge(u.ID, id, nonce))
	if err != nil {
		return err
	}
	return h.beginCeremony(c, "device-remove", v.member.ID, options,
		deviceRemoveCeremony{CredentialID: id, SessionHash: core.HashToken(v.token), Nonce: nonce, Session: session})
}

// DeviceRemove retires one of the person's passkeys on a remove-device
// assertion made in this session for exactly that passkey; the last one
// stays. The person's accounts log it, naming the passkey that signed, and
// their devices are told. A form post without the assertion is refused on
// the devices page.
func (h *Handlers) DeviceRemove(c echo.Context) error {
	err := h.removeDevice(c)
	if msg, status, ok := refusalOf(err); ok && !wantsJSON(c) {
		return h.devicesPage(c, status, msg)
	}
	if err != nil {
		return err
	}
	h.setFlash(c, "passkey-removed")
	return c.JSON(http.StatusOK, map[string]string{"redirect": "/devices"})
}

func (h *Handlers) removeDevice(c echo.Context) error {
	ctx := c.Request().Context()
	v := viewerOf(c)
	id := c.Param("id")
	var st deviceRemoveCeremony
	reply, err := h.takeSignedReply(c, "device-remove", &st, unsignedRemoval)
	if err != nil {
		return err
	}
	if st.CredentialID != id {
		return core.Refuse(core.PermissionDenied, "credential", "this passkey prompt was made to remove another passkey; start again")
	}
	u, err := h.user(ctx, v.member.ID)
	if err != nil {
		return err
	}
	a, err := h.rp.FinishDeviceRemove(u, st.Session, reply.Credential, passkey.DeviceRemoveChallenge(u.ID, id, st.Nonce))
	if err != nil {
		return err
	}
	return h.store.RemoveSignedDeviceKey(ctx, id, people.DeviceAssertion{
		PersonID: a.PersonID, CredentialID: a.CredentialID, SignCount: a.SignCount, Credential: a.Credential})
}
