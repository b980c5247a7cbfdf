package main

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/people"
)

// The restart test runs on a PostgreSQL server of its own, which it
// restarts: RestartURLEnv is its URL (postgres://user:pass@host:port/db) and
// RestartEnv a shell command that restarts it and returns once it accepts
// connections again. .ci/run makes that server (the cluster "restart").
const (
	RestartURLEnv = "COUNTERSIGN_TEST_RESTART_POSTGRES_URL"
	RestartEnv    = "COUNTERSIGN_TEST_RESTART_POSTGRES"
)

// Five PostgreSQL restarts while agents file asks through instance A and
// instance B changes asks an agent on A subscribed to: no call hangs, a call
// that meets the restart is refused with a code (RESOURCE_EXHAUSTED from the
// tool, or HTTP 503 with Retry-After when the token could not be read), both
// instances recover by themselves, listener included, and the subscribed
// agent hears every change B committed after each restart.
func TestAPostgreSQLRestartUnderLoad(t *testing.T) {
	restart, base := os.Getenv(RestartEnv), os.Getenv(RestartURLEnv)
	if restart == "" || base == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s and %s are not set: CI runs the restart test", RestartEnv, RestartURLEnv)
		}
		t.Skipf("%s and %s are not set: this test restarts a PostgreSQL server of its own", RestartEnv, RestartURLEnv)
	}
	url := apptest.DatabaseOn(t, base)
	a, b := startInstance(t, apptest.Postgres, url), startInstance(t, apptest.Postgres, url)
	ctx := context.Background()
	created := mustCLI(t, a.env, "agent", "create", "--name", "bot", "--scopes", strings.Join(people.AllScopes, ","))
	token := lastLine(created.stdout)

	var mu sync.Mutex
	heard := map[string]bool{}
	client := sdk.NewClient(&sdk.Implementation{Name: "restart", Version: "1"}, &sdk.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *sdk.ResourceUpdatedNotificationRequest) {
			mu.Lock()
			heard[r.Params.URI] = true
			mu.Unlock()
		},
	})
	watcher, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: a.URL + "/mcp", HTTPClient: apptest.BearerClient(token), MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("connect to A: %v", err)
	}
	defer watcher.Close()
	changer, err := apptest.Connect(ctx, b.URL+"/mcp", token)
	if err != nil {
		t.Fatalf("connect to B: %v", err)
	}
	defer changer.Close()

	// Load through A: every call ends within 20 s, with an ask or a coded refusal.
	loadCtx, stopLoad := context.WithCancel(ctx)
	var (
		wg                    sync.WaitGroup
		filed, refused, hangs int
		unavailable           int
		other                 []string
	)
	for c := range 2 {
		session, err := apptest.Connect(ctx, a.URL+"/mcp", token)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		defer session.Close()
		wg.Go(func() {
			for n := 1; loadCtx.Err() == nil; n++ {
				callCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
				r, err := apptest.CallTool(callCtx, session, "approvals_create", pullRequestAsk(c+10, n))
				hung := callCtx.Err() != nil
				cancel()
				mu.Lock()
				switch {
				case err != nil && hung:
					hangs++
				case err != nil && strings.Contains(err.Error(), "Service Unavailable"): // 503 with Retry-After, before the tool ran
					unavailable++
				case err != nil:
					other = append(other, err.Error())
				case !r.IsError:
					filed++
				case strings.HasPrefix(r.Text, "RESOURCE_EXHAUSTED"):
					refused++
				default:
					other = append(other, r.Text)
				}
				mu.Unlock()
				time.Sleep(5 * time.Millisecond)
			}
		})
	}

	for round := range 5 {
		// Asks the agent on A watches, filed before the restart.
		var uris []string
		for i := range 5 {
			r, err := apptest.CallTool(ctx, watcher, "approvals_create", pullRequestAsk(round+1, i+1))
			if err != nil || r.IsError {
				t.Fatalf("round %d: file a watched ask: %v %s", round, err, r.Text)
			}
			uri := "countersign://approvals/" + r.Out["approval_id"].(string)
			if err := watcher.Subscribe(ctx, &sdk.SubscribeParams{URI: uri}); err != nil {
				t.Fatalf("subscribe: %v", err)
			}
			uris = append(uris, uri)
		}
		if out, err := exec.Command("sh", "-c", restart).CombinedOutput(); err != nil {
			t.Fatalf("round %d: restart PostgreSQL: %v\n%s", round, err, out)
		}
		// B withdraws them as soon as it can: while A's listener may still be away.
		for _, uri := range uris {
			id := strings.TrimPrefix(uri, "countersign://approvals/")
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
				r, err := apptest.CallTool(ctx, changer, "approvals_add_progress", map[string]any{"approval_id": id, "step": "stale", "note": "restart test"})
				if err == nil && !r.IsError {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("round %d: B could not withdraw %s within 30 s of the restart: %v %s", round, id, err, r.Text)
				}
			}
		}
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			mu.Lock()
			missing := 0
			for _, uri := range uris {
				if !heard[uri] {
					missing++
				}
			}
			mu.Unlock()
			if missing == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: the agent subscribed on A never heard of %d of the 5 asks B withdrew after the restart", round, missing)
			}
		}
	}
	stopLoad()
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	t.Logf("through 5 restarts: %d asks filed, %d refused with RESOURCE_EXHAUSTED, %d answered 503, %d other outcomes, %d calls that hung",
		filed, refused, unavailable, len(other), hangs)
	if hangs > 0 {
		t.Errorf("%d calls did not end within 20 s", hangs)
	}
	for i, o := range other {
		if i < 5 {
			t.Errorf("a call ended neither with an ask nor with RESOURCE_EXHAUSTED or 503: %s", o)
		}
	}
	if filed == 0 {
		t.Errorf("no ask was filed through A under the restarts")
	}
}
