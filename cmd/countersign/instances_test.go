package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/app"
	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/people"
)

// startInstance runs one more `countersign serve` on the database at databaseURL,
// on a port of its own, at http://localhost:PORT (a passkey's RP ID cannot
// be an address).
func startInstance(t *testing.T, db apptest.Database, databaseURL string) *server {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	s := startServer(t, db, map[string]string{
		"COUNTERSIGN_ADDR":     fmt.Sprintf("127.0.0.1:%d", port),
		"COUNTERSIGN_BASE_URL": fmt.Sprintf("http://localhost:%d", port),
		"COUNTERSIGN_ASK_RATE": "100000/s", "COUNTERSIGN_ASK_BURST": "100000",
		"COUNTERSIGN_DATABASE_URL": databaseURL,
	})
	s.URL = fmt.Sprintf("http://localhost:%d", port)
	return s
}

// Two `countersign serve` processes on one PostgreSQL act as one service:
// an ask filed through A and decided by a person through B wakes the agent
// subscribed on A and the ask page open on A; and a kill -9 of A while
// agents file through both loses no answered ask, while B goes on.
func TestTwoInstancesOnOnePostgreSQL(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		if db == apptest.SQLite {
			t.Skip("several instances need PostgreSQL")
		}
		url := apptest.DatabaseURL(t, db)
		a, b := startInstance(t, db, url), startInstance(t, db, url)
		ctx := context.Background()

		created := mustCLI(t, a.env, "agent", "create", "--name", "bot", "--scopes", strings.Join(people.AllScopes, ","))
		token := lastLine(created.stdout)
		invite := mustCLI(t, b.env, "invite", "--role", "owner", "--subject", "ada")
		inviteToken := strings.TrimPrefix(lastLine(invite.stdout), b.URL+"/invite/")
		onB := apptest.NewBrowser(t, b.URL)
		if r := onB.AcceptInvite(inviteToken, "ada"); r.Status != http.StatusOK {
			t.Fatalf("ada accepts the invite on B: %s", r)
		}
		onA := apptest.NewBrowser(t, a.URL)
		onA.Passkey = onB.Passkey
		if r := onA.SignIn(); r.Status != http.StatusOK {
			t.Fatalf("ada signs in on A: %s", r)
		}

		updates := make(chan string, 16)
		client := sdk.NewClient(&sdk.Implementation{Name: "two-instances", Version: "1"}, &sdk.ClientOptions{
			ResourceUpdatedHandler: func(_ context.Context, r *sdk.ResourceUpdatedNotificationRequest) { updates <- r.Params.URI },
		})
		session, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: a.URL + "/mcp", HTTPClient: apptest.BearerClient(token), MaxRetries: -1}, nil)
		if err != nil {
			t.Fatalf("connect to A: %v", err)
		}
		defer session.Close()
		filed, err := apptest.CallTool(ctx, session, "approvals_create", pullRequestAsk(0, 0))
		if err != nil || filed.IsError {
			t.Fatalf("file through A: %v %s", err, filed.Text)
		}
		id := filed.Out["approval_id"].(string)
		uri := "countersign://approvals/" + id
		if err := session.Subscribe(ctx, &sdk.SubscribeParams{URI: uri}); err != nil {
			t.Fatalf("subscribe on A: %v", err)
		}
		denied := watchTimeline(t, ctx, onA.HTTP, a.URL+"/approvals/"+id+"/events", "denied")

		if r := onB.Decide(id, "deny", ""); r.Status != http.StatusOK || r.Body["status"] != "denied" {
			t.Fatalf("ada denies through B: %s", r)
		}
		select {
		case u := <-updates:
			if u != uri {
				t.Fatalf("A's agent was told of %s, want %s", u, uri)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the agent subscribed on A heard nothing of the decision made through B")
		}
		select {
		case <-denied:
		case <-time.After(10 * time.Second):
			t.Fatal("A's live timeline did not show the decision made through B")
		}

		t.Run("a kill -9 of one instance loses no answered ask and the other goes on", func(t *testing.T) {
			loadCtx, stop := context.WithCancel(ctx)
			defer stop()
			var (
				mu        sync.Mutex
				answered  []string
				onBLater  int
				wg        sync.WaitGroup
				killed    = make(chan struct{})
				afterKill = func() bool {
					select {
					case <-killed:
						return true
					default:
						return false
					}
				}
			)
			for c, s := range []*server{a, b, a, b} {
				session, err := apptest.Connect(loadCtx, s.URL+"/mcp", token)
				if err != nil {
					t.Fatalf("connect: %v", err)
				}
				wg.Go(func() {
					for n := 1; loadCtx.Err() == nil; n++ {
						r, err := apptest.CallTool(loadCtx, session, "approvals_create", pullRequestAsk(c+1, n))
						if err != nil {
							if s == a {
								return // A is gone
							}
							continue
						}
						if id, _ := r.Out["approval_id"].(string); !r.IsError && id != "" {
							mu.Lock()
							answered = append(answered, id)
							if s == b && afterKill() {
								onBLater++
							}
							mu.Unlock()
						}
					}
				})
			}
			count := func() (int, int) { mu.Lock(); defer mu.Unlock(); return len(answered), onBLater }
			for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
				if n, _ := count(); n >= 200 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("fewer than 200 asks answered within a minute")
				}
			}
			if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			<-a.done
			close(killed)
			for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
				if _, later := count(); later >= 100 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("B answered fewer than 100 asks within a minute of A's kill")
				}
			}
			stop()
			wg.Wait()

			store, err := app.OpenStore(ctx, mustConfig(t, b.env), apptest.Logger())
			if err != nil {
				t.Fatal(err)
			}
			acct, err := store.AccountByName(ctx, people.DefaultAccountName)
			if err != nil {
				t.Fatal(err)
			}
			lost := 0
			for _, id := range answered {
				if _, err := store.GetApproval(ctx, acct.ID, id); err != nil {
					lost++
				}
			}
			if lost > 0 {
				t.Fatalf("%d of %d answered asks are lost", lost, len(answered))
			}
			t.Logf("%d answered asks (%d through B after A's kill), all kept", len(answered), onBLater)
		})
	})
}

// watchTimeline opens the live timeline of the ask at url (its
// /approvals/{id}/events) with client for 30 s at most, and closes the
// channel it returns when an event of step arrives.
func watchTimeline(t *testing.T, ctx context.Context, client *http.Client, url, step string) <-chan struct{} {
	t.Helper()
	streamCtx, stop := context.WithTimeout(ctx, 30*time.Second)
	t.Cleanup(stop)
	req, _ := http.NewRequestWithContext(streamCtx, http.MethodGet, url, nil)
	stream, err := client.Do(req)
	if err != nil || stream.StatusCode != http.StatusOK {
		t.Fatalf("open the live timeline %s: %v %v", url, stream, err)
	}
	t.Cleanup(func() { stream.Body.Close() })
	seen := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stream.Body)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "data: ") && strings.Contains(sc.Text(), `"step":"`+step+`"`) {
				close(seen)
				return
			}
		}
	}()
	return seen
}
