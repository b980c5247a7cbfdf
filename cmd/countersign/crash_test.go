package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/countersign/countersign/app"
	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/people"
)

// A kill -9 while agents file asks loses no ask the service answered: an
// answer comes only after its ask (and the asks committed with it) reached
// the database.
func TestKillNineLosesNoAnsweredAsk(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := startServer(t, db, map[string]string{"COUNTERSIGN_ASK_RATE": "100000/s", "COUNTERSIGN_ASK_BURST": "100000"})
		created := mustCLI(t, s.env, "agent", "create", "--name", "crash", "--scopes", strings.Join(people.AllScopes, ","))
		lines := strings.Split(strings.TrimSpace(created.stdout), "\n")
		token := lines[len(lines)-1]

		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		const clients = 16
		var (
			mu       sync.Mutex
			answered []string
			refused  []string
			wg       sync.WaitGroup
		)
		for c := range clients {
			session, err := apptest.Connect(ctx, s.URL+"/mcp", token)
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			wg.Go(func() {
				for n := 0; ctx.Err() == nil; n++ {
					r, err := apptest.CallTool(ctx, session, "approvals_create", pullRequestAsk(c, n))
					if err != nil {
						return // the service is gone
					}
					mu.Lock()
					if id, _ := r.Out["approval_id"].(string); !r.IsError && id != "" {
						answered = append(answered, id)
					} else {
						refused = append(refused, r.Text)
					}
					mu.Unlock()
				}
			})
		}
		count := func() int { mu.Lock(); defer mu.Unlock(); return len(answered) }
		for deadline := time.Now().Add(time.Minute); count() < 300; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("only %d asks answered within a minute", count())
			}
		}
		if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-s.done
		cancel()
		wg.Wait()
		if len(refused) > 0 {
			t.Fatalf("%d asks were refused, the first: %s", len(refused), refused[0])
		}

		store, err := app.OpenStore(context.Background(), mustConfig(t, s.env), apptest.Logger())
		if err != nil {
			t.Fatalf("open the store after the kill: %v", err)
		}
		acct, err := store.AccountByName(context.Background(), people.DefaultAccountName)
		if err != nil {
			t.Fatal(err)
		}
		lost := 0
		for _, id := range answered {
			if a, err := store.GetApproval(context.Background(), acct.ID, id); err != nil || a.Status != asks.StatusPending {
				lost++
				if lost <= 5 {
					t.Errorf("answered ask %s after the kill: %v", id, err)
				}
			}
		}
		if lost > 0 {
			t.Fatalf("%d of %d answered asks are lost", lost, len(answered))
		}
		t.Logf("%d answered asks, all kept", len(answered))
	})
}

// pullRequestAsk is a valid pull_request ask, its number and head unique for each c and n.
func pullRequestAsk(c, n int) map[string]any {
	return map[string]any{
		"kind": "pull_request", "title": fmt.Sprintf("Merge acme/web#%d", n), "summary": "Fixes the login redirect.",
		"approve_means": "I merge it; nothing rolls", "deny_means": "It stays open",
		"payload": map[string]any{"pull_request": map[string]any{
			"repo": "acme/web", "number": c*100000 + n + 1, "head": fmt.Sprintf("%08x%032x", c, n), "title": "Fix login redirect",
		}},
		"context": map[string]any{"no_context_reason": "a crash test"},
	}
}
