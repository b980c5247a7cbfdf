package handlers

import (
	"crypto/rand"
	"encoding/json"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
	"github.com/countersign/countersign/passkey"
)

// Adding a passkey on the devices page takes two steps, each a click (Safari
// lets one passkey prompt follow one click): a passkey the person has signs
// an add-device challenge, which grants this session one addition for five
// minutes; then the new passkey is made here, or a one-time link is made for
// another device (device_link.go).

// deviceAuthoriseCeremony is kept server-side between the two halves of the
// add-device assertion.
type deviceAuthoriseCeremony struct {
	Nonce   []byte          `json:"nonce"`
	Session json.RawMessage `json:"session"`
}

// DeviceAuthoriseBegin answers the options of an assertion, by one of the
// signed-in person's passkeys, over a challenge bound to adding a passkey.
func (h *Handlers) DeviceAuthoriseBegin(c echo.Context) error {
	ctx := c.Request().Context()
	v := viewerOf(c)
	u, err := h.user(ctx, v.member.ID)
	if err != nil {
		return err
	}
	nonce := make([]byte, 32)
	if _, err := rand.Read(nonce); err != nil {
		return err
	}
	options, session, err := h.rp.BeginDeviceAdd(u, passkey.DeviceAddChallenge(u.ID, nonce))
	if err != nil {
		return err
	}
	return h.beginCeremony(c, "device-authorise", v.member.ID, options, deviceAuthoriseCeremony{Nonce: nonce, Session: session})
}

// DeviceAuthoriseFinish checks the assertion (signature, user verification,
// a passkey of this person, a growing counter) and answers the token of a
// grant that lets this session add one passkey within five minutes.
func (h *Handlers) DeviceAuthoriseFinish(c echo.Context) error {
	ctx := c.Request().Context()
	v := viewerOf(c)
	var reply ceremonyReply
	if err := readJSON(c, &reply, maxWebBody); err != nil {
		return err
	}
	var st deviceAuthoriseCeremony
	if err := h.takeCeremony(c, reply.Ceremony, "device-authorise", v.member.ID, &st); err != nil {
		return err
	}
	u, err := h.user(ctx, v.member.ID)
	if err != nil {
		return err
	}
	a, err := h.rp.FinishDeviceAdd(u, st.Session, reply.Credential, passkey.DeviceAddChallenge(u.ID, st.Nonce))
	if err != nil {
		return err
	}
	token, g, err := h.store.AuthoriseDeviceAdd(ctx, v.token, people.DeviceAssertion{
		PersonID: a.PersonID, CredentialID: a.CredentialID, SignCount: a.SignCount, Credential: a.Credential})
	if err != nil {
		return err
	}
	by := ""
	for _, k := range u.Keys {
		if k.ID == g.AuthorisedBy {
			by = k.Name
		}
	}
	return c.JSON(http.StatusOK, map[string]string{"grant": token, "expires_at": g.ExpiresAt.UTC().Format(time.RFC3339), "by": by})
}

// grantUse is the assertion grant the signed-in browser presents.
func grantUse(c echo.Context, token string) people.DeviceGrantUse {
	v := viewerOf(c)
	return people.DeviceGrantUse{Token: token, Kind: people.GrantAssertion, PersonID: v.member.ID, SessionToken: v.token}
}

type deviceBegin struct {
	Grant      string `json:"grant"`
	DeviceName string `json:"device_name"`
}

// deviceCeremony is kept server-side between the two halves of adding a
// passkey: the grant is named by its hash, and the browser presents the
// token again to spend it.
type deviceCeremony struct {
	GrantHash  string          `json:"grant_hash"`
	DeviceName string          `json:"device_name"`
	Session    json.RawMessage `json:"session"`
}

// deviceFinish is what a browser posts to store a new passkey.
type deviceFinish struct {
	ceremonyReply
	Grant        string `json:"grant"`
	PushEndpoint string `json:"push_endpoint"` // this browser's, if it has notifications on: it is not told of the passkey it added
}

// DeviceAddBegin answers the options of another passkey for the signed-in
// person, on a live grant of this session; the passkeys they have are
// excluded.
func (h *Handlers) DeviceAddBegin(c echo.Context) error {
	ctx := c.Request().Context()
	v := viewerOf(c)
	var in deviceBegin
	if err := readJSON(c, &in, maxWebBody); err != nil {
		return err
	}
	if err := checkName("device_name", in.DeviceName); err != nil {
		return err
	}
	if _, err := h.store.CheckDeviceGrant(ctx, grantUse(c, in.Grant)); err != nil {
		return err
	}
	u, err := h.user(ctx, v.member.ID)
	if err != nil {
		return err
	}
	options, session, err := h.rp.BeginRegistration(u)
	if err != nil {
		return err
	}
	return h.beginCeremony(c, "device", v.member.ID, options,
		deviceCeremony{GrantHash: core.HashToken(in.Grant), DeviceName: in.DeviceName, Session: session})
}

// DeviceAddFinish checks the new passkey and stores it for the person who
// began the ceremony, spending the grant.
func (h *Handlers) DeviceAddFinish(c echo.Context) error {
	ctx := c.Request().Context()
	v := viewerOf(c)
	var reply deviceFinish
	if err := readJSON(c, &reply, maxWebBody); err != nil {
		return err
	}
	var st deviceCeremony
	if err := h.takeCeremony(c, reply.Ceremony, "device", v.member.ID, &st); err != nil {
		return err
	}
	if st.GrantHash != core.HashToken(reply.Grant) {
		return core.Refuse(core.PermissionDenied, "grant", "this passkey prompt was made under another permission; start again")
	}
	u, err := h.user(ctx, v.member.ID)
	if err != nil {
		return err
	}
	key, err := h.rp.FinishRegistration(u, st.Session, reply.Credential, deviceName(st.DeviceName, c))
	if err != nil {
		return err
	}
	if _, err := h.store.AddAuthorisedDeviceKey(ctx, grantUse(c, reply.Grant), *key, reply.PushEndpoint); err != nil {
		return err
	}
	h.setFlash(c, "passkey-added")
	return c.JSON(http.StatusOK, map[string]string{"redirect": "/devices"})
}

type deviceLinkMake struct {
	Grant string `json:"grant"`
}

// DeviceLinkCreate spends this session's grant on a one-time link that adds
// a passkey from another device, and answers the link: it is shown once.
func (h *Handlers) DeviceLinkCreate(c echo.Context) error {
	var in deviceLinkMake
	if err := readJSON(c, &in, maxWebBody); err != nil {
		return err
	}
	token, link, err := h.store.MakeDeviceLink(c.Request().Context(), grantUse(c, in.Grant))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]string{"link": h.baseURL + deviceLinkPath(token), "expires_at": link.ExpiresAt.UTC().Format(time.RFC3339)})
}
