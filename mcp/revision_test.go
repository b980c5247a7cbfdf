package mcp_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/people"
)

// listenRaw opens a 2026-07-28 subscriptions/listen for uri as a client
// would, and returns the JSON-RPC messages of its stream: up to the
// stream's end (a refusal) or up to the acknowledgement (a listen that
// holds, which the server keeps open).
func listenRaw(t *testing.T, env *apptest.Env, token, uri string) []string {
	t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":9,"method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"notifications":{"resourceSubscriptions":[%q]}}}`, uri)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, env.URL+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST subscriptions/listen: %v", err)
	}
	defer resp.Body.Close()
	var msgs []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if data, ok := strings.CutPrefix(line, "data:"); ok {
			msgs = append(msgs, strings.TrimSpace(data))
			if strings.Contains(data, "notifications/subscriptions/acknowledged") {
				return msgs
			}
		} else if resp.Header.Get("Content-Type") == "application/json" {
			msgs = append(msgs, line)
		}
	}
	return msgs
}

// subscriptions/listen keeps the account boundary and the read scopes of
// resources/subscribe: another account's approval is not found, a token
// without approvals:read is refused, and one's own approval is acknowledged.
func TestSubscriptionsListenKeepsTheAccountAndScopes(t *testing.T) {
	env := apptest.Start(t, apptest.SQLite, nil)
	ctx := context.Background()
	_, token := env.Agent(env.Account.ID, "bot")
	mine := env.Connect(token)
	filed := mine.OK("approvals_create", specAsk("pull_request", specPR()))
	uri := "countersign://approvals/" + filed["approval_id"].(string)
	acct, err := env.Store.CreateAccount(ctx, "other")
	if err != nil {
		t.Fatal(err)
	}
	_, foreign := env.Agent(acct.ID, "stranger")
	_, writeOnly := env.Agent(env.Account.ID, "writer", people.ScopeMCPWrite, people.ScopeApprovalsWrite)

	cases := []struct {
		name, token, uri, want string
	}{
		{"its own approval is acknowledged", token, uri, "notifications/subscriptions/acknowledged"},
		{"another account's approval is not found", foreign, uri, "not found"},
		{"an approval that does not exist is not found", token, "countersign://approvals/appr_nothere", "not found"},
		{"a token without the read scopes is refused", writeOnly, uri, "PERMISSION_DENIED"},
		{"another runner's runs are not found", token, "countersign://runners/run_x/runs", "not found"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			msgs := listenRaw(t, env, tc.token, tc.uri)
			joined := strings.Join(msgs, "\n")
			if !strings.Contains(joined, tc.want) {
				t.Fatalf("stream %q, want %q", joined, tc.want)
			}
			if tc.want != "notifications/subscriptions/acknowledged" && strings.Contains(joined, "acknowledged") {
				t.Fatalf("a refused listen was acknowledged: %s", joined)
			}
		})
	}
}

// A 2026-07-28 subscriptions/listen holds a slot under the session caps for
// as long as it is open: past COUNTERSIGN_MCP_SESSIONS_PER_TOKEN with every
// slot busy, the next is refused with 429 naming the cap, and a slot comes
// back when a listen ends.
func TestAListenCountsAgainstTheSessionCaps(t *testing.T) {
	env := apptest.Start(t, apptest.SQLite, map[string]string{"COUNTERSIGN_MCP_SESSIONS_PER_TOKEN": "2"})
	_, token := env.Agent(env.Account.ID, "bot")
	mine := env.Connect(token)
	uri := "countersign://approvals/" + mine.OK("approvals_create", specAsk("pull_request", specPR()))["approval_id"].(string)
	mine.Close() // its session turns idle, and gives way to the first listen

	var stops []context.CancelFunc
	defer func() {
		for _, stop := range stops {
			stop()
		}
	}()
	open := func() (*http.Response, context.CancelFunc) {
		ctx, cancel := context.WithCancel(context.Background())
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":3,"method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"notifications":{"resourceSubscriptions":[%q]}}}`, uri)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, env.URL+"/mcp", strings.NewReader(body))
		for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
			"Authorization": "Bearer " + token, "Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "subscriptions/listen"} {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp, cancel
	}
	for i := range 2 {
		resp, stop := open()
		stops = append(stops, stop)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("listen %d: HTTP %d", i+1, resp.StatusCode)
		}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() && !strings.Contains(sc.Text(), "acknowledged") {
		}
	}
	resp, stop := open()
	stop()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "5" {
		t.Fatalf("a third listen with two open: HTTP %d, Retry-After %q; want 429", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	stops[0]() // one listen ends
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, stop := open()
		stops = append(stops, stop)
		if resp.StatusCode == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a listen after one ended: HTTP %d, want 200", resp.StatusCode)
		}
	}
}
