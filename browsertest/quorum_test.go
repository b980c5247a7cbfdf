package browsertest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/proof"
	"github.com/countersign/countersign/runner"
)

// Two people, each in a browser context of their own with their own
// passkey: a production run needs both of them. After ada approves it is
// still pending and the agent reads "1 of 2"; with a second passkey of
// hers, her page offers no second answer and the server refuses one; bob's approval completes it and only
// then does the runner run it, once; on a second run bob's deny ends it.
func TestAProductionRunNeedsBothPeopleInTheirOwnBrowsers(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := start(t, db)
		s.signUp("ada", core.RoleOwner)
		bob := s.For(t)
		bob.page = browser.Open(t, s.env.URL)
		bob.signUp("bob", core.RoleAdmin)
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
		script := "#!/bin/sh\necho started >> \"$2\"\necho \"deploying $1\"\n"
		if err := os.WriteFile(filepath.Join(host.Scripts, "deploy.sh"), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		r, err := runner.New(host, runner.Options{Server: s.env.URL, Token: enrolled.Token, Logger: apptest.Logger()})
		if err != nil {
			t.Fatal(err)
		}
		serveCtx, stop := context.WithCancel(ctx)
		served := make(chan error, 1)
		go func() { served <- r.Serve(serveCtx) }()
		t.Cleanup(func() { stop(); <-served })
		starts := func() int {
			raw, _ := os.ReadFile(marker)
			return strings.Count(string(raw), "started")
		}

		id, _ := s.ask(enrolled.Ask("ada", apptest.ScriptSHA256([]byte(script)), []string{"deploy.sh", "v42", marker}, "production", 10*time.Minute))
		s.openFromInbox(id, "Run deploy.sh")
		s.answer(id, "[data-testid=approve]")
		s.page.WaitFor("the run still pending after ada's approval", statusIs("pending"))
		got := s.get(id)
		q, _ := got["quorum"].(map[string]any)
		if got["status"] != "pending" || q["summary"] != "1 of 2 approved (ada)" {
			t.Fatalf("after ada: status %v, quorum %v", got["status"], q)
		}
		time.Sleep(300 * time.Millisecond) // the runner has heard of the change, and must not run it
		if n := starts(); n != 0 {
			t.Fatalf("the run started after one signature of two (%d times)", n)
		}

		// Ada adds a security key: her page still offers no second answer,
		// and says when she approved and whom it waits for; asked as the
		// page script would ask, the server refuses her a second signature.
		confirmWithPasskey(s.page)
		swapAuthenticator(s.page)
		s.page.Type("#new_device_name", "Security key")
		s.page.ClickToLoad("[data-testid=add-passkey-here]", "/devices", "[data-testid=add-passkey]")
		s.expected = func(e string) bool { return strings.Contains(e, "409") }
		s.page.Go("/approvals/" + id)
		s.page.WaitVisible("[data-testid=you-signed]")
		if line := s.page.Text("[data-testid=you-signed]"); line != "Your approval is in · waiting for bob" {
			t.Errorf("ada's page says %q, want that her approval is in and it waits for bob", line)
		}
		if line := s.page.Text("[data-testid=you-signed-note]"); !youApproved.MatchString(line) {
			t.Errorf("ada's page says %q, want when she approved", line)
		}
		if n := s.page.Count("[data-testid=answer-bar], [data-testid=check-codes], [data-testid=approve], [data-testid=deny], [data-testid=not-mine], [data-testid=question-text]"); n != 0 {
			t.Errorf("ada's page offers %d ways to answer after her approval", n)
		}
		if msg := evalAwait[string](s.page, `fetch("/approvals/`+id+`/challenge", {method: "POST", headers: {"Content-Type": "application/json", Accept: "application/json",
			"X-CSRF-Token": document.querySelector('meta[name="csrf-token"]').content}, body: JSON.stringify({decision: "approve", check_code: "`+s.env.CheckCode(id)+`"})}).
			then((r) => r.text().then((t) => r.status + " " + t))`); !strings.HasPrefix(msg, "409 ") || !strings.Contains(msg, "the same person counts once") {
			t.Errorf("ada's second approval is answered %q", msg)
		}
		if got := s.get(id); got["status"] != "pending" || got["quorum"].(map[string]any)["summary"] != "1 of 2 approved (ada)" {
			t.Fatalf("after ada's second passkey: %v %v", got["status"], got["quorum"])
		}

		bob.openFromInbox(id, "Run deploy.sh")
		bob.answer(id, "[data-testid=approve]")
		bob.page.WaitFor("the run done once both signed", statusIs("done"))
		got = s.get(id)
		if got["decided_by"] != "bob" || !slices.Equal(strs(got["signers"]), []string{"ada", "bob"}) {
			t.Errorf("decided_by %v, signers %v", got["decided_by"], got["signers"])
		}
		if n := starts(); n != 1 {
			t.Fatalf("the run started %d times, want once", n)
		}
		b, err := proof.ParseBundle(mustJSON(t, got["proof"]))
		if err != nil {
			t.Fatal(err)
		}
		if res, err := proof.VerifyBundle(b, proof.Expect{Origin: s.env.URL, Keys: s.keys()}); err != nil || !slices.Equal(res.Signers, []string{"ada", "bob"}) {
			t.Fatalf("the bundle: %v %+v", err, res)
		}

		// A second run: ada approves with her security key, bob denies.
		id2, _ := s.ask(enrolled.Ask("ada", apptest.ScriptSHA256([]byte(script)), []string{"deploy.sh", "v43", marker}, "production", 10*time.Minute))
		s.openFromInbox(id2, "Run deploy.sh")
		s.answer(id2, "[data-testid=approve]")
		s.page.WaitFor("the second run pending after ada", statusIs("pending"))
		bob.openFromInbox(id2, "Run deploy.sh")
		bob.answer(id2, "[data-testid=deny]")
		bob.page.WaitFor("the second run denied by bob's veto", statusIs("denied"))
		got = s.get(id2)
		if got["status"] != "denied" || got["decided_by"] != "bob" || got["quorum"].(map[string]any)["denied_by"] != "bob" {
			t.Fatalf("after bob's deny: %v %v %v", got["status"], got["decided_by"], got["quorum"])
		}
		time.Sleep(300 * time.Millisecond)
		if n := starts(); n != 1 {
			t.Fatalf("a denied run started (%d starts in all)", n)
		}
	})
}

// youApproved is the line an ask page shows a person whose approval is in:
// "You approved at 14:02", the time as the page script writes it.
var youApproved = regexp.MustCompile(`^You approved at \S.*\S`)

func strs(v any) []string {
	var out []string
	list, _ := v.([]any)
	for _, x := range list {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

// mustJSON is v (read from a tool's answer) as JSON again.
func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}
