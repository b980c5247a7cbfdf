package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/app"
	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/mcp/bearer"
	"github.com/countersign/countersign/models/outbox"
	"github.com/countersign/countersign/models/people"
)

// roundRobin is a reverse proxy with no affinity: each request goes to the
// next backend in turn, as Caddy's and nginx's round robin send it. Like
// them (lb_try_duration, proxy_next_upstream) it tries the next backend when
// one refuses the connection, so a killed instance drops out.
type roundRobin struct {
	backends []*url.URL
	next     atomic.Uint64
}

func (p *roundRobin) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		body = b
	}
	var last error
	for range len(p.backends) {
		b := p.backends[p.next.Add(1)%uint64(len(p.backends))]
		out := r.Clone(r.Context())
		out.URL.Scheme, out.URL.Host = b.Scheme, b.Host
		out.Body = io.NopCloser(bytes.NewReader(body))
		res, err := http.DefaultTransport.RoundTrip(out)
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			last = err
			continue
		}
		return res, err
	}
	return nil, last
}

// startProxy serves the round-robin proxy at http://localhost:PORT; the
// backends are set once the instances run.
func startProxy(t *testing.T) (*roundRobin, string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rr := &roundRobin{}
	proxy := &httputil.ReverseProxy{
		Rewrite:       func(pr *httputil.ProxyRequest) { pr.Out.Host = pr.In.Host; pr.SetXForwarded() },
		Transport:     rr,
		FlushInterval: -1,
	}
	srv := &http.Server{Handler: proxy}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return rr, fmt.Sprintf("http://localhost:%d", l.Addr().(*net.TCPAddr).Port)
}

// startBehind runs one `countersign serve` on the database at databaseURL
// behind the proxy at publicURL, telling the others its own address.
func startBehind(t *testing.T, db apptest.Database, databaseURL, publicURL string) (*server, *url.URL) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	own := fmt.Sprintf("http://127.0.0.1:%d", port)
	s := startServer(t, db, map[string]string{
		"COUNTERSIGN_ADDR":     fmt.Sprintf("127.0.0.1:%d", port),
		"COUNTERSIGN_BASE_URL": publicURL,
		"COUNTERSIGN_ASK_RATE": "100000/s", "COUNTERSIGN_ASK_BURST": "100000",
		"COUNTERSIGN_DATABASE_URL":    databaseURL,
		"COUNTERSIGN_INSTANCE_URL":    own,
		"COUNTERSIGN_INSTANCE_SECRET": "the-same-secret-on-every-instance-of-this-test",
		"COUNTERSIGN_TRUSTED_PROXIES": "127.0.0.1",
	})
	u, _ := url.Parse(own)
	return s, u
}

// clientRevisions are the MCP protocol revisions whose clients must work
// through a proxy with no affinity. connect opens a client of that revision
// at endpoint with token, calling heard with the URI of each
// notifications/resources/updated, and acked on each
// notifications/subscriptions/acknowledged (2026-07-28's Subscribe returns
// before the service holds the subscription; the acknowledgement says it
// does). A revision is one more row.
var clientRevisions = []struct {
	name     string
	revision string
	acked    bool // Subscribe is acknowledged by a notification
}{
	{"2025-11-25, a session on one instance", "2025-11-25", false},
	{"2026-07-28, no session: every call anywhere", "2026-07-28", true},
}

// connectRevision opens a go-sdk client of revision through endpoint.
func connectRevision(ctx context.Context, endpoint, token, revision string, heard func(uri string), acked func()) (*sdk.ClientSession, error) {
	client := sdk.NewClient(&sdk.Implementation{Name: "behind-a-proxy", Version: "1"}, &sdk.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *sdk.ResourceUpdatedNotificationRequest) { heard(r.Params.URI) },
	})
	client.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method == "notifications/subscriptions/acknowledged" {
				acked()
			}
			return next(ctx, method, req)
		}
	})
	return client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: endpoint,
		HTTPClient: &http.Client{Transport: bearer.Transport{Token: token}}, MaxRetries: -1},
		&sdk.ClientSessionOptions{ProtocolVersion: revision})
}

// Three `countersign serve` processes on one PostgreSQL behind a
// round-robin proxy with no affinity act as one service: an MCP client's
// calls and its GET stream land on any instance (each forwards what belongs
// to another's session), a person signs in, reads and decides through the
// proxy, a push link opens and decides its ask through it, and a kill -9 of
// one instance under load loses no acknowledged ask.
func TestThreeInstancesBehindARoundRobinProxy(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		if db == apptest.SQLite {
			t.Skip("several instances need PostgreSQL")
		}
		ctx := context.Background()
		dbURL := apptest.DatabaseURL(t, db)
		rr, public := startProxy(t)
		var instances []*server
		for range 3 {
			s, u := startBehind(t, db, dbURL, public)
			instances = append(instances, s)
			rr.backends = append(rr.backends, u)
		}
		env := instances[0].env
		token := lastLine(mustCLI(t, env, "agent", "create", "--name", "bot", "--scopes", strings.Join(people.AllScopes, ",")).stdout)
		invite := strings.TrimPrefix(lastLine(mustCLI(t, env, "invite", "--role", "owner", "--subject", "ada").stdout), public+"/invite/")
		ada := apptest.NewBrowser(t, public)
		if r := ada.AcceptInvite(invite, "ada"); r.Status != http.StatusOK {
			t.Fatalf("ada accepts her invite through the proxy: %s", r)
		}
		store, err := app.OpenStore(ctx, mustConfig(t, env), apptest.Logger())
		if err != nil {
			t.Fatal(err)
		}
		acct, err := store.AccountByName(ctx, people.DefaultAccountName)
		if err != nil {
			t.Fatal(err)
		}

		for _, rev := range clientRevisions {
			t.Run(rev.name, func(t *testing.T) {
				heard, acked := make(chan string, 16), make(chan struct{}, 16)
				session, err := connectRevision(ctx, public+"/mcp", token, rev.revision, func(uri string) { heard <- uri }, func() { acked <- struct{}{} })
				if err != nil {
					t.Fatalf("connect through the proxy: %v", err)
				}
				defer session.Close()
				var ids []string
				for n := range 6 { // two rounds of the three instances
					r, err := apptest.CallTool(ctx, session, "approvals_create", pullRequestAsk(90, n))
					if err != nil || r.IsError {
						t.Fatalf("file ask %d through the proxy: %v %s", n, err, r.Text)
					}
					ids = append(ids, r.Out["approval_id"].(string))
				}
				for _, id := range ids {
					if r, err := apptest.CallTool(ctx, session, "approvals_get", map[string]any{"approval_id": id}); err != nil || r.IsError || r.Out["status"] != "pending" {
						t.Fatalf("read %s through the proxy: %v %s", id, err, r.Text)
					}
				}
				id := ids[len(ids)-1]
				uri := "countersign://approvals/" + id
				if err := session.Subscribe(ctx, &sdk.SubscribeParams{URI: uri}); err != nil {
					t.Fatalf("subscribe through the proxy: %v", err)
				}
				if rev.acked {
					select {
					case <-acked:
					case <-time.After(10 * time.Second):
						t.Fatal("subscriptions/listen through the proxy was not acknowledged within 10 s")
					}
				}
				if got := session.InitializeResult().ProtocolVersion; got != rev.revision {
					t.Fatalf("the client negotiated %s, want %s", got, rev.revision)
				}

				// The ask page and its live timeline through the proxy.
				if r := ada.Get("/approvals/" + id); r.Status != http.StatusOK {
					t.Fatalf("the ask page through the proxy: %s", r)
				}
				denied := watchTimeline(t, ctx, ada.HTTP, public+"/approvals/"+id+"/events", "denied")

				if r := ada.Decide(id, "deny", ""); r.Status != http.StatusOK || r.Body["status"] != "denied" {
					t.Fatalf("ada denies through the proxy: %s", r)
				}
				select {
				case u := <-heard:
					if u != uri {
						t.Fatalf("the agent heard of %s, want %s", u, uri)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("the agent heard nothing of the decision")
				}
				select {
				case <-denied:
				case <-time.After(10 * time.Second):
					t.Fatal("the live timeline did not show the decision")
				}
				if r, err := apptest.CallTool(ctx, session, "approvals_get", map[string]any{"approval_id": id}); err != nil || r.Out["status"] != "denied" {
					t.Fatalf("read the decision through the proxy: %v %s", err, r.Text)
				}
			})
		}

		t.Run("a push link opens and decides its ask through the proxy", func(t *testing.T) {
			session, err := apptest.Connect(ctx, public+"/mcp", token)
			if err != nil {
				t.Fatal(err)
			}
			defer session.Close()
			r, err := apptest.CallTool(ctx, session, "approvals_create", pullRequestAsk(91, 1))
			if err != nil || r.IsError {
				t.Fatalf("file: %v %s", err, r.Text)
			}
			id := r.Out["approval_id"].(string)
			person, err := store.PersonBySubject(ctx, "ada")
			if err != nil {
				t.Fatal(err)
			}
			link, err := store.IssuePushLink(ctx, &outbox.PushTarget{PushJob: outbox.PushJob{ApprovalID: id, Event: outbox.PushAsk, PersonID: person.ID, SubscriptionID: "sub_phone"}})
			if err != nil || link == "" {
				t.Fatalf("issue the push link: %q %v", link, err)
			}
			phone := apptest.NewBrowser(t, public)
			phone.Passkey = ada.Passkey
			if r := phone.Get("/link/" + id + "/" + link); r.Status != http.StatusSeeOther {
				t.Fatalf("open the push link through the proxy: %s, want 303 to its ask", r)
			}
			if r := phone.Get("/link/" + id); r.Status != http.StatusOK {
				t.Fatalf("the ask under its link through the proxy: %s", r)
			}
			ch := phone.Post("/link/"+id+"/challenge", map[string]string{"decision": "approve"})
			if ch.Status != http.StatusOK {
				t.Fatalf("the link's challenge through the proxy: %s", ch)
			}
			ceremony, options := ch.Ceremony()
			if d := phone.Post("/link/"+id+"/decide", map[string]any{"ceremony": ceremony, "credential": phone.Sign(options)}); d.Status != http.StatusOK || d.Body["status"] != "approved" {
				t.Fatalf("decide through the push link and the proxy: %s", d)
			}
		})

		t.Run("a kill -9 of one instance under load loses no acknowledged ask", func(t *testing.T) {
			loadCtx, stop := context.WithCancel(ctx)
			defer stop()
			var (
				mu        sync.Mutex
				acked     []string
				afterKill int
				killed    atomic.Bool
				wg        sync.WaitGroup
			)
			for c := range 6 {
				wg.Go(func() {
					var session *sdk.ClientSession
					defer func() {
						if session != nil {
							session.Close()
						}
					}()
					for n := 1; loadCtx.Err() == nil; n++ {
						if session == nil {
							s, err := apptest.Connect(loadCtx, public+"/mcp", token)
							if err != nil {
								time.Sleep(50 * time.Millisecond)
								continue
							}
							session = s
						}
						r, err := apptest.CallTool(loadCtx, session, "approvals_create", pullRequestAsk(100+c, n))
						if err != nil {
							// Its instance is gone, and its session with it: open another.
							session.Close()
							session = nil
							continue
						}
						if id, _ := r.Out["approval_id"].(string); !r.IsError && id != "" {
							mu.Lock()
							acked = append(acked, id)
							if killed.Load() {
								afterKill++
							}
							mu.Unlock()
						}
					}
				})
			}
			count := func() (int, int) { mu.Lock(); defer mu.Unlock(); return len(acked), afterKill }
			waitFor := func(what string, ok func() bool) {
				for deadline := time.Now().Add(time.Minute); !ok(); time.Sleep(5 * time.Millisecond) {
					if time.Now().After(deadline) {
						n, later := count()
						t.Fatalf("%s: not within a minute (%d acknowledged, %d after the kill)", what, n, later)
					}
				}
			}
			waitFor("200 asks acknowledged", func() bool { n, _ := count(); return n >= 200 })
			victim := instances[2]
			if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			<-victim.done
			killed.Store(true)
			waitFor("200 more asks acknowledged after the kill", func() bool { _, later := count(); return later >= 200 })
			stop()
			wg.Wait()

			lost := 0
			for _, id := range acked {
				if _, err := store.GetApproval(ctx, acct.ID, id); err != nil {
					lost++
				}
			}
			if lost > 0 {
				t.Fatalf("%d of %d acknowledged asks are lost", lost, len(acked))
			}
			t.Logf("%d acknowledged asks (%d after the kill), all kept", len(acked), afterKill)
		})
	})
}
