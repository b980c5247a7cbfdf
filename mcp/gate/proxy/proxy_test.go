package proxy_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/mcp/gate"
	"github.com/countersign/countersign/mcp/gate/proxy"
)

type pathArgs struct {
	Path string `json:"path"`
}

type moveArgs struct {
	Source      string `json:"source"`
	Destination string `json:"destination"`
}

// upstream is somebody else's server: tools, a prompt and a resource.
func upstream(w *world) *mcp.Server {
	ran := &w.ran
	srv := mcp.NewServer(&mcp.Implementation{Name: "filesystem", Version: "9"}, &mcp.ServerOptions{Instructions: "be careful"})
	mcp.AddTool(srv, &mcp.Tool{Name: "read_text_file", Description: "Read a file."}, func(ctx context.Context, req *mcp.CallToolRequest, in pathArgs) (*mcp.CallToolResult, any, error) {
		if token := req.Params.GetProgressToken(); token != nil {
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: 0.5, Total: 1, Message: "halfway"})
			// The proxy relays no progress after a call's result (the caller has
			// moved on), and the SDK may hand a notification over after the
			// result it preceded: the work goes on a while, as real work does.
			time.Sleep(300 * time.Millisecond)
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "contents of " + in.Path}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "write_file", Description: "Write a file."}, func(ctx context.Context, req *mcp.CallToolRequest, in pathArgs) (*mcp.CallToolResult, any, error) {
		ran.Add(1)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "wrote " + in.Path}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "move_file", Description: "Move a file."}, func(ctx context.Context, req *mcp.CallToolRequest, in moveArgs) (*mcp.CallToolResult, any, error) {
		ran.Add(1)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "moved to " + in.Destination}}}, nil, nil
	})
	// together reports progress named after its path once two calls are in
	// flight at once, so that their notifications cross, and answers once
	// released.
	mcp.AddTool(srv, &mcp.Tool{Name: "together", Description: "Wait for a second call."}, func(ctx context.Context, req *mcp.CallToolRequest, in pathArgs) (*mcp.CallToolResult, any, error) {
		if w.inFlight.Add(1) == 2 {
			close(w.bothInFlight)
		}
		select {
		case <-w.bothInFlight:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
		if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: 1, Message: in.Path}); err != nil {
			return nil, nil, err
		}
		select {
		case <-w.release:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "together " + in.Path}}}, nil, nil
	})
	// hang runs until its call is cancelled, and says so.
	mcp.AddTool(srv, &mcp.Tool{Name: "hang", Description: "Run until cancelled."}, func(ctx context.Context, req *mcp.CallToolRequest, in pathArgs) (*mcp.CallToolResult, any, error) {
		w.hanging <- struct{}{}
		<-ctx.Done()
		w.cancelled <- context.Cause(ctx)
		return nil, nil, ctx.Err()
	})
	srv.AddPrompt(&mcp.Prompt{Name: "summarize"}, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "summarize it"}}}}, nil
	})
	srv.AddResource(&mcp.Resource{Name: "readme", URI: "file:///README", MIMEType: "text/plain"}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "hello"}}}, nil
	})
	return srv
}

const rulesJSON = `{"server": "filesystem", "timeout": "45s", "tools": {
	"write_file": {"approval": true},
	"move_file": {"approval": "path.within(args.destination, '/etc')"},
	"read_text_file": {"approval": false}}}`

type world struct {
	proxy    *proxy.Proxy
	client   *mcp.ClientSession
	upstream *mcp.ClientSession
	up       *mcp.Server
	ran      atomic.Int32
	asked    atomic.Int32
	progress chan *mcp.ProgressNotificationParams

	inFlight     atomic.Int32
	bothInFlight chan struct{}
	release      chan struct{}
	hanging      chan struct{}
	cancelled    chan error
}

func start(t *testing.T, rules string, answer gate.ApprovalFunc) (*world, error) {
	t.Helper()
	w := &world{progress: make(chan *mcp.ProgressNotificationParams, 4), bothInFlight: make(chan struct{}), release: make(chan struct{}), hanging: make(chan struct{}, 1), cancelled: make(chan error, 1)}
	r, err := proxy.ParseRules([]byte(rules), "")
	if err != nil {
		return nil, err
	}
	up := upstream(w)
	w.up = up
	upClient, upServer := mcp.NewInMemoryTransports()
	if _, err := up.Connect(context.Background(), upServer, nil); err != nil {
		t.Fatal(err)
	}
	p, err := proxy.Start(context.Background(), upClient, proxy.Options{Rules: r, Gate: gate.Options{
		OnApproval: func(ctx context.Context, req gate.ApprovalRequest) (gate.Decision, error) {
			w.asked.Add(1)
			return answer(ctx, req)
		},
		Audit: func(context.Context, gate.AuditEvent) {},
	}})
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { p.Close() })
	w.proxy = p
	ct, st := mcp.NewInMemoryTransports()
	if _, err := p.Server.Connect(context.Background(), st, nil); err != nil {
		t.Fatal(err)
	}
	w.client, err = mcp.NewClient(&mcp.Implementation{Name: "desktop", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) { w.progress <- req.Params },
	}).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.client.Close() })
	// The same upstream, directly, to compare the tool lists.
	dc, ds := mcp.NewInMemoryTransports()
	if _, err := up.Connect(context.Background(), ds, nil); err != nil {
		t.Fatal(err)
	}
	if w.upstream, err = mcp.NewClient(&mcp.Implementation{Name: "direct", Version: "1"}, nil).Connect(context.Background(), dc, nil); err != nil {
		t.Fatal(err)
	}
	return w, nil
}

func approve(context.Context, gate.ApprovalRequest) (gate.Decision, error) {
	return gate.Approve("ada"), nil
}

func textOf(res *mcp.CallToolResult) string {
	if len(res.Content) == 0 {
		return ""
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); ok {
		return tc.Text
	}
	return ""
}

func TestTheProxyListsTheUpstreamsToolsUnchanged(t *testing.T) {
	w, err := start(t, rulesJSON, approve)
	if err != nil {
		t.Fatal(err)
	}
	via, err := w.client.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	direct, err := w.upstream.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(via.Tools)
	b, _ := json.Marshal(direct.Tools)
	if string(a) != string(b) {
		t.Errorf("through the proxy:\n%s\ndirect:\n%s", a, b)
	}
	if init := w.client.InitializeResult(); init.ServerInfo.Name != "filesystem" || init.Instructions != "be careful" {
		t.Errorf("the proxy introduces itself as %+v with %q", init.ServerInfo, init.Instructions)
	}
}

func TestTheProxyGatesWhatTheRulesName(t *testing.T) {
	tests := []struct {
		name      string
		tool      string
		args      map[string]any
		answer    gate.ApprovalFunc
		wantText  string
		wantAsked bool
		wantRan   int32
	}{
		{"a call of a tool with approval true asks and runs on a yes", "write_file", map[string]any{"path": "/a"}, approve, "wrote /a", true, 1},
		{"a no refuses it with the forbidden JSON", "write_file", map[string]any{"path": "/a"}, func(context.Context, gate.ApprovalRequest) (gate.Decision, error) {
			return gate.Deny("ada", "no"), nil
		}, gate.RefusalText, true, 0},
		{"the CEL predicate asks for a move into /etc", "move_file", map[string]any{"source": "/tmp/x", "destination": "/etc/x"}, approve, "moved to /etc/x", true, 1},
		{"the CEL predicate lets a move elsewhere through", "move_file", map[string]any{"source": "/tmp/x", "destination": "/tmp/y"}, approve, "moved to /tmp/y", false, 1},
		{"the CEL predicate asks for a move into /etc spelled through /tmp/..", "move_file", map[string]any{"source": "/tmp/x", "destination": "/tmp/../etc/x"}, approve, "moved to /tmp/../etc/x", true, 1},
		{"the CEL predicate lets a move into /etcetera through", "move_file", map[string]any{"source": "/tmp/x", "destination": "/etcetera/x"}, approve, "moved to /etcetera/x", false, 1},
		{"a destination path.within cannot read (relative, and the rules name no roots) asks", "move_file", map[string]any{"source": "/tmp/x", "destination": "y"}, approve, "moved to y", true, 1},
		{"approval false passes straight through", "read_text_file", map[string]any{"path": "/a"}, approve, "contents of /a", false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w, err := start(t, rulesJSON, tc.answer)
			if err != nil {
				t.Fatal(err)
			}
			res, err := w.client.CallTool(context.Background(), &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
			if err != nil {
				t.Fatal(err)
			}
			if textOf(res) != tc.wantText || (w.asked.Load() == 1) != tc.wantAsked || w.ran.Load() != tc.wantRan {
				t.Errorf("text %q asked %d ran %d; want %q, asked %t, ran %d", textOf(res), w.asked.Load(), w.ran.Load(), tc.wantText, tc.wantAsked, tc.wantRan)
			}
		})
	}
}

func TestTheProxyPassesPromptsResourcesAndProgress(t *testing.T) {
	w, err := start(t, rulesJSON, approve)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	prompt, err := w.client.GetPrompt(ctx, &mcp.GetPromptParams{Name: "summarize"})
	if err != nil || len(prompt.Messages) != 1 || prompt.Messages[0].Content.(*mcp.TextContent).Text != "summarize it" {
		t.Errorf("prompt = %+v, %v", prompt, err)
	}
	read, err := w.client.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///README"})
	if err != nil || len(read.Contents) != 1 || read.Contents[0].Text != "hello" {
		t.Errorf("resource = %+v, %v", read, err)
	}
	params := &mcp.CallToolParams{Name: "read_text_file", Arguments: map[string]any{"path": "/a"}}
	params.SetProgressToken("tok-1")
	if _, err := w.client.CallTool(ctx, params); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-w.progress:
		if p.ProgressToken != "tok-1" || p.Message != "halfway" || p.Progress != 0.5 {
			t.Errorf("progress = %+v", p)
		}
	case <-time.After(10 * time.Second):
		t.Error("the upstream's progress did not reach the caller")
	}
}

func TestTheProxyRelaysToolListChanges(t *testing.T) {
	w, err := start(t, rulesJSON, approve)
	if err != nil {
		t.Fatal(err)
	}
	mcp.AddTool(w.up, &mcp.Tool{Name: "tree", Description: "List a tree."}, func(ctx context.Context, req *mcp.CallToolRequest, in pathArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "tree of " + in.Path}}}, nil, nil
	})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		res, err := w.client.CallTool(context.Background(), &mcp.CallToolParams{Name: "tree", Arguments: map[string]any{"path": "/"}})
		if err == nil && textOf(res) == "tree of /" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a tool the upstream added is not offered: %v %v", res, err)
		}
	}
}

func TestTheProxyRefusesToStart(t *testing.T) {
	tests := []struct {
		name, rules, wantErr string
	}{
		{"a rule naming a tool the upstream does not offer", `{"tools": {"delete_file": {"approval": true}}}`, "delete_file, which the server does not offer"},
		{"a predicate that does not compile", `{"tools": {"move_file": {"approval": "args.destination.startsWith("}}}`, "tool move_file: approval predicate"},
		{"a predicate that is not a bool", `{"tools": {"move_file": {"approval": "'yes'"}}}`, "not a bool"},
		{"an approval that is neither", `{"tools": {"move_file": {"approval": 3}}}`, "must be true, false or a CEL predicate"},
		{"a timeout that is not a duration", `{"timeout": "soon", "tools": {}}`, "timeout"},
		{"an unknown member", `{"tools": {}, "toolz": {}}`, "unknown field"},
		{"a relative root", `{"paths": {"roots": ["srv/fs"]}, "tools": {}}`, `paths.roots: "srv/fs" is not an absolute path`},
		{"a root under ~ with no home", `{"paths": {"roots": ["~/notes"]}, "tools": {}}`, `paths.roots: "~/notes" is not an absolute path or one under the home directory`},
		{"a relative home", `{"paths": {"home": "ada"}, "tools": {}}`, `paths.home "ada" is not an absolute path`},
		{"a path function called with the wrong arguments", `{"tools": {"move_file": {"approval": "path.within(args.destination)"}}}`, "tool move_file: approval predicate"},
		{"editable arguments without approval", `{"tools": {"write_file": {"approval": false, "editable": ["content"]}}}`, "tool write_file: editable arguments need approval"},
		{"an editable argument named twice", `{"tools": {"write_file": {"approval": true, "editable": ["content", "content"]}}}`, `tool write_file: editable[1] "content" is empty or named twice`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := start(t, tc.rules, approve)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("start = %v, want an error saying %q", err, tc.wantErr)
			}
		})
	}
}

func TestParseRulesReadsTheTimeout(t *testing.T) {
	r, err := proxy.ParseRules([]byte(rulesJSON), "")
	if err != nil {
		t.Fatal(err)
	}
	if r.Server != "filesystem" || r.Timeout != 45*time.Second || !r.Approval["write_file"].Asks() || r.Approval["read_text_file"].Asks() {
		t.Errorf("rules = %+v", r)
	}
	if reflect.ValueOf(r.Approval["move_file"]).IsZero() {
		t.Error("move_file has no rule")
	}
}

func TestParseRulesReadsTheAskLife(t *testing.T) {
	tests := []struct {
		name, rules string
		want        time.Duration
		wantErr     string
	}{
		{"not said: 0, the gate's 10 minutes", `{"tools": {}}`, 0, ""},
		{"said", `{"ask_life": "15m", "tools": {}}`, 15 * time.Minute, ""},
		{"not a duration", `{"ask_life": "soon", "tools": {}}`, 0, `ask_life "soon" is not a positive Go duration`},
		{"zero", `{"ask_life": "0s", "tools": {}}`, 0, "not a positive Go duration"},
		{"past a tool_call's longest life", `{"ask_life": "25h", "tools": {}}`, 0, "of at most 24h0m0s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := proxy.ParseRules([]byte(tc.rules), "")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseRules = %v, want an error saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || r.AskLife != tc.want {
				t.Fatalf("ParseRules = %+v, %v; want ask life %s", r, err, tc.want)
			}
		})
	}
}

func TestParseRulesReadsThePaths(t *testing.T) {
	tests := []struct {
		name, paths, home string
		want              proxy.PathOptions
	}{
		{"no paths section: the gate's home, no roots", ``, "/home/gate", proxy.PathOptions{Home: "/home/gate"}},
		{"roots are kept clean, in order, ~ under the home", `"paths": {"roots": ["/srv/fs/", "//srv/./other", "~/notes"]},`, "/home/gate",
			proxy.PathOptions{Roots: []string{"/srv/fs", "/srv/other", "/home/gate/notes"}, Home: "/home/gate"}},
		{"a relative HOME names no home", ``, "ada", proxy.PathOptions{}},
		{"the file's home wins over the gate's, for an upstream on another host", `"paths": {"roots": ["~"], "home": "/home/srv/"},`, "/home/gate",
			proxy.PathOptions{Roots: []string{"/home/srv"}, Home: "/home/srv"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := proxy.ParseRules([]byte(`{`+tc.paths+` "tools": {}}`), tc.home)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(r.Paths, tc.want) {
				t.Errorf("paths = %+v, want %+v", r.Paths, tc.want)
			}
		})
	}
}

// serveHTTP serves the proxy over Streamable HTTP, as `countersign gate
// --listen` does, and connects a caller to it whose progress notifications
// go to progress.
func serveHTTP(t *testing.T, w *world, progress chan<- *mcp.ProgressNotificationParams) *mcp.ClientSession {
	t.Helper()
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return w.proxy.Server }, nil))
	t.Cleanup(srv.Close)
	session, err := mcp.NewClient(&mcp.Implementation{Name: "caller", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) { progress <- req.Params },
	}).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { session.Close() })
	return session
}

func TestTwoHTTPCallersWithTheSameProgressTokenHearOnlyTheirOwnProgress(t *testing.T) {
	w, err := start(t, rulesJSON, approve)
	if err != nil {
		t.Fatal(err)
	}
	type caller struct {
		name     string
		session  *mcp.ClientSession
		progress chan *mcp.ProgressNotificationParams
	}
	callers := []*caller{{name: "/alice"}, {name: "/bob"}}
	for _, c := range callers {
		c.progress = make(chan *mcp.ProgressNotificationParams, 4)
		c.session = serveHTTP(t, w, c.progress)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, c := range callers {
		wg.Go(func() {
			params := &mcp.CallToolParams{Name: "together", Arguments: map[string]any{"path": c.name}}
			params.SetProgressToken("same")
			res, err := c.session.CallTool(ctx, params)
			if err != nil || textOf(res) != "together "+c.name {
				t.Errorf("%s: call = %v, %v", c.name, res, err)
			}
		})
	}
	// Each caller hears its own progress while the calls are open...
	for _, c := range callers {
		select {
		case p := <-c.progress:
			if p.ProgressToken != "same" || p.Message != c.name {
				t.Errorf("%s heard progress %q under token %v, want its own %q under its own token", c.name, p.Message, p.ProgressToken, c.name)
			}
		case <-ctx.Done():
			t.Errorf("%s heard no progress", c.name)
		}
	}
	close(w.release)
	wg.Wait()
	// ...and nothing else.
	for _, c := range callers {
		c.session.Close()
		select {
		case p := <-c.progress:
			t.Errorf("%s heard more progress: %q", c.name, p.Message)
		default:
		}
	}
}

func TestACancelledCallIsCancelledUpstream(t *testing.T) {
	tests := []struct {
		name string
		over func(t *testing.T, w *world) *mcp.ClientSession
	}{
		{"over stdio (in memory)", func(t *testing.T, w *world) *mcp.ClientSession { return w.client }},
		{"over Streamable HTTP", func(t *testing.T, w *world) *mcp.ClientSession {
			return serveHTTP(t, w, make(chan *mcp.ProgressNotificationParams, 4))
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w, err := start(t, rulesJSON, approve)
			if err != nil {
				t.Fatal(err)
			}
			session := tc.over(t, w)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				_, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "hang", Arguments: map[string]any{"path": "/"}})
				done <- err
			}()
			select {
			case <-w.hanging:
			case <-time.After(10 * time.Second):
				t.Fatal("the call did not reach the upstream")
			}
			cancel()
			select {
			case <-w.cancelled:
			case <-time.After(10 * time.Second):
				t.Fatal("the upstream call was not cancelled")
			}
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Errorf("the caller's call ended with %v, want context.Canceled", err)
			}
		})
	}
}

// The proxy's rules hold calls for approval and declare no permissions, so
// it hides no tool: a name the upstream does not have gets the answer the
// upstream itself gives, with nothing of the proxy's in it.
func TestTheProxyAnswersAToolNobodyHasAsTheUpstreamDoes(t *testing.T) {
	w, err := start(t, rulesJSON, approve)
	if err != nil {
		t.Fatal(err)
	}
	call := func(s *mcp.ClientSession) *jsonrpc.Error {
		t.Helper()
		res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: "delete_file", Arguments: map[string]any{"path": "/a"}})
		var rpc *jsonrpc.Error
		if !errors.As(err, &rpc) {
			t.Fatalf("a call of a tool nobody has: %+v, %v; want a JSON-RPC error", res, err)
		}
		return rpc
	}
	via, direct := call(w.client), call(w.upstream)
	if via.Code != direct.Code || via.Message != direct.Message || string(via.Data) != string(direct.Data) || via.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("through the proxy: %+v; direct: %+v; want the same invalid-params error", via, direct)
	}
	if w.asked.Load() != 0 || w.ran.Load() != 0 {
		t.Fatalf("asked %d, ran %d; want neither", w.asked.Load(), w.ran.Load())
	}
}
