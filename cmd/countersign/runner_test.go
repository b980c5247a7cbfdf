package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/runners"
	"github.com/countersign/countersign/proof"
)

// lastLines are the last n lines of out.
func lastLines(out string, n int) []string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) < n {
		return lines
	}
	return lines[len(lines)-n:]
}

func TestRunnerInitEnrollTrustListAndDisable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "host")
	initOut := mustCLI(t, nil, "runner", "init", "--dir", dir)
	key := lastLines(initOut.stdout, 1)[0]
	if raw, err := base64.RawURLEncoding.DecodeString(key); err != nil || len(raw) != 32 {
		t.Fatalf("the last line of init %q is not a 32-byte key in unpadded base64url", key)
	}
	fi, err := os.Stat(filepath.Join(dir, "runner.key"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("runner.key: %v, mode %v; want 0600", err, fi.Mode().Perm())
	}
	if st, err := os.Stat(filepath.Join(dir, "scripts")); err != nil || !st.IsDir() {
		t.Errorf("init made no scripts folder: %v", err)
	}
	if again := mustCLI(t, nil, "runner", "init", "--dir", dir); lastLines(again.stdout, 1)[0] != key {
		t.Errorf("a second init replaced the key")
	}

	server := map[string]string{"COUNTERSIGN_DATA": t.TempDir()}
	enrolled := mustCLI(t, server, "runner", "enroll", "--init", "--name", "host-1", "--public-key", key)
	last := lastLines(enrolled.stdout, 2)
	id, token := last[0], last[1]
	if !strings.HasPrefix(id, "rnr_") || strings.ContainsAny(id, " \t") || !strings.HasPrefix(token, "cs_runner_"+id+".") {
		t.Fatalf("enroll printed id %q and token %q on its last two lines", id, token)
	}
	if r := cli(t, server, "runner", "enroll", "--name", "host-2", "--public-key", "not-a-key"); r.code != 1 || !strings.Contains(r.stderr, "public_key") {
		t.Errorf("enroll with a bad key: %s", r)
	}
	listed := row(t, mustCLI(t, server, "runner", "list").stdout, "host-1")
	if listed[1] != id || listed[2] != key || listed[3] != "enabled" {
		t.Errorf("runner list row %v", listed)
	}

	if r := cli(t, nil, "runner", "serve", "--dir", dir, "--server", "http://localhost:1"); r.code != 2 || !strings.Contains(r.stderr, "token") {
		t.Errorf("serve without a token: %s", r)
	}
	env := map[string]string{"COUNTERSIGN_RUNNER_TOKEN": token}
	if r := cli(t, env, "runner", "serve", "--dir", dir, "--server", "http://localhost:1", "--parallel", "0"); r.code != 2 || !strings.Contains(r.stderr, "--parallel 0") {
		t.Errorf("serve with --parallel 0: %s", r)
	}
	if r := cli(t, env, "runner", "serve", "--dir", dir, "--server", "http://localhost:1", "--min-signers-production", "0"); r.code != 2 || !strings.Contains(r.stderr, "--min-signers-production (or COUNTERSIGN_RUNNER_MIN_SIGNERS_PRODUCTION) 0") {
		t.Errorf("serve with --min-signers-production 0: %s", r)
	}
	for _, v := range []string{"two", "0"} {
		withMin := map[string]string{"COUNTERSIGN_RUNNER_TOKEN": token, "COUNTERSIGN_RUNNER_MIN_SIGNERS_PRODUCTION": v}
		if r := cli(t, withMin, "runner", "serve", "--dir", dir, "--server", "http://localhost:1"); r.code != 2 || !strings.Contains(r.stderr, "COUNTERSIGN_RUNNER_MIN_SIGNERS_PRODUCTION") {
			t.Errorf("serve with COUNTERSIGN_RUNNER_MIN_SIGNERS_PRODUCTION=%s: %s", v, r)
		}
		// The flag, when given, is the minimum: the variable is not read.
		if r := cli(t, withMin, "runner", "serve", "--dir", dir, "--server", "http://localhost:1", "--min-signers-production", "2"); r.code != 1 || !strings.Contains(r.stderr, "no device key is pinned") {
			t.Errorf("serve with --min-signers-production 2 and the variable %s: %s", v, r)
		}
	}
	if r := cli(t, env, "runner", "serve", "--dir", dir, "--server", "http://localhost:1"); r.code != 1 || !strings.Contains(r.stderr, "no device key is pinned") {
		t.Errorf("serve with no pinned key: %s", r)
	}

	device := func(id byte, person string) proof.DeviceKey {
		return proof.DeviceKey{CredentialID: []byte{id, id}, PublicKey: []byte{0xa5, id}, Person: person, Name: "key " + person, CreatedAt: time.Now().UTC()}
	}
	export := func(keys ...proof.DeviceKey) string {
		b, err := json.Marshal(proof.Keys{Format: proof.KeysFormat, AccountID: "acct_x", RPID: "localhost", Exported: time.Now().UTC(), Keys: keys})
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "keys.json")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	removed := device(3, "cy")
	removed.Removed = true
	first := mustCLI(t, nil, "runner", "trust", "--dir", dir, "--keys", export(device(1, "ada"), device(2, "bob"), removed))
	if !strings.Contains(first.stdout, "pinned 2 device key(s)") || strings.Count(first.stdout, "  + ") != 2 || strings.Contains(first.stdout, "cy") {
		t.Errorf("first trust:\n%s", first.stdout)
	}
	second := mustCLI(t, nil, "runner", "trust", "--dir", dir, "--keys", export(device(1, "ada"), device(4, "dee")))
	if strings.Count(second.stdout, "  + ") != 1 || !strings.Contains(second.stdout, "+ BAQ (dee") ||
		strings.Count(second.stdout, "  - ") != 1 || !strings.Contains(second.stdout, "- AgI (bob") {
		t.Errorf("second trust should add dee's key and remove bob's:\n%s", second.stdout)
	}
	if same := mustCLI(t, nil, "runner", "trust", "--dir", dir, "--keys", export(device(1, "ada"), device(4, "dee"))); !strings.Contains(same.stdout, "unchanged") {
		t.Errorf("a third trust with the same keys:\n%s", same.stdout)
	}

	mustCLI(t, server, "runner", "disable", "host-1")
	if listed := row(t, mustCLI(t, server, "runner", "list").stdout, "host-1"); listed[3] != "disabled" {
		t.Errorf("after disable, runner list row %v", listed)
	}
}

// runnerProcess is runner serve, started from the binary.
func runnerProcess(t *testing.T, dir, server, token string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(binary, "runner", "serve", "--dir", dir, "--server", server)
	cmd.Env = environ(map[string]string{"COUNTERSIGN_RUNNER_TOKEN": token})
	log := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("runner log:\n%s", log)
		}
	})
	return cmd
}

func TestKillNineOfTheRunnerMidRunReportsFailedOnRestartAndNeverRunsAgain(t *testing.T) {
	env := apptest.StartWeb(t, apptest.SQLite, nil)
	ada := env.Join(env.Account.ID, core.RoleOwner, "ada")
	_, agentToken := env.Agent(env.Account.ID, "bot")
	agent := env.Connect(agentToken)

	dir := t.TempDir()
	key := lastLines(mustCLI(t, nil, "runner", "init", "--dir", dir).stdout, 1)[0]
	_, token, err := env.Store.EnrollRunner(context.Background(), env.Account.ID, "host-1", key, "test")
	if err != nil {
		t.Fatal(err)
	}
	keys := filepath.Join(t.TempDir(), "keys.json")
	if err := os.WriteFile(keys, env.KeysExport(env.Account.ID), 0o600); err != nil {
		t.Fatal(err)
	}
	mustCLI(t, nil, "runner", "trust", "--dir", dir, "--keys", keys)

	body := "#!/bin/sh\necho \"started $$\" >> \"$2\"\nsleep 120\n"
	if err := os.WriteFile(filepath.Join(dir, "scripts", "slow.sh"), []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "marker")
	runnerID := runners.RunnerIDOfToken(token)
	filed := agent.OK("approvals_create", apptest.RunAsk(runnerID, key, "ada", apptest.ScriptSHA256([]byte(body)),
		[]string{"slow.sh", "x", marker}, "remote", 30*time.Minute))
	id := filed["approval_id"].(string)
	if r := ada.Decide(id, "approve", ""); r.Status != http.StatusOK {
		t.Fatalf("approve: %s", r)
	}

	first := runnerProcess(t, dir, env.URL, token)
	var scriptPID int
	for deadline := time.Now().Add(time.Minute); scriptPID == 0; time.Sleep(50 * time.Millisecond) {
		if raw, err := os.ReadFile(marker); err == nil && strings.Contains(string(raw), "\n") {
			scriptPID, _ = strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(string(raw), "started ")))
		}
		if time.Now().After(deadline) {
			t.Fatal("the script did not start within a minute")
		}
	}
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	// The script runs in its own process group and outlives its runner; end it
	// so the test leaves nothing behind. The run must not run again either way.
	if err := syscall.Kill(-scriptPID, syscall.SIGKILL); err != nil {
		t.Logf("kill the script's group: %v", err)
	}
	a, err := env.Store.GetApproval(context.Background(), env.Account.ID, id)
	if err != nil || a.Status != asks.StatusInProgress {
		t.Fatalf("after the kill the run is %v (%v), want in_progress", a.Status, err)
	}

	runnerProcess(t, dir, env.URL, token)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if a, err = env.Store.GetApproval(context.Background(), env.Account.ID, id); err != nil {
			t.Fatal(err)
		}
		if a.Status != asks.StatusInProgress {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the restarted runner did not report within a minute")
		}
	}
	events, err := env.Store.Timeline(context.Background(), env.Account.ID, id)
	if err != nil {
		t.Fatal(err)
	}
	last := events[len(events)-1]
	if a.Status != asks.StatusFailed || last.Note != "runner restarted; not run again" || last.RunnerSignature() == nil {
		t.Errorf("after the restart the run is %s, last %s %q", a.Status, last.Step, last.Note)
	}
	time.Sleep(time.Second)
	if raw, _ := os.ReadFile(marker); strings.Count(string(raw), "started") != 1 {
		t.Errorf("the script started %d times, want once:\n%s", strings.Count(string(raw), "started"), raw)
	}

	t.Run("countersign verify accepts the agent's approvals_get answer and refuses it with a report changed", func(t *testing.T) {
		got := agent.Call("approvals_get", map[string]any{"approval_id": id})
		answer := filepath.Join(t.TempDir(), "answer.json")
		if err := os.WriteFile(answer, []byte(got.Text), 0o600); err != nil {
			t.Fatal(err)
		}
		ok := cli(t, nil, "verify", answer, "--keys", keys, "--origin", env.URL)
		if ok.code != 0 || !strings.Contains(ok.stdout, "VALID: the decision and all 2 runner report(s) verify") {
			t.Errorf("verify of the answer:\n%s", ok)
		}
		changed := strings.Replace(got.Text, "runner restarted; not run again", "done, all fine", 1)
		if err := os.WriteFile(answer, []byte(changed), 0o600); err != nil {
			t.Fatal(err)
		}
		if bad := cli(t, nil, "verify", answer, "--keys", keys, "--origin", env.URL); bad.code != 1 || !strings.Contains(bad.stdout, "NOT VALID") {
			t.Errorf("verify of an answer with a changed note:\n%s", bad)
		}
	})
}
