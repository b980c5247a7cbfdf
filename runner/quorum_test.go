package runner

import (
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/proof"
)

// newTwoPersonScene is newHostScene with bob, an admin, beside ada, both
// pinned by the runner: a production run then needs both of them.
func newTwoPersonScene(t *testing.T, db apptest.Database) (*hostScene, *apptest.Browser) {
	t.Helper()
	env := apptest.StartWeb(t, db, nil)
	s := &hostScene{env: env, ada: env.Join(env.Account.ID, core.RoleOwner, "ada"), dir: t.TempDir(), out: t.TempDir()}
	bob := env.Join(env.Account.ID, core.RoleAdmin, "bob")
	_, token := env.Agent(env.Account.ID, "bot")
	s.agent = env.Connect(token)
	if _, err := Init(s.dir, ""); err != nil {
		t.Fatalf("init: %v", err)
	}
	if _, err := Trust(s.dir, env.KeysExport(env.Account.ID)); err != nil {
		t.Fatalf("trust: %v", err)
	}
	host, err := Load(s.dir)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	s.host = host
	s.enroled = env.EnrollRunnerKey(env.Account.ID, "host-1", host.Key)
	return s, bob
}

func TestAProductionRunRunsOnlyWithBothSignatures(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s, bob := newTwoPersonScene(t, db)
		sha := s.writeScript(t, "deploy.sh", script)
		marker := filepath.Join(s.out, "marker")
		out := s.agent.OK("approvals_create", s.enroled.Ask("ada", sha, []string{"deploy.sh", "world", marker}, "production", 10*time.Minute))
		id := out["approval_id"].(string)
		var executions atomic.Int32
		s.serve(t, s.dir, func(string) { executions.Add(1) })

		s.approve(t, s.ada, id)
		time.Sleep(500 * time.Millisecond) // the runner has seen the ask change and must not run it
		if n := starts(t, marker); n != 0 || executions.Load() != 0 {
			t.Fatalf("the run started after one of two signatures (%d starts)", n)
		}
		s.approve(t, bob, id)
		if a := s.ended(t, id); a.Status != asks.StatusDone {
			t.Fatalf("run ended %s: %+v", a.Status, s.timeline(t, id))
		}
		if n := starts(t, marker); n != 1 {
			t.Fatalf("the script started %d times, want once", n)
		}
	})
}

func TestTheRunnerRefusesABundleThatDoesNotMeetTheFrozenRequirement(t *testing.T) {
	s, bob := newTwoPersonScene(t, apptest.SQLite)
	sha := s.writeScript(t, "deploy.sh", script)
	out := s.agent.OK("approvals_create", s.enroled.Ask("ada", sha, []string{"deploy.sh", "world", "m"}, "production", 10*time.Minute))
	id := out["approval_id"].(string)
	s.approve(t, s.ada, id)
	if r := bob.Decide(id, "approve", ""); r.Status != http.StatusOK {
		t.Fatalf("bob: %s", r)
	}
	read := func() *Approval {
		got := s.agent.OK("approvals_get", map[string]any{"approval_id": id})
		raw, _ := json.Marshal(got)
		var a Approval
		if err := json.Unmarshal(raw, &a); err != nil {
			t.Fatal(err)
		}
		return &a
	}
	origin := s.env.URL
	if _, err := s.host.Check(read(), origin, time.Now()); err != nil {
		t.Fatalf("the whole bundle is refused: %v", err)
	}
	cases := []struct {
		name   string
		tamper func(a *Approval)
		want   string
	}{
		{"a signature dropped", func(a *Approval) {
			b, _ := proof.ParseBundle(a.Proof)
			b.Proofs = b.Proofs[:1]
			a.Proof, _ = json.Marshal(b)
		}, "quorum"},
		{"one signature alone, not a bundle", func(a *Approval) {
			b, _ := proof.ParseBundle(a.Proof)
			a.Proof = b.Proofs[0]
		}, "not the bundle the rule needs"},
		{"the requirement frozen into the run says three", func(a *Approval) {
			var r map[string]any
			_ = json.Unmarshal(a.Quorum.Requirement, &r)
			r["count"] = 3
			a.Quorum.Requirement, _ = json.Marshal(r)
		}, "another requirement"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := read()
			tc.tamper(a)
			_, err := s.host.Check(a, origin, time.Now())
			var r *Refusal
			if !errors.As(err, &r) || !strings.Contains(r.Reason, tc.want) {
				t.Fatalf("check = %v, want a refusal saying %q", err, tc.want)
			}
		})
	}
}
