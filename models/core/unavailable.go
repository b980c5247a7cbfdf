package core

import (
	"database/sql/driver"
	"errors"
	"net"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

// DatabaseUnavailable says whether err means the database could not be
// reached or is restarting, rather than that the request was wrong or
// Countersign broke: the caller may retry in a moment. Callers answer it
// as "unavailable, retry" instead of an internal error.
func DatabaseUnavailable(err error) bool {
	if err == nil {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code[:2] {
		case "08", "57": // connection exceptions; operator intervention (admin_shutdown, crash_shutdown, cannot_connect_now)
			return true
		}
		return false
	}
	var connect *pgconn.ConnectError
	var netErr *net.OpError
	return errors.As(err, &connect) || errors.As(err, &netErr) || errors.Is(err, driver.ErrBadConn) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		pgconn.SafeToRetry(err)
}
