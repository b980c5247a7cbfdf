package browsertest

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/runner"
)

// An agent files a pinned run over MCP, the person approves it in Chromium
// with their passkey, runner serve checks the proof itself and runs the
// script once, the page shows its signed reports as they land, the agent
// reads them, and countersign verify accepts the whole record offline.
func TestAPinnedRunApprovedInTheBrowserRunsOnceAndVerifies(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := start(t, db)
		s.signUp("ada", core.RoleOwner)
		ctx := context.Background()

		dir := t.TempDir()
		if _, err := runner.Init(dir, ""); err != nil {
			t.Fatal(err)
		}
		if _, err := runner.Trust(dir, s.env.KeysExport(s.env.Account.ID)); err != nil {
			t.Fatal(err)
		}
		host, err := runner.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		enrolled := s.env.EnrollRunnerKey(s.env.Account.ID, "deploy-eu", host.Key)
		marker := filepath.Join(t.TempDir(), "marker")
		script := "#!/bin/sh\necho started >> \"$2\"\necho \"migrating to $1\"\necho \"migrated 3 tables\"\n"
		if err := os.WriteFile(filepath.Join(host.Scripts, "migrate.sh"), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		id, sha := s.ask(enrolled.Ask("ada", apptest.ScriptSHA256([]byte(script)), []string{"migrate.sh", "v42", marker}, "production", 10*time.Minute))

		r, err := runner.New(host, runner.Options{Server: s.env.URL, Token: enrolled.Token, Logger: apptest.Logger()})
		if err != nil {
			t.Fatal(err)
		}
		serveCtx, stop := context.WithCancel(ctx)
		served := make(chan error, 1)
		go func() { served <- r.Serve(serveCtx) }()
		t.Cleanup(func() { stop(); <-served })

		s.openFromInbox(id, "Run migrate.sh")
		p := s.page
		if got := p.Text("[data-testid=effect]"); got != "PRODUCTION: this run changes production" {
			t.Errorf("the page shows the effect as %q", got)
		}
		if got := p.Text("[data-testid=runner-name]"); got != "deploy-eu" {
			t.Errorf("the page names the runner %q", got)
		}
		if got := p.Text("[data-testid=argv]"); !strings.HasPrefix(got, "migrate.sh v42 ") {
			t.Errorf("the page shows argv %q", got)
		}
		s.answer(id, "[data-testid=approve]")
		p.WaitFor("the run done, on the live page", statusIs("done"))
		p.WaitFor("three signed reports on the timeline", `document.querySelectorAll("[data-testid=runner-signed]").length >= 3`)
		p.Reload()
		p.WaitVisible("[data-testid=status]")
		if n := p.Count("[data-testid=runner-signed]"); n < 3 {
			t.Errorf("the reloaded page shows %d signed reports, want started, step and done", n)
		}

		got := s.get(id)
		var steps []string
		for _, e := range got["timeline"].([]any) {
			ev := e.(map[string]any)
			if ev["by"] == "runner" {
				if ev["runner"] == nil {
					t.Errorf("the runner's %v carries no signature", ev["step"])
				}
				steps = append(steps, ev["step"].(string))
				if ev["step"] == "step" && !strings.Contains(ev["note"].(string), "migrating to v42") {
					t.Errorf("step note %q", ev["note"])
				}
			}
		}
		if len(steps) < 3 || steps[0] != "started" || steps[len(steps)-1] != "done" || !strings.Contains(strings.Join(steps, " "), " step ") {
			t.Errorf("the agent reads the runner's steps %v, want started step done", steps)
		}
		s.checkProof(got["proof"], id, sha, "approve", "ada")
		if raw, _ := os.ReadFile(marker); strings.Count(string(raw), "started") != 1 {
			t.Errorf("the script started %d times", strings.Count(string(raw), "started"))
		}

		answer := s.agent.Call("approvals_get", map[string]any{"approval_id": id})
		files := t.TempDir()
		keys, err := json.Marshal(s.keys())
		if err != nil {
			t.Fatal(err)
		}
		for name, body := range map[string][]byte{"answer.json": []byte(answer.Text), "keys.json": keys} {
			if err := os.WriteFile(filepath.Join(files, name), body, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		verify := exec.Command("go", "run", "../cmd/countersign", "verify", filepath.Join(files, "answer.json"),
			"--keys", filepath.Join(files, "keys.json"), "--origin", s.env.URL)
		out, err := verify.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "VALID: the decision and all 3 runner report(s) verify") && !strings.Contains(string(out), "VALID: the decision and all 4 runner report(s) verify") {
			t.Errorf("countersign verify of the agent's answer: %v\n%s", err, out)
		}
	})
}
