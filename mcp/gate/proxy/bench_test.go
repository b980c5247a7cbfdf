package proxy_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/mcp/gate"
	"github.com/countersign/countersign/mcp/gate/proxy"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
)

// latencies collects the durations of single operations and reports their
// p50 and p99 in milliseconds.
type latencies []float64

func (l *latencies) add(d time.Duration) { *l = append(*l, float64(d.Nanoseconds())/1e6) }

func (l latencies) report(b *testing.B) {
	if len(l) == 0 {
		return
	}
	slices.Sort(l)
	b.ReportMetric(l[len(l)/2], "p50-ms")
	b.ReportMetric(l[len(l)*99/100], "p99-ms")
}

// serve serves srv over in-memory transports (what stdio pipes are to the
// proxy) or over Streamable HTTP on loopback, and returns the client's
// transport to it.
func serve(b *testing.B, transport string, srv *mcp.Server) mcp.Transport {
	b.Helper()
	if transport == "http" {
		hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
		b.Cleanup(hs.Close)
		return &mcp.StreamableClientTransport{Endpoint: hs.URL, MaxRetries: -1}
	}
	ct, st := mcp.NewInMemoryTransports()
	if _, err := srv.Connect(context.Background(), st, nil); err != nil {
		b.Fatal(err)
	}
	return ct
}

func connect(b *testing.B, t mcp.Transport) *mcp.ClientSession {
	b.Helper()
	session, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(context.Background(), t, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { session.Close() })
	return session
}

// BenchmarkNonGatedCall measures one read_text_file call that no rule
// gates, straight to the upstream and through the proxy (whose rules gate
// write_file and move_file), every hop over the same transport. The proxy's
// cost is the difference of the p50s. Run it with
//
//	go test ./mcp/gate/proxy -run '^$' -bench NonGatedCall -benchtime 5000x
func BenchmarkNonGatedCall(b *testing.B) {
	rules, err := proxy.ParseRules([]byte(rulesJSON), "")
	if err != nil {
		b.Fatal(err)
	}
	for _, transport := range []string{"memory", "http"} {
		for _, via := range []string{"direct", "proxy"} {
			b.Run(transport+"/"+via, func(b *testing.B) {
				target := upstream(&world{})
				if via == "proxy" {
					p, err := proxy.Start(context.Background(), serve(b, transport, target), proxy.Options{Rules: rules, Gate: gate.Options{
						OnApproval: approve,
						Audit:      func(context.Context, gate.AuditEvent) {},
					}})
					if err != nil {
						b.Fatal(err)
					}
					b.Cleanup(func() { p.Close() })
					target = p.Server
				}
				session := connect(b, serve(b, transport, target))
				params := &mcp.CallToolParams{Name: "read_text_file", Arguments: map[string]any{"path": "/etc/hostname"}}
				lat := make(latencies, 0, b.N)
				b.ResetTimer()
				for b.Loop() {
					start := time.Now()
					res, err := session.CallTool(context.Background(), params)
					lat.add(time.Since(start))
					if err != nil || res.IsError {
						b.Fatalf("call: %v %v", res, err)
					}
				}
				b.StopTimer()
				lat.report(b)
			})
		}
	}
}

// BenchmarkDecisionToGatedCall measures the time from a person's approval
// committing on the service to the gated call starting on the upstream: the
// Countersign sink hears the ask's resources/updated over MCP HTTP on
// loopback, reads the ask, reports started, and the proxy calls the
// upstream (in memory). heard-* is the part up to the sink's answer, started-*
// the rest (chiefly the started report, a write on the service). 300 asks, each decided through the store about
// 30 ms after it is filed, so that the sink is waiting on its subscription.
// Run it with
//
//	go test ./mcp/gate/proxy -run '^$' -bench DecisionToGatedCall -benchtime 1x
func BenchmarkDecisionToGatedCall(b *testing.B) {
	if b.N > 1 {
		b.Skip("one run of 300 decisions is the measurement: use -benchtime 1x")
	}
	ctx := context.Background()
	env := apptest.StartWeb(b, apptest.SQLite, nil)
	_, token := env.Agent(env.Account.ID, "gate")
	owner := env.Member(env.Account.ID, "ada", core.RoleOwner)
	sink, err := gate.NewCountersign(ctx, gate.CountersignOptions{URL: env.URL, Token: token, Server: "filesystem"})
	if err != nil {
		b.Fatal(err)
	}
	defer sink.Close()

	var mu sync.Mutex
	var decided, started time.Time
	w := &world{}
	up := upstream(w)
	mcp.AddTool(up, &mcp.Tool{Name: "delete_file", Description: "Delete a file."}, func(context.Context, *mcp.CallToolRequest, pathArgs) (*mcp.CallToolResult, any, error) {
		mu.Lock()
		started = time.Now()
		mu.Unlock()
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "deleted"}}}, nil, nil
	})
	rules, err := proxy.ParseRules([]byte(`{"server": "filesystem", "tools": {"delete_file": {"approval": true}}}`), "")
	if err != nil {
		b.Fatal(err)
	}
	p, err := proxy.Start(ctx, serve(b, "memory", up), proxy.Options{Rules: rules, Gate: gate.Options{
		OnApproval: func(ctx context.Context, req gate.ApprovalRequest) (gate.Decision, error) {
			d, err := sink.RequestApproval(ctx, req)
			mu.Lock()
			decided = time.Now()
			mu.Unlock()
			return d, err
		},
		ApprovalTimeout: time.Minute,
		Audit:           func(context.Context, gate.AuditEvent) {},
	}})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	session := connect(b, serve(b, "memory", p.Server))

	const decisions = 300
	lat := make(latencies, 0, decisions)
	heard := make(latencies, 0, decisions) // commit → the sink has read the approval
	began := make(latencies, 0, decisions) // the sink's answer → the upstream call starts (reporting started between)
	b.ResetTimer()
	for i := range decisions {
		done := make(chan error, 1)
		go func() {
			res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "delete_file", Arguments: map[string]any{"path": "/tmp/x"}})
			if err == nil && res.IsError {
				err = errors.New(textOf(res))
			}
			done <- err
		}()
		var id string
		for deadline := time.Now().Add(10 * time.Second); id == ""; time.Sleep(2 * time.Millisecond) {
			open, _, err := env.Store.ListApprovals(ctx, env.Account.ID, asks.ListFilter{Status: "open"})
			if err != nil {
				b.Fatal(err)
			}
			if len(open) == 1 {
				id = open[0].ID
			}
			if time.Now().After(deadline) {
				b.Fatalf("ask %d was not filed", i)
			}
		}
		time.Sleep(30 * time.Millisecond) // the sink subscribes and reads the ask
		if _, err := env.Store.Decide(ctx, env.Account.ID, id, owner, asks.Decision{Verdict: asks.VerdictApprove}); err != nil {
			b.Fatal(err)
		}
		committed := time.Now()
		if err := <-done; err != nil {
			b.Fatalf("call %d: %v", i, err)
		}
		mu.Lock()
		lat.add(started.Sub(committed))
		heard.add(decided.Sub(committed))
		began.add(started.Sub(decided))
		mu.Unlock()
	}
	b.StopTimer()
	lat.report(b)
	b.ReportMetric(lat[len(lat)-1], "max-ms")
	slices.Sort(heard)
	slices.Sort(began)
	b.ReportMetric(heard[len(heard)/2], "heard-p50-ms")
	b.ReportMetric(heard[len(heard)*99/100], "heard-p99-ms")
	b.ReportMetric(began[len(began)/2], "started-p50-ms")
	b.ReportMetric(began[len(began)*99/100], "started-p99-ms")
}
