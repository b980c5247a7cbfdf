package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/apptest/gatetest"
	"github.com/countersign/countersign/models/asks"
)

// passkeyPerson is ada answering with apptest's software passkey, over the
// same HTTP calls her browser makes.
type passkeyPerson struct{ ada *apptest.Browser }

func (p passkeyPerson) Subject() string { return "ada" }

func (p passkeyPerson) Answer(t *testing.T, a asks.Approval, answer string) {
	t.Helper()
	if answer == "" {
		return
	}
	if answer == "edit" {
		var edited map[string]map[string]any
		if err := json.Unmarshal([]byte(a.Payload), &edited); err != nil {
			t.Fatal(err)
		}
		edited["tool_call"]["arguments"].(map[string]any)["content"] = gatetest.EditedText
		if r := p.ada.For(t).DecideEdited(a.ID, edited); r.Status != http.StatusOK {
			t.Fatalf("ada approves her edit: %s", r)
		}
		return
	}
	text := ""
	if answer == "reply" {
		text = gatetest.ReplyText
	}
	if r := p.ada.For(t).Decide(a.ID, answer, text); r.Status != http.StatusOK {
		t.Fatalf("ada answers %s: %s", answer, r)
	}
}

func (p passkeyPerson) ApproveLate(t *testing.T, a asks.Approval) {
	t.Helper()
	if r := p.ada.For(t).Decide(a.ID, "approve", ""); r.Status == http.StatusOK {
		t.Errorf("ada approved a withdrawn ask: %s", r)
	}
}

// TestGateInFrontOfServerFilesystem runs countersign gate over stdio in
// front of the npm filesystem server, driven by a go-sdk client, with ada
// answering on the service with a software passkey (browsertest runs the
// same scenarios with her in Chromium).
func TestGateInFrontOfServerFilesystem(t *testing.T) {
	gatetest.FilesystemServer(t)
	env, ada := serviceWithAda(t)
	gatetest.RunFilesystemScenarios(t, gatetest.Setup{Env: env, Binary: binary, Person: passkeyPerson{ada}})
}

// serviceWithAda runs the service with ada, an owner, signed in with a
// software passkey.
func serviceWithAda(t *testing.T) (*apptest.Env, *apptest.Browser) {
	t.Helper()
	return serviceWithAdaAnd(t, nil)
}

// serviceWithAdaAnd is serviceWithAda with settings of its own.
func serviceWithAdaAnd(t *testing.T, settings map[string]string) (*apptest.Env, *apptest.Browser) {
	t.Helper()
	env := apptest.StartWeb(t, apptest.SQLite, settings)
	return env, env.Owner("ada")
}

// A gate whose token the service refuses says the service's reason, not
// only "Unauthorized", and starts nothing.
func TestTheGateSaysWhyTheServiceRefusedItsToken(t *testing.T) {
	env := apptest.Start(t, apptest.SQLite, nil)
	disabled, disabledToken := env.Agent(env.Account.ID, "gone")
	if _, err := env.Store.DisableAgent(context.Background(), env.Account.ID, disabled.Name, "replaced", "test"); err != nil {
		t.Fatal(err)
	}
	rules := writeRules(t, `{"server": "environment", "tools": {"write_file": {"approval": true}}}`)
	for _, tc := range []struct{ name, token, reason string }{
		{"a token the service never made", "cs_agent_not.one", "the token is not an agent token of this service"},
		{"a disabled agent's token", disabledToken, "this agent is disabled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := cli(t, map[string]string{"COUNTERSIGN_URL": env.URL, "COUNTERSIGN_TOKEN": tc.token}, "gate", "--rules", rules, "--", "true")
			if r.code != 1 || !strings.Contains(r.stderr, "refused this token: "+tc.reason) {
				t.Errorf("want exit 1 saying the service's reason %q; got\n%s", tc.reason, r)
			}
		})
	}
}

// The gate's stderr carries the upstream's own lines (and the audit events),
// not the go-sdk's INFO chatter of every session connected and ended.
func TestTheGatesStderrHasNoSDKInfoLines(t *testing.T) {
	env := apptest.Start(t, apptest.SQLite, nil)
	_, token := env.Agent(env.Account.ID, "gate")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	rules := writeRules(t, `{"server": "environment", "tools": {"write_file": {"approval": true}}}`)
	cmd := exec.Command(binary, "gate", "--rules", rules, "--caller", "claude", "--", self)
	cmd.Env = environ(map[string]string{"COUNTERSIGN_URL": env.URL, "COUNTERSIGN_TOKEN": token, environmentUpstream: "1"})
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	session, err := mcp.NewClient(&mcp.Implementation{Name: "desktop", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to countersign gate: %v", err)
	}
	if res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "environment", Arguments: map[string]any{}}); err != nil || res.IsError {
		t.Fatalf("environment = %v, %v", res, err)
	}
	if err := session.Close(); err != nil { // ends the gate, and waits for it
		t.Fatalf("close: %v", err)
	}
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(line, "level=INFO") {
			t.Errorf("an INFO line on the gate's stderr: %s", line)
		}
	}
	if !strings.Contains(stderr.String(), "environment upstream: serving over stdio") {
		t.Errorf("the gate's stderr lacks the upstream's own line:\n%s", stderr.String())
	}
}
