// Package gatetest runs `countersign gate` over stdio in front of the pinned
// npm @modelcontextprotocol/server-filesystem, driven by a go-sdk MCP client,
// with a person answering on the service: the end-to-end scenarios of the
// gate, shared by the command's tests (a software passkey) and the browser
// tests (a person in Chromium with a virtual authenticator).
package gatetest

import (
	"bufio"
	"context"
	"encoding/json"
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
	"github.com/countersign/countersign/models/asks"
)

// repoRoot is the module's folder, found from this file.
func repoRoot() string {
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "..", "..")
}

// FilesystemServer is the pinned @modelcontextprotocol/server-filesystem
// (package.json devDependencies; npm ci). The test is skipped without it, and
// fails under CI.
func FilesystemServer(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(repoRoot(), "node_modules", ".bin", "mcp-server-filesystem")
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is missing: run npm ci", bin)
		}
		t.Skipf("%s is missing: run npm ci", bin)
	}
	return bin
}

// BuildCountersign builds the countersign command into a folder of the test
// and returns its path.
func BuildCountersign(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "countersign")
	build := exec.Command("go", "build", "-o", bin, "./cmd/countersign")
	build.Dir = repoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/countersign: %v\n%s", err, out)
	}
	return bin
}

// Person answers the asks the gate files, as the approver does.
type Person interface {
	// Subject is the person's name on the service: the approver in audit
	// events.
	Subject() string
	// Answer answers the pending ask a with "approve", "deny", "reply"
	// (a deny with ReplyText in place of the tool's result) or "edit" (an
	// approve of the call with its content changed to EditedText); with ""
	// the person sees it and stays silent.
	Answer(t *testing.T, a asks.Approval, answer string)
	// ApproveLate approves the ask a after the gate withdrew it, and checks
	// that the service refuses.
	ApproveLate(t *testing.T, a asks.Approval)
}

// Setup is what the scenarios run against: the service, the countersign
// command, and the person answering.
type Setup struct {
	Env    *apptest.Env
	Binary string
	Person Person
}

// Start runs `countersign gate` over stdio in front of the filesystem
// server serving root, with rules and a 2 s timeout, the caller named claude
// and the audit lines going to auditLog, and connects an MCP client to it.
// The session closes when the test ends.
func Start(t *testing.T, s Setup, token, rules, root, auditLog string) *mcp.ClientSession {
	t.Helper()
	return StartWaiting(t, s, token, rules, root, auditLog, "2s")
}

// StartWaiting is Start with the gate's timeout, a Go duration.
func StartWaiting(t *testing.T, s Setup, token, rules, root, auditLog, timeout string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(s.Binary, "gate", "--rules", rules, "--timeout", timeout, "--caller", "claude", "--audit-log", auditLog, "--", FilesystemServer(t), root)
	cmd.Env = append(os.Environ(), "COUNTERSIGN_URL="+s.Env.URL, "COUNTERSIGN_TOKEN="+token)
	cmd.Stderr = os.Stderr
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	session, err := mcp.NewClient(&mcp.Implementation{Name: "desktop", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to countersign gate: %v", err)
	}
	t.Cleanup(func() { session.Close() })
	return session
}

// OpenAsk waits for the one open ask of the account and returns it.
func OpenAsk(t *testing.T, env *apptest.Env) asks.Approval {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		list, _, err := env.Store.ListApprovals(context.Background(), env.Account.ID, asks.ListFilter{Status: "open"})
		if err != nil {
			t.Fatal(err)
		}
		if len(list) == 1 {
			return list[0]
		}
	}
	t.Fatal("no ask was filed")
	return asks.Approval{}
}

// AuditLines reads a JSON lines audit log.
func AuditLines(t *testing.T, file string) []map[string]any {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		lines = append(lines, m)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read %s: %v", file, err)
	}
	return lines
}

// CheckAudit checks that lines are one audit event with the members of want
// and returns it; with want nil, that there is none (an ungoverned call).
func CheckAudit(t *testing.T, lines []map[string]any, want map[string]any) map[string]any {
	t.Helper()
	if want == nil {
		if len(lines) != 0 {
			t.Errorf("audit lines for an ungoverned call: %v", lines)
		}
		return nil
	}
	if len(lines) != 1 {
		t.Fatalf("audit lines = %v, want 1", lines)
	}
	for k, v := range want {
		if lines[0][k] != v {
			t.Errorf("audit %s = %v, want %v (%v)", k, lines[0][k], v, lines[0])
		}
	}
	return lines[0]
}

// Written is the content the scenarios write.
const Written = "written by the test"

// ReplyText is the person's reply in place of the tool's result.
const ReplyText = "Write it to the staging folder instead."

// EditedText is the content the person writes in place of Written before
// they approve.
const EditedText = "written by the test, as the person edited it"

// RunFilesystemScenarios puts write_file behind a person and checks, each
// with a gate of its own: an approve writes the file and the audit line
// names the caller and the approver; a deny does not write it and the caller
// reads the forbidden JSON; silence for the 2 s timeout refuses, does not
// write, and withdraws the ask (stale), and an approve after that changes
// nothing; read_text_file passes straight through. write_file's content is
// editable: a person who edits it approves the call as edited, the file
// holds their content, and countersign verify shows both hashes and the
// member they changed.
func RunFilesystemScenarios(t *testing.T, s Setup) {
	_, token := s.Env.Agent(s.Env.Account.ID, "gate")
	root := t.TempDir()
	rules := filepath.Join(t.TempDir(), "gate.json")
	if err := os.WriteFile(rules, []byte(`{"server": "filesystem", "tools": {"write_file": {"approval": true, "editable": ["content"]}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "seed.txt"), []byte("seeded"), 0o600); err != nil {
		t.Fatal(err)
	}
	who := s.Person.Subject()
	tests := []struct {
		name        string
		tool        string
		file        string
		answer      string // approve, deny, reply, edit, "" for silence
		lateApprove bool
		timeout     string // the gate's; "" for 2 s
		wantText    string
		wantWritten bool
		wantStatus  asks.Status
		wantAudit   map[string]any
	}{
		{name: "the person approves: the file is written and the audit line names both people",
			tool: "write_file", file: "approved.txt", answer: "approve", wantWritten: true, wantStatus: asks.StatusDone,
			wantAudit: map[string]any{"tool": "write_file", "caller": "claude", "approver": who, "phase": "allowed", "decision": "allow"}},
		{name: "the person edits the content, then approves: the file holds their content and verify shows the edit",
			tool: "write_file", file: "edited.txt", answer: "edit", timeout: "20s", wantWritten: true, wantStatus: asks.StatusDone,
			wantAudit: map[string]any{"tool": "write_file", "caller": "claude", "approver": who, "phase": "allowed", "decision": "allow"}},
		{name: "the person denies: not written, the caller reads the forbidden JSON",
			tool: "write_file", file: "denied.txt", answer: "deny", wantText: gate.RefusalText, wantStatus: asks.StatusDenied,
			wantAudit: map[string]any{"tool": "write_file", "caller": "claude", "approver": who, "phase": "refused", "decision": "deny"}},
		{name: "the person denies with a reply: not written, the caller reads the reply as the tool's answer, not an error",
			tool: "write_file", file: "replied.txt", answer: "reply", wantText: ReplyText, wantStatus: asks.StatusDenied,
			wantAudit: map[string]any{"tool": "write_file", "caller": "claude", "approver": who, "phase": "refused", "decision": "deny"}},
		{name: "silence for 2 s: refused, not written, the ask withdrawn, and an approve after changes nothing",
			tool: "write_file", file: "silent.txt", lateApprove: true, wantText: gate.RefusalText, wantStatus: asks.StatusStale,
			wantAudit: map[string]any{"tool": "write_file", "caller": "claude", "approver": "", "phase": "refused", "decision": "deny"}},
		{name: "read_text_file passes straight through", tool: "read_text_file", file: "seed.txt", wantText: "seeded"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			auditLog := filepath.Join(t.TempDir(), "audit.jsonl")
			timeout := tc.timeout
			if timeout == "" {
				timeout = "2s"
			}
			session := StartWaiting(t, s, token, rules, root, auditLog, timeout)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			path := filepath.Join(root, tc.file)
			args := map[string]any{"path": path}
			if tc.tool == "write_file" {
				args["content"] = Written
			}
			done := make(chan *mcp.CallToolResult, 1)
			go func() {
				res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: args})
				if err != nil {
					t.Errorf("call: %v", err)
				}
				done <- res
			}()
			var a asks.Approval
			if tc.tool == "write_file" {
				a = OpenAsk(t, s.Env)
				s.Person.Answer(t, a, tc.answer)
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
			if tc.answer == "reply" && (text != ReplyText || res.IsError) {
				t.Errorf("result = %q (isError %t), want exactly the reply %q, not an error", text, res.IsError, ReplyText)
			}
			if tc.tool == "write_file" {
				if got := waitStatus(t, s.Env, a.ID, tc.wantStatus); got != tc.wantStatus {
					t.Errorf("the ask is %s, want %s", got, tc.wantStatus)
				}
				if tc.lateApprove {
					s.Person.ApproveLate(t, a)
					time.Sleep(200 * time.Millisecond)
					if got := waitStatus(t, s.Env, a.ID, tc.wantStatus); got != tc.wantStatus {
						t.Errorf("after the late approve the ask is %s, want %s", got, tc.wantStatus)
					}
				}
				b, err := os.ReadFile(path)
				if written := err == nil; written != tc.wantWritten {
					t.Errorf("file written = %t, want %t", written, tc.wantWritten)
				}
				want := Written
				if tc.answer == "edit" {
					want = EditedText
				}
				if tc.wantWritten && string(b) != want {
					t.Errorf("file holds %q, want %q", b, want)
				}
				if tc.answer == "edit" {
					verifyEdit(t, s, a.ID)
				}
			}
			session.Close()
			line := CheckAudit(t, AuditLines(t, auditLog), tc.wantAudit)
			if edited, _ := line["editedArgumentsSha256"].(string); (tc.answer == "edit") != (edited != "" && edited != line["argumentsSha256"]) {
				t.Errorf("the audit line's edited arguments hash is %q beside %v; want one of its own exactly when the person edited", edited, line["argumentsSha256"])
			}
			if tc.lateApprove {
				if ms, _ := line["durationMs"].(float64); ms < 2000 {
					t.Errorf("durationMs = %v, want the 2 s wait covered", line["durationMs"])
				}
			}
		})
	}
}

// waitStatus waits up to 10 s for the ask id to reach want, and returns the
// status it has then.
func waitStatus(t *testing.T, env *apptest.Env, id string, want asks.Status) asks.Status {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		got, err := env.Store.GetApproval(context.Background(), env.Account.ID, id)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status == want || time.Now().After(deadline) {
			return got.Status
		}
	}
}

// verifyEdit runs countersign verify on the proof of the ask id, approved
// as edited, against the account's keys: it is valid and shows the hash of
// the call as asked, the hash of the call as edited, and the content as the
// member changed.
func verifyEdit(t *testing.T, s Setup, id string) {
	t.Helper()
	a, err := s.Env.Store.GetApproval(context.Background(), s.Env.Account.ID, id)
	if err != nil || a.Proof == nil || a.Decision != string(asks.VerdictApproveEdited) {
		t.Fatalf("the ask is decided %q with proof %v (%v), want approve_edited with a proof", a.Decision, a.Proof != nil, err)
	}
	dir := t.TempDir()
	proofFile, keys := filepath.Join(dir, "proof.json"), filepath.Join(dir, "keys.json")
	if err := os.WriteFile(proofFile, []byte(*a.Proof), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keys, s.Env.KeysExport(s.Env.Account.ID), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(s.Binary, "verify", proofFile, "--keys", keys, "--origin", s.Env.URL).CombinedOutput()
	if err != nil {
		t.Fatalf("countersign verify: %v\n%s", err, out)
	}
	for _, want := range []string{"VALID:", a.PayloadSHA256, a.EditedPayloadSHA256, "/tool_call/arguments/content: " + strconvQuote(Written) + " -> " + strconvQuote(EditedText)} {
		if !strings.Contains(string(out), want) {
			t.Errorf("countersign verify does not say %q:\n%s", want, out)
		}
	}
}

func strconvQuote(s string) string {
	raw, _ := json.Marshal(s)
	return string(raw)
}
