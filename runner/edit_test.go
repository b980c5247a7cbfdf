package runner

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/asks"
)

// A run whose agent marked an argument editable, approved with the person's
// value: the runner checks the edit against the pin on its own evidence
// (the proof carries the edited payload, whose hash it signs) and runs the
// edited argv.
func TestARunApprovedWithAnEditedArgumentRunsTheEditedArgv(t *testing.T) {
	s := newHostScene(t, apptest.SQLite)
	sha := s.writeScript(t, "hello.sh", script)
	marker := t.TempDir() + "/marker"
	args := s.enroled.Ask("ada", sha, []string{"hello.sh", "world", marker}, "remote", 30*time.Minute)
	args["editable"] = []string{"run.argv[1]"}
	filed := s.agent.OK("approvals_create", args)
	id := filed["approval_id"].(string)
	s.serve(t, s.dir, nil)

	var edited map[string]map[string]any
	raw, _ := json.Marshal(filed["payload"])
	if err := json.Unmarshal(raw, &edited); err != nil {
		t.Fatal(err)
	}
	edited["run"]["argv"].([]any)[1] = "edited world"
	if r := s.ada.DecideEdited(id, edited); r.Status != http.StatusOK {
		t.Fatalf("ada approves her edit: %s", r)
	}
	a := s.ended(t, id)
	if a.Status != asks.StatusDone {
		t.Fatalf("run ended %s: %+v", a.Status, s.timeline(t, id))
	}
	var out []string
	for _, e := range s.timeline(t, id) {
		if e.ActorKind == asks.ActorRunner && e.Step == "step" {
			out = append(out, e.Note)
		}
	}
	if got := strings.Join(out, "\n"); !strings.Contains(got, "hello edited world") {
		t.Errorf("the script printed %q, want it run with the edited argument", got)
	}
}

// The runner runs an edited argv only when the pin allows the edit:
// arguments after argv[0], nothing else.
func TestTheRunnerRunsOnlyTheEditsThePinAllows(t *testing.T) {
	const asked = `{"run":{"argv":["deploy.sh","eu","3"],"effect":"remote","script_sha256":"aa"}}`
	for _, tc := range []struct {
		name, edited, refusal string
	}{
		{"an argument", `{"run":{"argv":["deploy.sh","us","3"],"effect":"remote","script_sha256":"aa"}}`, ""},
		{"the script", `{"run":{"argv":["other.sh","eu","3"],"effect":"remote","script_sha256":"aa"}}`, "/run/argv/0"},
		{"the effect", `{"run":{"argv":["deploy.sh","eu","3"],"effect":"read_only","script_sha256":"aa"}}`, "/run/effect"},
		{"one argument more", `{"run":{"argv":["deploy.sh","eu","3","--force"],"effect":"remote","script_sha256":"aa"}}`, "/run/argv"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			argv, err := editedArgv([]byte(asked), []byte(tc.edited))
			if tc.refusal == "" {
				if err != nil || strings.Join(argv, " ") != "deploy.sh us 3" {
					t.Fatalf("editedArgv = %q, %v; want the edited argv", argv, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "changes "+tc.refusal+",") {
				t.Fatalf("editedArgv = %q, %v; want a refusal naming %s", argv, err, tc.refusal)
			}
		})
	}
}
