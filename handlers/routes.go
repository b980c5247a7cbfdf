// Package handlers holds Countersign's HTTP surface: pages, JSON and the
// mount point of the MCP endpoint, as Echo routes.
package handlers

import (
	"log/slog"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/countersign/countersign/models"
)

// Handlers carries what every handler needs; it is built once in cmd.
type Handlers struct {
	store *models.Store
	log   *slog.Logger
}

// New builds the handlers.
func New(store *models.Store, log *slog.Logger) *Handlers {
	return &Handlers{store: store, log: log}
}

// Routes builds the Echo app: public routes, and the MCP endpoint for agents.
func (h *Handlers) Routes(mcpEndpoint http.Handler) *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = h.errorHandler
	e.Use(middleware.Recover())
	e.Use(middleware.SecureWithConfig(middleware.SecureConfig{
		XSSProtection: "0", ContentTypeNosniff: "nosniff", XFrameOptions: "DENY",
		ReferrerPolicy: "same-origin", ContentSecurityPolicy: "default-src 'self'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'; object-src 'none'",
	}))

	e.GET("/healthz", h.Health)

	agent := e.Group("/mcp")
	agent.Any("", echo.WrapHandler(mcpEndpoint))
	return e
}

// errorHandler answers every error in one shape; a 500 is logged once, here,
// and shows no internals.
func (h *Handlers) errorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	code := http.StatusInternalServerError
	msg := "something went wrong inside Countersign"
	if he, ok := err.(*echo.HTTPError); ok {
		code = he.Code
		if m, ok := he.Message.(string); ok {
			msg = m
		} else {
			msg = http.StatusText(code)
		}
	} else {
		h.log.Error("request failed", "method", c.Request().Method, "path", c.Path(), "err", err)
	}
	_ = c.JSON(code, map[string]string{"error": msg})
}
