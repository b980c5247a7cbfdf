package app

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// ListenApprovals tells this instance's MCP sessions of approvals any
// instance changed (the change's transaction runs
// pg_notify('countersign_approval', id)), reconnecting until ctx ends. With
// SQLite there is one instance and the store tells the endpoint directly.
func (a *App) ListenApprovals(ctx context.Context) {
	for wait := time.Second; ctx.Err() == nil; wait = min(wait*2, time.Minute) {
		if err := a.listenApprovalsOnce(ctx); err != nil && ctx.Err() == nil {
			a.log.Warn("listen for changed approvals; subscribers hear nothing meanwhile", "err", err, "retry_in", wait)
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
}

func (a *App) listenApprovalsOnce(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, a.Config.DatabaseURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN countersign_approval"); err != nil {
		return err
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		a.MCP.ApprovalsChanged([]string{n.Payload})
	}
}
