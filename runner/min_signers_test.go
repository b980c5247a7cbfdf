package runner

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/rules"
)

// A runner told to run production only with two people's approvals
// (MinSignersProduction 2) refuses a production run the server approved on
// one signature (its rule was removed), reporting it failed and never
// starting it, while the production run ada and bob both signed runs once;
// the minimum leaves a run of another effect alone.
func TestARunnersOwnMinimumRefusesAProductionRunWithFewerSigners(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		s, bob := newTwoPersonScene(t, db)
		sha := s.writeScript(t, "deploy.sh", script)
		file := func(name, effect string) (string, string) {
			t.Helper()
			marker := filepath.Join(s.out, "marker-"+name)
			out := s.agent.OK("approvals_create", s.enroled.Ask("ada", sha, []string{"deploy.sh", name, marker}, effect, 10*time.Minute))
			return out["approval_id"].(string), marker
		}
		approved := func(id string) {
			t.Helper()
			a, err := s.env.Store.GetApproval(ctx, s.env.Account.ID, id)
			if err != nil || a.Status != asks.StatusApproved {
				t.Fatalf("the service has not approved %s: %v %v", id, a, err)
			}
		}

		// Under the built-in rule a production run needs ada and bob.
		both, bothMarker := file("both", "production")
		s.approve(t, s.ada, both)
		s.approve(t, bob, both)
		approved(both)
		// A service that no longer asks two people approves one on ada's word.
		if err := s.env.Store.RemoveRule(ctx, s.env.Account.ID, rules.RuleProductionRun, "cli:test"); err != nil {
			t.Fatal(err)
		}
		one, oneMarker := file("one", "production")
		s.approve(t, s.ada, one)
		approved(one)
		remote, remoteMarker := file("remote", "remote")
		s.approve(t, s.ada, remote)
		approved(remote)

		var executions atomic.Int32
		s.serveWith(t, s.dir, Options{MinSignersProduction: 2}, func(string) { executions.Add(1) })
		cases := []struct {
			name, id, marker string
			status           asks.Status
			starts           int
			note             string
		}{
			{"a production run ada alone approved is refused", one, oneMarker, asks.StatusFailed, 0,
				"refused by the runner: this runner runs a production run only with the approvals of at least 2 distinct people (--min-signers-production), and its proof holds 1 (ada)"},
			{"a production run ada and bob approved runs once", both, bothMarker, asks.StatusDone, 1, "exit status 0"},
			{"a remote run ada alone approved runs once", remote, remoteMarker, asks.StatusDone, 1, "exit status 0"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				a := s.ended(t, tc.id)
				ev := s.timeline(t, tc.id)
				last := ev[len(ev)-1]
				if a.Status != tc.status || last.ActorKind != asks.ActorRunner || last.RunnerSignature() == nil || last.Note != tc.note {
					t.Errorf("run ended %s with %s %s %q; want a signed %s with the note %q", a.Status, last.ActorKind, last.Step, last.Note, tc.status, tc.note)
				}
				if n := starts(t, tc.marker); n != tc.starts {
					t.Errorf("the script started %d times, want %d", n, tc.starts)
				}
			})
		}
		if n := executions.Load(); n != 2 {
			t.Errorf("%d executions, want 2", n)
		}
		if t.Failed() {
			for _, id := range []string{one, both, remote} {
				var steps []string
				for _, e := range s.timeline(t, id) {
					steps = append(steps, fmt.Sprintf("%s %s %q", e.ActorKind, e.Step, e.Note))
				}
				t.Logf("%s: %s", id, strings.Join(steps, "; "))
			}
		}
	})
}
