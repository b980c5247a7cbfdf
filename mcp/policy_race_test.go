package mcp_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/asks"
)

// The race: two agents, each with several sessions, file asks while the
// policy is revoked from another goroutine once revokeAfter asks came back.
const (
	raceAgents        = 2
	raceAsksPerAgent  = 50
	raceSessionsPerAg = 5
	revokeAfter       = 30
)

// raceAsk is one approvals_create call of the race and what became of it.
type raceAsk struct {
	agent    string
	started  time.Time // when the call was made
	returned time.Time // when its answer came back
	result   apptest.Result
	err      error
}

func TestNoAskFiledAfterTheRevokeCommitsIsAutoApproved(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		w := newPolicyWorld(t, db)
		_, pol := w.enable(t, map[string]any{"until": until(time.Hour)})
		polID := pol["policy_id"].(string)
		sessions := make([][]*apptest.Client, raceAgents)
		for i := range raceAgents {
			_, token := w.env.Agent(w.env.Account.ID, fmt.Sprintf("racer-%c", 'a'+i))
			for range raceSessionsPerAg {
				sessions[i] = append(sessions[i], w.env.Connect(token))
			}
		}

		filed := make([]raceAsk, raceAgents*raceAsksPerAgent)
		var (
			returned     atomic.Int64
			revokeNow    = make(chan struct{})
			revokeCalled time.Time
			revokeDone   time.Time
			revokeErr    error
			once         sync.Once
			wg           sync.WaitGroup
			start        = make(chan struct{})
		)
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-revokeNow
			revokeCalled = time.Now()
			_, revokeErr = w.env.Store.RevokePolicy(ctx, w.env.Account.ID, "ada", "revoked mid-race")
			revokeDone = time.Now()
		}()
		for a := range raceAgents {
			for s := range raceSessionsPerAg {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					// Each session files its share of the agent's asks, one after another.
					for i := s; i < raceAsksPerAgent; i += raceSessionsPerAg {
						k := a*raceAsksPerAgent + i
						ask := &filed[k]
						ask.agent = fmt.Sprintf("agent:racer-%c", 'a'+a)
						ask.started = time.Now()
						ask.result, ask.err = apptest.CallTool(ctx, sessions[a][s].Session, "approvals_create",
							harmless(fmt.Sprintf("Read onboarding page %d", k)))
						ask.returned = time.Now()
						if returned.Add(1) == revokeAfter {
							once.Do(func() { close(revokeNow) })
						}
					}
				}()
			}
		}
		close(start)
		wg.Wait()
		if revokeErr != nil {
			t.Fatalf("revoke: %v", revokeErr)
		}

		var autoApproved, pending, before, after int
		for k, ask := range filed {
			if ask.err != nil || ask.result.IsError {
				t.Errorf("ask %d: %v %s", k, ask.err, ask.result)
				continue
			}
			out := ask.result.Out
			if out["requester"] != ask.agent {
				t.Errorf("ask %d was filed as %v, want %s", k, out["requester"], ask.agent)
			}
			id, _ := out["approval_id"].(string)
			row, err := w.env.Store.GetApproval(ctx, w.env.Account.ID, id)
			if err != nil {
				t.Fatalf("ask %d: %v", k, err)
			}
			if string(row.Status) != out["status"] {
				t.Errorf("ask %d: answered %v, stored %s", k, out["status"], row.Status)
			}
			byPolicy := eventCount(t, w.env, id, string(asks.EventAutoApprove))
			switch {
			case row.Status == asks.StatusApproved && row.DecidedBy == "ada" && byPolicy == 1:
				autoApproved++
			case row.Status == asks.StatusPending && row.DecidedBy == "" && byPolicy == 0:
				pending++
			default:
				t.Errorf("ask %d is %s decided by %q with %d auto_approved events, want approved by the policy or pending", k, row.Status, row.DecidedBy, byPolicy)
			}
			switch {
			case ask.returned.Before(revokeCalled):
				before++
				if row.Status != asks.StatusApproved {
					t.Errorf("ask %d came back before the revoke was called, yet it is %s", k, row.Status)
				}
			case ask.started.After(revokeDone):
				after++
				if row.Status != asks.StatusPending {
					t.Errorf("ask %d was filed %s after the revoke committed, yet it is %s", k, ask.started.Sub(revokeDone), row.Status)
				}
			}
		}
		got := w.policy(t)
		if got["policy_id"] != polID || got["active"] != false || got["inactive_reason"] != "revoked" {
			t.Errorf("after the race the policy is %v, want %s revoked", got, polID)
		}
		if got["approved_count"] != float64(autoApproved) {
			t.Errorf("approved_count = %v, but %d asks were auto-approved", got["approved_count"], autoApproved)
		}
		t.Logf("%d auto-approved, %d pending; %d came back before the revoke was called, %d were filed after it committed",
			autoApproved, pending, before, after)
		if before < revokeAfter || after == 0 {
			t.Errorf("the race did not straddle the revoke: %d asks before it, %d after; want at least %d and 1", before, after, revokeAfter)
		}
		if autoApproved+pending != len(filed) {
			t.Errorf("%d auto-approved + %d pending, want all %d asks", autoApproved, pending, len(filed))
		}
	})
}
