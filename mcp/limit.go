package mcp

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/countersign/countersign/models/core"
)

// AskRate is how many asks one requester may file per period ("60/m").
type AskRate struct {
	N      int
	Period time.Duration
}

// ParseAskRate reads "N/s", "N/m" or "N/h".
func ParseAskRate(s string) (AskRate, error) {
	n, unit, ok := strings.Cut(strings.TrimSpace(s), "/")
	count, err := strconv.Atoi(n)
	if !ok || err != nil || count < 1 {
		return AskRate{}, fmt.Errorf("%q is not a rate like 60/m (a positive count per s, m or h)", s)
	}
	period := map[string]time.Duration{"s": time.Second, "m": time.Minute, "h": time.Hour}[unit]
	if period == 0 {
		return AskRate{}, fmt.Errorf("%q is not a rate like 60/m: the period is s, m or h", s)
	}
	return AskRate{N: count, Period: period}, nil
}

func (r AskRate) String() string {
	return fmt.Sprintf("%d/%s", r.N, map[time.Duration]string{time.Second: "s", time.Minute: "m", time.Hour: "h"}[r.Period])
}

// askLimiter is a token bucket per requester, in this process: each
// requester holds up to burst asks, refilled at rate.
type askLimiter struct {
	rate  AskRate
	burst int
	mu    sync.Mutex
	by    map[string]*rate.Limiter
}

func newAskLimiter(r AskRate, burst int) *askLimiter {
	if r.N == 0 {
		r = AskRate{N: 60, Period: time.Minute}
	}
	if burst < 1 {
		burst = 20
	}
	return &askLimiter{rate: r, burst: burst, by: map[string]*rate.Limiter{}}
}

// allow takes one ask from the requester's bucket, or says when to retry.
// The returned undo gives the ask back, for a call that filed nothing.
func (l *askLimiter) allow(agentID string) (undo func(), err error) {
	l.mu.Lock()
	lim, ok := l.by[agentID]
	if !ok {
		lim = rate.NewLimiter(rate.Limit(float64(l.rate.N)/l.rate.Period.Seconds()), l.burst)
		l.by[agentID] = lim
	}
	l.mu.Unlock()
	now := time.Now()
	r := lim.ReserveN(now, 1)
	if wait := r.DelayFrom(now); wait > 0 {
		r.CancelAt(now)
		return nil, core.Refuse(core.ResourceExhausted, "", "asks are limited to %s per requester (burst %d); retry in %d s",
			l.rate, l.burst, int(math.Ceil(wait.Seconds())))
	}
	// Cancelling as of the moment of the reservation gives its token back
	// whole; a cancel as of later would give nothing back for a token that
	// was available at once.
	return func() { r.CancelAt(now) }, nil
}
