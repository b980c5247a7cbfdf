package push_test

import (
	"context"
	"io"
	"log/slog"
	"os"

	"github.com/countersign/countersign/app"
)

// openApp opens the service without starting its background workers.
func openApp(ctx context.Context, cfg app.Config) (*app.App, error) {
	return app.Open(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
}

func getenv(name string) string { return os.Getenv(name) }
