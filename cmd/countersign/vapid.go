package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/countersign/countersign/app"
	"github.com/countersign/countersign/push"
)

// vapidCommand prints the service's VAPID public key, making the key pair
// first if the service has never started.
func vapidCommand(ctx context.Context, cfg app.Config, out io.Writer) error {
	store, err := app.OpenStore(ctx, cfg, slog.Default())
	if err != nil {
		return err
	}
	keys, err := push.LoadKeys(ctx, store)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, keys.Public)
	return nil
}
