package handlers

import (
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/outbox"
	"github.com/countersign/countersign/push"
)

// maxPushBody bounds what a push call reads: a subscription is well under
// 2 KB (the store refuses endpoints over 2,000 characters).
const maxPushBody = 8 << 10

// subscriptionJSON is a browser's PushSubscription.toJSON().
type subscriptionJSON struct {
	Endpoint string `json:"endpoint"`
	Keys     struct {
		P256dh string `json:"p256dh"`
		Auth   string `json:"auth"`
	} `json:"keys"`
}

// subscription checks that the endpoint is on a push service we post to
// (never an address a client picked) and returns the row to store.
func (h *Handlers) subscription(in subscriptionJSON, field string) (outbox.PushSubscription, error) {
	if !push.Allowed(in.Endpoint, h.push.AllowedHosts) {
		return outbox.PushSubscription{}, core.Invalid(field, "the endpoint is not on a known push service (Apple, Google, Mozilla or Microsoft)")
	}
	return outbox.PushSubscription{Endpoint: in.Endpoint, P256dh: in.Keys.P256dh, Auth: in.Keys.Auth}, nil
}

// pushSubscribed is the answer to a subscription: the stored row, as the
// devices page lists it.
type pushSubscribed struct {
	ID        string    `json:"id"`
	UserAgent string    `json:"user_agent"`
	CreatedAt time.Time `json:"created_at"`
}

// PushSubscribe stores this browser's push subscription for the signed-in
// person, with the browser's User-Agent to tell devices apart.
func (h *Handlers) PushSubscribe(c echo.Context) error {
	var in subscriptionJSON
	if err := readJSON(c, &in, maxPushBody); err != nil {
		return err
	}
	sub, err := h.subscription(in, "endpoint")
	if err != nil {
		return err
	}
	sub.UserAgent = clip(c.Request().UserAgent(), 500)
	saved, err := h.store.SavePushSubscription(c.Request().Context(), viewerOf(c).member.ID, sub)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, pushSubscribed{ID: saved.ID, UserAgent: saved.UserAgent, CreatedAt: saved.CreatedAt})
}

type unsubscribeJSON struct {
	Endpoint string `json:"endpoint"`
}

// PushUnsubscribe turns push off for one browser of the signed-in person.
func (h *Handlers) PushUnsubscribe(c echo.Context) error {
	var in unsubscribeJSON
	if err := readJSON(c, &in, maxPushBody); err != nil {
		return err
	}
	if in.Endpoint == "" {
		return core.Invalid("endpoint", "name the subscription's endpoint")
	}
	if err := h.store.DeletePushSubscription(c.Request().Context(), viewerOf(c).member.ID, in.Endpoint); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]bool{"unsubscribed": true})
}

// PushTest sends a test notification to every device of the signed-in
// person and answers how many that is.
func (h *Handlers) PushTest(c echo.Context) error {
	n, err := h.store.QueueTestPush(c.Request().Context(), viewerOf(c).member.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]int{"devices": n})
}

// clip cuts s to at most n bytes without splitting a character.
func clip(s string, n int) string {
	s = strings.ToValidUTF8(s, "")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
