package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/mcp/gate"
	"github.com/countersign/countersign/models"
)

// filesystemServer is the pinned @modelcontextprotocol/server-filesystem
// (package.json devDependencies; npm install).
func filesystemServer(t *testing.T) string {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	bin := filepath.Join(filepath.Dir(here), "..", "..", "node_modules", ".bin", "mcp-server-filesystem")
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is missing: run npm ci", bin)
		}
		t.Skipf("%s is missing: run npm ci", bin)
	}
	return bin
}

// TestGateInFrontOfServerFilesystem runs countersign gate over stdio in
// front of the npm filesystem server, driven by a go-sdk client, with ada
// answering on the service with her passkey.
func TestGateInFrontOfServerFilesystem(t *testing.T) {
	fsServer := filesystemServer(t)
	env := apptest.StartWeb(t, apptest.SQLite, nil)
	invite, _, err := env.Store.CreateInvite(context.Background(), models.NewInvite{AccountID: env.Account.ID, Role: models.RoleOwner, By: models.OperatorInviter("test")})
	if err != nil {
		t.Fatal(err)
	}
	ada := apptest.NewBrowser(t, env.URL)
	if r := ada.AcceptInvite(invite, "ada"); r.Status != http.StatusOK {
		t.Fatalf("ada accepts the invite: %s", r)
	}
	_, token := env.Agent(env.Account.ID, "gate")
	root := t.TempDir()
	rules := filepath.Join(t.TempDir(), "gate.json")
	if err := os.WriteFile(rules, []byte(`{"server": "filesystem", "tools": {"write_file": {"approval": true}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	openAsk := func(t *testing.T) models.Approval {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			list, _, err := env.Store.ListApprovals(context.Background(), env.Account.ID, models.ListFilter{Status: "open"})
			if err != nil {
				t.Fatal(err)
			}
			if len(list) == 1 {
				return list[0]
			}
		}
		t.Fatal("no ask was filed")
		return models.Approval{}
	}
	tests := []struct {
		name        string
		tool        string
		file        string
		answer      string // approve, deny, "" for silence
		lateApprove bool
		wantText    string
		wantWritten bool
		wantStatus  models.Status
		wantAudit   map[string]any
	}{
		{name: "the person approves: the file is written and the audit line names both people",
			tool: "write_file", file: "approved.txt", answer: "approve", wantWritten: true, wantStatus: models.StatusDone,
			wantAudit: map[string]any{"tool": "write_file", "caller": "claude", "approver": "ada", "phase": "allowed", "decision": "allow"}},
		{name: "the person denies: not written, the caller reads the forbidden JSON",
			tool: "write_file", file: "denied.txt", answer: "deny", wantText: gate.RefusalText, wantStatus: models.StatusDenied,
			wantAudit: map[string]any{"tool": "write_file", "caller": "claude", "approver": "ada", "phase": "refused", "decision": "deny"}},
		{name: "silence for 2 s: refused, not written, the ask withdrawn, and an approve after changes nothing",
			tool: "write_file", file: "silent.txt", lateApprove: true, wantText: gate.RefusalText, wantStatus: models.StatusStale,
			wantAudit: map[string]any{"tool": "write_file", "caller": "claude", "approver": "", "phase": "refused", "decision": "deny"}},
		{name: "read_text_file passes straight through", tool: "read_text_file", file: "seed.txt", wantText: "seeded",
			wantAudit: nil},
	}
	if err := os.WriteFile(filepath.Join(root, "seed.txt"), []byte("seeded"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			auditLog := filepath.Join(t.TempDir(), "audit.jsonl")
			cmd := exec.Command(binary, "gate", "--rules", rules, "--timeout", "2s", "--caller", "claude", "--audit-log", auditLog, "--", fsServer, root)
			cmd.Env = append(os.Environ(), "COUNTERSIGN_URL="+env.URL, "COUNTERSIGN_TOKEN="+token)
			cmd.Stderr = os.Stderr
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			session, err := mcp.NewClient(&mcp.Implementation{Name: "desktop", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
			if err != nil {
				t.Fatalf("connect to countersign gate: %v", err)
			}
			defer session.Close()
			path := filepath.Join(root, tc.file)
			args := map[string]any{"path": path}
			if tc.tool == "write_file" {
				args["content"] = "written by the test"
			}
			done := make(chan *mcp.CallToolResult, 1)
			go func() {
				res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: args})
				if err != nil {
					t.Errorf("call: %v", err)
				}
				done <- res
			}()
			var a models.Approval
			if tc.tool == "write_file" {
				a = openAsk(t)
				if tc.answer != "" {
					if r := ada.Decide(a.ID, tc.answer, ""); r.Status != http.StatusOK {
						t.Fatalf("ada answers %s: %s", tc.answer, r)
					}
				}
			}
			res := <-done
			if res == nil {
				return
			}
			text := ""
			if len(res.Content) > 0 {
				text = res.Content[0].(*mcp.TextContent).Text
			}
			if tc.wantText != "" && !strings.Contains(text, tc.wantText) {
				t.Errorf("result = %q, want %q", text, tc.wantText)
			}
			if tc.wantText == gate.RefusalText && (text != gate.RefusalText || !res.IsError) {
				t.Errorf("refusal = %q (isError %t), want exactly %s", text, res.IsError, gate.RefusalText)
			}
			if tc.tool == "write_file" {
				var got *models.Approval
				for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
					if got, err = env.Store.GetApproval(context.Background(), env.Account.ID, a.ID); err != nil {
						t.Fatal(err)
					}
					if got.Status == tc.wantStatus || time.Now().After(deadline) {
						break
					}
				}
				if got.Status != tc.wantStatus {
					t.Errorf("the ask is %s, want %s", got.Status, tc.wantStatus)
				}
				if tc.lateApprove {
					if r := ada.Decide(a.ID, "approve", ""); r.Status == http.StatusOK {
						t.Errorf("ada approved a withdrawn ask: %s", r)
					}
					time.Sleep(200 * time.Millisecond)
				}
				b, err := os.ReadFile(path)
				if written := err == nil; written != tc.wantWritten {
					t.Errorf("file written = %t, want %t", written, tc.wantWritten)
				}
				if tc.wantWritten && string(b) != "written by the test" {
					t.Errorf("file holds %q", b)
				}
			}
			session.Close()
			f, err := os.Open(auditLog)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var lines []map[string]any
			for sc := bufio.NewScanner(f); sc.Scan(); {
				var m map[string]any
				if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
					t.Fatalf("audit line %q: %v", sc.Text(), err)
				}
				lines = append(lines, m)
			}
			if tc.wantAudit == nil {
				if len(lines) != 0 {
					t.Errorf("audit lines for an ungoverned call: %v", lines)
				}
				return
			}
			if len(lines) != 1 {
				t.Fatalf("audit lines = %v, want 1", lines)
			}
			for k, v := range tc.wantAudit {
				if lines[0][k] != v {
					t.Errorf("audit %s = %v, want %v (%v)", k, lines[0][k], v, lines[0])
				}
			}
			if tc.lateApprove {
				if ms, _ := lines[0]["durationMs"].(float64); ms < 2000 {
					t.Errorf("durationMs = %v, want the 2 s wait covered", lines[0]["durationMs"])
				}
			}
		})
	}
}
