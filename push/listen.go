package push

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// ListenPostgres wakes the sender whenever any instance queues a push (the
// outbox transaction runs pg_notify('countersign_push')), reconnecting until
// ctx ends. With SQLite there is one instance and Wake is called directly.
func (s *Sender) ListenPostgres(ctx context.Context, databaseURL string) {
	for wait := time.Second; ctx.Err() == nil; wait = min(wait*2, time.Minute) {
		if err := s.listenOnce(ctx, databaseURL); err != nil && ctx.Err() == nil {
			s.log.Warn("listen for pushes; polling meanwhile", "err", err, "retry_in", wait)
		}
		s.Wake()
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
}

func (s *Sender) listenOnce(ctx context.Context, databaseURL string) error {
	conn, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN countersign_push"); err != nil {
		return err
	}
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return err
		}
		s.Wake()
	}
}
