package core

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"
)

// Turn names work that one instance does for all of them at a time: on
// PostgreSQL the instances take turns at it under a session-level advisory
// lock whose key is the Turn. The keys are the service's own: 7261 is the
// migration lock (Migrate) and 7262 the audit sealer's (AuditSealer).
type Turn int64

// SweepTurn is the expiry sweeper's pass (app.Sweep): expiring due asks,
// deleting expired ceremonies, challenges and web sessions, and ending idle
// agent sessions. Each of these is safe twice at once, but a second instance
// doing the same pass at the same moment only doubles the queries.
const SweepTurn Turn = 7263

// releaseTurnWait bounds the release of a turn, which runs even when the
// caller's context has ended.
const releaseTurnWait = 5 * time.Second

// TakeTurn runs fn if no other instance is at turn's work, and says whether
// it ran: false means another instance has the turn and this one skips its
// pass (its turn comes at its next try). The error is fn's, or why the turn
// could not be taken or given back.
//
// On PostgreSQL the turn is a session-level pg_try_advisory_lock held on one
// connection taken from the pool for the length of fn; fn uses the pool as
// usual, never that connection. The lock is given back when fn ends, even
// when it fails, panics or its context is cancelled; when it cannot be, the
// connection is closed rather than returned to the pool, which ends its
// session and so the lock. A connection that breaks while held loses the lock
// with it: another instance may then start its pass, which is as safe as two
// passes are. On SQLite one process owns the file, and fn simply runs.
func (s *Store) TakeTurn(ctx context.Context, turn Turn, fn func(context.Context) error) (ran bool, err error) {
	if s.dialect != Postgres {
		return true, fn(ctx)
	}
	sqlDB, err := s.db.DB()
	if err != nil {
		return false, fmt.Errorf("take turn %d: %w", turn, err)
	}
	conn, err := sqlDB.Conn(ctx)
	if err != nil {
		return false, fmt.Errorf("take turn %d: %w", turn, err)
	}
	var held bool
	if err := conn.QueryRowContext(ctx, `SELECT pg_try_advisory_lock($1)`, int64(turn)).Scan(&held); err != nil {
		// Whether the lock was taken is unknown: close the session rather
		// than hand the pool a connection that may hold it.
		discard(conn)
		return false, fmt.Errorf("take turn %d: %w", turn, err)
	}
	if !held {
		if err := conn.Close(); err != nil {
			return false, fmt.Errorf("take turn %d: return the connection: %w", turn, err)
		}
		return false, nil
	}
	defer func() {
		if rerr := releaseTurn(ctx, conn, turn); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}()
	return true, fn(ctx)
}

// releaseTurn gives turn back on conn and returns conn to the pool, or, when
// the lock cannot be given back, closes conn, which ends the lock with its
// session.
func releaseTurn(ctx context.Context, conn *sql.Conn, turn Turn) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTurnWait)
	defer cancel()
	var released bool
	if err := conn.QueryRowContext(ctx, `SELECT pg_advisory_unlock($1)`, int64(turn)).Scan(&released); err != nil {
		discard(conn)
		return fmt.Errorf("give back turn %d: %w", turn, err)
	}
	if !released { // not held by this session any more: nothing to give back
		discard(conn)
		return nil
	}
	if err := conn.Close(); err != nil {
		return fmt.Errorf("give back turn %d: return the connection: %w", turn, err)
	}
	return nil
}

// discard closes conn's session instead of returning it to the pool.
func discard(conn *sql.Conn) {
	// database/sql closes a connection whose Raw function answers ErrBadConn;
	// the Close after it only marks conn done, and has nothing left to report.
	_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	_ = conn.Close()
}
