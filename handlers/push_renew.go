package handlers

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/countersign/countersign/models/core"
)

// Renewals allowed per client address: a browser rotates its subscription
// rarely, so a few a minute is plenty and guessing is slow.
const (
	renewRate  = 0.2 // per second
	renewBurst = 10
)

type renewJSON struct {
	OldEndpoint  string           `json:"old_endpoint"`
	OldAuth      string           `json:"old_auth"`
	Subscription subscriptionJSON `json:"subscription"`
}

// PushRenew replaces a subscription the browser rotated, from the service
// worker's pushsubscriptionchange. It has no session and no CSRF token: the
// old endpoint with its auth secret, which only that browser and this
// server know, prove it. An unknown pair is NOT_FOUND and changes nothing.
func (h *Handlers) PushRenew(c echo.Context) error {
	if c.Request().Header.Get("Sec-Fetch-Site") == "cross-site" {
		return echo.NewHTTPError(http.StatusForbidden, "cross-site request refused")
	}
	var in renewJSON
	if err := readJSON(c, &in, maxPushBody); err != nil {
		return err
	}
	if in.OldEndpoint == "" || in.OldAuth == "" {
		return core.Invalid("old_endpoint", "name the old subscription's endpoint and auth secret")
	}
	sub, err := h.subscription(in.Subscription, "subscription.endpoint")
	if err != nil {
		return err
	}
	if err := h.store.RenewPushSubscription(c.Request().Context(), in.OldEndpoint, in.OldAuth, sub); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]bool{"renewed": true})
}

// renewLimits bound /push/renew, which anyone can call: a rate per client
// address (see clientKey: an IPv6 /64 is one client).
func (h *Handlers) renewLimits() []echo.MiddlewareFunc {
	store := middleware.NewRateLimiterMemoryStoreWithConfig(middleware.RateLimiterMemoryStoreConfig{
		Rate: renewRate, Burst: renewBurst, ExpiresIn: 10 * time.Minute,
	})
	return []echo.MiddlewareFunc{middleware.RateLimiterWithConfig(middleware.RateLimiterConfig{
		Store: store,
		IdentifierExtractor: func(c echo.Context) (string, error) {
			return h.clientKey(c.Request()), nil
		},
		DenyHandler: func(echo.Context, string, error) error {
			return core.Refuse(core.ResourceExhausted, "", "too many subscription renewals from this address; try again in a minute")
		},
	})}
}
