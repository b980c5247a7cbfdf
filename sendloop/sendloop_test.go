package sendloop_test

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/sendloop"
)

// Run sends every item claimed, a full claim followed at once by the next,
// never more at once than its workers, and a wake starts a pass at once.
func TestALoopSendsEveryClaimedItemWithItsWorkersAtMost(t *testing.T) {
	var mu sync.Mutex
	queue := make([]int, 100)
	for i := range queue {
		queue[i] = i
	}
	var sent, inFlight, most atomic.Int32
	wake := make(chan struct{}, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		sendloop.Loop[int]{Name: "test", Workers: 3, Wake: wake, Log: slog.New(slog.DiscardHandler),
			Claim: func(_ context.Context, n int) ([]int, error) {
				mu.Lock()
				defer mu.Unlock()
				n = min(n, len(queue))
				out := queue[:n]
				queue = queue[n:]
				return out, nil
			},
			NextDue: func(context.Context) (time.Time, error) { return time.Time{}, nil },
			Send: func(_ context.Context, _ *int) {
				now := inFlight.Add(1)
				for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
				}
				time.Sleep(time.Millisecond)
				inFlight.Add(-1)
				sent.Add(1)
			},
		}.Run(ctx)
	}()
	for deadline := time.Now().Add(10 * time.Second); sent.Load() < 100 && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
	}
	mu.Lock()
	queue = append(queue, 100)
	mu.Unlock()
	wake <- struct{}{}
	for deadline := time.Now().Add(10 * time.Second); sent.Load() < 101 && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
	}
	cancel()
	<-done
	if sent.Load() != 101 || most.Load() > 3 {
		t.Errorf("sent %d (want 101), at most %d at once (want 3 or fewer)", sent.Load(), most.Load())
	}
}

func TestTheWaitsOfARetry(t *testing.T) {
	for attempt := 1; attempt <= 30; attempt++ {
		d := sendloop.Backoff(time.Second, attempt)
		base := min(time.Second<<min(attempt-1, 20), 10*time.Minute)
		if d < base/2 || d > base*3/2 {
			t.Errorf("try %d waits %s, want %s ± 50%%", attempt, d, base)
		}
	}
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	for h, want := range map[string]time.Duration{"": 0, "2": 2 * time.Second, " 30 ": 30 * time.Second, "0": 0, "soon": 0,
		now.Add(90 * time.Second).Format(http.TimeFormat): 90 * time.Second} {
		if got := sendloop.RetryAfter(h, now); got != want {
			t.Errorf("Retry-After %q = %s, want %s", h, got, want)
		}
	}
}
