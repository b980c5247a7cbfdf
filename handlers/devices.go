package handlers

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/passkey"
	"github.com/countersign/countersign/views"
)

// Devices lists the signed-in person's passkeys and the browsers that get
// their notifications.
func (h *Handlers) Devices(c echo.Context) error {
	return h.devicesPage(c, http.StatusOK, "")
}

func (h *Handlers) devicesPage(c echo.Context, status int, refusal string) error {
	v := viewerOf(c)
	keys, err := h.store.DeviceKeys(c.Request().Context(), v.member.ID)
	if err != nil {
		return err
	}
	subs, err := h.store.PushSubscriptions(c.Request().Context(), v.member.ID)
	if err != nil {
		return err
	}
	view := views.DevicesView{Error: refusal, Push: views.PushView{PublicKey: h.push.PublicKey}}
	for _, k := range keys {
		view.Keys = append(view.Keys, views.DeviceRow{ID: k.ID, Name: k.Name, CreatedAt: k.CreatedAt, LastUsedAt: k.LastUsedAt, BackedUp: k.BackedUp})
	}
	for _, s := range subs {
		sum := sha256.Sum256([]byte(s.Endpoint))
		view.Push.Devices = append(view.Push.Devices, views.PushDeviceRow{ID: s.ID, EndpointSHA256: hex.EncodeToString(sum[:]),
			UserAgent: s.UserAgent, CreatedAt: s.CreatedAt, LastSuccessAt: s.LastSuccessAt, Failures: s.Failures})
	}
	return h.render(c, status, views.Devices(h.page(c, "Devices", "devices"), view))
}

type deviceBegin struct {
	DeviceName string `json:"device_name"`
}

// deviceCeremony is kept server-side between the two halves of adding a passkey.
type deviceCeremony struct {
	DeviceName string          `json:"device_name"`
	Session    json.RawMessage `json:"session"`
}

// DeviceAddBegin answers the options of another passkey for the signed-in
// person; the passkeys they have are excluded.
func (h *Handlers) DeviceAddBegin(c echo.Context) error {
	ctx := c.Request().Context()
	v := viewerOf(c)
	var in deviceBegin
	if err := readJSON(c, &in); err != nil {
		return err
	}
	if err := checkName("device_name", in.DeviceName); err != nil {
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
	state, _ := json.Marshal(deviceCeremony{DeviceName: in.DeviceName, Session: session})
	id, err := h.store.SaveCeremony(ctx, "device", v.member.ID, state)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"ceremony": id, "options": options})
}

// DeviceAddFinish checks the new passkey and stores it for the person who
// began the ceremony.
func (h *Handlers) DeviceAddFinish(c echo.Context) error {
	ctx := c.Request().Context()
	v := viewerOf(c)
	var reply ceremonyReply
	if err := readJSON(c, &reply); err != nil {
		return err
	}
	raw, personID, err := h.store.TakeCeremony(ctx, reply.Ceremony, "device")
	if err != nil {
		return err
	}
	if personID != v.member.ID {
		return models.Refuse(models.PermissionDenied, "ceremony", "this passkey prompt was made for another person; start again")
	}
	var st deviceCeremony
	if err := json.Unmarshal(raw, &st); err != nil {
		return err
	}
	p, err := h.store.PersonByID(ctx, v.member.ID)
	if err != nil {
		return err
	}
	u := &passkey.User{ID: p.ID, Subject: p.Subject, DisplayName: p.DisplayName}
	key, err := h.rp.FinishRegistration(u, st.Session, reply.Credential, deviceName(st.DeviceName, c))
	if err != nil {
		return err
	}
	if err := h.store.AddDeviceKey(ctx, v.member.ID, *key); err != nil {
		return err
	}
	h.setFlash(c, "passkey-added")
	return c.JSON(http.StatusOK, map[string]string{"redirect": "/devices"})
}

// DeviceRename names one of the person's passkeys.
func (h *Handlers) DeviceRename(c echo.Context) error {
	err := h.store.RenameDeviceKey(c.Request().Context(), viewerOf(c).member.ID, c.Param("id"), c.FormValue("name"))
	if msg, status, ok := refusalOf(err); ok {
		return h.devicesPage(c, status, msg)
	}
	if err != nil {
		return err
	}
	return h.redirectWithFlash(c, "/devices", "passkey-renamed")
}

// DeviceRemove retires one of the person's passkeys; the last one stays.
func (h *Handlers) DeviceRemove(c echo.Context) error {
	err := h.store.RemoveDeviceKey(c.Request().Context(), viewerOf(c).member.ID, c.Param("id"))
	if msg, status, ok := refusalOf(err); ok {
		return h.devicesPage(c, status, msg)
	}
	if err != nil {
		return err
	}
	return h.redirectWithFlash(c, "/devices", "passkey-removed")
}

// setFlash leaves a notice for the next page the browser loads, for calls
// answered with JSON that the page script follows with a reload.
func (h *Handlers) setFlash(c echo.Context, flash string) {
	c.SetCookie(&http.Cookie{Name: flashCookie, Value: flash, Path: "/", MaxAge: 60, HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: h.secure})
}
