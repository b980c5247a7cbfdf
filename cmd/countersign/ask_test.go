package main

import (
	"context"
	"errors"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
)

// askRun is `countersign ask` running as its own process.
type askRun struct {
	stdout, stderr *lockedBuffer
	done           chan struct{}
	code           int
}

var askWaiting = regexp.MustCompile(`countersign ask: (appr_\S+) is waiting`)

// startAsk runs countersign ask against env as the agent with token, and
// returns once it says which ask waits, with that ask's id.
func startAsk(t *testing.T, env *apptest.Env, token string, args ...string) (*askRun, string) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"ask"}, args...)...)
	cmd.Env = environ(map[string]string{"COUNTERSIGN_URL": env.URL, "COUNTERSIGN_TOKEN": token})
	r := &askRun{stdout: &lockedBuffer{}, stderr: &lockedBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = r.stdout, r.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := cmd.Wait()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			r.code = exit.ExitCode()
		}
		close(r.done)
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-r.done })
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := askWaiting.FindStringSubmatch(r.stderr.String()); m != nil {
			return r, m[1]
		}
		select {
		case <-r.done:
			t.Fatalf("countersign ask ended before it filed its ask: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		default:
		}
	}
	t.Fatalf("countersign ask filed no ask within 30 s:\n%s", r.stderr)
	return nil, ""
}

// wait waits for the ask command to end and returns its exit code.
func (r *askRun) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-r.done:
		return r.code
	case <-time.After(time.Minute):
		t.Fatalf("countersign ask did not end within a minute:\n%s\n%s", r.stdout, r.stderr)
		return -1
	}
}

// countersign ask ends with 2 when its ask expires or its --timeout passes
// first (the ask is then withdrawn, so a later yes never counts), and with 3
// when it cannot file an ask at all.
func TestAskExitsTwoWithoutAnAnswerAndThreeWhenItCannotAsk(t *testing.T) {
	env := apptest.StartWeb(t, apptest.SQLite, nil)
	env.Member(env.Account.ID, "ada", core.RoleOwner)
	_, token := env.Agent(env.Account.ID, "ci")
	ctx := context.Background()

	t.Run("an ask that expires on the service exits 2", func(t *testing.T) {
		r, id := startAsk(t, env, token, "--title", "Deploy api", "--proof", t.TempDir()+"/proof.json")
		env.Store.SetClock(func() time.Time { return time.Now().Add(8 * 24 * time.Hour) })
		defer env.Store.SetClock(time.Now)
		if n, err := env.Store.ExpireDue(ctx); err != nil || n != 1 {
			t.Fatalf("ExpireDue = %d, %v; want 1", n, err)
		}
		if code := r.wait(t); code != askNoAnswer || !strings.Contains(r.stdout.String(), "no answer: "+id+" is expired") {
			t.Fatalf("exit %d, want 2 with the ask expired\n%s\n%s", code, r.stdout, r.stderr)
		}
		if !strings.Contains(r.stderr.String(), "no proof to save") {
			t.Errorf("--proof of an expired ask does not say there is none:\n%s", r.stderr)
		}
	})

	t.Run("an ask nobody answers within --timeout is withdrawn and exits 2", func(t *testing.T) {
		r, id := startAsk(t, env, token, "--title", "Deploy api", "--timeout", "2s")
		if code := r.wait(t); code != askNoAnswer || !strings.Contains(r.stdout.String(), "no answer within 2s") {
			t.Fatalf("exit %d, want 2 after the timeout\n%s\n%s", code, r.stdout, r.stderr)
		}
		if a, err := env.Store.GetApproval(ctx, env.Account.ID, id); err != nil || a.Status != asks.StatusStale {
			t.Fatalf("the ask after the timeout: %v %v; want stale", a.Status, err)
		}
	})

	var mu sync.Mutex // the table's runs share the service
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		says string
	}{
		{"no title", map[string]string{"COUNTERSIGN_URL": env.URL, "COUNTERSIGN_TOKEN": token}, nil, "--title is required"},
		{"no token", map[string]string{"COUNTERSIGN_URL": env.URL}, []string{"--title", "x"}, "set COUNTERSIGN_TOKEN"},
		{"no URL", map[string]string{"COUNTERSIGN_TOKEN": token}, []string{"--title", "x"}, "set COUNTERSIGN_URL"},
		{"a token the service refuses", map[string]string{"COUNTERSIGN_URL": env.URL, "COUNTERSIGN_TOKEN": "cs_agent_wrong"}, []string{"--title", "x"}, "refused this token"},
		{"a payload that is no JSON", map[string]string{"COUNTERSIGN_URL": env.URL, "COUNTERSIGN_TOKEN": token}, []string{"--title", "x", "--payload", "{"}, "--payload: not a JSON object"},
		{"a payload the service refuses", map[string]string{"COUNTERSIGN_URL": env.URL, "COUNTERSIGN_TOKEN": token}, []string{"--title", "x", "--payload", `{"options": ["only one"]}`}, "payload.decision.options"},
	} {
		t.Run(tc.name+" exits 3 and says why", func(t *testing.T) {
			mu.Lock()
			defer mu.Unlock()
			r := cli(t, tc.env, append([]string{"ask"}, tc.args...)...)
			if r.code != askBroken || !strings.Contains(r.stderr, tc.says) {
				t.Fatalf("want exit 3 saying %q; got\n%s", tc.says, r)
			}
		})
	}
	if open, _, err := env.Store.ListApprovals(ctx, env.Account.ID, asks.ListFilter{Status: "open"}); err != nil || len(open) != 0 {
		t.Errorf("%d asks left open (%v), want none", len(open), err)
	}
}
