package mcp_test

import (
	"bytes"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"testing"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
)

var retryIn = regexp.MustCompile(`retry in (\d+) s`)

func TestAsksAreLimitedPerRequester(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		env := apptest.Start(t, db, map[string]string{"COUNTERSIGN_ASK_RATE": "2/m", "COUNTERSIGN_ASK_BURST": "3"})
		_, token := env.Agent(env.Account.ID, "busy")
		_, otherToken := env.Agent(env.Account.ID, "calm")
		busy, calm := env.Connect(token), env.Connect(otherToken)

		// Refused asks file nothing and so take nothing from the limit.
		for range 5 {
			bad := prAsk(899, "abcdef0000000")
			bad["title"] = ""
			if r := busy.Call("approvals_create", bad); r.Code != string(core.InvalidArgument) {
				t.Fatalf("an ask without a title: %s, want INVALID_ARGUMENT", r)
			}
		}
		for i := range 3 {
			if r := busy.Call("approvals_create", prAsk(900+i, fmt.Sprintf("abcdef%07d", i))); r.IsError {
				t.Fatalf("ask %d of the burst of 3: %s", i+1, r)
			}
		}

		before := snapshot(t, env)
		r := busy.Call("approvals_create", prAsk(903, "abcdef0000003"))
		if !r.IsError || r.Code != string(core.ResourceExhausted) {
			t.Fatalf("fourth ask: %s, want RESOURCE_EXHAUSTED", r)
		}
		// 2/m frees one ask every 30 s: the wait is whole seconds, at most that.
		m := retryIn.FindStringSubmatch(r.Text)
		if m == nil {
			t.Fatalf("refusal %q gives no retry time in seconds", r.Text)
		}
		if secs, _ := strconv.Atoi(m[1]); secs < 1 || secs > 30 {
			t.Errorf("retry in %d s, want 1 to 30 at 2/m", secs)
		}
		before.mustEqual(t, snapshot(t, env), "the refused fourth ask")

		if r := calm.Call("approvals_create", prAsk(904, "abcdef0000004")); r.IsError || r.Out["requester"] != "agent:calm" {
			t.Errorf("another agent's ask: %s, want it filed", r)
		}
		if r := busy.Call("approvals_create", prAsk(905, "abcdef0000005")); r.Code != string(core.ResourceExhausted) {
			t.Errorf("busy agent after calm filed: %s, want still RESOURCE_EXHAUSTED", r)
		}
	})
}

// A retry of approval_request with its idempotency key is answered with the
// request it filed even when the agent may file no new one now: only a new
// request counts against the limit.
func TestARetryAtTheLimitGetsItsRequestBack(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		env := apptest.Start(t, db, map[string]string{"COUNTERSIGN_ASK_RATE": "2/m", "COUNTERSIGN_ASK_BURST": "1"})
		_, token := env.Agent(env.Account.ID, "busy")
		busy := env.Connect(token)
		request := func(key string) map[string]any {
			return map[string]any{"kind": "life_change", "title": "Book the dentist for Tuesday",
				"proposal": map[string]any{"mode": "advisory"}, "idempotencyKey": key}
		}
		first := busy.OK("approval_request", request("dentist"))
		if first["repeated"] != false {
			t.Fatalf("the first call: %v, want a new request", first)
		}
		if r := busy.Call("approval_request", request("another")); r.Code != string(core.ResourceExhausted) {
			t.Fatalf("a new request past the burst of 1: %s, want RESOURCE_EXHAUSTED", r)
		}
		before := snapshot(t, env)
		for range 3 {
			again := busy.Call("approval_request", request("dentist"))
			if again.IsError || again.Out["approvalId"] != first["approvalId"] || again.Out["repeated"] != true {
				t.Fatalf("a retry at the limit: %s, want request %v back, repeated", again, first["approvalId"])
			}
		}
		before.mustEqual(t, snapshot(t, env), "the retries")
		if r := busy.Call("approval_request", request("another")); r.Code != string(core.ResourceExhausted) {
			t.Errorf("a new request after the retries: %s, want still RESOURCE_EXHAUSTED (the retries took nothing)", r)
		}
	})
}

func TestABodyOverTheBoundIsRefused(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		env := apptest.Start(t, db, nil)
		_, token := env.Agent(env.Account.ID, "bot")
		c := env.Connect(token)
		c.OK("approvals_list", map[string]any{})

		// A valid ask, padded with white space to 2 MiB: without the bound it would be filed.
		call := toolCallBody(t, "approvals_create", prAsk(900, "abcdef1234567"))
		pad := func(body []byte) []byte {
			return append(bytes.Repeat([]byte(" "), 2<<20-len(body)), body...)
		}
		small := rawPost(t, env, token, c.Session.ID(), protocolOf(c), call)
		if small.Status != http.StatusOK {
			t.Fatalf("the same ask unpadded: HTTP %d: %s", small.Status, small.Body)
		}

		before := snapshot(t, env)
		for _, tc := range []struct {
			name, session string
			body          []byte
		}{
			{"tools/call on a session", c.Session.ID(), pad(call)},
			{"initialize", "", pad(initializeBody())},
		} {
			t.Run(tc.name+" of 2 MiB", func(t *testing.T) {
				if len(tc.body) != 2<<20 {
					t.Fatalf("body is %d bytes", len(tc.body))
				}
				protocol := ""
				if tc.session != "" {
					protocol = protocolOf(c)
				}
				r := rawPost(t, env, token, tc.session, protocol, tc.body)
				if r.Status < 400 || r.Status > 499 {
					t.Errorf("HTTP %d, want a 4xx: %.200s", r.Status, r.Body)
				}
				before.mustEqual(t, snapshot(t, env), "a 2 MiB "+tc.name)
			})
		}
	})
}
