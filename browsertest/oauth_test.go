package browsertest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/oauth"
)

// TestAnOAuthHostConnectsWithAPasskeyInChromium connects the go-sdk's
// client to the MCP endpoint as a host that speaks OAuth does: a 401, the
// metadata, dynamic registration, PKCE, then the person, signed out, opens
// the authorization page in Chromium, signs in with their passkey, unticks a
// scope and connects; the browser lands on the host's redirect URI with the
// code, and the client calls a tool with its token. The person then
// disconnects it on the devices page, and the token stops.
func TestAnOAuthHostConnectsWithAPasskeyInChromium(t *testing.T) {
	s := start(t, apptest.SQLite)
	s.signUp("ada", core.RoleOwner)
	p := s.page
	undo := p.WithoutPasskeyAutofill()
	p.ClickToLoad("[data-testid=sign-out]", "/signin", "[data-testid=sign-in]")

	type landing struct{ code, state, iss string }
	landed := make(chan landing, 1)
	host := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/callback" {
			http.NotFound(w, r)
			return
		}
		q := r.URL.Query()
		landed <- landing{q.Get("code"), q.Get("state"), q.Get("iss")}
		// An icon of its own, so the browser asks the host for no /favicon.ico.
		fmt.Fprint(w, `<!doctype html><title>Connected</title><link rel="icon" href="data:,"><h1>Connected</h1>`)
	}))
	t.Cleanup(host.Close)
	redirect := host.URL + "/callback"

	var consent struct{ client, redirect, account string }
	fetch := func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		u, err := url.Parse(args.URL)
		if err != nil || u.Path != oauth.AuthorizePath {
			return nil, fmt.Errorf("authorization URL %q is not the service's", args.URL)
		}
		p.Go(u.RequestURI())
		if p.Path() != "/signin" {
			return nil, fmt.Errorf("a signed-out person opening the authorization URL is at %s, not /signin", p.Path())
		}
		p.ClickToLoad("[data-testid=sign-in]", oauth.AuthorizePath, "[data-testid=consent]")
		consent.client = p.Text("[data-testid=consent-client]")
		consent.redirect = p.Text("[data-testid=consent-redirect]")
		consent.account = p.Text("[data-testid=consent-account]")
		p.Click(`[data-testid="scope-approvals:write"]`)
		p.Click("[data-testid=consent-approve]")
		select {
		case l := <-landed:
			return &auth.AuthorizationResult{Code: l.code, State: l.state, Iss: l.iss}, nil
		case <-time.After(StepTimeout):
			return nil, fmt.Errorf("the browser never reached the host's redirect URI; it shows:\n%s", p.Dump())
		}
	}
	var token *oauth2.Token
	handler, err := auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			ClientName: "Chromium Host", RedirectURIs: []string{redirect}, GrantTypes: []string{"authorization_code", "refresh_token"},
		}},
		AuthorizationCodeFetcher: fetch,
		NewTokenSource: func(ctx context.Context, c *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
			token = tok
			return c.TokenSource(ctx, tok), nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "chromium-host", Version: "1"}, nil)
	session, err := client.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: s.env.URL + "/mcp", OAuthHandler: handler, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("connect with OAuth: %v", err)
	}
	t.Cleanup(func() { session.Close() })
	undo()

	hostAddr := strings.TrimPrefix(host.URL, "http://")
	for what, ok := range map[string]bool{
		"the client's name, unverified": strings.Contains(consent.client, "Chromium Host") && strings.Contains(strings.ToLower(consent.client), "unverified"),
		"the redirect host":             strings.Contains(consent.redirect, hostAddr),
		"the account and the person":    strings.Contains(consent.account, "default, as ada"),
	} {
		if !ok {
			t.Errorf("the consent page did not show %s: client %q, redirect %q, account %q", what, consent.client, consent.redirect, consent.account)
		}
	}
	scope, _ := token.Extra("scope").(string)
	if got := strings.Fields(scope); !slices.Equal(slices.Sorted(slices.Values(got)), []string{"approvals:read", "mcp:read", "mcp:write"}) {
		t.Errorf("scope = %q, want the three ada kept", scope)
	}
	if res, err := apptest.CallTool(context.Background(), session, "approvals_list", map[string]any{}); err != nil || res.IsError {
		t.Errorf("approvals_list with the OAuth token: %+v %v", res, err)
	}
	res, err := apptest.CallTool(context.Background(), session, "approvals_create", map[string]any{"kind": "decision"})
	if err != nil || res.Code != "PERMISSION_DENIED" {
		t.Errorf("approvals_create without approvals:write: %+v %v, want PERMISSION_DENIED", res, err)
	}

	p.Go("/devices")
	if text := p.Text("[data-testid=connected-clients]"); !strings.Contains(text, "Chromium Host") || !strings.Contains(text, "Chromium-Host") {
		t.Fatalf("the devices page does not list the client and its agent: %q", text)
	}
	p.ClickToLoad("[data-testid=disconnect-client]", "/devices", "[data-testid=client-disconnected]")
	req, _ := http.NewRequest(http.MethodPost, s.env.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Authorization", "Bearer "+token.AccessToken)
	req.Header.Set("Content-Type", "application/json")
	after, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	after.Body.Close()
	if after.StatusCode != http.StatusUnauthorized {
		t.Errorf("the token after disconnecting: HTTP %d, want 401", after.StatusCode)
	}
}
