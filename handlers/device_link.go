package handlers

import (
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
	"github.com/countersign/countersign/passkey"
	"github.com/countersign/countersign/views"
)

// A device link adds a passkey from a new device that has no session (a
// Mac adding a phone): a signed-in device makes it right after an add-device
// assertion; it works once, for ten minutes, and signs the new device in.

// deviceLinkPath is where a device link opens.
func deviceLinkPath(token string) string { return "/add-device/" + url.PathEscape(token) }

// DeviceLinkPage offers to make a passkey on this device for the person a
// live device link names.
func (h *Handlers) DeviceLinkPage(c echo.Context) error {
	token := c.Param("token")
	_, p, err := h.store.DeviceLink(c.Request().Context(), token)
	if err != nil {
		return err
	}
	return h.render(c, http.StatusOK, views.DeviceLink(h.page(c, "Add this device", ""), views.DeviceLinkView{
		Token: token, Subject: p.Subject}))
}

type deviceLinkBegin struct {
	DeviceName string `json:"device_name"`
}

// deviceLinkCeremony is kept server-side between the two halves of making a
// passkey through a device link.
type deviceLinkCeremony struct {
	PersonID   string          `json:"person_id"`
	DeviceName string          `json:"device_name"`
	Session    json.RawMessage `json:"session"`
}

// DeviceLinkBegin answers the options of a new passkey for the link's person;
// the passkeys they have are excluded.
func (h *Handlers) DeviceLinkBegin(c echo.Context) error {
	ctx := c.Request().Context()
	token := c.Param("token")
	var in deviceLinkBegin
	if err := readJSON(c, &in, maxWebBody); err != nil {
		return err
	}
	if err := checkName("device_name", in.DeviceName); err != nil {
		return err
	}
	_, p, err := h.store.DeviceLink(ctx, token)
	if err != nil {
		return err
	}
	u, err := h.user(ctx, p.ID)
	if err != nil {
		return err
	}
	options, session, err := h.rp.BeginRegistration(u)
	if err != nil {
		return err
	}
	return h.beginCeremony(c, "device-link", core.HashToken(token), options,
		deviceLinkCeremony{PersonID: p.ID, DeviceName: in.DeviceName, Session: session})
}

// DeviceLinkFinish checks the new passkey, stores it for the link's person,
// spending the link, and signs this device in.
func (h *Handlers) DeviceLinkFinish(c echo.Context) error {
	ctx := c.Request().Context()
	token := c.Param("token")
	var reply deviceFinish
	if err := readJSON(c, &reply, maxWebBody); err != nil {
		return err
	}
	var st deviceLinkCeremony
	if err := h.takeCeremony(c, reply.Ceremony, "device-link", core.HashToken(token), &st); err != nil {
		return err
	}
	p, err := h.store.PersonByID(ctx, st.PersonID)
	if err != nil {
		return err
	}
	u := &passkey.User{ID: p.ID, Subject: p.Subject, DisplayName: p.DisplayName}
	key, err := h.rp.FinishRegistration(u, st.Session, reply.Credential, deviceName(st.DeviceName, c))
	if err != nil {
		return err
	}
	added, err := h.store.AddAuthorisedDeviceKey(ctx, people.DeviceGrantUse{Token: token, Kind: people.GrantLink}, *key, reply.PushEndpoint)
	if err != nil {
		return err
	}
	if err := h.signInFirstAccount(c, added.PersonID); err != nil {
		return err
	}
	h.setFlash(c, "passkey-added")
	return c.JSON(http.StatusOK, map[string]string{"redirect": "/"})
}
