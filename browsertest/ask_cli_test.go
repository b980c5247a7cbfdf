package browsertest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/apptest/gatetest"
	"github.com/countersign/countersign/models/core"
)

// syncBuffer collects a process's output while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

var askWaiting = regexp.MustCompile(`countersign ask: (appr_\S+) is waiting`)

// shellAsk runs `countersign ask` as a CI step would, with the agent token
// in its environment, and returns once it says which ask waits, with that
// ask's id and a function that waits for its exit code and stdout.
func shellAsk(t *testing.T, binary, url, token string, args ...string) (id string, wait func() (int, string)) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"ask"}, args...)...)
	cmd.Env = append(os.Environ(), "COUNTERSIGN_URL="+url, "COUNTERSIGN_TOKEN="+token)
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan int, 1)
	go func() {
		var exit *exec.ExitError
		if err := cmd.Wait(); errors.As(err, &exit) {
			done <- exit.ExitCode()
		} else {
			done <- 0
		}
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	wait = func() (int, string) {
		t.Helper()
		select {
		case code := <-done:
			return code, stdout.String()
		case <-time.After(time.Minute):
			t.Fatalf("countersign ask did not end within a minute:\n%s\n%s", stdout.String(), stderr.String())
			return -1, ""
		}
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := askWaiting.FindStringSubmatch(stderr.String()); m != nil {
			return m[1], wait
		}
	}
	t.Fatalf("countersign ask filed no ask within 30 s:\n%s", stderr.String())
	return "", nil
}

// `countersign ask … && ./deploy.sh`: the step files a decision, ada picks
// its go-ahead in Chromium with her passkey, and the command exits 0 with
// the signed proof saved, which countersign verify accepts against the
// account's keys; a deny exits 1, with its proof verified the same way.
func TestCountersignAskExitsZeroOnAnApproveInChromiumAndOneOnADeny(t *testing.T) {
	NeedChromium(t)
	binary := gatetest.BuildCountersign(t)
	s := start(t, apptest.SQLite)
	s.signUp("ada", core.RoleOwner)
	_, token := s.env.Agent(s.env.Account.ID, "ci")
	dir := t.TempDir()
	keys, err := json.Marshal(s.keys())
	if err != nil {
		t.Fatal(err)
	}
	keysFile := filepath.Join(dir, "keys.json")
	if err := os.WriteFile(keysFile, keys, 0o644); err != nil {
		t.Fatal(err)
	}
	verify := func(t *testing.T, proofFile, decision string) {
		t.Helper()
		out, err := exec.Command(binary, "verify", proofFile, "--keys", keysFile, "--rp-id", "localhost", "--origin", s.env.URL).CombinedOutput()
		if err != nil || !strings.Contains(string(out), decision) || !strings.Contains(string(out), "ada") {
			t.Fatalf("countersign verify %s: %v, want exit 0 naming %s and ada\n%s", proofFile, err, decision, out)
		}
	}

	for _, tc := range []struct {
		answer, button, status, says string
		code                         int
	}{
		{"approve", "[data-testid=choice-0]", "approved", "approved by ada", 0},
		{"deny", "[data-testid=deny]", "denied", "denied by ada", 1},
	} {
		t.Run(fmt.Sprintf("a %s exits %d", tc.answer, tc.code), func(t *testing.T) {
			s := s.For(t)
			proofFile := filepath.Join(dir, tc.answer+".json")
			id, wait := shellAsk(t, binary, s.env.URL, token, "--title", "Deploy api to production",
				"--approve-means", "deploy.sh ships api to production", "--proof", proofFile)
			s.openFromInbox(id, "Deploy api to production")
			if got := s.page.Text("[data-testid=choice-0]"); got != "Go ahead" {
				t.Errorf("the first option reads %q, want Go ahead", got)
			}
			s.answer(id, tc.button)
			s.page.WaitFor("the status "+tc.status, statusIs(tc.status))
			code, stdout := wait()
			if code != tc.code || !strings.Contains(stdout, tc.says) {
				t.Fatalf("countersign ask exited %d saying %q; want %d and %q", code, stdout, tc.code, tc.says)
			}
			decision := map[string]string{"approve": "option:0", "deny": "deny"}[tc.answer]
			verify(t, proofFile, decision)
		})
	}
}
