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
