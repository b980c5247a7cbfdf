package main

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/people"
)

// testBuildVersion is stamped into the test binary (-ldflags -X
// main.version), as make build stamps the version git describes.
const testBuildVersion = "v0.0.0-revision-test"

// revisionClient connects the go-sdk v1.8.0 client with its defaults (it
// asks for its newest revision, 2026-07-28, through server/discover). Every
// resources/updated notification goes to updates with the time it arrived,
// and every subscriptions/acknowledged to acked: the SDK's Subscribe returns
// before the service holds the subscription, and the acknowledgement says
// it does.
func revisionClient(t *testing.T, endpoint, token string) (*sdk.ClientSession, chan notice, chan struct{}) {
	t.Helper()
	updates, acked := make(chan notice, 16), make(chan struct{}, 16)
	client := sdk.NewClient(&sdk.Implementation{Name: "revision-test", Version: "1"}, &sdk.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *sdk.ResourceUpdatedNotificationRequest) {
			updates <- notice{uri: r.Params.URI, at: time.Now()}
		},
	})
	client.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method == "notifications/subscriptions/acknowledged" {
				acked <- struct{}{}
			}
			return next(ctx, method, req)
		}
	})
	session, err := client.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: endpoint, HTTPClient: apptest.BearerClient(token), MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("connect to %s: %v", endpoint, err)
	}
	t.Cleanup(func() { session.Close() })
	return session, updates, acked
}

type notice struct {
	uri string
	at  time.Time
}

// The go-sdk v1.8.0 client negotiates the 2026-07-28 revision with
// `countersign serve` (server/discover, no session), reads the build's
// version as serverInfo.version, and hears of a decision through
// subscriptions/listen: made on the same instance, and made on another
// instance of the same PostgreSQL.
func TestTheNewestClientSpeaks20260728AndListensForDecisions(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		url := apptest.DatabaseURL(t, db)
		instances := []*server{startInstance(t, db, url)}
		if db == apptest.Postgres {
			instances = append(instances, startInstance(t, db, url))
		}
		a := instances[0]
		token := lastLine(mustCLI(t, a.env, "agent", "create", "--name", "bot", "--scopes", strings.Join(people.AllScopes, ",")).stdout)
		invite := mustCLI(t, a.env, "invite", "--role", "owner", "--subject", "ada")
		ada := apptest.NewBrowser(t, a.URL)
		if r := ada.AcceptInvite(strings.TrimPrefix(lastLine(invite.stdout), a.URL+"/invite/"), "ada"); r.Status != http.StatusOK {
			t.Fatalf("ada accepts the invite: %s", r)
		}

		session, updates, acked := revisionClient(t, a.URL+"/mcp", token)
		init := session.InitializeResult()
		if init.ProtocolVersion != "2026-07-28" {
			t.Fatalf("negotiated %q, want 2026-07-28", init.ProtocolVersion)
		}
		if init.ServerInfo == nil || init.ServerInfo.Name != "countersign" || init.ServerInfo.Version != testBuildVersion {
			t.Errorf("serverInfo %+v, want countersign %s (the build's version)", init.ServerInfo, testBuildVersion)
		}
		if session.ID() != "" {
			t.Errorf("a 2026-07-28 connection has session id %q; the revision has none", session.ID())
		}
		if caps := init.Capabilities; caps == nil || caps.Resources == nil || !caps.Resources.Subscribe {
			t.Errorf("server/discover capabilities %+v: resources.subscribe missing", caps)
		}

		deciders := map[string]*apptest.Browser{"the same instance": ada}
		if len(instances) > 1 {
			b := instances[1]
			onB := apptest.NewBrowser(t, b.URL)
			onB.Passkey = ada.Passkey
			if r := onB.SignIn(); r.Status != http.StatusOK {
				t.Fatalf("ada signs in on B: %s", r)
			}
			deciders["another instance"] = onB
		}
		names := slices.Sorted(func(yield func(string) bool) {
			for n := range deciders {
				if !yield(n) {
					return
				}
			}
		})
		for i, where := range names {
			t.Run("a decision made on "+where+" reaches the listener", func(t *testing.T) {
				filed, err := apptest.CallTool(ctx, session, "approvals_create", pullRequestAsk(7, i))
				if err != nil || filed.IsError {
					t.Fatalf("file: %v %s", err, filed.Text)
				}
				id := filed.Out["approval_id"].(string)
				uri := "countersign://approvals/" + id
				if err := session.Subscribe(ctx, &sdk.SubscribeParams{URI: uri}); err != nil {
					t.Fatalf("subscribe: %v", err)
				}
				select {
				case <-acked:
				case <-time.After(10 * time.Second):
					t.Fatal("subscriptions/listen was not acknowledged within 10 s")
				}
				decided := time.Now()
				if r := deciders[where].Decide(id, "deny", ""); r.Status != http.StatusOK || r.Body["status"] != "denied" {
					t.Fatalf("ada denies: %s", r)
				}
				select {
				case u := <-updates:
					if u.uri != uri {
						t.Fatalf("told of %s, want %s", u.uri, uri)
					}
					// A figure for docs/perf.md, not a pass/fail: it covers
					// the decide request's own round trip too.
					t.Logf("%s: %s: resources/updated %s after the decide request began", db, where, u.at.Sub(decided).Round(time.Millisecond))
				case <-time.After(10 * time.Second):
					t.Fatal("no notifications/resources/updated within 10 s of the decision")
				}
				read, err := apptest.CallTool(ctx, session, "approvals_get", map[string]any{"approval_id": id})
				if err != nil || read.Out["status"] != "denied" || read.Out["decided_by"] != "ada" {
					t.Fatalf("approvals_get after the notice: %v %v", err, read.Out)
				}
				_ = session.Unsubscribe(ctx, &sdk.UnsubscribeParams{URI: uri})
			})
		}

		t.Run("an older client still opens a session", func(t *testing.T) {
			for _, revision := range []string{"2025-06-18", "2025-11-25"} {
				old, err := apptest.ConnectRevision(ctx, a.URL+"/mcp", token, revision)
				if err != nil {
					t.Fatalf("%s: connect: %v", revision, err)
				}
				if got := old.InitializeResult().ProtocolVersion; got != revision || old.ID() == "" {
					t.Errorf("%s: negotiated %q with session %q", revision, got, old.ID())
				}
				if r, err := apptest.CallTool(ctx, old, "approvals_list", map[string]any{}); err != nil || r.IsError {
					t.Errorf("%s: approvals_list: %v %s", revision, err, r.Text)
				}
				old.Close()
			}
		})
	})
}
