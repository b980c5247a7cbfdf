package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// requestTimeout bounds one request, so a stuck call cannot hold a client past the run.
const requestTimeout = 30 * time.Second

// phase is what one measured run of N clients gave.
type phase struct {
	name     string
	clients  int
	ok       int64
	errs     int64
	elapsed  time.Duration   // from the start of measuring to the last recorded answer
	cpu      time.Duration   // CPU time this process used while measuring
	latency  []time.Duration // of the successful requests, sorted
	failures map[string]int  // error text → count
}

// throughput is successful requests per second.
func (p phase) throughput() float64 {
	if p.elapsed <= 0 {
		return 0
	}
	return float64(p.ok) / p.elapsed.Seconds()
}

// cpuPerRequest is the process CPU time spent per recorded request: the cost
// of one request whatever else runs on the machine.
func (p phase) cpuPerRequest() time.Duration {
	if n := p.ok + p.errs; n > 0 {
		return p.cpu / time.Duration(n)
	}
	return 0
}

// percentile returns the nearest-rank q-quantile (0 < q ≤ 1) of the latencies.
func (p phase) percentile(q float64) time.Duration {
	if len(p.latency) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(p.latency)))) - 1
	return p.latency[max(0, min(i, len(p.latency)-1))]
}

// writeAllocs writes the allocation profile of the process so far.
func writeAllocs(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("allocation profile: %w", err)
	}
	defer f.Close()
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		return fmt.Errorf("allocation profile: %w", err)
	}
	return f.Close()
}

// request is one call by client c; n is unique across all clients of the run.
type request func(ctx context.Context, c int, n int64) error

// drive runs clients loops of do: during warmup nothing is recorded, then for
// duration every request that started is timed. No client starts a request
// after the deadline, so the run ends by itself. With profile set, a CPU
// profile of the whole run is written there, and beside it (.allocs.pprof) the
// allocation profile of the process.
func drive(ctx context.Context, name string, clients int, warmup, duration time.Duration, profile string, do request) (phase, error) {
	if profile != "" {
		f, err := os.Create(profile)
		if err != nil {
			return phase{}, fmt.Errorf("cpu profile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return phase{}, fmt.Errorf("cpu profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	type tally struct {
		ok, errs int64
		last     time.Time
		latency  []time.Duration
		failures map[string]int
	}
	var (
		seq      atomic.Int64
		wg       sync.WaitGroup
		tallies  = make([]tally, clients)
		from     = time.Now().Add(warmup)
		deadline = from.Add(duration)
	)
	cpuFrom := make(chan time.Duration, 1)
	go func() {
		time.Sleep(time.Until(from))
		cpuFrom <- processCPU()
	}()
	for c := range clients {
		wg.Go(func() {
			t := &tallies[c]
			t.failures = map[string]int{}
			for ctx.Err() == nil {
				start := time.Now()
				if !start.Before(deadline) {
					return
				}
				rctx, cancel := context.WithTimeout(ctx, requestTimeout)
				err := do(rctx, c, seq.Add(1))
				cancel()
				end := time.Now()
				if start.Before(from) {
					continue
				}
				if end.After(t.last) {
					t.last = end
				}
				if err != nil {
					t.errs++
					t.failures[err.Error()]++
					continue
				}
				t.ok++
				t.latency = append(t.latency, end.Sub(start))
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return phase{}, fmt.Errorf("%s: %w", name, err)
	}
	if profile != "" {
		if err := writeAllocs(strings.TrimSuffix(profile, ".pprof") + ".allocs.pprof"); err != nil {
			return phase{}, err
		}
	}
	cpu := processCPU() - <-cpuFrom
	p := phase{name: name, clients: clients, cpu: cpu, failures: map[string]int{}}
	last := from
	for _, t := range tallies {
		p.ok += t.ok
		p.errs += t.errs
		p.latency = append(p.latency, t.latency...)
		for k, v := range t.failures {
			p.failures[k] += v
		}
		if t.last.After(last) {
			last = t.last
		}
	}
	p.elapsed = last.Sub(from)
	slices.Sort(p.latency)
	return p, nil
}
