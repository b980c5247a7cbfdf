package mcp_test

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/runners"
	"github.com/countersign/countersign/proof"
)

// runScene is a service with an owner who signs with a passkey, an agent
// and two enrolled runners of the account.
type runScene struct {
	env    *apptest.Env
	ada    *apptest.Browser
	agent  *apptest.Client
	r1, r2 *apptest.TestRunner
}

func newRunScene(t *testing.T, db apptest.Database) *runScene {
	t.Helper()
	env := apptest.StartWeb(t, db, nil)
	s := &runScene{env: env, ada: env.Join(env.Account.ID, core.RoleOwner, "ada")}
	_, token := env.Agent(env.Account.ID, "bot")
	s.agent = env.Connect(token)
	s.r1 = env.EnrollRunner(env.Account.ID, "host-1")
	s.r2 = env.EnrollRunner(env.Account.ID, "host-2")
	return s
}

// run files a pinned run of r and returns its id and payload hash.
func (s *runScene) run(t *testing.T, r *apptest.TestRunner) (string, string) {
	t.Helper()
	out := s.agent.OK("approvals_create", r.Ask("ada", specSHA64, []string{"deploy.sh", "api"}, "remote", 30*time.Minute))
	return out["approval_id"].(string), out["payload_sha256"].(string)
}

// approved files a pinned run of r and has ada approve it with her passkey.
func (s *runScene) approved(t *testing.T, r *apptest.TestRunner) (string, string) {
	t.Helper()
	id, sha := s.run(t, r)
	if res := s.ada.Decide(id, "approve", ""); res.Status != http.StatusOK {
		t.Fatalf("approve the run: %s", res)
	}
	return id, sha
}

// report is the approvals_add_progress arguments of a report signed by key as runnerID.
func report(r *apptest.TestRunner, runnerID, id, sha, step, note, expected string, signedAt time.Time) map[string]any {
	sig := proof.SignRunnerReport(r.Key, runnerID, id, sha, step, note, signedAt.Unix())
	args := map[string]any{"approval_id": id, "step": step, "note": note, "runner": sig}
	if expected != "" {
		args["expected_state"] = expected
	}
	return args
}

func TestARunnerTokenReadsOnlyItsRunsAndCallsNothingElse(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := newRunScene(t, db)
		mine, _ := s.run(t, s.r1)
		theirs, _ := s.run(t, s.r2)
		pr := s.agent.OK("approvals_create", specAsk("pull_request", specPR()))["approval_id"].(string)

		c := s.env.Connect(s.r1.Token)
		res, err := c.Session.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		var names []string
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
		}
		slices.Sort(names)
		if want := []string{"approvals_add_progress", "approvals_get", "approvals_list"}; !slices.Equal(names, want) {
			t.Errorf("a runner's tools/list = %v, want %v", names, want)
		}
		specRefused(t, c.Call("approvals_create", s.r1.Ask("ada", specSHA64, []string{"x.sh"}, "remote", 30*time.Minute)), core.PermissionDenied, "")
		specRefused(t, c.Call("approvals_revoke_auto_approve_policy", map[string]any{"policy_id": "pol_x"}), core.PermissionDenied, "")

		if got := c.OK("approvals_get", map[string]any{"approval_id": mine}); got["approval_id"] != mine {
			t.Errorf("the runner reads its run as %v", got["approval_id"])
		}
		specRefused(t, c.Call("approvals_get", map[string]any{"approval_id": theirs}), core.NotFound, "approval_id")
		specRefused(t, c.Call("approvals_get", map[string]any{"approval_id": pr}), core.NotFound, "approval_id")
		list := c.OK("approvals_list", map[string]any{})["approvals"].([]any)
		if len(list) != 1 || list[0].(map[string]any)["approval_id"] != mine {
			t.Errorf("the runner lists %v, want only %s", list, mine)
		}
		if _, err := c.Session.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: "countersign://approvals/" + theirs}); err == nil {
			t.Errorf("the runner read another runner's run as a resource")
		}
		if err := c.Session.Subscribe(context.Background(), &sdk.SubscribeParams{URI: "countersign://runners/" + s.r2.Runner.ID + "/runs"}); err == nil {
			t.Errorf("the runner subscribed to another runner's runs")
		}
		if err := c.Session.Subscribe(context.Background(), &sdk.SubscribeParams{URI: "countersign://runners/" + s.r1.Runner.ID + "/runs"}); err != nil {
			t.Errorf("the runner cannot subscribe to its own runs: %v", err)
		}

		if _, err := s.env.Store.DisableRunner(context.Background(), s.env.Account.ID, "host-1", "test"); err != nil {
			t.Fatal(err)
		}
		if code := mcpPost(t, s.env.URL, s.r1.Token); code != http.StatusUnauthorized {
			t.Errorf("a disabled runner's token answers %d, want 401", code)
		}
	})
}

func TestFilingARunNeedsAnEnrolledEnabledRunnerOfTheAccountWithItsKey(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := newRunScene(t, db)
		other, err := s.env.Store.CreateAccount(context.Background(), "other")
		if err != nil {
			t.Fatal(err)
		}
		foreign := s.env.EnrollRunner(other.ID, "host-x")
		gone := s.env.EnrollRunner(s.env.Account.ID, "host-gone")
		if _, err := s.env.Store.DisableRunner(context.Background(), s.env.Account.ID, "host-gone", "test"); err != nil {
			t.Fatal(err)
		}
		withKey := func(r *apptest.TestRunner, key string) map[string]any {
			args := r.Ask("ada", specSHA64, []string{"deploy.sh"}, "remote", 30*time.Minute)
			args["payload"].(map[string]any)["run"].(map[string]any)["runner_public_key"] = key
			return args
		}
		cases := []struct {
			name  string
			args  map[string]any
			field string
		}{
			{"a runner of another account", foreign.Ask("ada", specSHA64, []string{"deploy.sh"}, "remote", 30*time.Minute), "payload.run.runner_id"},
			{"a disabled runner", gone.Ask("ada", specSHA64, []string{"deploy.sh"}, "remote", 30*time.Minute), "payload.run.runner_id"},
			{"another runner's key", withKey(s.r1, s.r2.PublicKey()), "payload.run.runner_public_key"},
			{"a key that is no key", withKey(s.r1, "ed25519:AAAA"), "payload.run.runner_public_key"},
		}
		for _, tc := range cases {
			t.Run(tc.name+" is refused and files nothing", func(t *testing.T) {
				a, e := specCounts(t, s.env)
				specRefused(t, s.agent.Call("approvals_create", tc.args), core.FailedPrecondition, tc.field)
				if a2, e2 := specCounts(t, s.env); a2 != a || e2 != e {
					t.Errorf("a refused run wrote %d approvals and %d events", a2-a, e2-e)
				}
			})
		}
		t.Run("an enrolled runner with its key is filed, asked of the person the pin names", func(t *testing.T) {
			id, _ := s.run(t, s.r1)
			a, err := s.env.Store.GetApproval(context.Background(), s.env.Account.ID, id)
			if err != nil {
				t.Fatal(err)
			}
			if a.Status != asks.StatusPending || a.RunnerID != s.r1.Runner.ID || a.AskedOf != "ada" {
				t.Errorf("filed run: status %s, runner %q, asked of %q", a.Status, a.RunnerID, a.AskedOf)
			}
		})
	})
}

func TestRunnerReportsAreSignedCheckedAndCarriedOnTheTimeline(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := newRunScene(t, db)
		id, sha := s.approved(t, s.r1)
		c1, c2 := s.env.Connect(s.r1.Token), s.env.Connect(s.r2.Token)
		now := time.Now()

		for _, step := range []string{"started", "step", "done", "failed", "stale"} {
			args := map[string]any{"approval_id": id, "step": step, "note": "x"}
			if step == "started" {
				args["observed"] = map[string]any{"x": 1}
			}
			r := s.agent.Call("approvals_add_progress", args)
			if !r.IsError || r.Code != string(core.PermissionDenied) {
				t.Errorf("the agent's %s on a pinned run: %s, want PERMISSION_DENIED", step, r)
			}
		}
		r := s.agent.Call("approvals_add_progress", report(s.r1, s.r1.Runner.ID, id, sha, "started", "", "approved", now))
		specRefused(t, r, core.PermissionDenied, "runner")

		bad := report(s.r1, s.r1.Runner.ID, id, sha, "started", "claimed", "approved", now)
		bad["note"] = "claimed, but another note"
		refusals := []struct {
			name   string
			client *apptest.Client
			args   map[string]any
			code   core.Code
			field  string
		}{
			{"a signature over another note", c1, bad, core.PermissionDenied, "runner.signature"},
			{"a signature by another key", c1, report(s.r2, s.r1.Runner.ID, id, sha, "started", "claimed", "approved", now), core.PermissionDenied, "runner.signature"},
			{"a signature over another payload hash", c1, report(s.r1, s.r1.Runner.ID, id, specSHA64, "started", "claimed", "approved", now), core.PermissionDenied, "runner.signature"},
			{"a signed_at six minutes old", c1, report(s.r1, s.r1.Runner.ID, id, sha, "started", "claimed", "approved", now.Add(-6*time.Minute)), core.PermissionDenied, "runner.signed_at"},
			{"a signed_at six minutes ahead", c1, report(s.r1, s.r1.Runner.ID, id, sha, "started", "claimed", "approved", now.Add(6*time.Minute)), core.PermissionDenied, "runner.signed_at"},
			{"another runner's token with the right signature", c2, report(s.r1, s.r1.Runner.ID, id, sha, "started", "claimed", "approved", now), core.PermissionDenied, "runner.runner_id"},
			{"another runner's token signing as itself", c2, report(s.r2, s.r2.Runner.ID, id, sha, "started", "claimed", "approved", now), core.NotFound, "approval_id"},
			{"no signature", c1, map[string]any{"approval_id": id, "step": "started", "expected_state": "approved"}, core.InvalidArgument, "runner"},
			{"answered, which no runner reports", c1, report(s.r1, s.r1.Runner.ID, id, sha, "answered", "x", "", now), core.InvalidArgument, "step"},
			{"step before started", c1, report(s.r1, s.r1.Runner.ID, id, sha, "step", "out", "", now), core.FailedPrecondition, ""},
			{"a claim expecting pending", c1, report(s.r1, s.r1.Runner.ID, id, sha, "started", "claimed", "pending", now), core.FailedPrecondition, ""},
			{"a claim expecting a state the seed does not name", c1, report(s.r1, s.r1.Runner.ID, id, sha, "started", "claimed", "done", now), core.InvalidArgument, "expected_state"},
		}
		for _, tc := range refusals {
			t.Run(tc.name+" is refused and records nothing", func(t *testing.T) {
				_, before := specCounts(t, s.env)
				specRefused(t, tc.client.Call("approvals_add_progress", tc.args), tc.code, tc.field)
				if _, after := specCounts(t, s.env); after != before {
					t.Errorf("a refused report wrote %d events", after-before)
				}
				if a, _ := s.env.Store.GetApproval(context.Background(), s.env.Account.ID, id); a.Status != asks.StatusApproved {
					t.Errorf("the run is %s, want approved", a.Status)
				}
			})
		}

		t.Run("the runner's signed claim, steps and done move the run and ride on its timeline", func(t *testing.T) {
			c1.OK("approvals_add_progress", report(s.r1, s.r1.Runner.ID, id, sha, "started", "claimed", "approved", now))
			second := c1.Call("approvals_add_progress", report(s.r1, s.r1.Runner.ID, id, sha, "started", "claimed", "approved", now))
			specRefused(t, second, core.FailedPrecondition, "")
			c1.OK("approvals_add_progress", report(s.r1, s.r1.Runner.ID, id, sha, "step", "hello\nworld", "in_progress", now))
			out := c1.OK("approvals_add_progress", report(s.r1, s.r1.Runner.ID, id, sha, "done", "exit status 0", "in_progress", now))
			if out["status"] != "done" {
				t.Errorf("status %v, want done", out["status"])
			}
			got := s.agent.OK("approvals_get", map[string]any{"approval_id": id})
			var signed int
			for _, e := range got["timeline"].([]any) {
				ev := e.(map[string]any)
				if ev["by"] != "runner" {
					if ev["runner"] != nil {
						t.Errorf("a %s event by %s carries a runner signature", ev["step"], ev["by"])
					}
					continue
				}
				signed++
				sig := ev["runner"].(map[string]any)
				note, _ := ev["note"].(string)
				rep := proof.RunnerReport{RunnerID: sig["runner_id"].(string), SignedAt: int64(sig["signed_at"].(float64)), Signature: sig["signature"].(string)}
				if ev["actor"] != s.r1.Runner.ID || rep.RunnerID != s.r1.Runner.ID {
					t.Errorf("runner event by %v signed as %s", ev["actor"], rep.RunnerID)
				}
				if err := proof.VerifyRunnerReport(s.r1.PublicKey(), id, sha, ev["step"].(string), note, rep); err != nil {
					t.Errorf("the %s event's signature does not verify: %v", ev["step"], err)
				}
			}
			if signed != 3 {
				t.Errorf("%d signed runner events, want 3 (started, step, done)", signed)
			}
		})
	})
}

func TestDisablingARunnerFailsItsRunsThatHaveNotEnded(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := newRunScene(t, db)
		pending, _ := s.run(t, s.r1)
		approved, _ := s.approved(t, s.r1)
		started, sha := s.approved(t, s.r1)
		c1 := s.env.Connect(s.r1.Token)
		c1.OK("approvals_add_progress", report(s.r1, s.r1.Runner.ID, started, sha, "started", "claimed", "approved", time.Now()))
		other, _ := s.approved(t, s.r2)

		if _, err := s.env.Store.DisableRunner(context.Background(), s.env.Account.ID, "host-1", "ada"); err != nil {
			t.Fatal(err)
		}
		for id, want := range map[string]asks.Status{pending: asks.StatusFailed, approved: asks.StatusFailed, started: asks.StatusFailed, other: asks.StatusApproved} {
			a, err := s.env.Store.GetApproval(context.Background(), s.env.Account.ID, id)
			if err != nil {
				t.Fatal(err)
			}
			if a.Status != want {
				t.Errorf("run %s is %s after its runner was disabled, want %s", id, a.Status, want)
			}
		}
		ev, err := s.env.Store.Timeline(context.Background(), s.env.Account.ID, approved)
		if err != nil {
			t.Fatal(err)
		}
		if last := ev[len(ev)-1]; last.Step != "runner_gone" || !strings.Contains(last.Note, "host-1") {
			t.Errorf("last event %s %q", last.Step, last.Note)
		}
		specRefused(t, s.agent.Call("approvals_create", s.r1.Ask("ada", specSHA64, []string{"x.sh"}, "remote", 30*time.Minute)),
			core.FailedPrecondition, "payload.run.runner_id")
	})
}

// mcpPost is the status of an initialize POST to /mcp with token.
func mcpPost(t *testing.T, base, token string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// A runner report sent again as it was (the same signed bytes, so the same
// signature) is refused with PERMISSION_DENIED naming runner.signature and
// records nothing, however the signature's base64 is spelled; the same note
// signed anew (a later signed_at) is a report of its own. The signatures
// kept are swept once their reports are too old to be sent again.
func TestAReplayedRunnerReportIsRefused(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := newRunScene(t, db)
		id, sha := s.approved(t, s.r1)
		c1 := s.env.Connect(s.r1.Token)
		now := time.Now()
		c1.OK("approvals_add_progress", report(s.r1, s.r1.Runner.ID, id, sha, "started", "claimed", "approved", now))
		step := report(s.r1, s.r1.Runner.ID, id, sha, "step", "hello", "in_progress", now)
		c1.OK("approvals_add_progress", step)

		// The last base64url character of a 64-byte signature carries two
		// unused bits: set them, and the same signature is spelled otherwise.
		respelled := maps.Clone(step)
		sig := step["runner"].(proof.RunnerReport)
		const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
		last := strings.IndexByte(alphabet, sig.Signature[len(sig.Signature)-1])
		sig.Signature = sig.Signature[:len(sig.Signature)-1] + string(alphabet[last|3])
		respelled["runner"] = sig
		for name, args := range map[string]map[string]any{"as it was": step, "with its signature spelled otherwise": respelled} {
			t.Run("the step sent again "+name+" is refused", func(t *testing.T) {
				_, before := specCounts(t, s.env)
				r := c1.Call("approvals_add_progress", args)
				specRefused(t, r, core.PermissionDenied, "runner.signature")
				if !strings.Contains(r.Text, "recorded already") {
					t.Errorf("the refusal does not say the report was recorded already: %s", r.Text)
				}
				if _, after := specCounts(t, s.env); after != before {
					t.Errorf("the replay wrote %d events", after-before)
				}
			})
		}
		c1.OK("approvals_add_progress", report(s.r1, s.r1.Runner.ID, id, sha, "step", "hello", "in_progress", now.Add(time.Second)))

		got := s.agent.OK("approvals_get", map[string]any{"approval_id": id})
		hellos := 0
		for _, e := range got["timeline"].([]any) {
			if ev := e.(map[string]any); ev["step"] == "step" && ev["note"] == "hello" {
				hellos++
			}
		}
		if hellos != 2 {
			t.Errorf("%d steps saying hello on the timeline, want 2: the first and the one signed anew", hellos)
		}

		kept := func() int64 {
			var n int64
			if err := s.env.Store.DB().Table("runner_report_signatures").Count(&n).Error; err != nil {
				t.Fatal(err)
			}
			return n
		}
		if n := kept(); n != 3 {
			t.Fatalf("%d report signatures kept, want 3", n)
		}
		s.env.Store.SetClock(func() time.Time { return now.Add(runners.ReportWindow + 2*time.Minute) })
		defer s.env.Store.SetClock(time.Now)
		if _, err := s.env.Store.SweepExpired(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := kept(); n != 0 {
			t.Errorf("%d report signatures kept after their reports grew too old to send, want none", n)
		}
	})
}

// The runners page's example of a run's approvals_create arguments, given
// this test's runner and a deadline ahead, is filed as written: its members,
// the effect and expires_at in unix seconds are what the tool takes.
func TestTheRunnersPagesRunExampleIsFiledAsWritten(t *testing.T) {
	page, err := readDoc("docs/runners.md")
	if err != nil {
		t.Fatal(err)
	}
	const opening = "   ```json\n   {\n     \"kind\": \"run\","
	start := strings.Index(page, opening)
	if start < 0 {
		t.Fatal("docs/runners.md has no example of a run's approvals_create arguments")
	}
	block, _, _ := strings.Cut(page[start+len("   ```json\n"):], "   ```\n")
	var args map[string]any
	if err := json.Unmarshal([]byte(block), &args); err != nil {
		t.Fatalf("the run example of docs/runners.md is not JSON: %v\n%s", err, block)
	}
	run := args["payload"].(map[string]any)["run"].(map[string]any)
	if _, ok := run["expires_at"].(float64); !ok {
		t.Fatalf("the example's expires_at is %v, want a number of unix seconds", run["expires_at"])
	}
	s := newRunScene(t, apptest.SQLite)
	run["runner_id"], run["runner_public_key"], run["expires_at"] = s.r1.Runner.ID, s.r1.PublicKey(), time.Now().Add(30*time.Minute).Unix()
	if out := s.agent.OK("approvals_create", args); out["status"] != "pending" || out["asked_of"] != "ada" {
		t.Errorf("the run example of docs/runners.md filed as %v, want a pending ask of ada", out)
	}
}
