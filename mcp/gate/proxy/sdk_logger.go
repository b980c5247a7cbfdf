package proxy

import (
	"context"
	"log/slog"
)

// sdkLogger is the logger the go-sdk's server gets: log at WARN and above.
// At INFO the SDK writes a line for every session connected, initialized,
// disconnected and ended, which buried the gate's stderr (its audit events,
// its own warnings and the upstream's messages) under its chatter.
func sdkLogger(log *slog.Logger) *slog.Logger {
	return slog.New(atLeast{Handler: log.Handler(), level: slog.LevelWarn})
}

// atLeast passes on the records of its handler at level or above.
type atLeast struct {
	slog.Handler
	level slog.Level
}

func (h atLeast) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.level && h.Handler.Enabled(ctx, l)
}

func (h atLeast) WithAttrs(attrs []slog.Attr) slog.Handler {
	return atLeast{Handler: h.Handler.WithAttrs(attrs), level: h.level}
}

func (h atLeast) WithGroup(name string) slog.Handler {
	return atLeast{Handler: h.Handler.WithGroup(name), level: h.level}
}
