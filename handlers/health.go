package handlers

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
)

// Health answers 200 when the database answers, 503 when it does not.
func (h *Handlers) Health(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
	defer cancel()
	if err := h.store.Ping(ctx); err != nil {
		h.log.Warn("health: database does not answer", "err", err)
		return c.JSON(http.StatusServiceUnavailable, map[string]string{"status": "database unavailable"})
	}
	return c.JSON(http.StatusOK, map[string]string{"status": "ok", "database": string(h.store.Dialect())})
}

// CheckReady adds check to what /readyz requires: on PostgreSQL, that the
// change listener is connected.
func (h *Handlers) CheckReady(check func(context.Context) error) { h.ready = check }

// Ready answers 200 when this instance can serve: the database answers, has
// every migration this binary knows, and the extra check (CheckReady)
// passes; else 503 saying which failed. /healthz says only that the process
// and its database live.
func (h *Handlers) Ready(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
	defer cancel()
	checks := []struct {
		name, why string
		check     func(context.Context) error
	}{
		{"database", "the database does not answer", h.store.Ping},
		{"schema", "the database lacks migrations this binary has", h.store.SchemaCurrent},
		{"listener", "the PostgreSQL change listener is not connected", h.ready},
	}
	for _, ch := range checks {
		if ch.check == nil {
			continue
		}
		if err := ch.check(ctx); err != nil {
			h.log.Warn("readyz: not ready", "check", ch.name, "err", err)
			return c.JSON(http.StatusServiceUnavailable, map[string]string{"status": "not ready", "failed": ch.name, "message": ch.why})
		}
	}
	return c.JSON(http.StatusOK, map[string]string{"status": "ready", "database": string(h.store.Dialect())})
}
