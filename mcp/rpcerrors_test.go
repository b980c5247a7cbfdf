package mcp_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/countersign/countersign/apptest"
)

func TestTheEndpointRefusesARequestWithAJSONRPCErrorObject(t *testing.T) {
	env := apptest.Start(t, apptest.SQLite, nil)
	_, token := env.Agent(env.Account.ID, "bot")
	c := env.Connect(token)
	session, version := c.Session.ID(), protocolOf(c)
	cases := []struct {
		name, session, body string
		status, code        int
		id                  any // float64 or nil
	}{
		{"an unknown method", session, `{"jsonrpc":"2.0","id":5,"method":"nope/nope","params":{}}`, http.StatusBadRequest, -32601, 5.0},
		{"a batch", session, `[{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}]`, http.StatusBadRequest, -32600, nil},
		{"a body that is not JSON", session, `{"jsonrpc":"2.0","id":1,"method":"tools/list"`, http.StatusBadRequest, -32700, nil},
		{"a request without a session", "", `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}`, http.StatusBadRequest, -32000, 7.0},
		{"a session that does not exist", "ZZZZ", `{"jsonrpc":"2.0","id":8,"method":"tools/list","params":{}}`, http.StatusNotFound, -32001, 8.0},
	}
	for _, tc := range cases {
		t.Run(tc.name+" answers JSON-RPC "+strings.TrimPrefix(http.StatusText(tc.status), ""), func(t *testing.T) {
			r := rawPost(t, env, token, tc.session, version, []byte(tc.body))
			if r.Status != tc.status || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
				t.Fatalf("HTTP %d %q, want %d application/json: %s", r.Status, r.Header.Get("Content-Type"), tc.status, r.Body)
			}
			var reply struct {
				JSONRPC string `json:"jsonrpc"`
				ID      any    `json:"id"`
				Error   *struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(r.Body, &reply); err != nil {
				t.Fatalf("not a JSON-RPC object: %v: %s", err, r.Body)
			}
			if reply.JSONRPC != "2.0" || reply.Error == nil || reply.Error.Code != tc.code || reply.Error.Message == "" || reply.ID != tc.id {
				t.Errorf("reply %s, want jsonrpc 2.0, id %v, error code %d with a message", r.Body, tc.id, tc.code)
			}
		})
	}
	// The session is still good after all that.
	if r := c.Call("approvals_list", map[string]any{}); r.IsError {
		t.Errorf("approvals_list after the refusals: %s", r)
	}
}

// TestTheServerNegotiatesTheProtocolVersionsTheAgentsPageNames: the list of
// docs/agents.md. A version the server lacks (an old one, or 2026-07-28, which has no
// sessions) is answered with the newest it has, as the spec says.
func TestTheServerNegotiatesTheProtocolVersionsTheAgentsPageNames(t *testing.T) {
	env := apptest.Start(t, apptest.SQLite, nil)
	_, token := env.Agent(env.Account.ID, "bot")
	for asked, want := range map[string]string{
		"2025-11-25": "2025-11-25", "2025-06-18": "2025-06-18", "2025-03-26": "2025-03-26", "2024-11-05": "2024-11-05",
		"2026-07-28": "2025-11-25", "2024-01-01": "2025-11-25",
	} {
		body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + asked + `","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
		res, _ := rpcResult(t, rawPost(t, env, token, "", "", []byte(body)))["result"].(map[string]any)
		if got := res["protocolVersion"]; got != want {
			t.Errorf("initialize with %s negotiated %v, want %s", asked, got, want)
		}
	}
	page, err := readDoc("docs/agents.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page, "2025-11-25, 2025-06-18, 2025-03-26 and 2024-11-05") {
		t.Errorf("docs/agents.md does not name the versions the server negotiates: 2025-11-25, 2025-06-18, 2025-03-26 and 2024-11-05")
	}
}

// readDoc reads a page of the repository's documentation, named from the
// repository's top (README.md, docs/agents.md).
func readDoc(page string) (string, error) {
	b, err := os.ReadFile(filepath.Join("..", filepath.FromSlash(page)))
	return string(b), err
}
