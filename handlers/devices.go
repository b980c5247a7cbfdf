package handlers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models/people"
	"github.com/countersign/countersign/views"
)

// Devices lists the signed-in person's passkeys and the browsers that get
// their notifications.
func (h *Handlers) Devices(c echo.Context) error {
	return h.devicesPage(c, http.StatusOK, "")
}

func (h *Handlers) devicesPage(c echo.Context, status int, refusal string) error {
	return h.devicesPageWith(c, status, views.DevicesView{Error: refusal})
}

// devicesPageWith renders the devices page over view, which may carry a
// refusal: above the cards, or at the field of a channel's form.
func (h *Handlers) devicesPageWith(c echo.Context, status int, view views.DevicesView) error {
	v := viewerOf(c)
	keys, err := h.store.DeviceKeys(c.Request().Context(), v.member.ID)
	if err != nil {
		return err
	}
	ever, err := h.store.DeviceKeysEver(c.Request().Context(), v.member.ID)
	if err != nil {
		return err
	}
	names := map[string]string{}
	for _, k := range ever {
		names[k.ID] = k.Name
		if k.RemovedAt != nil {
			names[k.ID] += " (removed since)"
		}
	}
	push, err := h.pushView(c.Request().Context(), v.member.ID)
	if err != nil {
		return err
	}
	view.Push = push
	own, err := h.personChannelsView(c.Request().Context(), v.account.ID, v.member.ID)
	if err != nil {
		return err
	}
	own.Error, own.ErrorField, own.ErrorKind, own.Typed = view.Channels.Error, view.Channels.ErrorField, view.Channels.ErrorKind, view.Channels.Typed
	view.Channels = own
	if view.Away, err = h.awayView(c.Request().Context(), v.member); err != nil {
		return err
	}
	for _, k := range keys {
		view.Keys = append(view.Keys, views.DeviceRow{ID: k.ID, Name: k.Name, CreatedAt: k.CreatedAt, LastUsedAt: k.LastUsedAt, BackedUp: k.BackedUp,
			AddedBy: k.AddedBy, AddedByName: names[k.AddedBy]})
	}
	clients, err := h.store.ConnectedClients(c.Request().Context(), v.account.ID, v.member.ID)
	if err != nil {
		return err
	}
	for _, cl := range clients {
		view.Clients = append(view.Clients, views.ConnectedClientRow{AgentID: cl.AgentID, AgentName: cl.AgentName, ClientName: cl.ClientName,
			RedirectHost: cl.RedirectHost, Scopes: cl.Scopes, Unverified: !cl.Verified, Disabled: cl.Disabled, CreatedAt: cl.CreatedAt})
	}
	return h.render(c, status, views.Devices(h.page(c, "Devices", "devices"), view))
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

// setFlash leaves a notice for the next page the browser loads, for calls
// answered with JSON that the page script follows with a reload.
func (h *Handlers) setFlash(c echo.Context, flash string) {
	c.SetCookie(&http.Cookie{Name: flashCookie, Value: flash, Path: "/", MaxAge: 60, HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: h.secure})
}

// awayView reads the person's away status and the members they may name
// as their delegate.
func (h *Handlers) awayView(ctx context.Context, m *people.Member) (views.AwayView, error) {
	var out views.AwayView
	w, err := h.store.AwayOf(ctx, m)
	if err != nil {
		return out, err
	}
	if w != nil {
		out.Until, out.Delegate = &w.Until, w.DelegateSubject
	}
	members, err := h.store.Members(ctx, m.AccountID)
	if err != nil {
		return out, err
	}
	for _, o := range members {
		if o.ID != m.ID {
			out.Members = append(out.Members, views.AwayDelegate{Subject: o.Subject, Role: string(o.Role)})
		}
	}
	out.Suggest = h.store.Now().Add(24 * time.Hour).UTC().Format("2006-01-02T15:04")
	return out, nil
}

// pushView is the person's notifications: the key a browser subscribes
// with and their subscribed devices, for the Devices page and the empty
// inbox.
func (h *Handlers) pushView(ctx context.Context, personID string) (views.PushView, error) {
	subs, err := h.store.PushSubscriptions(ctx, personID)
	if err != nil {
		return views.PushView{}, err
	}
	out := views.PushView{PublicKey: h.push.PublicKey}
	for _, s := range subs {
		sum := sha256.Sum256([]byte(s.Endpoint))
		out.Devices = append(out.Devices, views.PushDeviceRow{ID: s.ID, EndpointSHA256: hex.EncodeToString(sum[:]),
			UserAgent: s.UserAgent, CreatedAt: s.CreatedAt, LastSuccessAt: s.LastSuccessAt, Failures: s.Failures})
	}
	return out, nil
}
