package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/people"
)

// Behind a TLS proxy on the same machine that keeps the public Host (nginx's
// proxy_set_header Host $host, Caddy's default), an agent reaches /mcp; a
// request that reaches the loopback listener with some other name is still
// refused as DNS rebinding.
func TestMCPBehindAProxyThatKeepsThePublicHost(t *testing.T) {
	s := startServer(t, apptest.SQLite, map[string]string{"COUNTERSIGN_BASE_URL": "https://approvals.example.com"})
	created := mustCLI(t, s.env, "agent", "create", "--name", "proxied", "--scopes", strings.Join(people.AllScopes, ","))
	lines := strings.Split(strings.TrimSpace(created.stdout), "\n")
	token := lines[len(lines)-1]

	upstream, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(upstream)
			r.Out.Host = "approvals.example.com" // as the browser or agent asked for it
			r.SetXForwarded()
		},
		FlushInterval: -1, // proxy_buffering off
	}
	front := httptest.NewServer(proxy)
	defer front.Close()

	ctx := context.Background()
	session, err := apptest.Connect(ctx, front.URL+"/mcp", token)
	if err != nil {
		t.Fatalf("connect through the proxy: %v", err)
	}
	defer session.Close()
	r, err := apptest.CallTool(ctx, session, "approvals_create", pullRequestAsk(1, 1))
	if err != nil || r.IsError {
		t.Fatalf("approvals_create through the proxy: %v %+v", err, r)
	}

	for host, want := range map[string]int{"evil.example": http.StatusForbidden, "approvals.example.com": http.StatusUnauthorized, "localhost": http.StatusUnauthorized} {
		req, err := http.NewRequest(http.MethodPost, s.URL+"/mcp", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != want {
			t.Errorf("POST /mcp on 127.0.0.1 with Host %s and no token = %d, want %d", host, res.StatusCode, want)
		}
	}
}
