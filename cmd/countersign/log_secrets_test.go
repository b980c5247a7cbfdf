package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/outbox"
	"github.com/countersign/countersign/models/people"
	"github.com/countersign/countersign/oauth"
	"github.com/countersign/countersign/requestlog"
)

// secrets are the one-time secrets a run of flows met, by what they are.
type secrets map[string]string

func (s secrets) add(t *testing.T, what, secret string) {
	t.Helper()
	if len(secret) < 16 {
		t.Fatalf("%s %q: want a secret the flow gave", what, secret)
	}
	s[what] = secret
}

// The service's log holds no one-time secret of a full run of flows: the
// owner's setup link, an invite, a device link, a push link and an OAuth
// authorization (code, access and refresh tokens, before and after a
// refresh), nor the agent token. Paths that carry a link's secret are
// logged with its hash instead. The setup link is the one exception, by
// design: serve prints it once at start for the operator, who has no other
// way to it (docs/review-28); the request lines of its use hold its hash.
func TestTheLogHoldsNoOneTimeSecretOfAFullRunOfFlows(t *testing.T) {
	ps := apptest.NewPushService(t)
	s := startOnLocalhost(t, map[string]string{"COUNTERSIGN_PUSH_ALLOWED_HOSTS": ps.Host(), "COUNTERSIGN_PUSH_RETRY": "10ms"})
	seen := secrets{}
	ctx := context.Background()

	// The owner's setup link, printed at start.
	var setup string
	for deadline := time.Now().Add(20 * time.Second); setup == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := setupLink.FindStringSubmatch(s.log.String()); m != nil {
			setup = m[1][strings.Index(m[1], "/invite/")+len("/invite/"):]
		}
	}
	seen.add(t, "the setup link", setup)
	ada := apptest.NewBrowser(t, s.URL)
	if r := ada.Get("/invite/" + setup); r.Status != http.StatusOK {
		t.Fatalf("open the setup link: %s", r)
	}
	if r := ada.AcceptInvite(setup, "ada"); r.Status != http.StatusOK {
		t.Fatalf("register the owner from the setup link: %s", r)
	}
	seen.add(t, "ada's session", ada.Session())

	// An invite, made on the members page and accepted.
	page := ada.PostForm("/admin/invites", url.Values{"role": {"member"}, "_csrf": {ada.CSRF}})
	invite := regexp.MustCompile(`/invite/(inv_[A-Za-z0-9_-]+)`).FindStringSubmatch(string(page.Raw))
	if page.Status != http.StatusOK || invite == nil {
		t.Fatalf("make an invite: %s", page)
	}
	seen.add(t, "an invite", invite[1])
	bob := apptest.NewBrowser(t, s.URL)
	if r := bob.Get("/invite/" + invite[1]); r.Status != http.StatusOK {
		t.Fatalf("open the invite: %s", r)
	}
	if r := bob.AcceptInvite(invite[1], "bob"); r.Status != http.StatusOK {
		t.Fatalf("accept the invite: %s", r)
	}

	// A device link: ada confirms with her passkey, a new phone opens it.
	begin := ada.Post("/devices/authorise/begin", map[string]any{})
	id, options := begin.Ceremony()
	granted := ada.Post("/devices/authorise/finish", map[string]any{"ceremony": id, "credential": ada.Sign(options)})
	grant, _ := granted.Body["grant"].(string)
	seen.add(t, "a device grant", grant)
	made := ada.Post("/devices/link", map[string]string{"grant": grant})
	link, _ := made.Body["link"].(string)
	if !strings.HasPrefix(link, s.URL+"/add-device/dln_") {
		t.Fatalf("make a device link: %s", made)
	}
	path := strings.TrimPrefix(link, s.URL)
	seen.add(t, "a device link", strings.TrimPrefix(path, "/add-device/"))
	phone := apptest.NewBrowser(t, s.URL)
	if r := phone.Get(path); r.Status != http.StatusOK {
		t.Fatalf("open the device link: %s", r)
	}
	begin = phone.Post(path+"/begin", map[string]string{"device_name": "Phone"})
	id, options = begin.Ceremony()
	credential, err := phone.Passkey.Register(phone.Origin, options)
	if err != nil {
		t.Fatal(err)
	}
	if r := phone.Post(path+"/finish", map[string]any{"ceremony": id, "credential": json.RawMessage(credential)}); r.Status != http.StatusOK {
		t.Fatalf("finish on the device link: %s", r)
	}

	// A push link: the phone subscribes, an agent asks, the push's link
	// opens the ask and decides it.
	endpoint, p256dh, auth := ps.Subscribe("phone")
	if r := phone.Post("/push/subscribe", map[string]any{"endpoint": endpoint, "keys": map[string]string{"p256dh": p256dh, "auth": auth}}); r.Status/100 != 2 {
		t.Fatalf("subscribe: %s", r)
	}
	agentToken := lastLine(mustCLI(t, s.env, "agent", "create", "--name", "bot", "--scopes", strings.Join(people.AllScopes, ",")).stdout)
	seen.add(t, "an agent token", agentToken)
	session, err := apptest.Connect(ctx, s.URL+"/mcp", agentToken)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	filed, err := apptest.CallTool(ctx, session, "approvals_create", map[string]any{
		"kind": "pull_request", "title": "Merge acme/web#920", "approve_means": "I merge #920", "deny_means": "#920 stays open",
		"payload": map[string]any{"pull_request": map[string]any{"repo": "acme/web", "number": 920, "head": "4f1c2a9e0b7d3c5a8e6f1b2d4c9a7e3f5b8d0c1a", "title": "Fix"}},
		"context": map[string]any{"no_context_reason": "a test"},
	})
	if err != nil || filed.IsError {
		t.Fatalf("file an ask: %v %s", err, filed)
	}
	ask := filed.Out["approval_id"].(string)
	var pushed string
	for pushed == "" {
		d, ok := ps.Next(10 * time.Second)
		if !ok {
			t.Fatal("no push of the ask arrived")
		}
		var m outbox.PushMessage
		if err := json.Unmarshal(d.Plaintext, &m); err != nil {
			t.Fatal(err)
		}
		if m.Event == outbox.PushAsk && m.ApprovalID == ask {
			pushed = m.URL
		}
	}
	seen.add(t, "a push link", strings.TrimPrefix(pushed, "/link/"+ask+"/"))
	opener := apptest.NewBrowser(t, s.URL)
	opener.Passkey = ada.Passkey
	if r := opener.Get(pushed); r.Status != http.StatusSeeOther {
		t.Fatalf("open the push link: %s", r)
	}
	seen.add(t, "a push link's cookie", opener.Cookie("cs_link_"+ask))
	ch := opener.Post("/link/"+ask+"/challenge", map[string]string{"decision": "approve"})
	id, options = ch.Ceremony()
	if r := opener.Post("/link/"+ask+"/decide", map[string]any{"ceremony": id, "credential": opener.Sign(options)}); r.Status != http.StatusOK {
		t.Fatalf("decide through the push link: %s", r)
	}

	// An OAuth client: registered, authorised by ada, its code exchanged,
	// its token used and refreshed.
	redirect := "http://127.0.0.1:9/callback"
	raw, _ := json.Marshal(map[string]any{"client_name": "log test", "redirect_uris": []string{redirect}})
	res, err := http.Post(s.URL+oauth.RegisterPath, "application/json", strings.NewReader(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	var client struct {
		ClientID string `json:"client_id"`
	}
	_ = json.NewDecoder(res.Body).Decode(&client)
	res.Body.Close()
	verifier, state := oauth2.GenerateVerifier(), oauth2.GenerateVerifier()
	seen.add(t, "a PKCE verifier", verifier)
	seen.add(t, "an OAuth state", state)
	q := url.Values{"response_type": {"code"}, "client_id": {client.ClientID}, "redirect_uri": {redirect},
		"code_challenge": {oauth2.S256ChallengeFromVerifier(verifier)}, "code_challenge_method": {"S256"},
		"resource": {s.URL + "/mcp"}, "state": {state}, "scope": {"mcp:read mcp:write approvals:read approvals:write"}}
	if r := ada.Page(oauth.AuthorizePath + "?" + q.Encode()); r.Status != http.StatusOK {
		t.Fatalf("the consent page: %s", r)
	}
	form := url.Values{}
	for k, v := range q {
		form[k] = v
	}
	form["grant"] = []string{"mcp:read", "approvals:read"}
	form.Set("decision", "approve")
	form.Set("_csrf", ada.CSRF)
	consent := ada.PostForm(oauth.AuthorizePath, form)
	to, err := url.Parse(consent.Header.Get("Location"))
	if err != nil || to.Query().Get("code") == "" {
		t.Fatalf("consent: %s (Location %q)", consent, consent.Header.Get("Location"))
	}
	seen.add(t, "an authorization code", to.Query().Get("code"))
	token := func(form url.Values) (access, refresh string) {
		res, err := http.PostForm(s.URL+oauth.TokenPath, form)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var tok struct {
			AccessToken  string `json:"access_token"`
			RefreshToken string `json:"refresh_token"`
		}
		if err := json.NewDecoder(res.Body).Decode(&tok); err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("POST %s %s: HTTP %d %v", oauth.TokenPath, form.Get("grant_type"), res.StatusCode, err)
		}
		return tok.AccessToken, tok.RefreshToken
	}
	access, refresh := token(url.Values{"grant_type": {"authorization_code"}, "client_id": {client.ClientID}, "redirect_uri": {redirect},
		"code_verifier": {verifier}, "code": {to.Query().Get("code")}, "resource": {s.URL + "/mcp"}})
	seen.add(t, "an access token", access)
	seen.add(t, "a refresh token", refresh)
	oauthSession, err := apptest.Connect(ctx, s.URL+"/mcp", access)
	if err != nil {
		t.Fatalf("connect with the OAuth token: %v", err)
	}
	if r, err := apptest.CallTool(ctx, oauthSession, "approvals_get", map[string]any{"approval_id": ask}); err != nil || r.IsError {
		t.Fatalf("read the ask with the OAuth token: %v %s", err, r)
	}
	oauthSession.Close()
	access, refresh = token(url.Values{"grant_type": {"refresh_token"}, "client_id": {client.ClientID}, "refresh_token": {refresh}, "resource": {s.URL + "/mcp"}})
	seen.add(t, "a refreshed access token", access)
	seen.add(t, "a refreshed refresh token", refresh)

	// A path no route matches is hashed too, by the secrets' prefixes.
	for _, p := range []string{"/invite/" + invite[1] + "/no-such-page", path + "/no-such-page"} {
		if r := bob.Get(p); r.Status != http.StatusNotFound && r.Status != http.StatusMethodNotAllowed {
			t.Fatalf("GET %s: %s, want 404", p, r)
		}
	}

	// Every line is written once the server has stopped.
	if err := s.stop(t); err != nil {
		t.Fatalf("stop: %v", err)
	}
	log := s.log.String()
	for what, secret := range seen {
		n := strings.Count(log, secret)
		if what == "the setup link" {
			if lines := setupLink.FindAllString(log, -1); n != 1 || len(lines) != 1 {
				t.Errorf("the setup link is in the log %d times, want once, where serve prints it at start", n)
			}
			continue
		}
		if n > 0 {
			t.Errorf("the log holds %s (%d times)", what, n)
		}
	}
	// The paths are still there, each secret hashed, so that whoever holds a
	// link can find its lines.
	for what, path := range map[string]string{
		"the setup link": "/invite/" + setup + "/finish", "an invite": "/invite/" + invite[1], "a device link": "/add-device/" + seen["a device link"],
		"a push link": "/link/" + ask + "/" + seen["a push link"],
	} {
		want := "path=" + requestlog.Path(path) + " "
		if !strings.Contains(log, want) || strings.Contains(want, "_") && !strings.Contains(want, "sha256:") {
			t.Errorf("the log has no line of %s as %q", what, want)
		}
	}
	if t.Failed() {
		t.Logf("the log:\n%s", log)
	}
}
