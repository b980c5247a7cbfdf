package handlers

import (
	"context"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/channels"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/outbox"
	"github.com/countersign/countersign/views"
)

// ChannelConfig is what the pages need of the channels besides Web Push:
// which of the channels that need the service's own settings are set up
// (email: COUNTERSIGN_SMTP_URL; Slack: COUNTERSIGN_SLACK_BOT_TOKEN), and
// the guard that checks a shared channel's URL (its private hosts are
// COUNTERSIGN_CHANNEL_PRIVATE_HOSTS).
type ChannelConfig struct {
	Email bool
	Slack bool
	Guard channels.Guard
}

// OfferChannels tells the pages which channels the service sends; without
// it, neither email nor Slack is offered.
func (h *Handlers) OfferChannels(cfg ChannelConfig) { h.channels = cfg }

// configured says whether the service sends messages of kind.
func (cfg ChannelConfig) configured(kind string) bool {
	switch kind {
	case outbox.ChannelEmail:
		return cfg.Email
	case outbox.ChannelSlack:
		return cfg.Slack
	}
	return slices.Contains(outbox.SharedKinds, kind)
}

// check refuses a kind of channel the service does not send.
func (cfg ChannelConfig) check(kind string) error {
	if cfg.configured(kind) {
		return nil
	}
	return core.Refuse(core.FailedPrecondition, "kind", "%s is not set up on this service: an admin sets it up (%s)", views.ChannelName(kind), views.ChannelSetting(kind))
}

// personChannelsView is the person's channels besides Web Push: each kind a
// person may choose, whether the service sends it and the address they gave.
func (h *Handlers) personChannelsView(ctx context.Context, accountID, personID string) (views.PersonChannelsView, error) {
	chosen, err := h.store.PersonChannels(ctx, accountID, personID)
	if err != nil {
		return views.PersonChannelsView{}, err
	}
	var out views.PersonChannelsView
	for _, kind := range outbox.PersonKinds {
		o := views.PersonChannelOffer{Kind: kind, Configured: h.channels.configured(kind)}
		for _, c := range chosen {
			if c.Kind == kind {
				o.On, o.Address = true, c.Address
			}
		}
		out.Offers = append(out.Offers, o)
	}
	return out, nil
}

// PersonChannelSet turns one of the person's channels on (email, Slack), or
// changes their address there.
func (h *Handlers) PersonChannelSet(c echo.Context) error {
	v, kind := viewerOf(c), c.Param("kind")
	if !slices.Contains(outbox.PersonKinds, kind) {
		return notAPersonKind(kind)
	}
	address := strings.TrimSpace(c.FormValue("address"))
	err := h.checkPersonChannel(c.Request().Context(), v.account.ID, v.member.ID, kind, address)
	if err == nil {
		err = h.store.SetPersonChannel(c.Request().Context(), v.account.ID, v.member.ID, kind, address)
	}
	if msg, status, ok := refusalOf(err); ok {
		return h.devicesPageWith(c, status, views.DevicesView{Channels: views.PersonChannelsView{Error: msg, ErrorField: core.FieldOf(err), ErrorKind: kind, Typed: address}})
	}
	if err != nil {
		return err
	}
	return h.redirectWithFlash(c, "/devices#channel-"+kind, "channel-on")
}

// notAPersonKind refuses a path that names no channel a person chooses.
func notAPersonKind(kind string) error {
	return core.Refuse(core.NotFound, "kind", "%q is not a channel a person chooses: one of %s", kind, strings.Join(outbox.PersonKinds, ", "))
}

// checkPersonChannel refuses a channel the service does not send, and a
// Slack channel with no member id when there is no email address to find
// the person by; outbox.CheckPersonChannel checks the address itself.
func (h *Handlers) checkPersonChannel(ctx context.Context, accountID, personID, kind, address string) error {
	if err := h.channels.check(kind); err != nil {
		return err
	}
	if kind == outbox.ChannelSlack && address == "" {
		email, err := h.store.EmailOf(ctx, accountID, personID)
		if err != nil {
			return err
		}
		if email == "" {
			return core.Invalid("address", "give your Slack member id (your Slack profile → ⋯ → Copy member ID), or turn email on first: Slack then finds you by that address")
		}
	}
	return nil
}

// PersonChannelRemove turns one of the person's channels off; its messages
// still waiting go.
func (h *Handlers) PersonChannelRemove(c echo.Context) error {
	v, kind := viewerOf(c), c.Param("kind")
	if !slices.Contains(outbox.PersonKinds, kind) {
		return notAPersonKind(kind)
	}
	if err := h.store.RemovePersonChannel(c.Request().Context(), v.account.ID, v.member.ID, kind); err != nil {
		return err
	}
	return h.redirectWithFlash(c, "/devices#channel-"+kind, "channel-off")
}

// PersonChannelTest queues a test message to one of the person's channels.
func (h *Handlers) PersonChannelTest(c echo.Context) error {
	v, kind := viewerOf(c), c.Param("kind")
	if !slices.Contains(outbox.PersonKinds, kind) {
		return notAPersonKind(kind)
	}
	err := h.channels.check(kind)
	if err == nil {
		err = h.store.QueueTestMessage(c.Request().Context(), v.account.ID, v.member.ID, kind)
	}
	if msg, status, ok := refusalOf(err); ok {
		return h.devicesPageWith(c, status, views.DevicesView{Channels: views.PersonChannelsView{Error: msg, ErrorField: core.FieldOf(err), ErrorKind: kind}})
	}
	if err != nil {
		return err
	}
	return h.redirectWithFlash(c, "/devices#channel-"+kind, "channel-test")
}
