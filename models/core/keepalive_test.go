package core_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
)

// keepalives reads the TCP keepalive settings of one session: the server's
// values, in seconds and (tcp_user_timeout) milliseconds; 0 is the kernel's.
const keepalives = `SELECT current_setting('tcp_keepalives_idle'), current_setting('tcp_keepalives_interval'),
	current_setting('tcp_keepalives_count'), current_setting('tcp_user_timeout')`

// Every PostgreSQL session of an instance, its pool's and its listener's,
// asks the server to probe it, so that the server ends it (and the locks it
// holds, a sweep turn among them) within about 25 s of its host dying,
// rather than after the kernel's two hours; what the database URL sets
// itself is kept.
func TestEveryPostgreSQLSessionAsksForKeepalives(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		if db == apptest.SQLite {
			t.Skip("SQLite has no sessions over TCP")
		}
		ctx := context.Background()
		for _, c := range []struct {
			name, query string
			want        [4]string
		}{
			{"by default", "", [4]string{"10", "5", "3", "25000"}},
			{"but what the URL sets", "tcp_keepalives_idle=60&tcp_user_timeout=40000", [4]string{"60", "5", "3", "40000"}},
		} {
			t.Run(c.name, func(t *testing.T) {
				cfg := apptest.Config(t, db, nil)
				if c.query != "" {
					cfg.DatabaseURL += "&" + c.query
				}
				_, sqlDB := apptest.OpenStore(t, cfg)
				// Two sessions of the pool at once, so that neither is the other.
				tx1, err := sqlDB.BeginTx(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer tx1.Rollback()
				tx2, err := sqlDB.BeginTx(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer tx2.Rollback()
				for i, tx := range []*sql.Tx{tx1, tx2} {
					var got [4]string
					if err := tx.QueryRowContext(ctx, keepalives).Scan(&got[0], &got[1], &got[2], &got[3]); err != nil {
						t.Fatal(err)
					}
					if got != c.want {
						t.Errorf("pool session %d: keepalive idle, interval, count, user timeout = %q, want %q", i+1, got, c.want)
					}
				}

				// The listener connects through the same configuration.
				pgcfg, err := core.PostgresConfig(cfg.DatabaseURL)
				if err != nil {
					t.Fatal(err)
				}
				conn, err := pgx.ConnectConfig(ctx, pgcfg)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close(ctx)
				var got [4]string
				if err := conn.QueryRow(ctx, keepalives).Scan(&got[0], &got[1], &got[2], &got[3]); err != nil {
					t.Fatal(err)
				}
				if got != c.want {
					t.Errorf("a connection of PostgresConfig: keepalive idle, interval, count, user timeout = %q, want %q", got, c.want)
				}
			})
		}
	})
}
