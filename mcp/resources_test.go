package mcp_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
)

// listening connects with a client that hands every resources/updated
// notification to the returned channel.
func listening(t *testing.T, env *apptest.Env, token string) (*sdk.ClientSession, chan string) {
	t.Helper()
	updates := make(chan string, 16)
	client := sdk.NewClient(&sdk.Implementation{Name: "countersign-test", Version: "1"}, &sdk.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *sdk.ResourceUpdatedNotificationRequest) { updates <- r.Params.URI },
	})
	session, err := client.Connect(context.Background(), &sdk.StreamableClientTransport{
		Endpoint: env.URL + "/mcp", HTTPClient: apptest.BearerClient(token), MaxRetries: -1}, &sdk.ClientSessionOptions{ProtocolVersion: apptest.SessionRevision})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { session.Close() })
	return session, updates
}

// An agent subscribed to its ask hears of the decision without polling, and
// reads the decided ask from the resource.
func TestASubscribedAgentHearsTheDecision(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		env := apptest.Start(t, db, nil)
		_, token := env.Agent(env.Account.ID, "bot")
		owner := env.Member(env.Account.ID, "ada", core.RoleOwner)
		session, updates := listening(t, env, token)

		templates, err := session.ListResourceTemplates(ctx, nil)
		if err != nil || len(templates.ResourceTemplates) != 1 || templates.ResourceTemplates[0].URITemplate != "countersign://approvals/{approval_id}" {
			t.Fatalf("resource templates: %+v, %v", templates, err)
		}
		filed, err := apptest.CallTool(ctx, session, "approvals_create", specAsk("pull_request", specPR()))
		if err != nil || filed.IsError {
			t.Fatalf("approvals_create: %v %s", err, filed.Text)
		}
		id := filed.Out["approval_id"].(string)
		uri := "countersign://approvals/" + id
		if err := session.Subscribe(ctx, &sdk.SubscribeParams{URI: uri}); err != nil {
			t.Fatalf("subscribe: %v", err)
		}
		select {
		case u := <-updates:
			t.Fatalf("a notification before anything changed: %s", u)
		case <-time.After(100 * time.Millisecond):
		}

		if _, err := env.Store.Decide(ctx, env.Account.ID, id, owner, asks.Decision{Verdict: asks.VerdictDeny, Note: "not this week"}); err != nil {
			t.Fatal(err)
		}
		select {
		case u := <-updates:
			if u != uri {
				t.Fatalf("notified of %s, want %s", u, uri)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no resources/updated notification within 10 s of the decision")
		}
		read, err := session.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
		if err != nil || len(read.Contents) != 1 || read.Contents[0].MIMEType != "application/json" {
			t.Fatalf("read %s: %+v, %v", uri, read, err)
		}
		var got map[string]any
		if err := json.Unmarshal([]byte(read.Contents[0].Text), &got); err != nil {
			t.Fatal(err)
		}
		want := apptest.Result{}
		want, _ = apptest.CallTool(ctx, session, "approvals_get", map[string]any{"approval_id": id})
		if got["status"] != "denied" || got["note"] != "not this week" || got["decided_by"] != "ada" || got["payload_sha256"] != want.Out["payload_sha256"] {
			t.Fatalf("the resource after the decision: %v", got)
		}

		// Progress on another ask is not its subscriber's news.
		other, _ := apptest.CallTool(ctx, session, "approvals_create", specAsk("pull_request", specPR("number", 901)))
		if _, err := apptest.CallTool(ctx, session, "approvals_add_progress", map[string]any{"approval_id": other.Out["approval_id"], "step": "stale"}); err != nil {
			t.Fatal(err)
		}
		select {
		case u := <-updates:
			t.Fatalf("notified of %s, which this session did not subscribe to", u)
		case <-time.After(300 * time.Millisecond):
		}
	})
}

// Resources keep the account boundary and need the read scopes.
func TestApprovalResourcesKeepTheAccountAndScopes(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		env := apptest.Start(t, db, nil)
		_, token := env.Agent(env.Account.ID, "bot")
		mine := env.Connect(token)
		id := mine.OK("approvals_create", specAsk("pull_request", specPR()))["approval_id"].(string)
		uri := "countersign://approvals/" + id

		acct, err := env.Store.CreateAccount(ctx, "other")
		if err != nil {
			t.Fatal(err)
		}
		_, foreignToken := env.Agent(acct.ID, "stranger")
		foreign, _ := listening(t, env, foreignToken)
		for name, call := range map[string]func() error{
			"read":      func() error { _, err := foreign.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri}); return err },
			"subscribe": func() error { return foreign.Subscribe(ctx, &sdk.SubscribeParams{URI: uri}) },
			"read nothing": func() error {
				_, err := foreign.ReadResource(ctx, &sdk.ReadResourceParams{URI: "countersign://approvals/appr_nothere"})
				return err
			},
		} {
			if err := call(); err == nil || !strings.Contains(err.Error(), "not found") {
				t.Errorf("another account's agent, %s: %v, want resource not found", name, err)
			}
		}

		_, writeOnly := env.Agent(env.Account.ID, "writer", people.ScopeMCPWrite, people.ScopeApprovalsWrite)
		limited, _ := listening(t, env, writeOnly)
		if _, err := limited.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri}); err == nil || !strings.Contains(err.Error(), "PERMISSION_DENIED") {
			t.Errorf("a token without the read scopes read the resource: %v", err)
		}
		if err := limited.Subscribe(ctx, &sdk.SubscribeParams{URI: uri}); err == nil || !strings.Contains(err.Error(), "PERMISSION_DENIED") {
			t.Errorf("a token without the read scopes subscribed: %v", err)
		}
	})
}
