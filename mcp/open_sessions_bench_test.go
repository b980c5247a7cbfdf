package mcp_test

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/countersign/countersign/apptest"
)

// BenchmarkInitializeCalls measures the memory initialize calls hold: N raw
// initialize calls (COUNTERSIGN_BENCH_SESSIONS, 10,000 by default), 8 at a
// time, spread over COUNTERSIGN_BENCH_TOKENS mcp:read tokens (1 by
// default), none of them ended; then the sessions that still answer a ping,
// and the heap and stacks in use and the process's RSS, above what they
// were before the calls, after a collection. The service runs with its
// defaults (COUNTERSIGN_MCP_SESSIONS_PER_TOKEN and the rest). Run it with
//
//	go test ./mcp -run '^$' -bench InitializeCalls -benchtime 1x
func BenchmarkInitializeCalls(b *testing.B) {
	if b.N > 1 {
		b.Skip("one run of N calls is the measurement: use -benchtime 1x")
	}
	calls, tokens := benchSetting(b, "COUNTERSIGN_BENCH_SESSIONS", 10000), benchSetting(b, "COUNTERSIGN_BENCH_TOKENS", 1)
	env := apptest.Start(b, apptest.SQLite, nil)
	var agents []string
	for i := range tokens {
		_, token := env.Agent(env.Account.ID, fmt.Sprintf("leaky-%d", i), "mcp:read")
		agents = append(agents, token)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	post := func(token, session string, body []byte) (int, string, error) {
		req, _ := http.NewRequest(http.MethodPost, env.URL+"/mcp", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		res, err := client.Do(req)
		if err != nil {
			return 0, "", err
		}
		var sink bytes.Buffer
		sink.ReadFrom(res.Body)
		res.Body.Close()
		return res.StatusCode, res.Header.Get("Mcp-Session-Id"), nil
	}
	before := memoryInUse()
	b.ResetTimer()

	var (
		mu       sync.Mutex
		sessions = map[string]string{} // session id → its token
		refused  = map[int]int{}       // HTTP status → count
		work     = make(chan int)
		wg       sync.WaitGroup
	)
	for range 8 {
		wg.Go(func() {
			for i := range work {
				token := agents[i%len(agents)]
				status, id, err := post(token, "", initializeBody())
				mu.Lock()
				switch {
				case err != nil:
					refused[-1]++
				case status == http.StatusOK && id != "":
					sessions[id] = token
				default:
					refused[status]++
				}
				mu.Unlock()
			}
		})
	}
	for i := range calls {
		work <- i
	}
	close(work)
	wg.Wait()
	b.StopTimer()

	open := 0
	for id, token := range sessions {
		if status, _, err := post(token, id, []byte(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)); err == nil && status == http.StatusOK {
			open++
		}
	}
	after := memoryInUse()
	heap, stacks, rss := after[0]-before[0], after[1]-before[1], after[2]-before[2]
	b.ReportMetric(float64(open), "sessions-open")
	b.ReportMetric(float64(heap)/(1<<20), "MB-heap")
	b.ReportMetric(float64(stacks)/(1<<20), "MB-stacks")
	b.ReportMetric(float64(rss)/(1<<20), "MB-RSS")
	b.ReportMetric(float64(heap+stacks)/float64(calls)/1024, "KB-inuse/call")
	b.Logf("%d initialize calls over %d tokens: %d accepted, refused %v; %d sessions still open; above the idle service: heap %.1f MB, stacks %.1f MB, RSS %.1f MB",
		calls, tokens, len(sessions), refused, open, float64(heap)/(1<<20), float64(stacks)/(1<<20), float64(rss)/(1<<20))
}

func benchSetting(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q is not a whole number of at least 1", name, v)
	}
	return n
}

// memoryInUse is the heap and the goroutine stacks in use after a
// collection, and the process's RSS (0 where /proc is not there), in bytes.
func memoryInUse() [3]int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	var rss int64
	if status, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(status), "\n") {
			if kb, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(kb), "kB")), 10, 64)
				rss = n * 1024
			}
		}
	}
	return [3]int64{int64(m.HeapInuse), int64(m.StackInuse), rss}
}
