package handlers

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/time/rate"
)

// The cap on passkey ceremonies started without a session, per client
// address: a burst for a person retrying, then one every six seconds. Each
// start stores a ceremony row for five minutes, so one address holds at most
// about 70 of them.
const (
	ceremonyRate  = rate.Limit(1.0 / 6)
	ceremonyBurst = 20
	// ceremonyForget is how long an address's bucket is kept after its last
	// start; by then it is full again.
	ceremonyForget = 10 * time.Minute
)

// addressLimiter is a token bucket per client address, in this process.
type addressLimiter struct {
	limit rate.Limit
	burst int
	mu    sync.Mutex
	by    map[string]*addressBucket
	swept time.Time
}

type addressBucket struct {
	lim  *rate.Limiter
	seen time.Time
}

func newAddressLimiter(limit rate.Limit, burst int) *addressLimiter {
	return &addressLimiter{limit: limit, burst: burst, by: map[string]*addressBucket{}}
}

// wait says how long until addr's bucket holds a token, without spending
// one: zero when it holds one now.
func (l *addressLimiter) wait(addr string, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.by[addr]
	if b == nil {
		return 0
	}
	if tokens := b.lim.TokensAt(now); tokens < 1 {
		return time.Duration((1 - tokens) / float64(l.limit) * float64(time.Second))
	}
	return 0
}

// take spends one token of addr's bucket; when there is none it answers
// how long until there is.
func (l *addressLimiter) take(addr string, now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.swept) > ceremonyForget {
		for a, b := range l.by {
			if now.Sub(b.seen) > ceremonyForget {
				delete(l.by, a)
			}
		}
		l.swept = now
	}
	b := l.by[addr]
	if b == nil {
		b = &addressBucket{lim: rate.NewLimiter(l.limit, l.burst)}
		l.by[addr] = b
	}
	b.seen = now
	r := b.lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

// limitCeremonyStarts caps, per client address (the connection's, or the
// one a trusted proxy names; an IPv6 /64 is one client: see clientKey), the passkey ceremonies
// begun without a session; past the cap it answers 429 with Retry-After.
func (h *Handlers) limitCeremonyStarts(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		ok, wait := h.ceremonies.take(h.clientKey(c.Request()), time.Now())
		if !ok {
			secs := int(math.Ceil(wait.Seconds()))
			c.Response().Header().Set("Retry-After", strconv.Itoa(secs))
			return echo.NewHTTPError(http.StatusTooManyRequests, fmt.Sprintf("too many passkey prompts from this address; try again in %d s", secs))
		}
		return next(c)
	}
}
