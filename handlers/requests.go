package handlers

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"regexp"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/requestlog"
)

// RequestObserver hears of every answered request, for metrics: its route
// (the pattern, so the label stays bounded) and status. It must not block.
type RequestObserver interface {
	HTTPRequest(route string, status int)
}

// Observe has every request counted by o.
func (h *Handlers) Observe(o RequestObserver) { h.observer = o }

// HeaderRequestID carries a request's id, to the client and in the log.
const HeaderRequestID = "X-Request-Id"

// clientRequestID is an id a proxy in front may have set, taken as it is
// when it looks like one; anything else is replaced.
var clientRequestID = regexp.MustCompile(`^[A-Za-z0-9._-]{8,64}$`)

// StatusClientClosedRequest is the status logged for a request whose
// client went away before the answer (nginx's 499): not a server error.
const StatusClientClosedRequest = 499

// logRequests logs each request once, when it ends, with its id (echoed in
// X-Request-Id), route, path (its one-time secrets hashed: requestlog.Path;
// never the query), status and duration, and for /mcp the tool and the
// agent; it answers errors through the error handler first, so the status
// logged is the one sent. A request the client abandoned is logged at INFO
// with 499, never at ERROR.
func (h *Handlers) logRequests(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		req := c.Request()
		id := req.Header.Get(HeaderRequestID)
		if !clientRequestID.MatchString(id) {
			b := make([]byte, 8)
			_, _ = rand.Read(b)
			id = hex.EncodeToString(b)
		}
		c.Response().Header().Set(HeaderRequestID, id)
		ctx, note := requestlog.With(req.Context())
		c.SetRequest(req.WithContext(ctx))
		err := next(c)
		canceled := errors.Is(err, context.Canceled) || (err != nil && errors.Is(ctx.Err(), context.Canceled))
		if err != nil && !canceled {
			c.Error(err)
		}
		status := c.Response().Status
		level := slog.LevelInfo
		switch {
		case canceled:
			status = StatusClientClosedRequest
		case status >= 500:
			level = slog.LevelWarn
		}
		attrs := []any{"id", id, "method", req.Method, "route", c.Path(), "path", requestlog.Path(req.URL.Path, secretParams(c)...), "status", status,
			"ms", time.Since(start).Milliseconds()}
		if tool, agent := note.Fields(); agent != "" {
			attrs = append(attrs, "tool", tool, "agent", agent)
		}
		h.log.Log(ctx, level, "request", attrs...)
		if h.observer != nil {
			h.observer.HTTPRequest(c.Path(), status)
		}
		return nil
	}
}

// secretParams are the values of the route's parameters that are one-time
// secrets (the token of /invite/:token, /add-device/:token, /link/:id/:token),
// which the request's log line holds hashed.
func secretParams(c echo.Context) []string {
	var secrets []string
	for i, name := range c.ParamNames() {
		if name == "token" && i < len(c.ParamValues()) {
			secrets = append(secrets, c.ParamValues()[i])
		}
	}
	return secrets
}
