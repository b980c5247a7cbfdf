package gate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/mcp/gate"
)

type writeFile struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

// somebodyElses is a server written without the gate: write_file and read_file.
func somebodyElses(written *atomic.Int32) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "filesystem", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "write_file"}, func(ctx context.Context, req *mcp.CallToolRequest, in writeFile) (*mcp.CallToolResult, any, error) {
		written.Add(1)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "wrote " + in.Path}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "read_file"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct {
		Path string `json:"path"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "contents of " + in.Path}}}, nil, nil
	})
	return srv
}

func TestGateWrapsToolsSomebodyElseWrote(t *testing.T) {
	rules := gate.Rules{
		Permissions: map[string]string{"write_file": "fs:write", "read_file": "fs:read"},
		Approval: map[string]gate.Rule[gate.Args]{
			"write_file": gate.When(func(a gate.Args) bool { return strings.HasPrefix(a["path"].(string), "/etc/") }),
		},
		Labels: map[string]func(gate.Args) string{"write_file": func(a gate.Args) string { return "file:" + a["path"].(string) }},
	}
	tests := []struct {
		name        string
		sink        gate.ApprovalFunc
		client      string
		tool        string
		path        string
		wantText    string
		wantWritten int32
		wantPhase   string
		wantAsked   bool
	}{
		{"a call the predicate picks waits for a named yes", approveBy("carol"), "alice", "write_file", "/etc/hosts", "wrote /etc/hosts", 1, "allowed", true},
		{"a call the predicate picks is refused on a no", func(context.Context, gate.ApprovalRequest) (gate.Decision, error) {
			return gate.Deny("carol", "no"), nil
		}, "alice", "write_file", "/etc/hosts", gate.RefusalText, 0, "refused", true},
		{"a call the predicate leaves alone runs at once", approveBy("carol"), "alice", "write_file", "/tmp/x", "wrote /tmp/x", 1, "allowed", false},
		{"an ungated tool passes straight through", approveBy("carol"), "alice", "read_file", "/etc/hosts", "contents of /etc/hosts", 0, "allowed", false},
	}
	perms := map[string][]string{"alice": {"fs:write", "fs:read"}, "bob": {"fs:read"}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var written, asked atomic.Int32
			var events []gate.AuditEvent
			srv := somebodyElses(&written)
			err := gate.Gate(context.Background(), srv, gate.Options{
				Server: "filesystem",
				OnApproval: func(ctx context.Context, req gate.ApprovalRequest) (gate.Decision, error) {
					asked.Add(1)
					return tc.sink(ctx, req)
				},
				Audit: func(_ context.Context, e gate.AuditEvent) { events = append(events, e) },
				Caller: func(_ context.Context, req mcp.Request) gate.Caller {
					return gate.Caller{Name: gate.ClientName(req), Permissions: perms[gate.ClientName(req)]}
				},
			}, rules)
			if err != nil {
				t.Fatalf("Gate: %v", err)
			}
			cs := connect(t, srv, tc.client)
			args := map[string]any{"path": tc.path}
			if tc.tool == "write_file" {
				args["content"] = "x"
			}
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tc.tool, Arguments: args})
			if err != nil {
				t.Fatal(err)
			}
			if text(res) != tc.wantText || written.Load() != tc.wantWritten || (asked.Load() == 1) != tc.wantAsked {
				t.Errorf("text %q written %d asked %d; want %q, %d, asked %t", text(res), written.Load(), asked.Load(), tc.wantText, tc.wantWritten, tc.wantAsked)
			}
			if len(events) != 1 || events[0].Phase != tc.wantPhase || events[0].Caller != tc.client {
				t.Fatalf("audit events = %+v, want one, phase %s", events, tc.wantPhase)
			}
			if tc.tool == "write_file" && events[0].Label != "file:"+tc.path {
				t.Errorf("label = %q", events[0].Label)
			}
		})
	}
}

func TestGateFailsAtConstruction(t *testing.T) {
	tests := []struct {
		name    string
		opts    gate.Options
		rules   gate.Rules
		wantErr string
	}{
		{"an approval with no sink", gate.Options{}, gate.Rules{Approval: map[string]gate.Rule[gate.Args]{"write_file": gate.Always[gate.Args]()}}, "write_file need approval but no OnApproval sink"},
		{"a rule naming a tool the server does not offer", gate.Options{OnApproval: approveBy("carol")}, gate.Rules{Approval: map[string]gate.Rule[gate.Args]{"delete_file": gate.Always[gate.Args]()}}, "the rules name delete_file, which the server does not offer"},
		{"a permission naming a tool the server does not offer", gate.Options{}, gate.Rules{Permissions: map[string]string{"rm": "fs:write"}}, "the rules name rm"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var written atomic.Int32
			err := gate.Gate(context.Background(), somebodyElses(&written), tc.opts, tc.rules)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Gate error = %v, want one saying %q", err, tc.wantErr)
			}
		})
	}
}

func TestAuditDefaultsToSlogWithEveryMember(t *testing.T) {
	var buf bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewJSONHandler(&buf, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })
	var written atomic.Int32
	srv := somebodyElses(&written)
	if err := gate.Gate(context.Background(), srv, gate.Options{OnApproval: approveBy("carol"), Caller: func(context.Context, mcp.Request) gate.Caller {
		return gate.Caller{Name: "alice"}
	}}, gate.Rules{Approval: map[string]gate.Rule[gate.Args]{"write_file": gate.Always[gate.Args]()}}); err != nil {
		t.Fatal(err)
	}
	cs := connect(t, srv, "alice")
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": "/a", "content": "x"}}); err != nil {
		t.Fatal(err)
	}
	var line map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(buf.Bytes()), &line); err != nil {
		t.Fatalf("slog line %q: %v", buf.String(), err)
	}
	for _, k := range []string{"time", "tool", "label", "caller", "approver", "phase", "decision", "reason", "argumentsSha256", "durationMs"} {
		if _, ok := line[k]; !ok {
			t.Errorf("the slog line has no %q: %s", k, buf.String())
		}
	}
	if line["approver"] != "carol" || line["caller"] != "alice" || line["phase"] != "allowed" || line["decision"] != "allow" {
		t.Errorf("slog line = %s", buf.String())
	}
}

func TestJSONLinesHaveExactlyTheMembers(t *testing.T) {
	var buf bytes.Buffer
	gate.JSONLines(&buf, nil)(context.Background(), gate.AuditEvent{Time: time.Unix(0, 0).UTC(), Tool: "t", Phase: "refused", Decision: "deny", ArgumentsSHA256: "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a", DurationMs: 45000})
	want := `{"time":"1970-01-01T00:00:00Z","tool":"t","label":"","caller":"","approver":"","phase":"refused","decision":"deny","reason":"","argumentsSha256":"44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","durationMs":45000}` + "\n"
	if buf.String() != want {
		t.Errorf("line = %s, want %s", buf.String(), want)
	}
}

// An approval without by does not compile: the decision's fields are
// unexported and Approve takes the name.
func TestAnApprovalWithoutByDoesNotCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds programs")
	}
	tests := []struct{ name, body, wantErr string }{
		{"a literal with approved", `_ = gate.Decision{approved: true}`, "unexported field approved"},
		{"a literal with Approved", `_ = gate.Decision{Approved: true}`, "unknown field Approved"},
		{"Approve without a name", `_ = gate.Approve()`, "not enough arguments"},
		{"Approve with a name compiles", `_ = gate.Approve("carol")`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			src := "package main\n\nimport \"github.com/countersign/countersign/mcp/gate\"\n\nfunc main() {\n\t" + tc.body + "\n}\n"
			file := filepath.Join("testdata", "nobody", "main.go")
			overlay := filepath.Join(dir, "overlay.json")
			abs, _ := filepath.Abs(file)
			b, _ := json.Marshal(map[string]any{"Replace": map[string]string{abs: filepath.Join(dir, "main.go")}})
			if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(overlay, b, 0o600); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command("go", "build", "-overlay", overlay, "-o", os.DevNull, "./testdata/nobody").CombinedOutput()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("build failed: %v\n%s", err, out)
				}
				return
			}
			if err == nil || !strings.Contains(string(out), tc.wantErr) {
				t.Fatalf("build = %v\n%s\nwant a compile error saying %q", err, out, tc.wantErr)
			}
		})
	}
}
