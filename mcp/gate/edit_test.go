package gate_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/mcp/gate"
)

// WriteFile is a write_file input whose content a person may edit.
type WriteFile struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

// A yes may carry the arguments as the person edited them: the call runs
// with them when only the tool's editable arguments changed and they still
// meet its input schema, and is refused (the handler never runs) when any
// other argument changed.
func TestAnApprovalWithEditedArgumentsRunsThemOnlyWhereTheToolAllows(t *testing.T) {
	var mu sync.Mutex
	var ran []WriteFile
	var asked []string
	write := func(ctx context.Context, req *mcp.CallToolRequest, in WriteFile) (*mcp.CallToolResult, any, error) {
		mu.Lock()
		ran = append(ran, in)
		mu.Unlock()
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "wrote " + in.Path}}}, nil, nil
	}
	for _, tc := range []struct {
		name    string
		edited  string
		wantRan *WriteFile
		reason  string
	}{
		{"the content edited", `{"path":"/srv/a.txt","content":"as the person wrote it"}`, &WriteFile{"/srv/a.txt", "as the person wrote it"}, ""},
		{"the path edited", `{"path":"/etc/passwd","content":"hello"}`, nil, `edit_refused: argument "path" changed, but write_file lets a person edit only content`},
		{"an argument added", `{"path":"/srv/a.txt","content":"x","mode":"0777"}`, nil, `edit_refused: argument "mode" changed`},
		{"the content of another type", `{"path":"/srv/a.txt","content":42}`, nil, "edit_refused: the edited arguments do not meet write_file's input schema"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			ran, asked = nil, nil
			mu.Unlock()
			var events []gate.AuditEvent
			sink := func(_ context.Context, req gate.ApprovalRequest) (gate.Decision, error) {
				mu.Lock()
				asked = req.Editable
				mu.Unlock()
				return gate.Approve("ada").WithArguments(json.RawMessage(tc.edited)), nil
			}
			srv, err := gate.NewServer(&mcp.Implementation{Name: "fs", Version: "1"}, nil,
				gate.Options{OnApproval: sink, ApprovalTimeout: 5 * time.Second, Audit: func(_ context.Context, e gate.AuditEvent) { events = append(events, e) }},
				gate.Define(&mcp.Tool{Name: "write_file", Description: "Write a file."}, write, gate.Declaration[WriteFile]{
					Approval: gate.Always[WriteFile](), Editable: []string{"content"},
				}))
			if err != nil {
				t.Fatal(err)
			}
			cs := connect(t, srv, "claude")
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": "/srv/a.txt", "content": "hello"}})
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(asked) != 1 || asked[0] != "content" {
				t.Errorf("the sink was told editable %q, want [content]", asked)
			}
			ev := events[len(events)-1]
			if tc.wantRan != nil {
				if res.IsError || len(ran) != 1 || ran[0] != *tc.wantRan {
					t.Fatalf("result %q (isError %v), the handler ran with %+v; want it run once with %+v", text(res), res.IsError, ran, *tc.wantRan)
				}
				if ev.Phase != gate.PhaseAllowed || ev.EditedArgumentsSHA256 == "" || ev.EditedArgumentsSHA256 == ev.ArgumentsSHA256 {
					t.Errorf("audit %+v: want allowed, with the edited arguments' hash beside the called ones'", ev)
				}
				return
			}
			if !res.IsError || text(res) != gate.RefusalText || len(ran) != 0 {
				t.Fatalf("result %q (isError %v), the handler ran %d times; want the refusal and no run", text(res), res.IsError, len(ran))
			}
			if ev.Phase != gate.PhaseRefused || ev.Approver != "ada" || !strings.HasPrefix(ev.Reason, tc.reason) {
				t.Errorf("audit %+v: want refused by ada with reason %q", ev, tc.reason)
			}
		})
	}
}
