package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/countersign/countersign/models/asks"

	"github.com/countersign/countersign/models/core"
)

// The waiting run (-waiting N, -timelines M) measures what agents cost while
// they wait for a person: N MCP sessions, each subscribed to its own open ask
// with its GET stream open, and M live web timelines of open asks. The
// service runs in this process and the agents and timelines in a child
// process (this binary again, see waitingChild), so that this process's
// memory is the server's alone and each side holds only its own ends of the
// connections (a process here may hold 20,000 open files). Then it decides a
// sample of the asks while all wait and times each decision's notice, from
// the commit to its arrival at the agent (notifications/resources/updated)
// and at the timeline (the SSE event).

// childEnv names the child's settings; set, this binary is the child.
const (
	childEnv         = "COUNTERSIGN_LOAD_WAITING_CHILD"
	childEndpointEnv = "COUNTERSIGN_LOAD_WAITING_ENDPOINT"
	childTokenEnv    = "COUNTERSIGN_LOAD_WAITING_TOKEN"
	childRevisionEnv = "COUNTERSIGN_LOAD_WAITING_REVISION"
	childCookiesEnv  = "COUNTERSIGN_LOAD_WAITING_COOKIES"
)

// The child's lines on its standard output, read by the parent.
const (
	lineAsk            = "ask"             // ask INDEX APPROVAL_ID: filed, and (for an agent) subscribed
	lineAgentsReady    = "agents-ready"    // every agent waits
	lineTimelinesReady = "timelines-ready" // every timeline is open
	lineHeard          = "heard"           // heard APPROVAL_ID UNIX_NANO: an agent's notice arrived
	lineTimeline       = "timeline"        // timeline APPROVAL_ID UNIX_NANO: a timeline showed the decision
	lineFailed         = "failed"          // failed TEXT: the child gives up
)

// memory is this process's memory at one moment, after a collection.
type memory struct {
	heap, stacks, rss int64
	goroutines        int
}

func measureMemory() memory {
	// Five collections, as a few minutes of waiting give (the runtime collects
	// at least every two minutes): each halves at most the stack of a parked
	// goroutine that uses under a quarter of it, as one does that grew deep
	// in a database call and now waits. Then every free page back to the OS,
	// so that RSS is what the live data holds rather than the collector's headroom.
	for range 4 { // each collection halves a parked goroutine's stack at most
		runtime.GC()
	}
	debug.FreeOSMemory()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return memory{heap: int64(m.HeapInuse), stacks: int64(m.StackInuse), rss: processRSS(), goroutines: runtime.NumGoroutine()}
}

// processRSS is VmRSS of /proc/self/status in bytes; 0 where there is none.
func processRSS() int64 {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		if kb, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(kb), "kB")), 10, 64)
			return n * 1024
		}
	}
	return 0
}

// perEach is the growth from before to after, per one of n, in KB.
type perEach struct{ heap, stacks, heapStacks, rss, goroutines float64 }

func growth(before, after memory, n int) perEach {
	k := float64(n) * 1024
	return perEach{
		heap: float64(after.heap-before.heap) / k, stacks: float64(after.stacks-before.stacks) / k,
		heapStacks: float64(after.heap+after.stacks-before.heap-before.stacks) / k,
		rss:        float64(after.rss-before.rss) / k, goroutines: float64(after.goroutines-before.goroutines) / float64(n),
	}
}

// runWaiting is the -waiting run; see the comment at the top of this file.
func runWaiting(ctx context.Context, o options, out io.Writer) error {
	if o.memprofile != "" {
		runtime.MemProfileRate = 512 // fine enough to see a few hundred bytes per agent
	}
	fmt.Fprintf(out, "machine: %s/%s, %d CPUs, GOMAXPROCS %d, %s\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version())
	t, err := startService(ctx, o.database, true, out)
	if err != nil {
		return err
	}
	defer t.close()
	person, err := t.store.AddMember(ctx, t.agent.AccountID, "load-person", "Load Person", core.RoleOwner)
	if err != nil {
		return fmt.Errorf("the person who decides: %w", err)
	}
	// A web session holds at most 20 live timelines (handlers'
	// liveTimelinesPerSession), so the timelines are spread over sessions of 10.
	var cookies []string
	for range (o.timelines + 9) / 10 {
		token, err := t.store.CreateSession(ctx, person.ID, t.agent.AccountID)
		if err != nil {
			return fmt.Errorf("web session: %w", err)
		}
		cookies = append(cookies, token)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find this binary to run the agents: %w", err)
	}
	childCtx, stopChild := context.WithCancel(ctx)
	defer stopChild()
	child := exec.CommandContext(childCtx, exe, "-waiting", strconv.Itoa(o.waiting), "-timelines", strconv.Itoa(o.timelines))
	child.Env = append(os.Environ(), childEnv+"=1", childEndpointEnv+"="+t.endpoint, childTokenEnv+"="+t.token, childRevisionEnv+"="+o.revision, childCookiesEnv+"="+strings.Join(cookies, ","))
	child.Stderr = os.Stderr
	stdin, err := child.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := child.StdoutPipe()
	if err != nil {
		return err
	}

	idle := measureMemory()
	if o.memprofile != "" {
		if err := writeHeap(o.memprofile + ".idle.pprof"); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "idle server: heap %.1f MB, stacks %.1f MB, RSS %.1f MB, %d goroutines\n", mb(idle.heap), mb(idle.stacks), mb(idle.rss), idle.goroutines)
	started := time.Now()
	if err := child.Start(); err != nil {
		return fmt.Errorf("start the agents' process: %w", err)
	}
	defer func() { stdin.Close(); _ = child.Wait() }()

	var (
		mu        sync.Mutex
		askIDs    = make([]string, max(o.waiting, o.timelines))
		heard     = map[string]time.Time{}
		shown     = map[string]time.Time{}
		ready     = make(chan string, 2)
		childDone = make(chan error, 1)
	)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) == 0 {
				continue
			}
			switch f[0] {
			case lineAsk:
				if i, err := strconv.Atoi(f[1]); err == nil && i < len(askIDs) {
					mu.Lock()
					askIDs[i] = f[2]
					mu.Unlock()
				}
			case lineHeard, lineTimeline:
				ns, _ := strconv.ParseInt(f[2], 10, 64)
				mu.Lock()
				if f[0] == lineHeard {
					heard[f[1]] = time.Unix(0, ns)
				} else {
					shown[f[1]] = time.Unix(0, ns)
				}
				mu.Unlock()
			case lineAgentsReady, lineTimelinesReady:
				ready <- f[0]
			case lineFailed:
				childDone <- errors.New(strings.TrimPrefix(sc.Text(), lineFailed+" "))
				return
			}
		}
		childDone <- fmt.Errorf("the agents' process ended: %v", sc.Err())
	}()
	await := func(what string) error {
		select {
		case got := <-ready:
			if got != what {
				return fmt.Errorf("the agents' process said %s, want %s", got, what)
			}
			return nil
		case err := <-childDone:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := await(lineAgentsReady); err != nil {
		return err
	}
	how := "each its own MCP session subscribed to its own open ask, GET stream open"
	if o.revision >= revisionStateless {
		how = "each a 2026-07-28 client (no session) with one subscriptions/listen stream for its own open ask"
	}
	fmt.Fprintf(out, "%d agents waiting, %s (set up in %s)\n", o.waiting, how, time.Since(started).Round(time.Second))
	time.Sleep(2 * time.Second) // let the last calls' buffers go back
	agents := measureMemory()
	if o.memprofile != "" && o.waiting > 0 {
		if err := writeHeap(o.memprofile + ".agents.pprof"); err != nil {
			return err
		}
		if err := writeProfile("goroutine", o.memprofile+".agents.goroutines.txt", 1); err != nil {
			return err
		}
	}
	if _, err := io.WriteString(stdin, "timelines\n"); err != nil {
		return fmt.Errorf("tell the agents' process to open the timelines: %w", err)
	}
	if err := await(lineTimelinesReady); err != nil {
		return err
	}
	time.Sleep(2 * time.Second)
	timelines := measureMemory()
	if o.memprofile != "" && o.timelines > 0 {
		if err := writeHeap(o.memprofile + ".timelines.pprof"); err != nil {
			return err
		}
	}
	fmt.Fprintln(out, "\nserver memory (this process: the service alone), above the idle server, after a collection:")
	fmt.Fprintln(out, "what\tcount\theap KB each\tstacks KB each\theap+stacks KB each\tRSS KB each\tgoroutines each")
	if o.waiting > 0 {
		g := growth(idle, agents, o.waiting)
		fmt.Fprintf(out, "waiting agent\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\n", o.waiting, g.heap, g.stacks, g.heapStacks, g.rss, g.goroutines)
	}
	if o.timelines > 0 {
		g := growth(agents, timelines, o.timelines)
		fmt.Fprintf(out, "live timeline\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\n", o.timelines, g.heap, g.stacks, g.heapStacks, g.rss, g.goroutines)
	}
	fmt.Fprintf(out, "all waiting: heap %.1f MB, stacks %.1f MB, RSS %.1f MB, %d goroutines\n", mb(timelines.heap), mb(timelines.stacks), mb(timelines.rss), timelines.goroutines)

	// Decide a sample of the asks, spread over all of them, while all wait.
	sample := min(o.decisions, len(askIDs))
	committed := map[string]time.Time{}
	pace := time.NewTicker(time.Second / time.Duration(max(1, o.decideRate)))
	defer pace.Stop()
	for i := range sample {
		id := askIDs[i*len(askIDs)/sample]
		decided := time.Now()
		if _, err := t.store.Decide(ctx, t.agent.AccountID, id, person, asks.Decision{Verdict: asks.VerdictDeny}); err != nil {
			return fmt.Errorf("decide %s: %w", id, err)
		}
		committed[id] = decided
		<-pace.C
	}
	var agentLat, timelineLat []time.Duration
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		agentLat, timelineLat = agentLat[:0], timelineLat[:0]
		mu.Lock()
		for id, at := range committed {
			if h, ok := heard[id]; ok {
				agentLat = append(agentLat, h.Sub(at))
			}
			if s, ok := shown[id]; ok {
				timelineLat = append(timelineLat, s.Sub(at))
			}
		}
		mu.Unlock()
		if len(agentLat) == expectedNotices(committed, askIDs, o.waiting) && len(timelineLat) == expectedNotices(committed, askIDs, o.timelines) {
			break
		}
	}
	fmt.Fprintf(out, "\n%d decisions while all wait, %d a second; notice latency from the call that decides (its commit included):\n", sample, o.decideRate)
	for _, r := range []struct {
		name string
		lat  []time.Duration
		want int
	}{{"agent (notifications/resources/updated)", agentLat, expectedNotices(committed, askIDs, o.waiting)},
		{"live timeline (SSE event)", timelineLat, expectedNotices(committed, askIDs, o.timelines)}} {
		if r.want == 0 {
			continue
		}
		slices.Sort(r.lat)
		p := phase{latency: r.lat}
		fmt.Fprintf(out, "%s: %d of %d heard, p50 %.2f ms, p99 %.2f ms, max %.2f ms\n", r.name, len(r.lat), r.want,
			ms(p.percentile(0.5)), ms(p.percentile(0.99)), ms(p.percentile(1)))
		if len(r.lat) < r.want {
			return fmt.Errorf("%s: %d notices of %d decisions never arrived", r.name, r.want-len(r.lat), r.want)
		}
	}
	fmt.Fprintln(out, "memory: runtime heap in use and goroutine stacks after five collections (the last debug.FreeOSMemory), and VmRSS of /proc/self/status, of this process, which runs the service alone; the agents and timelines run in a child process")
	return nil
}

// expectedNotices is how many of the decided asks have a listener of that
// kind: the first n asks each have one.
func expectedNotices(committed map[string]time.Time, asks []string, n int) int {
	count := 0
	for i, id := range asks {
		if _, ok := committed[id]; ok && i < n {
			count++
		}
	}
	return count
}

func writeHeap(path string) error { return writeProfile("heap", path, 0) }

// writeProfile writes the named runtime profile to path (debug 1: as text).
func writeProfile(name, path string, debug int) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("%s profile: %w", name, err)
	}
	defer f.Close()
	if err := pprof.Lookup(name).WriteTo(f, debug); err != nil {
		return fmt.Errorf("%s profile: %w", name, err)
	}
	return f.Close()
}

func mb(n int64) float64 { return float64(n) / (1 << 20) }
