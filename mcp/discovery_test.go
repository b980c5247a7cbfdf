package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/people"
)

// noRedirects is a client that reports a redirect instead of following it.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// getJSON fetches url without following redirects and decodes its JSON body.
func getJSON(t *testing.T, url string) (*http.Response, map[string]any) {
	t.Helper()
	resp, err := noRedirects.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read %s: %v", url, err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("GET %s: HTTP %d, not a JSON object: %q", url, resp.StatusCode, b)
	}
	return resp, doc
}

// rfc9728Members are the metadata members RFC 9728 §2 defines, each with the
// JSON type it must have when present: a string (an absolute URL where
// noted), an array of strings, or a boolean.
var rfc9728Members = map[string]string{
	"resource": "url", "authorization_servers": "strings", "jwks_uri": "url",
	"scopes_supported": "strings", "bearer_methods_supported": "strings",
	"resource_signing_alg_values_supported": "strings", "resource_name": "string",
	"resource_documentation": "url", "resource_policy_uri": "url", "resource_tos_uri": "url",
	"tls_client_certificate_bound_access_tokens": "bool", "authorization_details_types_supported": "strings",
	"dpop_signing_alg_values_supported": "strings", "dpop_bound_access_tokens_required": "bool",
}

// validateMetadata checks doc against RFC 9728 §2 and §3.3: every defined
// member has its type, resource is present and is the resource the document
// was asked for, and bearer methods are from the RFC's list.
func validateMetadata(t *testing.T, doc map[string]any, resource string) {
	t.Helper()
	for name, kind := range rfc9728Members {
		v, ok := doc[name]
		if !ok {
			continue
		}
		switch kind {
		case "string", "url":
			s, isString := v.(string)
			if !isString {
				t.Errorf("%s = %v (%T), want a string", name, v, v)
				break
			}
			if u, err := url.Parse(s); kind == "url" && (err != nil || !u.IsAbs() || u.Fragment != "") {
				t.Errorf("%s = %q, want an absolute URL without a fragment", name, s)
			}
		case "strings":
			list, isList := v.([]any)
			if !isList || len(list) == 0 {
				t.Errorf("%s = %v, want a non-empty JSON array", name, v)
			}
			for _, e := range list {
				if _, isString := e.(string); !isString {
					t.Errorf("%s holds %v (%T), want strings only", name, e, e)
				}
			}
		case "bool":
			if _, isBool := v.(bool); !isBool {
				t.Errorf("%s = %v (%T), want a boolean", name, v, v)
			}
		}
	}
	if doc["resource"] != resource {
		t.Errorf("resource = %v, want %q (RFC 9728 §3.3: the resource the document was fetched for)", doc["resource"], resource)
	}
	for _, m := range doc["bearer_methods_supported"].([]any) {
		if !slices.Contains([]any{"header", "body", "query"}, m) {
			t.Errorf("bearer method %v is not one of RFC 9728's header, body, query", m)
		}
	}
}

func strs(v any) []string {
	var out []string
	list, _ := v.([]any)
	for _, e := range list {
		s, _ := e.(string)
		out = append(out, s)
	}
	return out
}

func TestTheProtectedResourceMetadataValidatesAndNeverRedirects(t *testing.T) {
	env := apptest.Start(t, apptest.SQLite, nil)
	base := env.App.Config.BaseURL // the public origin, which the test server stands in for
	// Both documents name the one resource, the MCP endpoint: a client that
	// reads the origin's document asks for a token for /mcp, the only
	// audience the authorization server grants.
	for path, resource := range map[string]string{
		"/.well-known/oauth-protected-resource":     base + "/mcp",
		"/.well-known/oauth-protected-resource/mcp": base + "/mcp",
	} {
		t.Run(path+" describes "+resource, func(t *testing.T) {
			resp, doc := getJSON(t, env.URL+path)
			if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
				t.Fatalf("HTTP %d, Content-Type %q, want 200 JSON", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			validateMetadata(t, doc, resource)
			if got := strs(doc["bearer_methods_supported"]); !slices.Equal(got, []string{"header"}) {
				t.Errorf("bearer_methods_supported = %v, want [header]", got)
			}
			if got := strs(doc["scopes_supported"]); !slices.Equal(got, people.AllScopes) {
				t.Errorf("scopes_supported = %v, want %v", got, people.AllScopes)
			}
			// Countersign is the authorization server of its own endpoint.
			if got := strs(doc["authorization_servers"]); !slices.Equal(got, []string{base}) {
				t.Errorf("authorization_servers = %v, want [%s]: Countersign grants its own tokens", got, base)
			}
			if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "*" {
				t.Errorf("Access-Control-Allow-Origin = %q, want * (public metadata, read by browser clients too)", got)
			}
		})
	}
	// A client looking for metadata that is not there is told so in JSON,
	// never sent to the sign-in page. (The OpenID provider's own document,
	// /.well-known/openid-configuration at the root, is served: oauth tests it.)
	for _, path := range []string{"/.well-known/openid-configuration/mcp",
		"/.well-known/oauth-authorization-server/mcp", "/.well-known/oauth-protected-resource/elsewhere"} {
		t.Run(path+" is a plain 404", func(t *testing.T) {
			resp, doc := getJSON(t, env.URL+path)
			if resp.StatusCode != http.StatusNotFound || doc["error"] != "NOT_FOUND" {
				t.Errorf("HTTP %d %v (Location %q), want a JSON 404", resp.StatusCode, doc, resp.Header.Get("Location"))
			}
		})
	}
	// A client that falls back to OAuth endpoints at the origin (the
	// 2025-03-26 spec) is pointed to the metadata, not refused for a CSRF token.
	for _, path := range []string{"/register", "/authorize", "/token"} {
		t.Run("POST "+path+" is a plain 404", func(t *testing.T) {
			resp, err := noRedirects.Post(env.URL+path, "application/json", strings.NewReader(`{"redirect_uris":["http://127.0.0.1:6276/oauth/callback"]}`))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var doc map[string]any
			if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil || resp.StatusCode != http.StatusNotFound ||
				!strings.Contains(fmt.Sprint(doc["message"]), "OAuth endpoints are named in /.well-known/oauth-authorization-server") {
				t.Errorf("HTTP %d %v (%v), want a JSON 404 naming the authorization server metadata", resp.StatusCode, doc, err)
			}
		})
	}
}

// challengeParams reads the auth-params of a Bearer challenge
// (RFC 6750 §3): name="value" pairs separated by commas.
func challengeParams(t *testing.T, h string) map[string]string {
	t.Helper()
	rest, ok := strings.CutPrefix(h, "Bearer ")
	if !ok {
		t.Fatalf("WWW-Authenticate = %q, want a Bearer challenge", h)
	}
	params := map[string]string{}
	for rest = strings.TrimSpace(rest); rest != ""; rest = strings.TrimLeft(rest, ", ") {
		name, after, ok := strings.Cut(rest, `="`)
		end := strings.Index(after, `"`)
		if !ok || end < 0 {
			t.Fatalf("WWW-Authenticate = %q: cannot read %q", h, rest)
		}
		params[strings.TrimSpace(name)] = after[:end]
		rest = after[end+1:]
	}
	return params
}

func TestEveryRefusalOfATokenNamesTheResourceMetadata(t *testing.T) {
	env := apptest.Start(t, apptest.SQLite, nil)
	ctx := context.Background()
	base := env.App.Config.BaseURL // the public origin, which the test server stands in for
	want := base + "/.well-known/oauth-protected-resource/mcp"
	_, goneToken := env.Agent(env.Account.ID, "gone")
	if _, err := env.Store.DisableAgent(ctx, env.Account.ID, "gone", "test", "admin"); err != nil {
		t.Fatalf("disable agent: %v", err)
	}
	for _, tc := range []struct{ name, token, errorCode string }{
		{"no token", "", ""},
		{"a token of no agent", people.TokenPrefix + "nobody", "invalid_token"},
		{"a disabled agent's token", goneToken, "invalid_token"},
	} {
		t.Run(tc.name+" gets 401 naming the metadata", func(t *testing.T) {
			r := rawPost(t, env, tc.token, "", "", initializeBody())
			mustBe401(t, r, tc.name)
			p := challengeParams(t, r.Header.Get("WWW-Authenticate"))
			if p["resource_metadata"] != want || p["error"] != tc.errorCode {
				t.Errorf("challenge %v, want resource_metadata=%q and error=%q", p, want, tc.errorCode)
			}
			// The URL it names is the document of /mcp.
			_, doc := getJSON(t, env.URL+strings.TrimPrefix(p["resource_metadata"], base))
			validateMetadata(t, doc, base+"/mcp")
		})
	}
}

func TestATokenWithoutTheScopesOfAnHTTPOperationGets403InsufficientScope(t *testing.T) {
	env := apptest.Start(t, apptest.SQLite, nil)
	_, noMCP := env.Agent(env.Account.ID, "no-mcp", people.ScopeApprovalsRead, people.ScopeApprovalsWrite)
	_, writeOnly := env.Agent(env.Account.ID, "writer", people.ScopeMCPWrite, people.ScopeApprovalsWrite)
	_, all := env.Agent(env.Account.ID, "all")

	get := func(token, session string) rawReply {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, env.URL+"/mcp", nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Mcp-Session-Id", session)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		resp, err := http.DefaultClient.Do(req.WithContext(ctx))
		if err != nil {
			t.Fatalf("GET /mcp: %v", err)
		}
		defer resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return rawReply{Status: resp.StatusCode, Header: resp.Header} // an open stream: do not read it
		}
		b, _ := io.ReadAll(resp.Body)
		return rawReply{Status: resp.StatusCode, Header: resp.Header, Body: b}
	}
	writer := env.Connect(writeOnly)
	reader := env.Connect(all)

	for _, tc := range []struct {
		name  string
		reply func() rawReply
		scope string
	}{
		{"a token with no mcp scope opening a session", func() rawReply { return rawPost(t, env, noMCP, "", "", initializeBody()) }, "mcp:read"},
		{"a write-only token opening the notification stream", func() rawReply { return get(writeOnly, writer.Session.ID()) }, "mcp:read approvals:read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.reply()
			if r.Status != http.StatusForbidden {
				t.Fatalf("HTTP %d, want 403: %s", r.Status, r.Body)
			}
			p := challengeParams(t, r.Header.Get("WWW-Authenticate"))
			if p["error"] != "insufficient_scope" || p["scope"] != tc.scope || p["resource_metadata"] != env.App.Config.BaseURL+"/.well-known/oauth-protected-resource/mcp" {
				t.Errorf("challenge %v, want error=insufficient_scope scope=%q and the resource metadata", p, tc.scope)
			}
		})
	}
	// The same operations with the scopes go through: the write-only token
	// files asks, and a reading token opens the stream.
	if r := writer.Call("approvals_create", prAsk(900, "abcdef1234567")); r.IsError {
		t.Errorf("write-only token filing an ask: %s", r)
	}
	// (The reader's client holds its stream already, so the SDK may answer
	// 409 past the scope check; what matters is that no challenge came.)
	if r := get(all, reader.Session.ID()); r.Status == http.StatusForbidden || r.Header.Get("WWW-Authenticate") != "" {
		t.Errorf("a reading token opening the stream: HTTP %d, %q: %s", r.Status, r.Header.Get("WWW-Authenticate"), r.Body)
	}
}

// TestTheEndpointWithATrailingSlashIsTheEndpoint: a host given /mcp/ reaches
// the MCP endpoint, with its Bearer challenge when it has no token (which
// starts OAuth discovery), never the web pages' CSRF refusal.
func TestTheEndpointWithATrailingSlashIsTheEndpoint(t *testing.T) {
	env := apptest.Start(t, apptest.SQLite, nil)
	base := env.App.Config.BaseURL
	r := rawPostTo(t, env, "/mcp/", "", "", "", initializeBody())
	mustBe401(t, r, "POST /mcp/ without a token")
	if p := challengeParams(t, r.Header.Get("WWW-Authenticate")); p["resource_metadata"] != base+"/.well-known/oauth-protected-resource/mcp" {
		t.Errorf("challenge %v, want the resource metadata of /mcp", p)
	}
	_, token := env.Agent(env.Account.ID, "slash")
	r = rawPostTo(t, env, "/mcp/", token, "", "", initializeBody())
	session := r.Header.Get("Mcp-Session-Id")
	if r.Status != http.StatusOK || session == "" {
		t.Fatalf("initialize on /mcp/ with a token: HTTP %d (session %q): %s", r.Status, session, r.Body)
	}
	if res := rpcResult(t, r); res["result"] == nil {
		t.Fatalf("initialize on /mcp/: %v", res)
	}
	protocol := "2025-06-18"
	rawPostTo(t, env, "/mcp/", token, session, protocol, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	for _, path := range []string{"/mcp/", "/mcp"} {
		r = rawPostTo(t, env, path, token, session, protocol, []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`))
		res := rpcResult(t, r)
		tools, _ := res["result"].(map[string]any)["tools"].([]any)
		if r.Status != http.StatusOK || len(tools) == 0 {
			t.Errorf("tools/list on %s in the session begun on /mcp/: HTTP %d %v", path, r.Status, res)
		}
	}
}
