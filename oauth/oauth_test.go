package oauth_test

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/audit"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/grants"
	"github.com/countersign/countersign/models/people"
	"github.com/countersign/countersign/oauth"
)

// rig is the service, a signed-in owner (ada) in an HTTP browser with a
// software passkey, and what the tests need to speak OAuth to it.
type rig struct {
	t      *testing.T
	env    *apptest.Env
	ada    *apptest.Browser
	mcpURL string
}

func newRig(t *testing.T) *rig {
	t.Helper()
	return newRigOn(t, apptest.SQLite)
}

func newRigOn(t *testing.T, db apptest.Database) *rig {
	t.Helper()
	env := apptest.StartWeb(t, db, nil)
	return &rig{t: t, env: env, ada: env.Join(env.Account.ID, core.RoleOwner, "ada"), mcpURL: env.URL + "/mcp"}
}

// postForm posts a form to an OAuth endpoint as a client does (no cookies)
// and reads the JSON answer.
func (r *rig) postForm(path string, form url.Values) (int, map[string]any) {
	r.t.Helper()
	res, err := http.PostForm(r.env.URL+path, form)
	if err != nil {
		r.t.Fatalf("POST %s: %v", path, err)
	}
	defer res.Body.Close()
	var body map[string]any
	raw, _ := io.ReadAll(res.Body)
	_ = json.Unmarshal(raw, &body)
	return res.StatusCode, body
}

// register registers a client by DCR and returns its client_id.
func (r *rig) register(name string, redirects ...string) string {
	r.t.Helper()
	raw, _ := json.Marshal(map[string]any{"client_name": name, "redirect_uris": redirects})
	res, err := http.Post(r.env.URL+oauth.RegisterPath, "application/json", strings.NewReader(string(raw)))
	if err != nil {
		r.t.Fatal(err)
	}
	defer res.Body.Close()
	var out oauthex.ClientRegistrationResponse
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil || res.StatusCode != http.StatusCreated || out.ClientID == "" {
		r.t.Fatalf("register %s: HTTP %d %+v %v", name, res.StatusCode, out, err)
	}
	if out.TokenEndpointAuthMethod != "none" || out.ClientName != name || !slices.Equal(out.RedirectURIs, redirects) {
		r.t.Fatalf("register %s answered %+v, want a public client with the name and redirect URIs sent", name, out)
	}
	return out.ClientID
}

// authorizeQuery is a valid authorization request for clientID.
func (r *rig) authorizeQuery(clientID, redirect, verifier string) url.Values {
	return url.Values{
		"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {redirect},
		"code_challenge": {oauth2.S256ChallengeFromVerifier(verifier)}, "code_challenge_method": {"S256"},
		"resource": {r.mcpURL}, "state": {"st-1"}, "scope": {"mcp:read mcp:write approvals:read approvals:write"},
	}
}

// consent opens the consent page of q as ada and approves it keeping
// grants; it returns where the browser is sent.
func (r *rig) consent(q url.Values, grants ...string) *url.URL {
	r.t.Helper()
	return r.consentAs(r.ada, q, grants...)
}

// consentAs is consent by the person signed in to b.
func (r *rig) consentAs(b *apptest.Browser, q url.Values, grants ...string) *url.URL {
	r.t.Helper()
	res := r.consentIn(b, q, grants...)
	loc, err := url.Parse(res.Header.Get("Location"))
	if res.Status != http.StatusSeeOther || err != nil {
		r.t.Fatalf("approve: %s (Location %q)", res, res.Header.Get("Location"))
	}
	return loc
}

// consentIn opens the consent page of q in b and approves it keeping
// grants; it returns the answer to the approval.
func (r *rig) consentIn(b *apptest.Browser, q url.Values, grants ...string) apptest.Response {
	r.t.Helper()
	page := b.Page(oauth.AuthorizePath + "?" + q.Encode())
	if page.Status != http.StatusOK || !strings.Contains(string(page.Raw), `data-testid="consent"`) {
		r.t.Fatalf("the consent page: %s", page)
	}
	form := url.Values{}
	for k, v := range q {
		form[k] = v
	}
	form["grant"] = grants
	form.Set("decision", "approve")
	return b.PostForm(oauth.AuthorizePath, form)
}

// code runs an authorization request to its code.
func (r *rig) code(clientID, redirect, verifier string) string {
	r.t.Helper()
	loc := r.consent(r.authorizeQuery(clientID, redirect, verifier), "mcp:read", "approvals:read")
	if c := loc.Query().Get("code"); c != "" && loc.Query().Get("state") == "st-1" && loc.Query().Get("iss") == r.env.URL {
		return c
	}
	r.t.Fatalf("the redirect %s carries no code with state st-1 and iss %s", loc, r.env.URL)
	return ""
}

func (r *rig) exchange(clientID, redirect, verifier, code string) (int, map[string]any) {
	r.t.Helper()
	return r.postForm(oauth.TokenPath, url.Values{"grant_type": {"authorization_code"}, "client_id": {clientID},
		"redirect_uri": {redirect}, "code_verifier": {verifier}, "code": {code}, "resource": {r.mcpURL}})
}

// mcpStatus is the HTTP status of an MCP initialize sent with token.
func (r *rig) mcpStatus(token string) (int, string) {
	r.t.Helper()
	return r.mcpPost(token, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
}

// mcpPost is the HTTP status and challenge of one JSON-RPC message sent
// with token, on session unless it is "".
func (r *rig) mcpPost(token, session, body string) (int, string) {
	r.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, r.mcpURL, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", apptest.SessionRevision)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer res.Body.Close()
	return res.StatusCode, res.Header.Get("WWW-Authenticate")
}

func grantError(t *testing.T, what string, status int, body map[string]any, code, says string) {
	t.Helper()
	if status != http.StatusBadRequest || body["error"] != code || !strings.Contains(fmt.Sprint(body["error_description"]), says) {
		t.Errorf("%s: HTTP %d %v, want 400 %s saying %q", what, status, body, code, says)
	}
}

// connectWithSDK connects the go-sdk's client with its OAuth support: the
// 401, the metadata, registration (cfg), PKCE, ada's consent keeping
// grants, the code exchange, then MCP. It returns the session and the
// token the client got.
func (r *rig) connectWithSDK(cfg *auth.AuthorizationCodeHandlerConfig, grants ...string) (*sdk.ClientSession, *oauth2.Token) {
	r.t.Helper()
	return r.connectWithSDKTo(r.mcpURL, cfg, grants...)
}

func TestTheMetadataNamesCountersignAsTheAuthorizationServer(t *testing.T) {
	env := apptest.StartWeb(t, apptest.SQLite, nil)
	prm, err := oauthex.GetProtectedResourceMetadata(context.Background(), env.URL+"/.well-known/oauth-protected-resource/mcp", env.URL+"/mcp", nil)
	if err != nil {
		t.Fatalf("protected-resource metadata: %v", err)
	}
	if !slices.Equal(prm.AuthorizationServers, []string{env.URL}) {
		t.Errorf("authorization_servers = %v, want [%s]", prm.AuthorizationServers, env.URL)
	}
	asm, err := auth.GetAuthServerMetadata(context.Background(), env.URL, nil)
	if err != nil || asm == nil {
		t.Fatalf("authorization server metadata: %v", err)
	}
	for what, ok := range map[string]bool{
		"issuer is the base URL":              asm.Issuer == env.URL,
		"PKCE is S256 only":                   slices.Equal(asm.CodeChallengeMethodsSupported, []string{"S256"}),
		"metadata documents are supported":    asm.ClientIDMetadataDocumentSupported,
		"registration is offered":             asm.RegistrationEndpoint == env.URL+oauth.RegisterPath,
		"revocation is offered":               asm.RevocationEndpoint == env.URL+oauth.RevokePath,
		"the code grant and refresh":          slices.Equal(asm.GrantTypesSupported, []string{"authorization_code", "refresh_token"}),
		"clients are public":                  slices.Equal(asm.TokenEndpointAuthMethodsSupported, []string{"none"}),
		"iss is sent with the code":           asm.AuthorizationResponseIssParameterSupported,
		"the scopes are the agent scopes":     slices.Equal(asm.ScopesSupported, people.AllScopes),
		"the authorization endpoint is ours":  asm.AuthorizationEndpoint == env.URL+oauth.AuthorizePath,
		"the token endpoint is ours":          asm.TokenEndpoint == env.URL+oauth.TokenPath,
		"only the code response type is used": slices.Equal(asm.ResponseTypesSupported, []string{"code"}),
	} {
		if !ok {
			t.Errorf("%s: %+v", what, asm)
		}
	}
}

func TestADynamicallyRegisteredClientConnectsScopedRefreshesAndIsRevoked(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	session, tok := r.connectWithSDK(&auth.AuthorizationCodeHandlerConfig{
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			ClientName: "Test Chat App", RedirectURIs: []string{"http://localhost:9/callback"},
			GrantTypes: []string{"authorization_code", "refresh_token"},
		}},
	}, "mcp:read", "approvals:read")

	t.Run("the token is short-lived, hashed, and holds only the scopes ada kept", func(t *testing.T) {
		if !strings.HasPrefix(tok.AccessToken, grants.OAuthAccessPrefix) || !strings.HasPrefix(tok.RefreshToken, grants.OAuthRefreshPrefix) {
			t.Fatalf("tokens %q / %q lack their prefixes", tok.AccessToken, tok.RefreshToken)
		}
		if left := time.Until(tok.Expiry); left > time.Hour || left < 55*time.Minute {
			t.Errorf("the access token lives %s, want an hour", left)
		}
		if scope, _ := tok.Extra("scope").(string); scope != "mcp:read approvals:read" {
			t.Errorf("scope = %q, want mcp:read approvals:read", scope)
		}
		var clear, hashed int64
		r.env.Store.DB().Table("oauth_tokens").Where("token_hash = ?", tok.AccessToken).Count(&clear)
		r.env.Store.DB().Table("oauth_tokens").Where("token_hash = ?", core.HashToken(tok.AccessToken)).Count(&hashed)
		if clear != 0 || hashed != 1 {
			t.Errorf("the access token is kept %d times in the clear and %d times hashed, want only its hash", clear, hashed)
		}
	})
	t.Run("the client is an agent named after it, made for ada", func(t *testing.T) {
		a, err := r.env.Store.AgentByName(ctx, r.env.Account.ID, "Test-Chat-App")
		if err != nil {
			t.Fatal(err)
		}
		ada, _ := r.env.Store.MemberBySubject(ctx, r.env.Account.ID, "ada")
		if a.ForPersonID == nil || *a.ForPersonID != ada.ID || a.Scopes != "mcp:read approvals:read" || a.Disabled {
			t.Errorf("agent = %+v, want one for ada with mcp:read approvals:read", a)
		}
		clients, err := r.env.Store.ConnectedClients(ctx, r.env.Account.ID, ada.ID)
		if err != nil || len(clients) != 1 || clients[0].ClientName != "Test Chat App" || clients[0].Verified || clients[0].RedirectHost != "localhost:9" {
			t.Errorf("connected clients = %+v (%v), want the unverified Test Chat App back to localhost:9", clients, err)
		}
	})
	t.Run("a call works within the scopes and is refused beyond them", func(t *testing.T) {
		tools, err := session.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range tools.Tools {
			if tool.Name == "approvals_create" {
				t.Error("tools/list shows approvals_create to a token without write scopes")
			}
		}
		if res, err := apptest.CallTool(ctx, session, "approvals_list", map[string]any{}); err != nil || res.IsError {
			t.Errorf("approvals_list: %+v %v", res, err)
		}
		res, err := apptest.CallTool(ctx, session, "approvals_create", map[string]any{"kind": "decision", "title": "x"})
		if err != nil || !res.IsError || res.Code != "PERMISSION_DENIED" {
			t.Errorf("approvals_create: %+v %v, want PERMISSION_DENIED", res, err)
		}
	})
	clientID := ""
	r.env.Store.DB().Table("oauth_connections").Select("client_id").Scan(&clientID)
	var rotated map[string]any
	t.Run("a refresh rotates both tokens", func(t *testing.T) {
		status, body := r.postForm(oauth.TokenPath, url.Values{"grant_type": {"refresh_token"}, "client_id": {clientID}, "refresh_token": {tok.RefreshToken}})
		if status != http.StatusOK || body["refresh_token"] == tok.RefreshToken || body["access_token"] == tok.AccessToken || body["scope"] != "mcp:read approvals:read" || body["token_type"] != "Bearer" || body["expires_in"] != 3600.0 {
			t.Fatalf("refresh: HTTP %d %v, want a new pair with the same scopes", status, body)
		}
		rotated = body
		if s, _ := r.mcpStatus(body["access_token"].(string)); s != http.StatusOK {
			t.Errorf("the new access token: HTTP %d on /mcp", s)
		}
	})
	t.Run("a refresh token used again revokes the whole grant", func(t *testing.T) {
		if rotated == nil {
			t.Fatal("no rotated tokens to check")
		}
		status, body := r.postForm(oauth.TokenPath, url.Values{"grant_type": {"refresh_token"}, "client_id": {clientID}, "refresh_token": {tok.RefreshToken}})
		grantError(t, "the old refresh token again", status, body, "invalid_grant", "used before")
		if s, h := r.mcpStatus(rotated["access_token"].(string)); s != http.StatusUnauthorized || !strings.Contains(h, "revoked") {
			t.Errorf("the rotated access token after the reuse: HTTP %d %q, want 401 revoked", s, h)
		}
		status, body = r.postForm(oauth.TokenPath, url.Values{"grant_type": {"refresh_token"}, "client_id": {clientID}, "refresh_token": {rotated["refresh_token"].(string)}})
		grantError(t, "the rotated refresh token after the reuse", status, body, "invalid_grant", "revoked")
	})
}

func TestRevocationStopsATokenAndARefreshTokenItsGrant(t *testing.T) {
	r := newRig(t)
	const redirect = "http://127.0.0.1:9/cb"
	client := r.register("Revoker", redirect)
	verifier := oauth2.GenerateVerifier()
	status, tok := r.exchange(client, redirect, verifier, r.code(client, redirect, verifier))
	if status != http.StatusOK {
		t.Fatalf("exchange: %d %v", status, tok)
	}
	access, refresh := tok["access_token"].(string), tok["refresh_token"].(string)
	if s, _ := r.mcpStatus(access); s != http.StatusOK {
		t.Fatalf("the access token: HTTP %d", s)
	}
	if s, _ := r.postForm(oauth.RevokePath, url.Values{"client_id": {"someone-else"}, "token": {access}}); s != http.StatusOK {
		t.Errorf("revoking another client's token: HTTP %d, want 200 (RFC 7009) and no effect", s)
	}
	if s, _ := r.mcpStatus(access); s != http.StatusOK {
		t.Errorf("another client revoked the token: HTTP %d on /mcp", s)
	}
	if s, _ := r.postForm(oauth.RevokePath, url.Values{"client_id": {client}, "token": {access}}); s != http.StatusOK {
		t.Errorf("revoke: HTTP %d", s)
	}
	if s, h := r.mcpStatus(access); s != http.StatusUnauthorized || !strings.Contains(h, `error="invalid_token"`) {
		t.Errorf("a revoked access token: HTTP %d %q, want 401 invalid_token", s, h)
	}
	if s, _ := r.postForm(oauth.RevokePath, url.Values{"client_id": {client}, "token": {refresh}}); s != http.StatusOK {
		t.Errorf("revoke the refresh token: HTTP %d", s)
	}
	status, body := r.postForm(oauth.TokenPath, url.Values{"grant_type": {"refresh_token"}, "client_id": {client}, "refresh_token": {refresh}})
	grantError(t, "a revoked refresh token", status, body, "invalid_grant", "revoked")
}

func TestEachBadRequestIsRefused(t *testing.T) {
	r := newRig(t)
	const redirect = "http://127.0.0.1:9/cb"
	client := r.register("Refusals", redirect)

	t.Run("a wrong PKCE verifier", func(t *testing.T) {
		verifier := oauth2.GenerateVerifier()
		code := r.code(client, redirect, verifier)
		status, body := r.exchange(client, redirect, oauth2.GenerateVerifier(), code)
		grantError(t, "exchange", status, body, "invalid_grant", "code_verifier does not match")
	})
	// The client registered itself, so nobody vetted its redirect URI:
	// errors are shown on the page, never sent there (RFC 9700 §4.11.2).
	t.Run("PKCE plain, or none", func(t *testing.T) {
		for _, method := range []string{"plain", ""} {
			q := r.authorizeQuery(client, redirect, oauth2.GenerateVerifier())
			q.Set("code_challenge_method", method)
			refusedOnPage(t, r.ada.Page(oauth.AuthorizePath+"?"+q.Encode()), "code_challenge_method S256")
		}
	})
	t.Run("a wrong resource when authorizing", func(t *testing.T) {
		q := r.authorizeQuery(client, redirect, oauth2.GenerateVerifier())
		q.Set("resource", "https://elsewhere.example/mcp")
		refusedOnPage(t, r.ada.Page(oauth.AuthorizePath+"?"+q.Encode()), "resource must be this service&#39;s MCP endpoint")
	})
	t.Run("a parameter sent twice", func(t *testing.T) {
		q := r.authorizeQuery(client, redirect, oauth2.GenerateVerifier())
		q.Add("scope", "mcp:read")
		refusedOnPage(t, r.ada.Page(oauth.AuthorizePath+"?"+q.Encode()), "the parameter scope is sent more than once")
	})
	t.Run("a wrong resource when exchanging", func(t *testing.T) {
		verifier := oauth2.GenerateVerifier()
		code := r.code(client, redirect, verifier)
		status, body := r.postForm(oauth.TokenPath, url.Values{"grant_type": {"authorization_code"}, "client_id": {client},
			"redirect_uri": {redirect}, "code_verifier": {verifier}, "code": {code}, "resource": {"https://elsewhere.example/mcp"}})
		grantError(t, "exchange", status, body, "invalid_target", "resource must be")
	})
	t.Run("a token issued for another resource", func(t *testing.T) {
		a, _ := r.env.Agent(r.env.Account.ID, "elsewhere")
		tok, err := r.env.Store.IssueOAuthTokens(context.Background(), grants.OAuthGrant{FamilyID: "f", AgentID: a.ID, ClientID: client,
			Resource: "https://elsewhere.example/mcp", Scopes: "mcp:read"}, time.Hour, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if s, h := r.mcpStatus(tok.Access); s != http.StatusUnauthorized || !strings.Contains(h, "another resource") {
			t.Errorf("HTTP %d %q, want 401 naming another resource", s, h)
		}
	})
	t.Run("a redirect URI the client did not register", func(t *testing.T) {
		q := r.authorizeQuery(client, "http://127.0.0.1:9/cb/other", oauth2.GenerateVerifier())
		res := r.ada.Page(oauth.AuthorizePath + "?" + q.Encode())
		if res.Status != http.StatusBadRequest || res.Header.Get("Location") != "" || !strings.Contains(string(res.Raw), "not one the client registered") {
			t.Errorf("%s, want a 400 page and no redirect", res)
		}
	})
	t.Run("another redirect URI when exchanging", func(t *testing.T) {
		verifier := oauth2.GenerateVerifier()
		code := r.code(client, redirect, verifier)
		status, body := r.exchange(client, "http://127.0.0.1:9/other", verifier, code)
		grantError(t, "exchange", status, body, "invalid_grant", "redirect_uri differs")
	})
	t.Run("another client's code", func(t *testing.T) {
		verifier := oauth2.GenerateVerifier()
		code := r.code(client, redirect, verifier)
		status, body := r.exchange("dcr_someoneelse", redirect, verifier, code)
		grantError(t, "exchange", status, body, "invalid_grant", "another client")
	})
	t.Run("an expired code", func(t *testing.T) {
		verifier := oauth2.GenerateVerifier()
		code := r.code(client, redirect, verifier)
		later := time.Now().Add(oauth.CodeLife + time.Second)
		r.env.Store.SetClock(func() time.Time { return later })
		defer r.env.Store.SetClock(time.Now)
		status, body := r.exchange(client, redirect, verifier, code)
		grantError(t, "exchange", status, body, "invalid_grant", "expired")
	})
	t.Run("a code used twice, which revokes what the first use got", func(t *testing.T) {
		verifier := oauth2.GenerateVerifier()
		code := r.code(client, redirect, verifier)
		status, first := r.exchange(client, redirect, verifier, code)
		if status != http.StatusOK {
			t.Fatalf("first exchange: %d %v", status, first)
		}
		status, body := r.exchange(client, redirect, verifier, code)
		grantError(t, "second exchange", status, body, "invalid_grant", "used before")
		if s, _ := r.mcpStatus(first["access_token"].(string)); s != http.StatusUnauthorized {
			t.Errorf("the first use's access token after the second: HTTP %d, want 401", s)
		}
	})
	t.Run("an unknown scope", func(t *testing.T) {
		q := r.authorizeQuery(client, redirect, oauth2.GenerateVerifier())
		q.Set("scope", "mcp:read admin")
		refusedOnPage(t, r.ada.Page(oauth.AuthorizePath+"?"+q.Encode()), "unknown scope &#34;admin&#34;")
	})
	t.Run("a consent that keeps no scope changes nothing", func(t *testing.T) {
		before, _ := r.env.Store.ListAgents(context.Background(), r.env.Account.ID)
		q := r.authorizeQuery(client, redirect, oauth2.GenerateVerifier())
		form := url.Values{"decision": {"approve"}}
		for k, v := range q {
			form[k] = v
		}
		res := r.ada.PostForm(oauth.AuthorizePath, form)
		after, _ := r.env.Store.ListAgents(context.Background(), r.env.Account.ID)
		if res.Status != http.StatusBadRequest || !strings.Contains(string(res.Raw), "the client&#39;s tools need one of these pairs") || len(after) != len(before) {
			t.Errorf("%s; agents %d → %d, want a 400 consent page and no new agent", res, len(before), len(after))
		}
	})
	t.Run("a denial goes back as access_denied and connects nothing", func(t *testing.T) {
		before, _ := r.env.Store.ListAgents(context.Background(), r.env.Account.ID)
		form := r.authorizeQuery(client, redirect, oauth2.GenerateVerifier())
		form.Set("decision", "deny")
		res := r.ada.PostForm(oauth.AuthorizePath, form)
		loc, _ := url.Parse(res.Header.Get("Location"))
		after, _ := r.env.Store.ListAgents(context.Background(), r.env.Account.ID)
		if loc == nil || loc.Query().Get("error") != "access_denied" || len(after) != len(before) {
			t.Errorf("%s Location %v; agents %d → %d", res, loc, len(before), len(after))
		}
	})
	t.Run("a consent with two decisions is refused and changes nothing", func(t *testing.T) {
		before, _ := r.env.Store.ListAgents(context.Background(), r.env.Account.ID)
		form := r.authorizeQuery(client, redirect, oauth2.GenerateVerifier())
		form["decision"] = []string{"approve", "deny"}
		form["grant"] = []string{"mcp:read", "approvals:read"}
		res := r.ada.PostForm(oauth.AuthorizePath, form)
		after, _ := r.env.Store.ListAgents(context.Background(), r.env.Account.ID)
		if res.Status != http.StatusBadRequest || res.Header.Get("Location") != "" || !strings.Contains(string(res.Raw), "exactly one of Connect or Cancel") || len(after) != len(before) {
			t.Errorf("%s; agents %d → %d, want a 400 page and no new agent", res, len(before), len(after))
		}
	})
	t.Run("a consent posted from another site", func(t *testing.T) {
		form := r.authorizeQuery(client, redirect, oauth2.GenerateVerifier())
		form.Set("decision", "approve")
		form.Set("grant", "mcp:read")
		form.Set("_csrf", "forged")
		req, _ := http.NewRequest(http.MethodPost, r.env.URL+oauth.AuthorizePath, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", "https://evil.example")
		res, err := r.ada.HTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusForbidden {
			t.Errorf("HTTP %d, want 403", res.StatusCode)
		}
	})
	t.Run("a signed-out visitor is sent to sign in and back, however the client escaped the query", func(t *testing.T) {
		q := r.authorizeQuery(client, redirect, oauth2.GenerateVerifier())
		stranger := apptest.NewBrowser(t, r.env.URL)
		// A client that writes a space as %20 (encodeURIComponent), not '+'.
		res := stranger.Page(oauth.AuthorizePath + "?" + strings.ReplaceAll(q.Encode(), "+", "%20"))
		loc, _ := url.Parse(res.Header.Get("Location"))
		want := oauth.AuthorizePath + "?" + q.Encode()
		if res.Status != http.StatusSeeOther || loc.Path != "/signin" || loc.Query().Get("next") != want {
			t.Fatalf("%s Location %v, want /signin?next= the request", res, loc)
		}
		page := stranger.Page(loc.RequestURI())
		if !strings.Contains(string(page.Raw), `value="`+html.EscapeString(want)+`" data-testid="signin-next"`) {
			t.Errorf("the sign-in page does not carry the request on as next:\n%s", page.Raw)
		}
	})
	t.Run("a redirect URI whose host could carry more into the page's policy", func(t *testing.T) {
		raw := `{"client_name":"csp","redirect_uris":["https://a.example;script-src:*/cb"]}`
		res, err := http.Post(r.env.URL+oauth.RegisterPath, "application/json", strings.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		var body map[string]any
		_ = json.NewDecoder(res.Body).Decode(&body)
		res.Body.Close()
		if res.StatusCode != http.StatusBadRequest || body["error"] != "invalid_redirect_uri" {
			t.Errorf("HTTP %d %v, want 400 invalid_redirect_uri", res.StatusCode, body)
		}
	})
	t.Run("registration is capped per address", func(t *testing.T) {
		var last int
		for range 6 {
			raw := `{"client_name":"spam","redirect_uris":["http://127.0.0.1:9/cb"]}`
			res, err := http.Post(r.env.URL+oauth.RegisterPath, "application/json", strings.NewReader(raw))
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			last = res.StatusCode
		}
		if last != http.StatusTooManyRequests {
			t.Errorf("the sixth registration in a row: HTTP %d, want 429", last)
		}
	})
}

// documentServer serves a client's metadata document over TLS and counts
// the fetches.
type documentServer struct {
	srv     *httptest.Server
	fetches atomic.Int32
	body    func(clientID string) string
}

func newDocumentServer(t *testing.T, body func(clientID string) string) *documentServer {
	d := &documentServer{body: body}
	d.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		d.fetches.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, d.body(d.srv.URL+req.URL.Path))
	}))
	t.Cleanup(d.srv.Close)
	return d
}

// allow is the explicit test-only allowance of the document server's
// address, which the SSRF guard refuses otherwise.
func (d *documentServer) allow(r *rig) {
	pool := x509.NewCertPool()
	pool.AddCert(d.srv.Certificate())
	r.env.App.OAuth.Documents.Allow(strings.TrimPrefix(d.srv.URL, "https://"), pool)
}

func TestAClientWithAMetadataDocumentConnectsAndItsDocumentIsCached(t *testing.T) {
	r := newRig(t)
	const redirect = "http://localhost:9/callback"
	docs := newDocumentServer(t, func(clientID string) string {
		return fmt.Sprintf(`{"client_id":%q,"client_name":"Doc Client","redirect_uris":[%q],"grant_types":["authorization_code","refresh_token"],"token_endpoint_auth_method":"none"}`, clientID, redirect)
	})
	clientID := docs.srv.URL + "/client.json"

	t.Run("the guard refuses the document server until it is allowed", func(t *testing.T) {
		q := r.authorizeQuery(clientID, redirect, oauth2.GenerateVerifier())
		res := r.ada.Page(oauth.AuthorizePath + "?" + q.Encode())
		if res.Status != http.StatusBadRequest || !strings.Contains(string(res.Raw), "not a public address") || docs.fetches.Load() != 0 {
			t.Errorf("%s (fetches %d), want a 400 page naming a non-public address and no fetch", res, docs.fetches.Load())
		}
	})
	docs.allow(r)
	session, tok := r.connectWithSDK(&auth.AuthorizationCodeHandlerConfig{
		ClientIDMetadataDocumentConfig: &auth.ClientIDMetadataDocumentConfig{URL: clientID},
		RedirectURL:                    redirect,
	}, "mcp:read", "mcp:write", "approvals:read", "approvals:write")
	if res, err := apptest.CallTool(context.Background(), session, "approvals_list", map[string]any{}); err != nil || res.IsError {
		t.Errorf("approvals_list: %+v %v", res, err)
	}
	if scope, _ := tok.Extra("scope").(string); !slices.Equal(slices.Sorted(slices.Values(strings.Fields(scope))), slices.Sorted(slices.Values(people.AllScopes))) {
		t.Errorf("scope = %q, want every scope", scope)
	}
	t.Run("the consent page names the client and its host, verified", func(t *testing.T) {
		page := r.ada.Page(oauth.AuthorizePath + "?" + r.authorizeQuery(clientID, redirect, oauth2.GenerateVerifier()).Encode())
		body := string(page.Raw)
		host := strings.TrimPrefix(docs.srv.URL, "https://")
		if !strings.Contains(body, "Doc Client") || !strings.Contains(body, "(from "+host+")") || strings.Contains(body, "consent-unverified") ||
			!strings.Contains(body, "localhost:9") || !strings.Contains(body, "default, as ada") {
			t.Errorf("the consent page does not show the client, its host, the redirect host and the account:\n%s", body)
		}
		if csp := page.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "form-action 'self' http://localhost:9;") {
			t.Errorf("CSP %q does not let the form go on to the redirect URI", csp)
		}
	})
	t.Run("an error goes back to the client, whose metadata document vouches for its redirect URI", func(t *testing.T) {
		q := r.authorizeQuery(clientID, redirect, oauth2.GenerateVerifier())
		q.Set("scope", "mcp:read admin")
		res := r.ada.Page(oauth.AuthorizePath + "?" + q.Encode())
		loc, _ := url.Parse(res.Header.Get("Location"))
		if res.Status != http.StatusSeeOther || loc.Host != "localhost:9" || loc.Query().Get("error") != "invalid_scope" || loc.Query().Get("state") != "st-1" {
			t.Errorf("%s Location %s, want a redirect to the client with invalid_scope", res, loc)
		}
	})
	if n := docs.fetches.Load(); n != 1 {
		t.Errorf("the document was fetched %d times for three authorizations, want once (cached)", n)
	}
}

func TestAMetadataDocumentOverItsSizeOrAtAPrivateAddressIsRefused(t *testing.T) {
	r := newRig(t)
	const redirect = "http://localhost:9/callback"
	big := newDocumentServer(t, func(clientID string) string {
		return fmt.Sprintf(`{"client_id":%q,"client_name":"Big","redirect_uris":[%q],"padding":%q}`, clientID, redirect, strings.Repeat("x", oauth.DocumentMaxBytes))
	})
	big.allow(r)
	for name, tc := range map[string]struct{ clientID, says string }{
		"over the size limit":     {big.srv.URL + "/client.json", fmt.Sprintf("over %d bytes", oauth.DocumentMaxBytes)},
		"at a loopback address":   {"https://127.0.0.1:1/client.json", "not a public address"},
		"at a private address":    {"https://10.1.2.3/client.json", "not a public address"},
		"at a link-local address": {"https://169.254.169.254/latest/meta-data", "not a public address"},
		"named localhost":         {"https://localhost/client.json", "not a public address"},
		// IPv6 forms that reach an IPv4 address are judged by that address.
		"IPv4-mapped, link-local":         {"https://[::ffff:169.254.169.254]/client.json", "not a public address"},
		"IPv4-compatible, private":        {"https://[::10.1.2.3]/client.json", "not a public address"},
		"IPv4-compatible, loopback":       {"https://[::127.0.0.1]/client.json", "not a public address"},
		"IPv4-translated (SIIT), private": {"https://[::ffff:0:10.1.2.3]/client.json", "not a public address"},
		"NAT64 of loopback":               {"https://[64:ff9b::127.0.0.1]/client.json", "not a public address"},
		"NAT64 of a private address":      {"https://[64:ff9b::c0a8:1]/client.json", "not a public address"},
		"local-use NAT64":                 {"https://[64:ff9b:1::5db8:d822]/client.json", "not a public address"},
		"6to4 of a private address":       {"https://[2002:a01:203::1]/client.json", "not a public address"},
		"6to4 of the metadata service":    {"https://[2002:a9fe:a9fe::1]/client.json", "not a public address"},
		"Teredo":                          {"https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/client.json", "not a public address"},
		"not https":                       {"http://93.184.216.34/client.json", "no client is registered"},
		"at the root, with no path":       {"https://93.184.216.34/", "with a path"},
	} {
		t.Run(name, func(t *testing.T) {
			q := r.authorizeQuery(tc.clientID, redirect, oauth2.GenerateVerifier())
			res := r.ada.Page(oauth.AuthorizePath + "?" + q.Encode())
			if res.Status != http.StatusBadRequest || res.Header.Get("Location") != "" || !strings.Contains(string(res.Raw), tc.says) {
				t.Errorf("%s, want a 400 page saying %q", res, tc.says)
			}
		})
	}
}

func TestDisablingOrDisconnectingTheAgentStopsItsAccessTokenAtOnce(t *testing.T) {
	apptest.ForEachDatabase(t, testDisablingOrDisconnecting)
}

func testDisablingOrDisconnecting(t *testing.T, db apptest.Database) {
	r := newRigOn(t, db)
	const redirect = "http://127.0.0.1:9/cb"
	for _, how := range []string{"an admin disables it", "ada disconnects it"} {
		t.Run(how, func(t *testing.T) {
			client := r.register("Stopped "+strings.Fields(how)[1], redirect)
			verifier := oauth2.GenerateVerifier()
			status, tok := r.exchange(client, redirect, verifier, r.code(client, redirect, verifier))
			if status != http.StatusOK {
				t.Fatalf("exchange: %d %v", status, tok)
			}
			access := tok["access_token"].(string)
			if s, _ := r.mcpStatus(access); s != http.StatusOK {
				t.Fatalf("before: HTTP %d", s)
			}
			var agentID string
			r.env.Store.DB().Table("oauth_connections").Where("client_id = ?", client).Select("agent_id").Scan(&agentID)
			a := r.agent(agentID)
			if how == "an admin disables it" {
				res := r.ada.PostForm("/admin/agents/"+url.PathEscape(a.Name)+"/disable", url.Values{"reason": {"test"}})
				if res.Status != http.StatusSeeOther {
					t.Fatalf("disable: %s", res)
				}
			} else {
				page := r.ada.Page("/devices")
				if !strings.Contains(string(page.Raw), "Stopped disconnects") || !strings.Contains(string(page.Raw), "/devices/clients/"+agentID+"/disconnect") {
					t.Fatalf("the devices page does not list the client:\n%s", page.Raw)
				}
				res := r.ada.PostForm("/devices/clients/"+agentID+"/disconnect", nil)
				if res.Status != http.StatusSeeOther {
					t.Fatalf("disconnect: %s", res)
				}
			}
			if s, h := r.mcpStatus(access); s != http.StatusUnauthorized || !(strings.Contains(h, "disabled") || strings.Contains(h, "revoked")) {
				t.Errorf("after: HTTP %d %q, want 401 disabled or revoked", s, h)
			}
			status, body := r.postForm(oauth.TokenPath, url.Values{"grant_type": {"refresh_token"}, "client_id": {client}, "refresh_token": {tok["refresh_token"].(string)}})
			if status != http.StatusBadRequest || body["error"] != "invalid_grant" {
				t.Errorf("a refresh after: HTTP %d %v, want invalid_grant", status, body)
			}
			if a := r.agent(agentID); !a.Disabled {
				t.Errorf("the agent is not disabled: %+v", a)
			}
		})
	}
	t.Run("another person cannot disconnect ada's client", func(t *testing.T) {
		var agentID string
		r.env.Store.DB().Table("oauth_connections").Select("agent_id").Limit(1).Scan(&agentID)
		bob := r.env.Join(r.env.Account.ID, core.RoleMember, "bob")
		res := bob.PostForm("/devices/clients/"+agentID+"/disconnect", nil)
		if res.Status != http.StatusNotFound {
			t.Errorf("%s, want 404", res)
		}
	})
}

// agent reads an agent by id.
func (r *rig) agent(id string) *people.Agent {
	r.t.Helper()
	var a people.Agent
	if err := r.env.Store.DB().Table("agents").Where("id = ?", id).Take(&a).Error; err != nil {
		r.t.Fatalf("agent %s: %v", id, err)
	}
	return &a
}

func TestARefreshTokenSentTwiceAtOnceRotatesOnceAndRevokesTheGrant(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		r := newRigOn(t, db)
		const redirect = "http://127.0.0.1:9/cb"
		client := r.register("Racer", redirect)
		verifier := oauth2.GenerateVerifier()
		status, tok := r.exchange(client, redirect, verifier, r.code(client, redirect, verifier))
		if status != http.StatusOK {
			t.Fatalf("exchange: %d %v", status, tok)
		}
		form := url.Values{"grant_type": {"refresh_token"}, "client_id": {client}, "refresh_token": {tok["refresh_token"].(string)}}
		statuses := make(chan int, 2)
		start := make(chan struct{})
		for range 2 {
			go func() {
				<-start
				res, err := http.PostForm(r.env.URL+oauth.TokenPath, form)
				if err != nil {
					statuses <- 0
					return
				}
				res.Body.Close()
				statuses <- res.StatusCode
			}()
		}
		close(start)
		got := []int{<-statuses, <-statuses}
		slices.Sort(got)
		if !slices.Equal(got, []int{http.StatusOK, http.StatusBadRequest}) {
			t.Fatalf("two refreshes at once answered %v, want one 200 and one 400", got)
		}
		var live int64
		r.env.Store.DB().Table("oauth_tokens").Where("client_id = ? AND revoked_at IS NULL", client).Count(&live)
		if live != 0 {
			t.Errorf("%d tokens of the grant are still live after the reuse, want none", live)
		}
	})
}

func TestAnAccessTokenStopsAfterItsHour(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		r := newRigOn(t, db)
		const redirect = "http://127.0.0.1:9/cb"
		client := r.register("Hourly", redirect)
		verifier := oauth2.GenerateVerifier()
		status, tok := r.exchange(client, redirect, verifier, r.code(client, redirect, verifier))
		if status != http.StatusOK || tok["expires_in"] != 3600.0 {
			t.Fatalf("exchange: %d %v, want expires_in 3600", status, tok)
		}
		access := tok["access_token"].(string)
		if s, _ := r.mcpStatus(access); s != http.StatusOK {
			t.Fatalf("a fresh token: HTTP %d", s)
		}
		later := time.Now().Add(oauth.AccessLife + time.Second)
		r.env.Store.SetClock(func() time.Time { return later })
		defer r.env.Store.SetClock(time.Now)
		if s, h := r.mcpStatus(access); s != http.StatusUnauthorized || !strings.Contains(h, "expired") {
			t.Errorf("after an hour: HTTP %d %q, want 401 expired", s, h)
		}
		status, fresh := r.postForm(oauth.TokenPath, url.Values{"grant_type": {"refresh_token"}, "client_id": {client}, "refresh_token": {tok["refresh_token"].(string)}})
		if status != http.StatusOK {
			t.Fatalf("refresh after an hour: %d %v", status, fresh)
		}
		if s, _ := r.mcpStatus(fresh["access_token"].(string)); s != http.StatusOK {
			t.Errorf("the refreshed token: HTTP %d", s)
		}
		gone := later.Add(oauth.RefreshLife + time.Second)
		r.env.Store.SetClock(func() time.Time { return gone })
		if _, err := r.env.Store.SweepExpired(context.Background()); err != nil {
			t.Fatal(err)
		}
		var left int64
		r.env.Store.DB().Table("oauth_tokens").Where("client_id = ?", client).Count(&left)
		if left != 0 {
			t.Errorf("%d tokens of the client are kept past their life, want none", left)
		}
	})
}

func TestConnectingAClientAgainKeepsItsAgentAndTheAuditLogRecordsEachStep(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	const redirect = "http://127.0.0.1:9/cb"
	client := r.register("Again", redirect)
	r.code(client, redirect, oauth2.GenerateVerifier())
	loc := r.consent(r.authorizeQuery(client, redirect, oauth2.GenerateVerifier()), "mcp:write", "approvals:write")
	if loc.Query().Get("code") == "" {
		t.Fatalf("the second consent gave no code: %s", loc)
	}
	agents, _ := r.env.Store.ListAgents(ctx, r.env.Account.ID)
	var names []string
	for _, a := range agents {
		names = append(names, a.Name+" "+a.Scopes)
	}
	if !slices.Equal(names, []string{"Again mcp:write approvals:write"}) {
		t.Errorf("agents = %v, want the one agent Again with the scopes chosen last", names)
	}
	var agentID string
	r.env.Store.DB().Table("oauth_connections").Select("agent_id").Scan(&agentID)
	if res := r.ada.PostForm("/devices/clients/"+agentID+"/disconnect", nil); res.Status != http.StatusSeeOther {
		t.Fatalf("disconnect: %s", res)
	}
	r.code(client, redirect, oauth2.GenerateVerifier())
	agents, _ = r.env.Store.ListAgents(ctx, r.env.Account.ID)
	if len(agents) != 2 || agents[1].Name != "Again-2" || agents[1].Disabled || !agents[0].Disabled {
		t.Errorf("agents after a disconnect and a new connection = %+v, want Again disabled and a new Again-2", agents)
	}
	events, _, err := r.env.Store.Audit(ctx, r.env.Account.ID, audit.AuditFilter{ActorKind: asks.ActorPerson})
	if err != nil {
		t.Fatal(err)
	}
	var steps []string
	for _, e := range events {
		if e.Step == grants.StepClientConnected || e.Step == grants.StepClientDisconnected {
			steps = append(steps, e.Step+": "+e.Actor+": "+e.Note)
		}
	}
	want := []string{ // newest first
		"client_connected: ada: connected Again as agent Again-2 with mcp:read approvals:read",
		"client_disconnected: ada: disconnected Again (agent Again)",
		"client_connected: ada: connected Again again as agent Again with mcp:write approvals:write",
		"client_connected: ada: connected Again as agent Again with mcp:read approvals:read",
	}
	if !slices.Equal(steps, want) {
		t.Errorf("audit steps =\n  %s\nwant\n  %s", strings.Join(steps, "\n  "), strings.Join(want, "\n  "))
	}
}

// A grant lives only as long as its person's membership and sessions allow:
// Bob connects a client while signed in, then Bob signs out everywhere, or
// an admin removes him, or an admin disables the client's agent. From that
// moment its access token is refused on MCP reads and on approvals_create,
// its refresh token is refused, and its open GET stream and 2026-07-28
// subscriptions/listen are closed.
func TestAGrantEndsWithItsPersonsSessionsMembershipOrAgent(t *testing.T) {
	apptest.ForEachDatabase(t, testAGrantEnds)
}

func testAGrantEnds(t *testing.T, db apptest.Database) {
	r := newRigOn(t, db)
	const redirect = "http://127.0.0.1:9/cb"
	ask := apptest.ExplainedPullRequestAsk()
	delete(ask["context"].(map[string]any)["explanation"].(map[string]any), "evidence") // private content, which the account does not allow
	for i, how := range []string{"Bob signs out everywhere", "an admin removes Bob", "an admin disables the agent"} {
		t.Run(how, func(t *testing.T) {
			subject := fmt.Sprintf("bob-%d", i)
			bob := r.env.Join(r.env.Account.ID, core.RoleMember, subject)
			client := r.register("Bob's client "+strconv.Itoa(i), redirect)
			verifier := oauth2.GenerateVerifier()
			loc := r.consentAs(bob, r.authorizeQuery(client, redirect, verifier), people.AllScopes...)
			status, tok := r.exchange(client, redirect, verifier, loc.Query().Get("code"))
			if status != http.StatusOK {
				t.Fatalf("exchange: %d %v", status, tok)
			}
			access, refresh := tok["access_token"].(string), tok["refresh_token"].(string)
			session, err := apptest.Connect(context.Background(), r.mcpURL, access)
			if err != nil {
				t.Fatalf("connect with the access token: %v", err)
			}
			defer session.Close()
			filed, err := apptest.CallTool(context.Background(), session, "approvals_create", ask)
			if err != nil || filed.IsError {
				t.Fatalf("approvals_create before: %v %s", err, filed)
			}
			stream := apptest.OpenGETStream(t, r.mcpURL, access)
			listen := apptest.OpenListen(t, r.mcpURL, access, "countersign://approvals/"+filed.Out["approval_id"].(string))

			var agentID string
			r.env.Store.DB().Table("oauth_connections").Where("client_id = ?", client).Select("agent_id").Scan(&agentID)
			switch i {
			case 0:
				if res := bob.PostForm("/signout/everywhere", nil); res.Status != http.StatusSeeOther {
					t.Fatalf("sign out everywhere: %s", res)
				}
			case 1:
				person, err := r.env.Store.PersonBySubject(context.Background(), subject)
				if err != nil {
					t.Fatal(err)
				}
				if res := r.ada.PostForm("/admin/members/"+person.ID+"/remove", nil); res.Status != http.StatusSeeOther {
					t.Fatalf("remove Bob: %s", res)
				}
			case 2:
				if res := r.ada.PostForm("/admin/agents/"+url.PathEscape(r.agent(agentID).Name)+"/disable", url.Values{"reason": {"test"}}); res.Status != http.StatusSeeOther {
					t.Fatalf("disable: %s", res)
				}
			}

			stream.MustEnd(how)
			listen.MustEnd(how)
			// The SDK's client gave up its session when the server closed
			// its stream: its calls are sent by hand, on that session.
			create, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": map[string]any{"name": "approvals_create", "arguments": ask}})
			for what, body := range map[string]string{
				"approvals_list":   `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"approvals_list","arguments":{}}}`,
				"resources/read":   `{"jsonrpc":"2.0","id":8,"method":"resources/read","params":{"uri":"countersign://approvals/` + filed.Out["approval_id"].(string) + `"}}`,
				"approvals_create": string(create),
			} {
				if s, h := r.mcpPost(access, session.ID(), body); s != http.StatusUnauthorized || !strings.Contains(h, `error="invalid_token"`) {
					t.Errorf("%s after: HTTP %d %q, want 401 invalid_token", what, s, h)
				}
			}
			if s, h := r.mcpStatus(access); s != http.StatusUnauthorized || !strings.Contains(h, `error="invalid_token"`) {
				t.Errorf("initialize after: HTTP %d %q, want 401 invalid_token", s, h)
			}
			status, body := r.postForm(oauth.TokenPath, url.Values{"grant_type": {"refresh_token"}, "client_id": {client}, "refresh_token": {refresh}})
			if status != http.StatusBadRequest || body["error"] != "invalid_grant" {
				t.Errorf("a refresh after: HTTP %d %v, want invalid_grant", status, body)
			}
			var live int64
			r.env.Store.DB().Table("oauth_tokens").Where("agent_id = ? AND revoked_at IS NULL", agentID).Count(&live)
			if live != 0 {
				t.Errorf("%d tokens of the grant are not revoked", live)
			}
			if disabled := r.agent(agentID).Disabled; disabled != (i > 0) {
				t.Errorf("the agent is disabled: %v, want %v (a person signed out may connect the client again)", disabled, i > 0)
			}
		})
	}
}

// connectWithSDKTo is connectWithSDK to the endpoint written as endpoint.
func (r *rig) connectWithSDKTo(endpoint string, cfg *auth.AuthorizationCodeHandlerConfig, grants ...string) (*sdk.ClientSession, *oauth2.Token) {
	r.t.Helper()
	var got *oauth2.Token
	cfg.AuthorizationCodeFetcher = func(_ context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		u, err := url.Parse(args.URL)
		if err != nil || u.Path != oauth.AuthorizePath {
			return nil, fmt.Errorf("authorization URL %q is not the service's", args.URL)
		}
		loc := r.consent(u.Query(), grants...)
		return &auth.AuthorizationResult{Code: loc.Query().Get("code"), State: loc.Query().Get("state"), Iss: loc.Query().Get("iss")}, nil
	}
	cfg.NewTokenSource = func(ctx context.Context, c *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
		got = tok
		return c.TokenSource(ctx, tok), nil
	}
	h, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		r.t.Fatal(err)
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "oauth-test", Version: "1"}, nil)
	s, err := client.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: endpoint, OAuthHandler: h, MaxRetries: -1}, nil)
	if err != nil {
		r.t.Fatalf("connect with OAuth: %v", err)
	}
	r.t.Cleanup(func() { s.Close() })
	if got == nil {
		r.t.Fatal("the client got no token")
	}
	return s, got
}

func TestTheAuthorizationServerMetadataLeavesOutWhatIsNotServed(t *testing.T) {
	env := apptest.StartWeb(t, apptest.SQLite, nil)
	res, err := http.Get(env.URL + oauth.MetadataPath)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var doc map[string]any
	if err := json.NewDecoder(res.Body).Decode(&doc); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("HTTP %d, %v", res.StatusCode, err)
	}
	if _, ok := doc["jwks_uri"]; ok {
		t.Errorf("jwks_uri is present (%q), but no JWK Set is served", doc["jwks_uri"])
	}
	for name, v := range doc {
		if v == nil || v == "" || v == false || fmt.Sprint(v) == "[]" {
			t.Errorf("member %s is empty (%#v): leave it out", name, v)
		}
	}
	if doc["issuer"] != env.URL || doc["token_endpoint"] != env.URL+oauth.TokenPath {
		t.Errorf("issuer %v, token_endpoint %v: the document lost what it serves", doc["issuer"], doc["token_endpoint"])
	}
}

// refusedOnPage checks that an authorization request was refused on the
// service's own page, saying says, and not redirected anywhere.
func refusedOnPage(t *testing.T, res apptest.Response, says string) {
	t.Helper()
	if res.Status != http.StatusBadRequest || res.Header.Get("Location") != "" || !strings.Contains(string(res.Raw), says) {
		t.Errorf("%s (Location %q), want a 400 page saying %q and no redirect", res, res.Header.Get("Location"), says)
	}
}

func TestALoopbackRedirectURIMatchesOnAnyPort(t *testing.T) {
	r := newRig(t)
	client := r.register("Native", "http://127.0.0.1:9/cb", "http://[::1]:9/cb", "http://localhost/cb", "https://app.example:8443/cb")
	for _, tc := range []struct {
		redirect string
		matches  bool
	}{
		{"http://127.0.0.1:9/cb", true},
		{"http://127.0.0.1:51234/cb", true},
		{"http://127.0.0.1/cb", true},
		{"http://[::1]:61000/cb", true},
		{"http://localhost:40000/cb", true},
		{"http://127.0.0.1:51234/cb/other", false},
		{"http://127.0.0.1:51234/cb?x=1", false},
		{"http://127.0.0.2:51234/cb", false},
		{"http://localhost:40000/CB", false},
		{"http://user@127.0.0.1:51234/cb", false},
		{"http://127.0.0.1:051234/cb", false},
		{"https://127.0.0.1:51234/cb", false},
		{"https://app.example:8444/cb", false},
	} {
		t.Run(tc.redirect, func(t *testing.T) {
			verifier := oauth2.GenerateVerifier()
			q := r.authorizeQuery(client, tc.redirect, verifier)
			if !tc.matches {
				refusedOnPage(t, r.ada.Page(oauth.AuthorizePath+"?"+q.Encode()), "not one the client registered")
				return
			}
			loc := r.consent(q, "mcp:read", "approvals:read")
			if got := loc.Scheme + "://" + loc.Host + loc.Path; got != tc.redirect || loc.Query().Get("code") == "" {
				t.Fatalf("the code went to %s, want %s", loc, tc.redirect)
			}
			status, body := r.exchange(client, tc.redirect, verifier, loc.Query().Get("code"))
			if status != http.StatusOK {
				t.Errorf("exchange with the port used: HTTP %d %v", status, body)
			}
		})
	}
}

func TestACodeExchangedTwiceAtOnceIsSpentOnceAndItsTokensRevoked(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		r := newRigOn(t, db)
		const redirect = "http://127.0.0.1:9/cb"
		client := r.register("Twice", redirect)
		for round := range 5 {
			verifier := oauth2.GenerateVerifier()
			code := r.code(client, redirect, verifier)
			type reply struct {
				status int
				body   map[string]any
			}
			replies := make(chan reply, 2)
			start := make(chan struct{})
			for range 2 {
				go func() {
					<-start
					form := url.Values{"grant_type": {"authorization_code"}, "client_id": {client},
						"redirect_uri": {redirect}, "code_verifier": {verifier}, "code": {code}}
					res, err := http.PostForm(r.env.URL+oauth.TokenPath, form)
					if err != nil {
						replies <- reply{}
						return
					}
					defer res.Body.Close()
					var body map[string]any
					_ = json.NewDecoder(res.Body).Decode(&body)
					replies <- reply{res.StatusCode, body}
				}()
			}
			close(start)
			a, b := <-replies, <-replies
			if a.status != http.StatusOK {
				a, b = b, a
			}
			if a.status != http.StatusOK || b.status != http.StatusBadRequest || b.body["error"] != "invalid_grant" ||
				!strings.Contains(fmt.Sprint(b.body["error_description"]), "used before") {
				t.Fatalf("round %d: two exchanges at once answered HTTP %d %v and HTTP %d %v, want one 200 and one invalid_grant used before",
					round, a.status, a.body, b.status, b.body)
			}
			if s, _ := r.mcpStatus(a.body["access_token"].(string)); s != http.StatusUnauthorized {
				t.Errorf("round %d: the winner's access token after the second exchange: HTTP %d, want 401 (RFC 6749 §4.1.2)", round, s)
			}
			status, body := r.postForm(oauth.TokenPath, url.Values{"grant_type": {"refresh_token"}, "client_id": {client}, "refresh_token": {a.body["refresh_token"].(string)}})
			grantError(t, "the winner's refresh token", status, body, "invalid_grant", "revoked")
		}
		var live int64
		r.env.Store.DB().Table("oauth_tokens").Where("client_id = ? AND revoked_at IS NULL", client).Count(&live)
		if live != 0 {
			t.Errorf("%d tokens of the twice-spent codes are live, want none", live)
		}
	})
}

func TestAFailedExchangeLeavesTheCodeToTheRealClient(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		r := newRigOn(t, db)
		const redirect = "http://127.0.0.1:9/cb"
		client := r.register("Intercepted", redirect)
		verifier := oauth2.GenerateVerifier()
		code := r.code(client, redirect, verifier)
		status, body := r.exchange(client, redirect, oauth2.GenerateVerifier(), code)
		grantError(t, "an exchange with another verifier", status, body, "invalid_grant", "code_verifier does not match")
		status, body = r.exchange(client, "http://127.0.0.1:9/elsewhere", verifier, code)
		grantError(t, "an exchange with another redirect URI", status, body, "invalid_grant", "redirect_uri differs")
		status, body = r.exchange(client, redirect, verifier, code)
		if status != http.StatusOK {
			t.Fatalf("the real client's exchange after the failed ones: HTTP %d %v, want 200", status, body)
		}
		if s, _ := r.mcpStatus(body["access_token"].(string)); s != http.StatusOK {
			t.Errorf("the real client's token: HTTP %d", s)
		}
	})
}

func TestARefreshForAnUngrantedScopeIsRefusedBeforeTheTokenIsSpent(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		r := newRigOn(t, db)
		const redirect = "http://127.0.0.1:9/cb"
		client := r.register("Wider", redirect)
		verifier := oauth2.GenerateVerifier()
		status, tok := r.exchange(client, redirect, verifier, r.code(client, redirect, verifier)) // mcp:read approvals:read
		if status != http.StatusOK {
			t.Fatalf("exchange: %d %v", status, tok)
		}
		refresh := tok["refresh_token"].(string)
		status, body := r.postForm(oauth.TokenPath, url.Values{"grant_type": {"refresh_token"}, "client_id": {client}, "refresh_token": {refresh}, "scope": {"mcp:read approvals:write"}})
		grantError(t, "a refresh asking for approvals:write", status, body, "invalid_scope", `"approvals:write" was not granted`)
		status, body = r.postForm(oauth.TokenPath, url.Values{"grant_type": {"refresh_token"}, "client_id": {client}, "refresh_token": {refresh}})
		if status != http.StatusOK || body["scope"] != "mcp:read approvals:read" {
			t.Fatalf("the same refresh token after the refusal: HTTP %d %v, want a new pair (the refusal spent nothing)", status, body)
		}
		if s, _ := r.mcpStatus(body["access_token"].(string)); s != http.StatusOK {
			t.Errorf("the refreshed access token: HTTP %d", s)
		}
	})
}

// registerFrom posts a registration from the local address from and
// returns the HTTP status and the client_id given.
func (r *rig) registerFrom(from, name string, redirects ...string) (int, string) {
	r.t.Helper()
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	client := &http.Client{Transport: &http.Transport{DialContext: dialer.DialContext}}
	defer client.CloseIdleConnections()
	raw, _ := json.Marshal(map[string]any{"client_name": name, "redirect_uris": redirects})
	res, err := client.Post(r.env.URL+oauth.RegisterPath, "application/json", strings.NewReader(string(raw)))
	if err != nil {
		r.t.Fatalf("register from %s: %v", from, err)
	}
	defer res.Body.Close()
	var out oauthex.ClientRegistrationResponse
	_ = json.NewDecoder(res.Body).Decode(&out)
	return res.StatusCode, out.ClientID
}

func TestDynamicRegistrationIsCappedAndForgetsWhatNobodyConnects(t *testing.T) {
	const redirect = "http://127.0.0.1:9/cb"
	t.Run("the loopback addresses of one machine share one limit", func(t *testing.T) {
		r := newRig(t)
		created := 0
		for i := 2; i <= 41; i++ {
			if status, _ := r.registerFrom(fmt.Sprintf("127.0.0.%d", i), fmt.Sprintf("spam %d", i), redirect); status == http.StatusCreated {
				created++
			} else if status != http.StatusTooManyRequests {
				t.Fatalf("registration %d: HTTP %d, want 201 or 429", i, status)
			}
		}
		var kept int64
		r.env.Store.DB().Table("oauth_clients").Count(&kept)
		if created != 5 || kept != 5 {
			t.Errorf("40 registrations from 40 loopback addresses made %d clients (%d kept), want the burst of 5", created, kept)
		}
	})
	t.Run("a host registering on every start gets one client and, connected, one agent", func(t *testing.T) {
		r := newRig(t)
		var ids []string
		for range 2 {
			id := r.register("Restarting Host", redirect, "http://localhost:9/cb")
			r.code(id, redirect, oauth2.GenerateVerifier())
			ids = append(ids, id)
		}
		if ids[1] != ids[0] {
			t.Errorf("the same metadata registered twice gave client_ids %v, want one", ids)
		}
		agents, _ := r.env.Store.ListAgents(context.Background(), r.env.Account.ID)
		if len(agents) != 1 || agents[0].Disabled {
			t.Errorf("agents after two registrations and consents = %+v, want one enabled", agents)
		}
		if id := r.register("Restarting Host", "http://127.0.0.1:53117/cb", "http://localhost:40001/cb"); id != ids[0] {
			t.Errorf("the host registering again on new loopback ports got %s, want the same client %s", id, ids[0])
		}
		if id := r.register("Restarting Host", "http://localhost:9/cb"); id == ids[0] {
			t.Error("other redirect URIs were taken as the same client")
		}
		if id := r.register("Restarting Host", "http://127.0.0.1:9/other", "http://localhost:9/cb"); id == ids[0] {
			t.Error("another loopback path was taken as the same client")
		}
	})
	t.Run("clients nobody connects are capped, expire after a day and are swept", func(t *testing.T) {
		r := newRig(t)
		r.env.App.OAuth.MaxUnconnectedClients = 2
		first, second := r.register("Waiting 1", redirect), r.register("Waiting 2", redirect)
		status, body := r.registerJSON(`{"client_name":"Waiting 3","redirect_uris":["` + redirect + `"]}`)
		if status != http.StatusTooManyRequests || body["error"] != "too_many_requests" || !strings.Contains(fmt.Sprint(body["error_description"]), "2 registered clients are waiting") {
			t.Errorf("a third client while two wait: HTTP %d %v, want 429 naming the cap", status, body)
		}
		r.code(second, redirect, oauth2.GenerateVerifier()) // ada connects it: it no longer waits
		r.register("Waiting 3", redirect)
		// A day on for the clients (not for ada's session).
		r.env.Store.DB().Table("oauth_clients").Where("1 = 1").Update("created_at", time.Now().Add(-grants.OAuthClientUnusedLife-time.Minute))
		refusedOnPage(t, r.ada.Page(oauth.AuthorizePath+"?"+r.authorizeQuery(first, redirect, oauth2.GenerateVerifier()).Encode()), "no client is registered")
		if _, err := r.env.Store.SweepExpired(context.Background()); err != nil {
			t.Fatal(err)
		}
		var names []string
		r.env.Store.DB().Table("oauth_clients").Order("name").Pluck("name", &names)
		if !slices.Equal(names, []string{"Waiting 2"}) {
			t.Errorf("clients kept after a day = %v, want only the connected Waiting 2", names)
		}
		r.code(second, redirect, oauth2.GenerateVerifier()) // the connected client lives on
	})
}

// registerJSON posts a raw registration and reads the JSON answer.
func (r *rig) registerJSON(raw string) (int, map[string]any) {
	r.t.Helper()
	res, err := http.Post(r.env.URL+oauth.RegisterPath, "application/json", strings.NewReader(raw))
	if err != nil {
		r.t.Fatal(err)
	}
	defer res.Body.Close()
	var body map[string]any
	_ = json.NewDecoder(res.Body).Decode(&body)
	return res.StatusCode, body
}

// originResource reads the origin's protected-resource metadata, where a
// host given only the service's address starts, and returns the resource
// it names.
func (r *rig) originResource() string {
	r.t.Helper()
	res, err := http.Get(r.env.URL + "/.well-known/oauth-protected-resource")
	if err != nil {
		r.t.Fatal(err)
	}
	defer res.Body.Close()
	var prm oauthex.ProtectedResourceMetadata
	if err := json.NewDecoder(res.Body).Decode(&prm); err != nil || prm.Resource != r.mcpURL {
		r.t.Fatalf("the origin's metadata names resource %q (%v), want the MCP endpoint %s", prm.Resource, err, r.mcpURL)
	}
	return prm.Resource
}

func TestTheGoSDKConnectsFromTheOriginsMetadataWithOrWithoutASlash(t *testing.T) {
	r := newRig(t)
	resource := r.originResource()
	for _, endpoint := range []string{resource, resource + "/"} {
		t.Run(endpoint, func(t *testing.T) {
			session, tok := r.connectWithSDKTo(endpoint, &auth.AuthorizationCodeHandlerConfig{
				DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
					ClientName: "Go SDK Host", RedirectURIs: []string{"http://127.0.0.1:9/callback"},
					GrantTypes: []string{"authorization_code", "refresh_token"},
				}},
			}, people.AllScopes...)
			if res, err := apptest.CallTool(context.Background(), session, "approvals_list", map[string]any{}); err != nil || res.IsError {
				t.Errorf("approvals_list: %+v %v", res, err)
			}
			var audience string
			r.env.Store.DB().Table("oauth_tokens").Where("token_hash = ?", core.HashToken(tok.AccessToken)).Select("resource").Scan(&audience)
			if audience != r.mcpURL {
				t.Errorf("the token is for %q, want the one resource %s", audience, r.mcpURL)
			}
		})
	}
}

func TestTheTypeScriptSDKConnectsFromTheOriginsMetadataWithOrWithoutASlash(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("node is not on PATH")
		}
		t.Skip("node is not on PATH")
	}
	if _, err := os.Stat("../node_modules/@modelcontextprotocol/sdk/package.json"); err != nil {
		t.Fatal("node_modules/@modelcontextprotocol/sdk is missing: run npm ci")
	}
	r := newRig(t)
	// The person: opens the authorization URL the host shows, consents with
	// every scope, and answers with where their browser is sent.
	consent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		u, err := url.Parse(req.URL.Query().Get("u"))
		if err != nil || u.Path != oauth.AuthorizePath {
			http.Error(w, "not the service's authorization URL", http.StatusBadRequest)
			return
		}
		fmt.Fprint(w, r.consent(u.Query(), people.AllScopes...).String())
	}))
	t.Cleanup(consent.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "testdata/ts_sdk_oauth_host.mjs", r.env.URL, consent.URL)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("the TypeScript SDK host: %v\n%s", err, stderr.String())
	}
	var out struct {
		OriginResource string `json:"origin_resource"`
		Endpoints      map[string]struct {
			ClientID  string `json:"client_id"`
			Resource  string `json:"resource"`
			Scope     string `json:"scope"`
			Tools     int    `json:"tools"`
			CallError bool   `json:"call_error"`
		} `json:"endpoints"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("the host printed %q: %v", raw, err)
	}
	if out.OriginResource != r.mcpURL {
		t.Errorf("the origin's metadata named %q, want %s", out.OriginResource, r.mcpURL)
	}
	for _, endpoint := range []string{r.mcpURL, r.mcpURL + "/"} {
		got, ok := out.Endpoints[endpoint]
		if !ok || got.Resource != r.mcpURL || got.Tools == 0 || got.CallError || len(strings.Fields(got.Scope)) != len(people.AllScopes) {
			t.Errorf("%s: %+v (%v), want a token for %s with every scope, tools listed and approvals_list answered", endpoint, got, ok, r.mcpURL)
		}
	}
	if a, b := out.Endpoints[r.mcpURL].ClientID, out.Endpoints[r.mcpURL+"/"].ClientID; a == "" || a != b {
		t.Errorf("client_ids %q and %q: the same metadata registered twice is one client", a, b)
	}
	agents, _ := r.env.Store.ListAgents(context.Background(), r.env.Account.ID)
	if len(agents) != 1 || agents[0].Name != "TS-SDK-Host" {
		t.Errorf("agents = %+v, want the one agent TS-SDK-Host", agents)
	}
}
