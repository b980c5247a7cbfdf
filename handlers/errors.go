package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/views"
)

// statusOf maps a refusal code to its HTTP status.
var statusOf = map[core.Code]int{
	core.InvalidArgument:    http.StatusBadRequest,
	core.NotFound:           http.StatusNotFound,
	core.PermissionDenied:   http.StatusForbidden,
	core.FailedPrecondition: http.StatusConflict,
	core.ResourceExhausted:  http.StatusTooManyRequests,
}

// wantsJSON says whether the client reads JSON rather than a page.
func wantsJSON(c echo.Context) bool {
	r := c.Request()
	return strings.Contains(r.Header.Get("Accept"), "application/json") ||
		strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") ||
		strings.HasSuffix(r.URL.Path, ".json")
}

// errorHandler answers every error in one shape: JSON {error, field, message}
// for scripts, an error page for people. A 500 is logged once, here, and
// shows no internals.
func (h *Handlers) errorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	status, code, field, msg := http.StatusInternalServerError, "INTERNAL", "", "Something went wrong inside Countersign. Try again in a moment."
	var refusal *core.Error
	var he *echo.HTTPError
	var over *http.MaxBytesError
	switch {
	case errors.As(err, &over):
		status, code, msg = http.StatusRequestEntityTooLarge, "REQUEST_ENTITY_TOO_LARGE", fmt.Sprintf("the request body is over %d bytes", over.Limit)
	case errors.As(err, &refusal):
		status, code, field, msg = statusOf[refusal.Code], string(refusal.Code), refusal.Field, refusal.Msg
	case core.DatabaseUnavailable(err):
		status, code, msg = http.StatusServiceUnavailable, "UNAVAILABLE", "The database is unavailable for a moment. Try again in a few seconds."
		c.Response().Header().Set("Retry-After", "5")
		h.log.Warn("request failed: the database is unavailable", "method", c.Request().Method, "path", c.Path(), "err", err)
	case errors.As(err, &he):
		status, code = he.Code, strings.ToUpper(strings.ReplaceAll(http.StatusText(he.Code), " ", "_"))
		if m, ok := he.Message.(string); ok {
			msg = m
		} else {
			msg = http.StatusText(he.Code)
		}
	case errors.Is(err, context.Canceled) || errors.Is(c.Request().Context().Err(), context.Canceled):
		return // the client went away: no answer reaches it, and nothing failed here
	default:
		h.log.Error("request failed", "method", c.Request().Method, "path", c.Path(), "err", err)
	}
	if wantsJSON(c) || c.Path() == "/mcp" {
		_ = c.JSON(status, map[string]string{"error": code, "field": field, "message": msg})
		return
	}
	_ = h.render(c, status, views.ErrorPage(h.page(c, http.StatusText(status), ""), status, msg))
}
