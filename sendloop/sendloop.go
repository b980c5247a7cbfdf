// Package sendloop drains a durable outbox: it claims what is due, sends it
// with a bounded number of workers, and sleeps until the next item is due
// or it is woken. The push sender and the channel sender both run on it; it
// also holds the waits they share: the backoff between tries and a
// Retry-After header read.
package sendloop

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Loop is one outbox's drain.
type Loop[T any] struct {
	Name    string // for the log: "pushes", "channel messages"
	Workers int
	// Claim leases up to n items that are due.
	Claim func(ctx context.Context, n int) ([]T, error)
	// NextDue says when the earliest item is due, zero when none is.
	NextDue func(ctx context.Context) (time.Time, error)
	// Send sends one claimed item and records its outcome.
	Send func(ctx context.Context, item *T)
	Wake <-chan struct{}
	Log  *slog.Logger
}

// Run drains until ctx ends, and returns once every send it began is over.
// A full claim is followed at once by the next; otherwise it waits for the
// next item due (a second at most), or a wake.
func (l Loop[T]) Run(ctx context.Context) {
	batch := l.Workers * 4
	sem := make(chan struct{}, l.Workers)
	var wg sync.WaitGroup
	defer wg.Wait()
	for ctx.Err() == nil {
		items, err := l.Claim(ctx, batch)
		if err != nil && ctx.Err() == nil {
			l.Log.Error("claim "+l.Name, "err", err)
		}
		for i := range items {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				l.Send(ctx, &items[i])
			})
		}
		if len(items) == batch {
			continue
		}
		wait := time.Second
		if next, err := l.NextDue(ctx); err == nil && !next.IsZero() {
			wait = min(max(time.Until(next), 10*time.Millisecond), wait)
		}
		select {
		case <-ctx.Done():
		case <-l.Wake:
		case <-time.After(wait):
		}
	}
}

// Backoff is the wait before try attempt+1: doubling from base, at most ten
// minutes, with ±50% jitter so retries do not arrive together.
func Backoff(base time.Duration, attempt int) time.Duration {
	d := min(base<<min(max(attempt-1, 0), 20), 10*time.Minute)
	return time.Duration(float64(d) * (0.5 + rand.Float64()))
}

// RetryAfter reads a Retry-After header: seconds, or an HTTP date.
func RetryAfter(h string, now time.Time) time.Duration {
	if h == "" {
		return 0
	}
	if secs, err := strconv.Atoi(strings.TrimSpace(h)); err == nil && secs > 0 {
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil {
		return t.Sub(now)
	}
	return 0
}
