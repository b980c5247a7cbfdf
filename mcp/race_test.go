package mcp_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
)

// Racers: sessions × callers per session, all released at once.
const (
	raceSessions   = 10
	racePerSession = 5
)

// eventCount counts the timeline events of an approval with step.
func eventCount(t *testing.T, env *apptest.Env, approvalID, step string) int64 {
	t.Helper()
	var n int64
	if err := env.Store.DB().Table("events").Where("approval_id = ? AND step = ?", approvalID, step).Count(&n).Error; err != nil {
		t.Fatalf("count events: %v", err)
	}
	return n
}

func TestRacingProgressReportsHaveOneWinner(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		env := apptest.Start(t, db, nil)
		owner := env.Member(env.Account.ID, "ada", core.RoleOwner)
		_, token := env.Agent(env.Account.ID, "bot")
		sessions := make([]*apptest.Client, raceSessions)
		for i := range sessions {
			sessions[i] = env.Connect(token)
		}

		cases := []struct {
			name     string
			approve  bool   // decide the ask before the race
			step     string // what every racer reports, with expected_state from
			from, to asks.Status
		}{
			{"started on an approved ask", true, "started", asks.StatusApproved, asks.StatusInProgress},
			{"stale on a pending ask", false, "stale", asks.StatusPending, asks.StatusStale},
		}
		for n, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				created := sessions[0].OK("approvals_create", prAsk(900+n, fmt.Sprintf("abcdef123456%d", n)))
				id := created["approval_id"].(string)
				if tc.approve {
					if _, err := env.Store.Decide(ctx, env.Account.ID, id, owner, asks.Decision{Verdict: asks.VerdictApprove}); err != nil {
						t.Fatalf("decide: %v", err)
					}
				}
				args := map[string]any{"approval_id": id, "step": tc.step, "expected_state": string(tc.from)}
				if tc.step == "started" {
					args["observed"] = created["payload"]
				}
				_, versionBefore := approvalRow(t, env, id)

				results := make([]apptest.Result, raceSessions*racePerSession)
				errs := make([]error, len(results))
				start := make(chan struct{})
				var wg sync.WaitGroup
				for i := range results {
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-start
						results[i], errs[i] = apptest.CallTool(ctx, sessions[i/racePerSession].Session, "approvals_add_progress", args)
					}()
				}
				close(start)
				wg.Wait()

				wins := 0
				for i, r := range results {
					switch {
					case errs[i] != nil:
						t.Errorf("racer %d: protocol error %v", i, errs[i])
					case !r.IsError:
						wins++
						if r.Out["status"] != string(tc.to) {
							t.Errorf("racer %d won with status %v, want %s", i, r.Out["status"], tc.to)
						}
					case r.Code != string(core.FailedPrecondition):
						t.Errorf("racer %d: %s, want FAILED_PRECONDITION", i, r)
					case !strings.Contains(r.Text, " is "+string(tc.to)):
						t.Errorf("racer %d: %q does not name the current state %s", i, r.Text, tc.to)
					}
				}
				if wins != 1 {
					t.Errorf("%d racers won, want exactly 1", wins)
				}
				if got := eventCount(t, env, id, tc.step); got != 1 {
					t.Errorf("timeline has %d %q events, want 1", got, tc.step)
				}
				status, version := approvalRow(t, env, id)
				if status != tc.to || version != versionBefore+1 {
					t.Errorf("approval is %s v%d, want %s v%d", status, version, tc.to, versionBefore+1)
				}
				got := sessions[0].OK("approvals_get", map[string]any{"approval_id": id})
				var steps []string
				for _, e := range got["timeline"].([]any) {
					steps = append(steps, e.(map[string]any)["step"].(string))
				}
				want := []string{"created", tc.step}
				if tc.approve {
					want = []string{"created", "approved", tc.step}
				}
				if strings.Join(steps, ",") != strings.Join(want, ",") {
					t.Errorf("timeline = %v, want %v", steps, want)
				}
			})
		}
	})
}

func TestApproveRacingWithdrawHasOneWinnerPerAsk(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		env := apptest.Start(t, db, nil)
		owner := env.Member(env.Account.ID, "ada", core.RoleOwner)
		_, token := env.Agent(env.Account.ID, "bot")
		sessions := make([]*apptest.Client, raceSessions)
		for i := range sessions {
			sessions[i] = env.Connect(token)
		}
		const askCount = 20
		ids := make([]string, askCount)
		for i := range ids {
			ids[i] = sessions[0].OK("approvals_create", prAsk(1000+i, fmt.Sprintf("abcdef%07d", i)))["approval_id"].(string)
		}

		decideErrs := make([]error, askCount)
		withdraws := make([]apptest.Result, askCount)
		withdrawErrs := make([]error, askCount)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range ids {
			wg.Add(2)
			go func() {
				defer wg.Done()
				<-start
				_, decideErrs[i] = env.Store.Decide(ctx, env.Account.ID, ids[i], owner, asks.Decision{Verdict: asks.VerdictApprove})
			}()
			go func() {
				defer wg.Done()
				<-start
				withdraws[i], withdrawErrs[i] = apptest.CallTool(ctx, sessions[i%raceSessions].Session, "approvals_add_progress",
					map[string]any{"approval_id": ids[i], "step": "stale", "expected_state": "pending"})
			}()
		}
		close(start)
		wg.Wait()

		approvedWins := 0
		for i, id := range ids {
			if withdrawErrs[i] != nil {
				t.Errorf("ask %d: withdraw protocol error %v", i, withdrawErrs[i])
				continue
			}
			approved, withdrawn := decideErrs[i] == nil, !withdraws[i].IsError
			if approved == withdrawn {
				t.Errorf("ask %d: approve won %t (%v) and withdraw won %t (%s %v), want exactly one",
					i, approved, decideErrs[i], withdrawn, withdraws[i].Code, withdraws[i].Out["status"])
				continue
			}
			want, loser := asks.StatusStale, ""
			if approved {
				approvedWins++
				want = asks.StatusApproved
				if withdraws[i].Code != string(core.FailedPrecondition) || !strings.Contains(withdraws[i].Text, " is approved") {
					loser = withdraws[i].String()
				}
			} else if core.CodeOf(decideErrs[i]) != core.FailedPrecondition || !strings.Contains(decideErrs[i].Error(), " is stale") {
				loser = decideErrs[i].Error()
			}
			if loser != "" {
				t.Errorf("ask %d: the loser got %s, want FAILED_PRECONDITION naming %s", i, loser, want)
			}
			if status, version := approvalRow(t, env, id); status != want || version != 2 {
				t.Errorf("ask %d is %s v%d, want %s v2", i, status, version, want)
			}
			if a, s := eventCount(t, env, id, "approved"), eventCount(t, env, id, "stale"); (approved && (a != 1 || s != 0)) || (!approved && (a != 0 || s != 1)) {
				t.Errorf("ask %d (%s): %d approved and %d stale events, want one of the winner only", i, want, a, s)
			}
		}
		t.Logf("approve won %d of %d races", approvedWins, askCount)
	})
}
