package gate_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/mcp/gate"
)

// rawSession is an MCP session over Streamable HTTP whose answers are read
// as the bytes a client receives.
type rawSession struct {
	t       *testing.T
	url, id string
}

// openRaw serves srv over Streamable HTTP and initializes a session as the
// client named name.
func openRaw(t *testing.T, srv *mcp.Server, name string) *rawSession {
	t.Helper()
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	s := &rawSession{t: t, url: ts.URL}
	s.post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"` + name + `","version":"1"}}}`)
	if s.id == "" {
		t.Fatal("initialize: no Mcp-Session-Id")
	}
	s.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return s
}

// post sends one JSON-RPC message and returns the response body as received.
func (s *rawSession) post(body string) string {
	s.t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.url, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if s.id != "" {
		req.Header.Set("Mcp-Session-Id", s.id)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	if resp.StatusCode >= 300 {
		s.t.Fatalf("POST %s: %s %s", body, resp.Status, raw)
	}
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		s.id = id
	}
	return string(raw)
}

// call calls tool with args, always as request id 7, and returns the answer's bytes.
func (s *rawSession) call(tool, args string) string {
	s.t.Helper()
	return s.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, tool, args))
}

// A tool the caller lacks the permission for is hidden from tools/list, and
// a call of it is answered byte for byte as a call of a tool that does not
// exist: only the name differs. The audit event still tells the operator
// that the permission was refused.
func TestACallOfAnUnpermittedToolIsAnsweredAsOfAToolThatDoesNotExist(t *testing.T) {
	type server struct {
		srv    *mcp.Server
		asked  *atomic.Int32
		ran    func() int32
		events func() []gate.AuditEvent
	}
	servers := []struct {
		name, client, hidden string
		calls                []struct{ args, label string } // arguments of a call of hidden, and the audit label they make
		allowed, allowedArgs string                         // a tool the client may call
		start                func(t *testing.T) server
	}{
		{
			name: "tools declared with Define", client: "bob", hidden: "delete_case", allowed: "list_cases", allowedArgs: `{}`,
			calls: []struct{ args, label string }{
				{`{"id":"42","force":true}`, "case:42"}, {`{"id":"42"}`, "case:42"}, {`{"id":42}`, ""}, {`{}`, "case:"},
			},
			start: func(t *testing.T) server {
				var asked atomic.Int32
				f := newFixture(t, func(context.Context, gate.ApprovalRequest) (gate.Decision, error) {
					asked.Add(1)
					return gate.Approve("carol"), nil
				}, time.Second)
				return server{srv: f.srv, asked: &asked, ran: f.ran.Load, events: func() []gate.AuditEvent {
					f.mu.Lock()
					defer f.mu.Unlock()
					return append([]gate.AuditEvent(nil), f.events...)
				}}
			},
		},
		{
			name: "somebody else's tools behind Gate", client: "bob", hidden: "write_file", allowed: "read_file", allowedArgs: `{"path":"/a"}`,
			calls: []struct{ args, label string }{{`{"path":"/etc/hosts","content":"x"}`, "file:/etc/hosts"}, {`{"path":"/etc/hosts"}`, "file:/etc/hosts"}},
			start: func(t *testing.T) server {
				var asked, written atomic.Int32
				var mu sync.Mutex
				var events []gate.AuditEvent
				srv := somebodyElses(&written)
				err := gate.Gate(context.Background(), srv, gate.Options{
					OnApproval: func(context.Context, gate.ApprovalRequest) (gate.Decision, error) {
						asked.Add(1)
						return gate.Approve("carol"), nil
					},
					Audit: func(_ context.Context, e gate.AuditEvent) { mu.Lock(); events = append(events, e); mu.Unlock() },
					Caller: func(_ context.Context, req mcp.Request) gate.Caller {
						return gate.Caller{Name: gate.ClientName(req), Permissions: map[string][]string{"bob": {"fs:read"}}[gate.ClientName(req)]}
					},
				}, gate.Rules{
					Permissions: map[string]string{"write_file": "fs:write", "read_file": "fs:read"},
					Approval:    map[string]gate.Rule[gate.Args]{"write_file": gate.Always[gate.Args]()},
					Labels:      map[string]func(gate.Args) string{"write_file": func(a gate.Args) string { p, _ := a["path"].(string); return "file:" + p }},
				})
				if err != nil {
					t.Fatalf("Gate: %v", err)
				}
				return server{srv: srv, asked: &asked, ran: written.Load, events: func() []gate.AuditEvent {
					mu.Lock()
					defer mu.Unlock()
					return append([]gate.AuditEvent(nil), events...)
				}}
			},
		},
	}
	for _, sv := range servers {
		t.Run(sv.name, func(t *testing.T) {
			s := sv.start(t)
			caller := openRaw(t, s.srv, sv.client)
			if list := caller.post(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); strings.Contains(list, sv.hidden) || !strings.Contains(list, sv.allowed) {
				t.Fatalf("tools/list of %s = %s; want %s and not %s", sv.client, list, sv.allowed, sv.hidden)
			}
			for i, c := range sv.calls {
				unpermitted := caller.call(sv.hidden, c.args)
				unknown := caller.call("no_such_tool", c.args)
				if !strings.Contains(unknown, `"error":{"code":-32602,"message":"unknown tool \"no_such_tool\""}`) {
					t.Fatalf("the SDK's answer to a tool that does not exist is %q, no longer the one this test knows", unknown)
				}
				if strings.ReplaceAll(unpermitted, sv.hidden, "no_such_tool") != unknown {
					t.Fatalf("with arguments %s, a call of %s (not permitted) answers\n%q\nand a call of a tool that does not exist\n%q", c.args, sv.hidden, unpermitted, unknown)
				}
				events := s.events()
				if len(events) != i+1 {
					t.Fatalf("%d audit events after %d refused calls and %d of a tool that does not exist: %+v", len(events), i+1, i+1, events)
				}
				if ev := events[i]; ev.Tool != sv.hidden || ev.Caller != sv.client || ev.Phase != gate.PhaseRefused || ev.Decision != gate.DecisionDeny ||
					ev.Reason != gate.ReasonPermissionDenied || ev.Approver != "" || ev.Label != c.label {
					t.Fatalf("audit event = %+v; want %s refused to %s for permission_denied, labelled %q", ev, sv.hidden, sv.client, c.label)
				}
			}
			if s.asked.Load() != 0 || s.ran() != 0 {
				t.Fatalf("asked %d, handler ran %d; want neither", s.asked.Load(), s.ran())
			}
			// The tool is there for a caller who may use it.
			if r := caller.call(sv.allowed, sv.allowedArgs); !strings.Contains(r, `"result"`) || strings.Contains(r, `"isError":true`) {
				t.Fatalf("a call of %s, permitted: %q", sv.allowed, r)
			}
		})
	}
}
