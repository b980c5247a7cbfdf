package work_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/app"
	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/people"
)

// BenchmarkSessionHeartbeat measures session_heartbeat's store call with
// 10,000 open sessions in the account, every tenth waiting on a pending
// request, one heartbeat at a time while the heartbeat times are flushed
// every HeartbeatFlushEvery as the service does, and reports its p50 and p99
// (the target: p99 ≤ 2 ms) and how many heartbeat times each flush
// wrote. Run with go test ./models -run '^$' -bench SessionHeartbeat.
func BenchmarkSessionHeartbeat(b *testing.B) {
	for _, db := range []apptest.Database{apptest.SQLite, apptest.Postgres} {
		b.Run(string(db), func(b *testing.B) {
			if db == apptest.Postgres && os.Getenv(apptest.PostgresEnv) == "" {
				b.Skip("no PostgreSQL")
			}
			ctx := context.Background()
			s, err := openBenchStore(b, db)
			if err != nil {
				b.Fatal(err)
			}
			acct, _ := s.AccountByName(ctx, people.DefaultAccountName)
			agent, _, err := s.CreateAgent(ctx, acct.ID, "bot", people.AllScopes)
			if err != nil {
				b.Fatal(err)
			}
			ids := make([]string, 10000)
			for i := range ids {
				ss, err := s.StartSession(ctx, agent, "")
				if err != nil {
					b.Fatal(err)
				}
				ids[i] = ss.ID
				if i%10 == 0 {
					args := fmt.Sprintf(`{"kind":"agent_request","title":"Which branch?","proposal":{"mode":"advisory"},"question":{},"sessionId":%q,"idempotencyKey":"k%d"}`, ss.ID, i)
					if _, _, _, err := s.FileRequest(ctx, agent, json.RawMessage(args), nil); err != nil {
						b.Fatal(err)
					}
				}
			}
			flushCtx, stopFlush := context.WithCancel(ctx)
			var flushes, flushed atomic.Int64
			done := make(chan struct{})
			go func() {
				defer close(done)
				t := time.NewTicker(s.HeartbeatFlushEvery())
				defer t.Stop()
				for {
					select {
					case <-flushCtx.Done():
						return
					case <-t.C:
					}
					n, err := s.FlushHeartbeats(flushCtx)
					if err != nil && flushCtx.Err() == nil {
						b.Error(err)
					}
					flushes.Add(1)
					flushed.Add(int64(n))
				}
			}()
			defer func() { stopFlush(); <-done }()
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				start := time.Now()
				if _, err := s.Heartbeat(ctx, agent, ids[i%len(ids)]); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
			if n := flushes.Load(); n > 0 {
				b.ReportMetric(float64(flushed.Load())/float64(n), "beats/flush")
			}
		})
	}
}

func openBenchStore(b *testing.B, db apptest.Database) (*models.Store, error) {
	b.Helper()
	ctx := context.Background()
	s, err := app.OpenStore(ctx, apptest.Config(b, db, nil), apptest.Logger())
	if err != nil {
		return nil, err
	}
	return s, s.EnsureDefaultAccount(ctx)
}
