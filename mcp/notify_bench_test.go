package mcp_test

import (
	"context"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
)

// BenchmarkDecisionToSubscribedAgent measures the time from a decision's
// commit to the resources/updated notification reaching the agent that
// subscribed to the ask, over real MCP HTTP on loopback: 500 asks, each
// denied after its agent subscribed, for each revision: a 2025-11-25 session
// (resources/subscribe, its GET stream) and 2026-07-28 (subscriptions/listen,
// one stream per ask, decided once the listen is acknowledged). On PostgreSQL (COUNTERSIGN_BENCH_DB=
// postgres and COUNTERSIGN_TEST_POSTGRES_URL) the decision is committed by a
// second instance, so the notification travels through NOTIFY and the
// subscriber's instance's LISTEN connection. Run it with
//
//	go test ./mcp -run '^$' -bench DecisionToSubscribedAgent -benchtime 1x
func BenchmarkDecisionToSubscribedAgent(b *testing.B) {
	for _, revision := range []string{"2025-11-25", "2026-07-28"} {
		b.Run(revision, func(b *testing.B) { benchDecisionToSubscribedAgent(b, revision) })
	}
}

func benchDecisionToSubscribedAgent(b *testing.B, revision string) {
	if b.N > 1 {
		b.Skip("one run of 500 decisions is the measurement: use -benchtime 1x")
	}
	db := apptest.SQLite
	if os.Getenv("COUNTERSIGN_BENCH_DB") == "postgres" {
		db = apptest.Postgres
	}
	ctx := context.Background()
	env := apptest.Start(b, db, nil)
	decider := env.Store
	if db == apptest.Postgres {
		cfg := env.App.Config
		cfg.Data = b.TempDir()
		decider = apptest.StartWith(b, cfg).Store
	}
	_, token := env.Agent(env.Account.ID, "bot")
	owner := env.Member(env.Account.ID, "ada", core.RoleOwner)

	var mu sync.Mutex
	heard := map[string]time.Time{}
	arrived := make(chan struct{}, 1)
	client := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, &sdk.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *sdk.ResourceUpdatedNotificationRequest) {
			mu.Lock()
			heard[r.Params.URI] = time.Now()
			mu.Unlock()
			select {
			case arrived <- struct{}{}:
			default:
			}
		},
	})
	acked := make(chan struct{}, 1)
	client.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method == "notifications/subscriptions/acknowledged" {
				acked <- struct{}{}
			}
			return next(ctx, method, req)
		}
	})
	session, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: env.URL + "/mcp", HTTPClient: apptest.BearerClient(token), MaxRetries: -1},
		&sdk.ClientSessionOptions{ProtocolVersion: revision})
	if err != nil {
		b.Fatal(err)
	}
	defer session.Close()

	const decisions = 500
	lat := make([]float64, 0, decisions)
	b.ResetTimer()
	for i := range decisions {
		filed, err := apptest.CallTool(ctx, session, "approvals_create", specAsk("pull_request", specPR("number", 1000+i)))
		if err != nil || filed.IsError {
			b.Fatalf("file: %v %s", err, filed.Text)
		}
		id := filed.Out["approval_id"].(string)
		uri := "countersign://approvals/" + id
		if err := session.Subscribe(ctx, &sdk.SubscribeParams{URI: uri}); err != nil {
			b.Fatal(err)
		}
		if revision >= "2026-07-28" { // Subscribe returned before the service held it
			select {
			case <-acked:
			case <-time.After(10 * time.Second):
				b.Fatal("subscriptions/listen not acknowledged within 10 s")
			}
		}
		if _, err := decider.Decide(ctx, env.Account.ID, id, owner, asks.Decision{Verdict: asks.VerdictDeny}); err != nil {
			b.Fatal(err)
		}
		committed := time.Now()
		for deadline := time.After(10 * time.Second); ; {
			mu.Lock()
			at, ok := heard[uri]
			mu.Unlock()
			if ok {
				lat = append(lat, float64(at.Sub(committed).Microseconds())/1000)
				_ = session.Unsubscribe(ctx, &sdk.UnsubscribeParams{URI: uri})
				break
			}
			select {
			case <-arrived:
			case <-deadline:
				b.Fatalf("no notification for decision %d within 10 s", i)
			}
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(lat[len(lat)/2], "p50-ms")
	b.ReportMetric(lat[len(lat)*99/100], "p99-ms")
	b.ReportMetric(lat[len(lat)-1], "max-ms")
}
