package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/apptest/gatetest"
	"github.com/countersign/countersign/ask"
)

// A gated call whose client takes no URL elicitation is told, while it
// waits, the ask's check code and page: as a progress notification when
// the call carries a progress token, else as a log message. The ask says
// where the code is shown (the caller's host by name), and the person who
// picks the code the caller was told approves the call.
func TestAGatedCallWithoutElicitationIsToldTheCheckCodeWhereItWaits(t *testing.T) {
	gatetest.FilesystemServer(t)
	env, ada := serviceWithAda(t)
	_, token := env.Agent(env.Account.ID, "gate")
	rules := filepath.Join(t.TempDir(), "gate.json")
	if err := os.WriteFile(rules, []byte(`{"server": "filesystem", "tools": {"write_file": {"approval": true}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	said := regexp.MustCompile(`check code (\d\d), which they pick at (http://[^\s/]+)/approvals/(appr_\w+)`)

	for _, tc := range []struct {
		name, revision string
		progress       bool
		shownIn        string
	}{
		{"as progress, when the call carries a progress token", "", true, "desktop"},
		{"as a log message, when it carries none (2025-11-25: logging/setLevel)", "2025-11-25", false, "the log of desktop"},
		{"as a log message, when it carries none (2026-07-28: the call's log level)", "2026-07-28", false, "the log of desktop"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			told := make(chan string, 4)
			client := mcp.NewClient(&mcp.Implementation{Name: "desktop", Version: "1"}, &mcp.ClientOptions{
				ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
					told <- "progress: " + r.Params.Message
				},
				LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
					b, _ := json.Marshal(r.Params.Data)
					told <- "log " + string(r.Params.Level) + ": " + string(b)
				},
			})
			cmd := exec.Command(binary, "gate", "--rules", rules, "--timeout", "60s", "--caller", "claude", "--", gatetest.FilesystemServer(t), root)
			cmd.Env = environ(map[string]string{"COUNTERSIGN_URL": env.URL, "COUNTERSIGN_TOKEN": token})
			cmd.Stderr = os.Stderr
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			var opts *mcp.ClientSessionOptions
			if tc.revision != "" {
				opts = &mcp.ClientSessionOptions{ProtocolVersion: tc.revision}
			}
			session, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, opts)
			if err != nil {
				t.Fatalf("connect to countersign gate: %v", err)
			}
			defer session.Close()
			file := filepath.Join(root, tc.revision+"written.txt")
			params := &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": file, "content": "hello"}}
			switch {
			case tc.progress:
				params.SetProgressToken("write-1")
			case tc.revision == "2025-11-25":
				if err := session.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
					t.Fatalf("logging/setLevel: %v", err)
				}
			default:
				params.Meta = mcp.Meta{mcp.MetaKeyLogLevel: "info"}
			}
			done := make(chan *mcp.CallToolResult, 1)
			go func() {
				res, err := session.CallTool(ctx, params)
				if err != nil {
					t.Errorf("call: %v", err)
				}
				done <- res
			}()

			var msg string
			select {
			case msg = <-told:
			case <-time.After(30 * time.Second):
				t.Fatal("the caller was told nothing while its call waits")
			}
			prefix := "log warning: "
			if tc.progress {
				prefix = "progress: "
			}
			m := said.FindStringSubmatch(msg)
			if !strings.HasPrefix(msg, prefix) || m == nil || m[2] != env.URL {
				t.Fatalf("the caller was told %q, want %q with the check code and the ask's page", msg, prefix)
			}
			code, id := m[1], m[3]
			a, err := env.Store.GetApproval(ctx, env.Account.ID, id)
			if err != nil {
				t.Fatal(err)
			}
			if code != ask.CheckCode(a.PayloadSHA256) {
				t.Fatalf("the caller was told code %s, the ask's is %s", code, ask.CheckCode(a.PayloadSHA256))
			}
			if a.CheckCodeShownIn != tc.shownIn {
				t.Errorf("the ask says the code is shown in %q, want %q", a.CheckCodeShownIn, tc.shownIn)
			}
			page := ada.For(t).Page("/approvals/" + id)
			if !strings.Contains(string(page.Raw), "shows in "+tc.shownIn+":") {
				t.Errorf("the ask page does not say the code is shown in %s", tc.shownIn)
			}

			// Ada picks the code the caller was told, and the call runs.
			b := ada.For(t)
			b.CheckCode = func(string) string { return code }
			if r := b.Decide(id, "approve", ""); r.Status != http.StatusOK {
				t.Fatalf("ada approves with the code the caller was told: %s", r)
			}
			select {
			case res := <-done:
				if res == nil || res.IsError {
					t.Fatalf("the approved call: %+v", res)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the approved call did not return")
			}
			if got, err := os.ReadFile(file); err != nil || string(got) != "hello" {
				t.Fatalf("the file after the approved call: %q %v", got, err)
			}
		})
	}
}
