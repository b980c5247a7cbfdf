package runner

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
)

// hostScene is a service with ada (an owner with a passkey), an agent, and a
// runner folder that pinned ada's keys and is enrolled.
type hostScene struct {
	env     *apptest.Env
	ada     *apptest.Browser
	agent   *apptest.Client
	dir     string
	host    *Host
	enroled *apptest.TestRunner
	out     string // a folder outside the scripts folder, for markers
}

// script is a shell script that appends a line to marker (argv[2]) the
// moment it starts, prints its argument and some lines, and exits 0.
const script = "#!/bin/sh\necho \"started $$\" >> \"$2\"\necho \"hello $1\"\necho \"from $(pwd)\"\necho \"HOME=[$HOME]\"\n"

func newHostScene(t *testing.T, db apptest.Database) *hostScene {
	t.Helper()
	env := apptest.StartWeb(t, db, nil)
	s := &hostScene{env: env, ada: env.Join(env.Account.ID, core.RoleOwner, "ada"), dir: t.TempDir(), out: t.TempDir()}
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
	return s
}

// writeScript puts a script in the scripts folder and returns its SHA-256.
func (s *hostScene) writeScript(t *testing.T, name, body string) string {
	t.Helper()
	if err := os.WriteFile(filepath.Join(s.host.Scripts, name), []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return apptest.ScriptSHA256([]byte(body))
}

// file files a run of argv[0] with sha asked of askedOf and returns its id and marker file.
func (s *hostScene) file(t *testing.T, arg0, sha, askedOf string, ahead time.Duration) (string, string) {
	t.Helper()
	marker := filepath.Join(s.out, fmt.Sprintf("marker-%d", time.Now().UnixNano()))
	out := s.agent.OK("approvals_create", s.enroled.Ask(askedOf, sha, []string{arg0, "world", marker}, "remote", ahead))
	return out["approval_id"].(string), marker
}

func (s *hostScene) approve(t *testing.T, b *apptest.Browser, id string) {
	t.Helper()
	if r := b.Decide(id, "approve", ""); r.Status != http.StatusOK {
		t.Fatalf("approve %s: %s", id, r)
	}
}

// serve runs runner serve on the folder until the test ends.
func (s *hostScene) serve(t *testing.T, dir string, executed func(string)) {
	t.Helper()
	s.serveWith(t, dir, Options{}, executed)
}

// serveWith runs runner serve on the folder with opts (its server, token,
// time limit and logger filled in) until the test ends or stop is called;
// stop cancels it and returns once Serve has returned.
func (s *hostScene) serveWith(t *testing.T, dir string, opts Options, executed func(string)) (stop func()) {
	t.Helper()
	return s.serveRunner(t, dir, opts, func(r *Runner) { r.executed = executed })
}

// serveRunner is serveWith with the runner's test hooks set by hook.
func (s *hostScene) serveRunner(t *testing.T, dir string, opts Options, hook func(*Runner)) (stop func()) {
	t.Helper()
	host, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	opts.Server, opts.Token, opts.TimeLimit, opts.Logger = s.env.URL, s.enroled.Token, time.Minute, apptest.Logger()
	r, err := New(host, opts)
	if err != nil {
		t.Fatal(err)
	}
	hook(r)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := r.Serve(ctx); err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	stop = func() { cancel(); <-done }
	t.Cleanup(stop)
	return stop
}

// ended waits (generously) until the run has ended and returns it.
func (s *hostScene) ended(t *testing.T, id string) *asks.Approval {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		a, err := s.env.Store.GetApproval(context.Background(), s.env.Account.ID, id)
		if err != nil {
			t.Fatal(err)
		}
		if a.Status == asks.StatusDone || a.Status == asks.StatusFailed {
			return a
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s is still %s after a minute", id, a.Status)
		}
	}
}

func (s *hostScene) timeline(t *testing.T, id string) []asks.TimelineEvent {
	t.Helper()
	ev, err := s.env.Store.Timeline(context.Background(), s.env.Account.ID, id)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func starts(t *testing.T, marker string) int {
	t.Helper()
	raw, err := os.ReadFile(marker)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(raw), "started")
}

func TestAnApprovedRunRunsOnceWithItsOutputAsSignedSteps(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := newHostScene(t, db)
		sha := s.writeScript(t, "hello.sh", script)
		id, marker := s.file(t, "hello.sh", sha, "ada", 30*time.Minute)
		var executions atomic.Int32
		s.serve(t, s.dir, func(string) { executions.Add(1) })
		s.approve(t, s.ada, id) // the runner hears of it through its subscription, or its next list

		a := s.ended(t, id)
		if a.Status != asks.StatusDone {
			t.Fatalf("run ended %s: %+v", a.Status, s.timeline(t, id))
		}
		var steps []string
		for _, e := range s.timeline(t, id) {
			if e.ActorKind != asks.ActorRunner {
				continue
			}
			if e.RunnerSignature() == nil {
				t.Errorf("the runner's %s carries no signature", e.Step)
			}
			steps = append(steps, e.Step)
			if e.Step == "step" && (!strings.Contains(e.Note, "hello world") || !strings.Contains(e.Note, "from "+s.host.Scripts) || !strings.Contains(e.Note, "HOME=[]")) {
				t.Errorf("step note %q: want the script's output, run in the scripts folder with a clean environment", e.Note)
			}
			if e.Step == "done" && e.Note != "exit status 0" {
				t.Errorf("done note %q", e.Note)
			}
		}
		if len(steps) < 3 || steps[0] != "started" || steps[len(steps)-1] != "done" || !strings.Contains(strings.Join(steps, " "), "step") {
			t.Errorf("runner steps %v, want started, step…, done", steps)
		}
		time.Sleep(300 * time.Millisecond) // a second pass must not run it again
		if n := starts(t, marker); n != 1 || executions.Load() != 1 {
			t.Errorf("the script started %d times (%d executions), want once", n, executions.Load())
		}
	})
}

func TestARunTheRunnerRefusesIsClaimedAndFailedAndNeverStarts(t *testing.T) {
	s := newHostScene(t, apptest.SQLite)
	bob := s.env.Join(s.env.Account.ID, core.RoleAdmin, "bob") // joined after the runner pinned ada's keys
	sha := s.writeScript(t, "hello.sh", script)

	noProof, noProofMarker := s.file(t, "hello.sh", sha, "ada", 30*time.Minute)
	if err := s.env.Store.DB().Exec("UPDATE approvals SET status = 'approved', version = version + 1 WHERE id = ?", noProof).Error; err != nil {
		t.Fatal(err)
	}
	unpinned, unpinnedMarker := s.file(t, "hello.sh", sha, "bob", 30*time.Minute)
	s.approve(t, bob, unpinned)

	changed, changedMarker := s.file(t, "changed.sh", s.writeScript(t, "changed.sh", script), "ada", 30*time.Minute)
	s.approve(t, s.ada, changed)
	s.writeScript(t, "changed.sh", script+"echo extra\n")

	outside := filepath.Join(s.out, "evil.sh")
	if err := os.WriteFile(outside, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(s.host.Scripts, "link.sh")); err != nil {
		t.Fatal(err)
	}
	symlink, symlinkMarker := s.file(t, "link.sh", sha, "ada", 30*time.Minute)
	s.approve(t, s.ada, symlink)

	expired, expiredMarker := s.file(t, "hello.sh", sha, "ada", 3*time.Second)
	s.approve(t, s.ada, expired)
	time.Sleep(4 * time.Second) // past its expires_at: the service keeps it approved, the runner must not run it

	var executions atomic.Int32
	s.serve(t, s.dir, func(string) { executions.Add(1) })
	cases := []struct{ name, id, marker, reason string }{
		{"the database edited to approved with no proof", noProof, noProofMarker, "no decision proof"},
		{"a proof by a key the runner did not pin", unpinned, unpinnedMarker, "does not verify against the pinned device keys"},
		{"the script changed after approval", changed, changedMarker, "the script changed.sh changed"},
		{"argv[0] escaping the folder by a symlink", symlink, symlinkMarker, "leads outside the scripts folder"},
		{"an expired run", expired, expiredMarker, "the run expired"},
	}
	for _, tc := range cases {
		t.Run(tc.name+" is reported failed with its reason and never started", func(t *testing.T) {
			a := s.ended(t, tc.id)
			ev := s.timeline(t, tc.id)
			last := ev[len(ev)-1]
			if a.Status != asks.StatusFailed || last.ActorKind != asks.ActorRunner || last.RunnerSignature() == nil ||
				!strings.Contains(last.Note, tc.reason) {
				t.Errorf("run ended %s with %s %s %q; want a signed failed naming %q", a.Status, last.ActorKind, last.Step, last.Note, tc.reason)
			}
			if n := starts(t, tc.marker); n != 0 {
				t.Errorf("the script started %d times", n)
			}
		})
	}
	if n := executions.Load(); n != 0 {
		t.Errorf("%d executions, want none", n)
	}
}

func TestArgvZeroWithADotDotSegmentOrAbsoluteIsRefused(t *testing.T) {
	h := &Host{Scripts: t.TempDir()}
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "x.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(h.Scripts, filepath.Join(outside, "x.sh"))
	if err != nil {
		t.Fatal(err)
	}
	for _, arg0 := range []string{rel, "a/../../x.sh", `a\..\x.sh`, filepath.Join(outside, "x.sh")} {
		if _, err := h.resolve(arg0); err == nil {
			t.Errorf("argv[0] %q resolved", arg0)
		}
	}
}

func TestFiftyRunnersSharingAKeyExecuteARunOnce(t *testing.T) {
	s := newHostScene(t, apptest.SQLite)
	sha := s.writeScript(t, "hello.sh", script)
	id, marker := s.file(t, "hello.sh", sha, "ada", 30*time.Minute)
	s.approve(t, s.ada, id)
	key, err := os.ReadFile(filepath.Join(s.dir, KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	export := s.env.KeysExport(s.env.Account.ID)
	var executions atomic.Int32
	const runners = 50
	dirs := make([]string, runners)
	for i := range dirs {
		dirs[i] = t.TempDir() // a folder and journal of its own: only the service's compare-and-set stands between them
		if err := os.WriteFile(filepath.Join(dirs[i], KeyFile), key, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Init(dirs[i], s.host.Scripts); err != nil {
			t.Fatal(err)
		}
		if _, err := Trust(dirs[i], export); err != nil {
			t.Fatal(err)
		}
	}
	for _, dir := range dirs {
		s.serve(t, dir, func(string) { executions.Add(1) })
	}
	if a := s.ended(t, id); a.Status != asks.StatusDone {
		t.Fatalf("run ended %s", a.Status)
	}
	time.Sleep(500 * time.Millisecond)
	var started int
	for _, e := range s.timeline(t, id) {
		if e.Step == "started" {
			started++
		}
	}
	if n := starts(t, marker); n != 1 || executions.Load() != 1 || started != 1 {
		t.Errorf("script started %d times, %d executions, %d started events; want 1 each", n, executions.Load(), started)
	}
}

// What runs is what was hashed: a script swapped after the runner checked
// it, and before it started, does not run; the checked bytes do.
func TestAScriptSwappedAfterTheCheckDoesNotRun(t *testing.T) {
	s := newHostScene(t, apptest.SQLite)
	sha := s.writeScript(t, "hello.sh", script)
	id, _ := s.file(t, "hello.sh", sha, "ada", 30*time.Minute)
	swapped := filepath.Join(s.out, "swapped")
	s.serve(t, s.dir, func(string) {
		evil := "#!/bin/sh\ntouch " + swapped + "\necho swapped\n"
		if err := os.WriteFile(filepath.Join(s.host.Scripts, "hello.sh"), []byte(evil), 0o755); err != nil {
			t.Error(err)
		}
	})
	s.approve(t, s.ada, id)
	if a := s.ended(t, id); a.Status != asks.StatusDone {
		t.Fatalf("run ended %s", a.Status)
	}
	if _, err := os.Stat(swapped); err == nil {
		t.Fatalf("the script swapped in after the check ran")
	}
	said := ""
	for _, e := range s.timeline(t, id) {
		said += e.Note + "\n"
	}
	if !strings.Contains(said, "hello world") || strings.Contains(said, "swapped") {
		t.Fatalf("the run's notes %q: want the checked script's output", said)
	}
}

// A script whose output repeats fills several step reports with the same
// note within a second; each is signed at a later second than the one
// before, so none is the signature of another and the service records them
// all (it refuses a signature it has recorded as a replay).
func TestRepeatedOutputWithinASecondIsReportedInFull(t *testing.T) {
	s := newHostScene(t, apptest.SQLite)
	line := strings.Repeat("x", stepNoteRunes) // one line fills a step's note
	sha := s.writeScript(t, "repeat.sh", "#!/bin/sh\nfor i in 1 2 3 4 5; do echo "+line+"; done\n")
	id, _ := s.file(t, "repeat.sh", sha, "ada", 30*time.Minute)
	s.serve(t, s.dir, nil)
	s.approve(t, s.ada, id)
	if a := s.ended(t, id); a.Status != asks.StatusDone {
		t.Fatalf("run ended %s: %+v", a.Status, s.timeline(t, id))
	}
	var repeats int
	var last int64
	for _, e := range s.timeline(t, id) {
		sig := e.RunnerSignature()
		if sig == nil {
			continue
		}
		if sig.SignedAt <= last {
			t.Errorf("the %s report is signed at %d, not after the one before (%d)", e.Step, sig.SignedAt, last)
		}
		last = sig.SignedAt
		if e.Step == "step" && e.Note == line {
			repeats++
		}
	}
	if repeats != 5 {
		t.Errorf("%d steps carry the repeated line, want all 5", repeats)
	}
}
