package push_test

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/ask"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/outbox"
)

// BenchmarkPushLatency files 1,000 asks at 20 a second, each asked of two
// admins with 3 devices each, and measures the time from the ask's commit to
// the push's arrival at a local push service (6,000 pushes). The fatigue cap
// is lifted through configuration. Run it with
//
//	go test ./push -run '^$' -bench PushLatency -benchtime 1x
//
// (set COUNTERSIGN_BENCH_DB=postgres and COUNTERSIGN_TEST_POSTGRES_URL for PostgreSQL).
func BenchmarkPushLatency(b *testing.B) {
	db := apptest.SQLite
	if b.N > 1 {
		b.Skip("one run of 1,000 asks is the measurement: use -benchtime 1x")
	}
	if v := getenv("COUNTERSIGN_BENCH_DB"); v == "postgres" {
		db = apptest.Postgres
	}
	ps := apptest.NewPushService(b)
	env := apptest.Start(b, db, map[string]string{"COUNTERSIGN_PUSH_ALLOWED_HOSTS": ps.Host(), "COUNTERSIGN_PUSH_CAP": "off"})
	ctx := context.Background()
	agent, _ := env.Agent(env.Account.ID, "bot")
	for _, who := range []string{"ada", "grace"} {
		m := env.Member(env.Account.ID, who, core.RoleAdmin)
		for d := range 3 {
			endpoint, p256dh, auth := ps.Subscribe(who + "-" + strconv.Itoa(d))
			if _, err := env.Store.SavePushSubscription(ctx, m.ID, outbox.PushSubscription{Endpoint: endpoint, P256dh: p256dh, Auth: auth}); err != nil {
				b.Fatal(err)
			}
		}
	}
	const askCount, perSecond, devices = 1000, 20, 6
	committed := make(map[string]time.Time, askCount)
	var mu sync.Mutex
	b.ResetTimer()
	tick := time.NewTicker(time.Second / perSecond)
	for i := range askCount {
		<-tick.C
		a, err := env.Store.CreateApproval(ctx, models.NewAsk{Requester: agent, Kind: ask.KindReview, Title: "Ask " + strconv.Itoa(i),
			ApproveMeans: "a", DenyMeans: "d", Payload: json.RawMessage(`{"review":{"url":"https://example.com/` + strconv.Itoa(i) + `"}}`)})
		if err != nil {
			b.Fatal(err)
		}
		mu.Lock()
		committed[a.ID] = time.Now()
		mu.Unlock()
	}
	tick.Stop()
	deadline := time.Now().Add(30 * time.Second)
	for len(ps.Deliveries()) < askCount*devices && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	b.StopTimer()
	got := ps.Deliveries()
	if len(got) != askCount*devices {
		b.Fatalf("%d pushes arrived, want %d", len(got), askCount*devices)
	}
	lat := make([]float64, 0, len(got))
	for _, d := range got {
		var m outbox.PushMessage
		if err := json.Unmarshal(d.Plaintext, &m); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, float64(d.At.Sub(committed[m.ApprovalID]).Microseconds())/1000)
	}
	slices.Sort(lat)
	b.ReportMetric(lat[len(lat)/2], "p50-ms")
	b.ReportMetric(lat[len(lat)*99/100], "p99-ms")
	b.ReportMetric(lat[len(lat)-1], "max-ms")
	b.ReportMetric(float64(len(got)), "pushes")
}
