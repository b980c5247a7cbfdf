package runner

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/asks"
)

// waiting is a script that marks its start in its marker (argv[2]) and in
// the shared order file beside it, prints a line naming its run, and then
// waits until the test creates MARKER.release; it marks its end before it
// exits.
const waiting = `#!/bin/sh
order="$(dirname "$2")/order"
echo "started $$" >> "$2"
echo "+ $COUNTERSIGN_APPROVAL_ID" >> "$order"
echo "output of $COUNTERSIGN_APPROVAL_ID"
while [ ! -e "$2.release" ]; do sleep 0.05; done
echo "end of $COUNTERSIGN_APPROVAL_ID"
echo "- $COUNTERSIGN_APPROVAL_ID" >> "$order"
`

// brief is a script that marks its start and end in the shared order file
// and takes a moment in between.
const brief = `#!/bin/sh
order="$(dirname "$2")/order"
echo "started $$" >> "$2"
echo "+ $COUNTERSIGN_APPROVAL_ID" >> "$order"
sleep 0.2
echo "- $COUNTERSIGN_APPROVAL_ID" >> "$order"
`

// untilStarted waits (generously) until the script of each marker started.
func untilStarted(t *testing.T, markers ...string) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		all := true
		for _, m := range markers {
			all = all && starts(t, m) > 0
		}
		if all {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not every script started within a minute")
		}
	}
}

func release(t *testing.T, marker string) {
	t.Helper()
	if err := os.WriteFile(marker+".release", nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

// order reads the order file: "+ id" when a script started, "- id" when it ended.
func (s *hostScene) order(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(s.out, "order"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(raw)), "\n")
}

// runnerNotes are the runner's step notes of a run, joined.
func (s *hostScene) runnerNotes(t *testing.T, id string) string {
	t.Helper()
	var notes []string
	for _, e := range s.timeline(t, id) {
		if e.ActorKind == asks.ActorRunner && e.Step == "step" {
			notes = append(notes, e.Note)
		}
	}
	return strings.Join(notes, "\n")
}

func TestWithTwoAtOnceTwoRunsRunTogetherEachReportingOnlyItsOwnOutput(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := newHostScene(t, db)
		sha := s.writeScript(t, "wait.sh", waiting)
		first, firstMarker := s.file(t, "wait.sh", sha, "ada", 30*time.Minute)
		second, secondMarker := s.file(t, "wait.sh", sha, "ada", 30*time.Minute)
		s.approve(t, s.ada, first)
		s.approve(t, s.ada, second)
		s.serveWith(t, s.dir, Options{Parallel: 2}, nil)

		untilStarted(t, firstMarker, secondMarker) // neither can end before the test releases it
		release(t, firstMarker)
		release(t, secondMarker)
		for _, run := range []struct{ id, other string }{{first, second}, {second, first}} {
			if a := s.ended(t, run.id); a.Status != asks.StatusDone {
				t.Errorf("run %s ended %s", run.id, a.Status)
			}
			notes := s.runnerNotes(t, run.id)
			if !strings.Contains(notes, "output of "+run.id) || !strings.Contains(notes, "end of "+run.id) || strings.Contains(notes, run.other) {
				t.Errorf("the step notes of %s are %q: want its own output and nothing of %s", run.id, notes, run.other)
			}
		}
		if n, m := starts(t, firstMarker), starts(t, secondMarker); n != 1 || m != 1 {
			t.Errorf("the scripts started %d and %d times, want once each", n, m)
		}
	})
}

func TestWithOneAtATimeTheSecondRunStartsOnlyAfterTheFirstEnds(t *testing.T) {
	s := newHostScene(t, apptest.SQLite)
	sha := s.writeScript(t, "wait.sh", waiting)
	a, aMarker := s.file(t, "wait.sh", sha, "ada", 30*time.Minute)
	b, bMarker := s.file(t, "wait.sh", sha, "ada", 30*time.Minute)
	s.approve(t, s.ada, a)
	s.approve(t, s.ada, b)
	s.serveWith(t, s.dir, Options{Parallel: 1, Poll: 100 * time.Millisecond}, nil)

	for deadline := time.Now().Add(time.Minute); starts(t, aMarker)+starts(t, bMarker) == 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no script started within a minute")
		}
	}
	firstMarker, secondMarker, first, second := aMarker, bMarker, a, b
	if starts(t, aMarker) == 0 {
		firstMarker, secondMarker, first, second = bMarker, aMarker, b, a
	}
	// Room for a wrong start: the runner lists its runs every 100 ms.
	time.Sleep(time.Second)
	if n := starts(t, secondMarker); n != 0 {
		t.Fatalf("the second run started while the first ran")
	}
	release(t, firstMarker)
	if got := s.ended(t, first); got.Status != asks.StatusDone {
		t.Fatalf("the first run ended %s", got.Status)
	}
	untilStarted(t, secondMarker)
	release(t, secondMarker)
	if got := s.ended(t, second); got.Status != asks.StatusDone {
		t.Fatalf("the second run ended %s", got.Status)
	}
	want := []string{"+ " + first, "- " + first, "+ " + second, "- " + second}
	if got := s.order(t); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("the scripts started and ended in the order %q, want %q", got, want)
	}
}

func TestTwentyRunsWithFourAtOnceEachRunOnceAndAreJournaledOnce(t *testing.T) {
	s := newHostScene(t, apptest.SQLite)
	sha := s.writeScript(t, "brief.sh", brief)
	const runs, parallel = 20, 4
	ids := make([]string, runs)
	markers := make([]string, runs)
	for i := range ids {
		ids[i], markers[i] = s.file(t, "brief.sh", sha, "ada", 30*time.Minute)
		s.approve(t, s.ada, ids[i])
	}
	var (
		mu       sync.Mutex
		executed = map[string]int{}
	)
	s.serveWith(t, s.dir, Options{Parallel: parallel}, func(id string) {
		mu.Lock()
		executed[id]++
		mu.Unlock()
	})
	for i, id := range ids {
		if a := s.ended(t, id); a.Status != asks.StatusDone {
			t.Errorf("run %s ended %s", id, a.Status)
		}
		started := 0
		for _, e := range s.timeline(t, id) {
			if e.Step == "started" {
				started++
			}
		}
		if n := starts(t, markers[i]); n != 1 || started != 1 {
			t.Errorf("run %s: the script started %d times, %d started events; want 1 each", id, n, started)
		}
	}
	time.Sleep(300 * time.Millisecond) // a later pass must not run any again
	mu.Lock()
	for _, id := range ids {
		if executed[id] != 1 {
			t.Errorf("run %s executed %d times, want once", id, executed[id])
		}
	}
	if len(executed) != runs {
		t.Errorf("%d runs executed, want %d", len(executed), runs)
	}
	mu.Unlock()

	at, most := 0, 0
	for _, line := range s.order(t) {
		if strings.HasPrefix(line, "+ ") {
			at++
		} else {
			at--
		}
		most = max(most, at)
	}
	if most > parallel {
		t.Errorf("%d scripts ran at once, want at most %d", most, parallel)
	}

	entries, err := os.ReadDir(filepath.Join(s.dir, JournalDir))
	if err != nil {
		t.Fatal(err)
	}
	journaled := map[string]int{}
	for _, e := range entries {
		raw, err := os.ReadFile(filepath.Join(s.dir, JournalDir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		var j journal
		if err := json.Unmarshal(raw, &j); err != nil {
			t.Fatalf("journal entry %s: %v", e.Name(), err)
		}
		if j.State != stateFinished || j.Detail != "done: exit status 0" || e.Name() != j.ApprovalID+".json" {
			t.Errorf("journal entry %s: %+v, want finished with done", e.Name(), j)
		}
		journaled[j.ApprovalID]++
	}
	for _, id := range ids {
		if journaled[id] != 1 {
			t.Errorf("run %s is in the journal %d times, want once", id, journaled[id])
		}
	}
	if len(entries) != runs {
		t.Errorf("%d journal entries, want %d", len(entries), runs)
	}
}

// Stopping runner serve kills every script it is running, as before it ran
// several at once: neither run ends done, the restarted runner reports each
// failed, and neither runs again.
func TestStoppingTheRunnerKillsEachRunInHandAndARestartReportsEachFailed(t *testing.T) {
	s := newHostScene(t, apptest.SQLite)
	sha := s.writeScript(t, "wait.sh", waiting)
	a, aMarker := s.file(t, "wait.sh", sha, "ada", 30*time.Minute)
	b, bMarker := s.file(t, "wait.sh", sha, "ada", 30*time.Minute)
	s.approve(t, s.ada, a)
	s.approve(t, s.ada, b)
	stop := s.serveWith(t, s.dir, Options{Parallel: 2}, nil)
	untilStarted(t, aMarker, bMarker)
	stop()
	for _, marker := range []string{aMarker, bMarker} {
		raw, err := os.ReadFile(marker)
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(string(raw), "started ")))
		if err != nil {
			t.Fatalf("marker %q: %v", raw, err)
		}
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("the script %d still runs after serve returned (kill 0: %v)", pid, err)
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
	}

	s.serveWith(t, s.dir, Options{Parallel: 2}, nil)
	for _, id := range []string{a, b} {
		got := s.ended(t, id)
		ev := s.timeline(t, id)
		last := ev[len(ev)-1]
		if got.Status != asks.StatusFailed || last.Note != RestartedNote || last.RunnerSignature() == nil {
			t.Errorf("run %s ended %s with %s %q; want a signed failed %q", id, got.Status, last.Step, last.Note, RestartedNote)
		}
	}
	time.Sleep(300 * time.Millisecond)
	if n, m := starts(t, aMarker), starts(t, bMarker); n != 1 || m != 1 {
		t.Errorf("the scripts started %d and %d times, want once each", n, m)
	}
}

// TestWaitingRunsStartByTheirDeadline files three runs, the newest with the
// nearest deadline, and one slot: they run nearest deadline first.
func TestWaitingRunsStartByTheirDeadline(t *testing.T) {
	s := newHostScene(t, apptest.SQLite)
	sha := s.writeScript(t, "brief.sh", brief)
	late, _ := s.file(t, "brief.sh", sha, "ada", 50*time.Minute)
	middle, _ := s.file(t, "brief.sh", sha, "ada", 40*time.Minute)
	soon, _ := s.file(t, "brief.sh", sha, "ada", 30*time.Minute)
	for _, id := range []string{late, middle, soon} {
		s.approve(t, s.ada, id)
	}
	s.serveWith(t, s.dir, Options{Parallel: 1}, nil)
	for _, id := range []string{late, middle, soon} {
		if got := s.ended(t, id); got.Status != asks.StatusDone {
			t.Fatalf("run %s ended %s", id, got.Status)
		}
	}
	want := []string{"+ " + soon, "- " + soon, "+ " + middle, "- " + middle, "+ " + late, "- " + late}
	if got := s.order(t); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("the runs started in the order %q, want nearest deadline first %q", got, want)
	}
}

// A runner that lost a run to another process sharing its key leaves it
// alone: the run stays active while the winner executes it, and the loser
// lists its runs only when it polls or is told of a change, not again every
// time it finds the run is not its to execute (it once did so hundreds of
// times a second).
func TestARunnerThatLostARunDoesNotListItsRunsOverAndOver(t *testing.T) {
	s := newHostScene(t, apptest.SQLite)
	sha := s.writeScript(t, "wait.sh", waiting)
	id, marker := s.file(t, "wait.sh", sha, "ada", 30*time.Minute)
	key, err := os.ReadFile(filepath.Join(s.dir, KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, KeyFile), key, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Init(other, s.host.Scripts); err != nil {
		t.Fatal(err)
	}
	if _, err := Trust(other, s.env.KeysExport(s.env.Account.ID)); err != nil {
		t.Fatal(err)
	}
	// Both serve before the approval, so both try to claim the run.
	var listings atomic.Int64
	count := func(r *Runner) { r.listed = func() { listings.Add(1) } }
	s.serveRunner(t, s.dir, Options{Poll: time.Minute}, count)
	s.serveRunner(t, other, Options{Poll: time.Minute}, count)
	s.approve(t, s.ada, id)
	untilStarted(t, marker)
	time.Sleep(500 * time.Millisecond) // the loser has heard its claim refused

	// While the winner runs it, neither lists its runs again: a one-minute
	// poll, and no change to hear of.
	before := listings.Load()
	time.Sleep(2 * time.Second)
	if n := listings.Load() - before; n > 2 {
		t.Errorf("the two runners listed their runs %d times in 2 s with a one-minute poll while one ran the run; want none (a change heard may add one or two)", n)
	}
	release(t, marker)
	if a := s.ended(t, id); a.Status != asks.StatusDone {
		t.Errorf("the run ended %s, want done", a.Status)
	}
	if n := starts(t, marker); n != 1 {
		t.Errorf("the script started %d times, want once", n)
	}
}
