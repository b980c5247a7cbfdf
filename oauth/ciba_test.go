package oauth_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/oidc"
	"github.com/countersign/countersign/oauth"
	"github.com/go-jose/go-jose/v4"
)

// cibaRig is the service with ada (signed in, with a passkey) and bob, and
// CIBA clients that authenticate with client_secret_basic.
type cibaRig struct {
	*rig
	bob *apptest.Browser
}

func newCIBARig(t *testing.T, db apptest.Database, overrides map[string]string) *cibaRig {
	t.Helper()
	env := apptest.StartWeb(t, db, overrides)
	r := &rig{t: t, env: env, ada: env.Join(env.Account.ID, core.RoleOwner, "ada"), mcpURL: env.URL + "/mcp"}
	return &cibaRig{rig: r, bob: env.Join(env.Account.ID, core.RoleMember, "bob")}
}

// cibaClient is a registered client and its secret.
type cibaClient struct {
	*oidc.Client
	secret string
}

// client registers a client_secret_basic client of mode that may ask the
// people with those subjects.
func (r *cibaRig) client(name, mode, endpoint string, subjects ...string) cibaClient {
	r.t.Helper()
	ctx := context.Background()
	var ids []string
	for _, s := range subjects {
		m, err := r.env.Store.MemberBySubject(ctx, r.env.Account.ID, s)
		if err != nil {
			r.t.Fatal(err)
		}
		ids = append(ids, m.ID)
	}
	secret := core.RandomToken("ccs_")
	c, err := r.env.Store.RegisterCIBAClient(ctx, models.RegisterCIBAClient{AccountID: r.env.Account.ID, Name: name,
		AuthMethod: oidc.AuthClientSecretBasic, SecretSHA256: core.HashToken(secret), DeliveryMode: mode,
		NotificationEndpoint: endpoint, PersonIDs: ids, CreatedBy: ids[0]})
	if err != nil {
		r.t.Fatalf("register %s: %v", name, err)
	}
	return cibaClient{Client: c, secret: secret}
}

// post sends a form to a CIBA endpoint as c, with HTTP Basic.
func (r *cibaRig) post(c cibaClient, path string, form url.Values) (int, map[string]any, http.Header) {
	r.t.Helper()
	req, err := http.NewRequest(http.MethodPost, r.env.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		r.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(c.ID), url.QueryEscape(c.secret))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatalf("POST %s: %v", path, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	return res.StatusCode, body, res.Header
}

// start makes a CIBA request of c for the person login_hint names.
func (r *cibaRig) start(c cibaClient, loginHint string, more url.Values) (int, map[string]any, http.Header) {
	r.t.Helper()
	form := url.Values{"scope": {"openid"}, "login_hint": {loginHint}}
	for k, v := range more {
		form[k] = v
	}
	return r.post(c, oauth.BackchannelPath, form)
}

// poll is one poll of the token endpoint.
func (r *cibaRig) poll(c cibaClient, authReqID string) (int, map[string]any) {
	r.t.Helper()
	status, body, _ := r.post(c, oauth.TokenPath, url.Values{"grant_type": {oauth.CIBAGrantType}, "auth_req_id": {authReqID}})
	return status, body
}

// askOf is the ask a request filed.
func (r *cibaRig) askOf(authReqID any) string {
	r.t.Helper()
	id, _ := authReqID.(string)
	req, err := r.env.Store.CIBARequest(context.Background(), core.HashToken(id))
	if err != nil {
		r.t.Fatalf("no request for %q: %v", id, err)
	}
	return req.ApprovalID
}

// A client past its rate limit is refused with 429 slow_down and a
// Retry-After: per person from every client together, and per client; a
// person at their limit is still asked by nobody, whoever asks.
func TestCIBARequestsAreLimitedPerPersonAndPerClient(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		r := newCIBARig(t, db, map[string]string{"COUNTERSIGN_CIBA_PER_PERSON": "2", "COUNTERSIGN_CIBA_PER_CLIENT": "3"})
		shop := r.client("Shop", oidc.DeliveryPoll, "", "ada", "bob")
		bank := r.client("Bank", oidc.DeliveryPoll, "", "ada", "bob")
		for i := range 2 {
			if status, body, _ := r.start(shop, "ada", nil); status != http.StatusOK {
				t.Fatalf("request %d for ada: %d %v", i+1, status, body)
			}
		}
		for _, c := range []cibaClient{shop, bank} {
			status, body, h := r.start(c, "ada", nil)
			if status != http.StatusTooManyRequests || body["error"] != "slow_down" || h.Get("Retry-After") == "" ||
				!strings.Contains(body["error_description"].(string), "at most 2 requests a minute for one person") {
				t.Errorf("%s's request for ada past her limit: %d %v Retry-After %q; want 429 slow_down naming the limit", c.Name, status, body, h.Get("Retry-After"))
			}
		}
		if status, body, _ := r.start(shop, "bob", nil); status != http.StatusOK {
			t.Fatalf("shop's third request, for bob: %d %v", status, body)
		}
		status, body, _ := r.start(shop, "bob", nil)
		if status != http.StatusTooManyRequests || !strings.Contains(body["error_description"].(string), "for one client") {
			t.Errorf("shop's fourth request in a minute: %d %v, want 429 naming the client's limit", status, body)
		}
		var n int64
		if err := r.env.Store.DB().Table("ciba_requests").Count(&n).Error; err != nil || n != 3 {
			t.Errorf("%d requests kept (%v), want the 3 let in", n, err)
		}
	})
}

// Ten requests for one person at once let in exactly as many as the
// limit: the count and the insert are one transaction under a lock on the
// person.
func TestCIBARequestsMadeAtOnceNeverPassTheLimitTogether(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		r := newCIBARig(t, db, map[string]string{"COUNTERSIGN_CIBA_PER_PERSON": "3"})
		shop := r.client("Shop", oidc.DeliveryPoll, "", "ada")
		var ok, limited atomic.Int32
		var wg sync.WaitGroup
		for range 10 {
			wg.Go(func() {
				status, _, _ := r.start(shop, "ada", nil)
				switch status {
				case http.StatusOK:
					ok.Add(1)
				case http.StatusTooManyRequests:
					limited.Add(1)
				}
			})
		}
		wg.Wait()
		if ok.Load() != 3 || limited.Load() != 7 {
			t.Errorf("%d let in and %d limited, want 3 and 7", ok.Load(), limited.Load())
		}
	})
}

// The poll mode from pending to tokens: pending, slow_down when too soon,
// then once approved the tokens, once; a second redemption is invalid_grant,
// and so is another client's poll. The access token introspects as active
// with the approved details until its client is revoked.
func TestACIBARequestIsRedeemedOnceAndItsTokenIntrospects(t *testing.T) {
	r := newCIBARig(t, apptest.SQLite, nil)
	shop := r.client("Shop", oidc.DeliveryPoll, "", "ada")
	other := r.client("Other", oidc.DeliveryPoll, "", "ada")
	details := `[{"type":"countersign_action","action":"Deploy api","target":"prod"}]`
	status, body, _ := r.start(shop, "ada", url.Values{"authorization_details": {details}, "binding_message": {"Deploy 7"}})
	if status != http.StatusOK || body["interval"] != float64(5) || body["expires_in"] != float64(600) {
		t.Fatalf("backchannel: %d %v, want 200 with interval 5 and expires_in 600", status, body)
	}
	authReqID := body["auth_req_id"].(string)
	if status, body := r.poll(shop, authReqID); status != http.StatusBadRequest || body["error"] != "authorization_pending" {
		t.Fatalf("first poll: %d %v, want authorization_pending", status, body)
	}
	if status, body := r.poll(shop, authReqID); body["error"] != "slow_down" {
		t.Fatalf("a poll at once after: %d %v, want slow_down", status, body)
	}
	id := r.askOf(authReqID)
	if res := r.ada.Decide(id, "approve", ""); res.Status != http.StatusOK {
		t.Fatalf("ada approves: %s", res)
	}
	if status, body := r.poll(other, authReqID); status != http.StatusBadRequest || body["error"] != "invalid_grant" {
		t.Fatalf("another client's poll: %d %v, want invalid_grant", status, body)
	}
	var got []map[string]any
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			status, body := r.poll(shop, authReqID)
			mu.Lock()
			defer mu.Unlock()
			if status == http.StatusOK {
				got = append(got, body)
			} else if body["error"] != "invalid_grant" {
				t.Errorf("a concurrent poll: %d %v, want tokens or invalid_grant", status, body)
			}
		})
	}
	wg.Wait()
	if len(got) != 1 {
		t.Fatalf("%d polls got tokens, want exactly 1", len(got))
	}
	tokens := got[0]
	if tokens["id_token"] == "" || tokens["countersign_proof"] == nil || tokens["token_type"] != "Bearer" {
		t.Errorf("tokens: %v", tokens)
	}
	access := tokens["access_token"].(string)
	introspect := func(c cibaClient) map[string]any {
		_, body, _ := r.post(c, oauth.IntrospectPath, url.Values{"token": {access}})
		return body
	}
	in := introspect(other)
	if in["active"] != true || in["client_id"] != shop.ID || in["sub"] != "ada" || in["scope"] != "openid" {
		t.Errorf("introspection by a client of the account: %v, want active for shop and ada", in)
	}
	if d, _ := json.Marshal(in["authorization_details"]); string(d) != `[{"action":"Deploy api","target":"prod","type":"countersign_action"}]` {
		t.Errorf("introspected details %s, want the approved ones in canonical form", d)
	}
	if err := r.env.Store.RevokeCIBAClient(context.Background(), r.env.Account.ID, shop.ID, "ada"); err != nil {
		t.Fatal(err)
	}
	if in := introspect(other); in["active"] != false || len(in) != 1 {
		t.Errorf("after the client's revocation: %v, want only active false", in)
	}
}

// Every bad authentication request is refused with CIBA's error code and
// files no ask.
func TestEveryBadCIBARequestIsRefusedWithItsErrorCode(t *testing.T) {
	r := newCIBARig(t, apptest.SQLite, nil)
	shop := r.client("Shop", oidc.DeliveryPoll, "", "ada")
	pinger := r.client("Pinger", oidc.DeliveryPing, "https://client.example/ciba", "ada")
	for _, tc := range []struct {
		name   string
		c      cibaClient
		form   url.Values
		status int
		code   string
	}{
		{"no scope", shop, url.Values{"login_hint": {"ada"}}, 400, "invalid_scope"},
		{"no openid", shop, url.Values{"scope": {"email"}, "login_hint": {"ada"}}, 400, "invalid_scope"},
		{"no hint", shop, url.Values{"scope": {"openid"}}, 400, "invalid_request"},
		{"two hints", shop, url.Values{"scope": {"openid"}, "login_hint": {"ada"}, "id_token_hint": {"x.y.z"}}, 400, "invalid_request"},
		{"login_hint_token", shop, url.Values{"scope": {"openid"}, "login_hint_token": {"x"}}, 400, "invalid_request"},
		{"user_code", shop, url.Values{"scope": {"openid"}, "login_hint": {"ada"}, "user_code": {"1234"}}, 400, "invalid_request"},
		{"a binding message of two lines", shop, url.Values{"scope": {"openid"}, "login_hint": {"ada"}, "binding_message": {"a\nb"}}, 400, "invalid_binding_message"},
		{"details not a list", shop, url.Values{"scope": {"openid"}, "login_hint": {"ada"}, "authorization_details": {`{"type":"x"}`}}, 400, "invalid_authorization_details"},
		{"details without type", shop, url.Values{"scope": {"openid"}, "login_hint": {"ada"}, "authorization_details": {`[{"action":"x"}]`}}, 400, "invalid_authorization_details"},
		{"requested_expiry not a number", shop, url.Values{"scope": {"openid"}, "login_hint": {"ada"}, "requested_expiry": {"soon"}}, 400, "invalid_request"},
		{"requested_expiry 0", shop, url.Values{"scope": {"openid"}, "login_hint": {"ada"}, "requested_expiry": {"0"}}, 400, "invalid_request"},
		{"ping without its token", pinger, url.Values{"scope": {"openid"}, "login_hint": {"ada"}}, 400, "invalid_request"},
		{"nobody of that name", shop, url.Values{"scope": {"openid"}, "login_hint": {"zed"}}, 400, "unknown_user_id"},
		{"a person the client may not ask", shop, url.Values{"scope": {"openid"}, "login_hint": {"bob"}}, 400, "unknown_user_id"},
		{"an id_token_hint not ours", shop, url.Values{"scope": {"openid"}, "id_token_hint": {"eyJhbGciOiJFUzI1NiJ9.e30.c2ln"}}, 400, "invalid_request"},
		{"a wrong secret", cibaClient{Client: shop.Client, secret: "nope"}, url.Values{"scope": {"openid"}, "login_hint": {"ada"}}, 401, "invalid_client"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body, _ := r.post(tc.c, oauth.BackchannelPath, tc.form)
			if status != tc.status || body["error"] != tc.code || body["error_description"] == "" {
				t.Errorf("%d %v, want %d %s with a description", status, body, tc.status, tc.code)
			}
		})
	}
	var n int64
	if err := r.env.Store.DB().Table("ciba_requests").Count(&n).Error; err != nil || n != 0 {
		t.Errorf("%d requests kept after refusals (%v), want none", n, err)
	}
	status, body, _ := r.start(shop, "ada", url.Values{"requested_expiry": {"86400"}})
	if status != http.StatusOK || body["expires_in"] != float64(600) {
		t.Errorf("a day's requested_expiry: %d %v, want 200 cut to the 600 s cap", status, body)
	}
}

// A ping-mode client is told at its endpoint, with its bearer token, that
// its request ended, whether approved or denied; a refusal for now is tried
// again, and once told the plain auth_req_id and token are forgotten.
func TestAPingClientIsToldWhenItsRequestEnds(t *testing.T) {
	var mu sync.Mutex
	var heard []string
	var refusals atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if refusals.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		raw, _ := io.ReadAll(req.Body)
		mu.Lock()
		heard = append(heard, req.Header.Get("Authorization")+" "+string(raw))
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	r := newCIBARig(t, apptest.SQLite, map[string]string{"COUNTERSIGN_CHANNEL_PRIVATE_HOSTS": strings.TrimPrefix(srv.URL, "http://"), "COUNTERSIGN_CHANNEL_RETRY": "10ms"})
	ping := r.client("Pinger", oidc.DeliveryPing, srv.URL+"/ciba", "ada")
	var want []string
	for i, decision := range []string{"approve", "deny"} {
		token := "ping-token-" + decision
		status, body, _ := r.start(ping, "ada", url.Values{"client_notification_token": {token}})
		if status != http.StatusOK {
			t.Fatalf("request %d: %d %v", i, status, body)
		}
		id := r.askOf(body["auth_req_id"])
		if res := r.ada.Decide(id, decision, ""); res.Status != http.StatusOK {
			t.Fatalf("ada answers %s: %s", decision, res)
		}
		want = append(want, "Bearer "+token+` {"auth_req_id":"`+body["auth_req_id"].(string)+`"}`)
	}
	// The endpoint hears a ping before the pinger records it: wait for both.
	var notified int64
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if err := r.env.Store.DB().Table("ciba_requests").Where("notified_at IS NOT NULL").Count(&notified).Error; err != nil {
			t.Fatal(err)
		}
		if notified == 2 {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(heard) != 2 || !((heard[0] == want[0] && heard[1] == want[1]) || (heard[0] == want[1] && heard[1] == want[0])) {
		t.Fatalf("the endpoint heard %q (%d pings recorded), want %q", heard, notified, want)
	}
	var kept []oidc.Request
	if err := r.env.Store.DB().Find(&kept).Error; err != nil {
		t.Fatal(err)
	}
	for _, k := range kept {
		if k.NotifiedAt == nil || k.AuthReqID != "" || k.NotificationToken != "" || k.NotifyError != "" {
			t.Errorf("request %s after its ping: notified %v, auth_req_id %q, token %q, error %q; want notified with both forgotten", k.ID, k.NotifiedAt, k.AuthReqID, k.NotificationToken, k.NotifyError)
		}
	}
}

// postAsKey sends a form to a CIBA endpoint as a private_key_jwt client:
// a fresh client assertion signed with key.
func (r *cibaRig) postAsKey(key clientKey, clientID, path string, form url.Values) (int, map[string]any) {
	r.t.Helper()
	now := time.Now()
	form.Set("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
	form.Set("client_assertion", key.sign(r.t, map[string]any{"iss": clientID, "sub": clientID, "aud": r.env.URL,
		"iat": now.Unix(), "exp": now.Add(time.Minute).Unix(), "jti": core.RandomToken("")}))
	res, err := http.PostForm(r.env.URL+path, form)
	if err != nil {
		r.t.Fatal(err)
	}
	defer res.Body.Close()
	var body map[string]any
	_ = json.NewDecoder(res.Body).Decode(&body)
	return res.StatusCode, body
}

// A signed authentication request (CIBA §7.1.1) is read in place of the
// form, and once: the same request object again is refused. An ID token
// the provider issued names its person as id_token_hint, for the client it
// was issued to and no other.
func TestASignedRequestAndAnIDTokenHintAreReadAsTheFormIs(t *testing.T) {
	r := newCIBARig(t, apptest.SQLite, nil)
	ctx := context.Background()
	key := newClientKey(t, jose.ES256)
	ada, err := r.env.Store.MemberBySubject(ctx, r.env.Account.ID, "ada")
	if err != nil {
		t.Fatal(err)
	}
	register := func(name string) *oidc.Client {
		c, err := r.env.Store.RegisterCIBAClient(ctx, models.RegisterCIBAClient{AccountID: r.env.Account.ID, Name: name,
			AuthMethod: oidc.AuthPrivateKeyJWT, JWKS: key.jwks(t), DeliveryMode: oidc.DeliveryPoll, PersonIDs: []string{ada.ID}, CreatedBy: ada.ID})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	shop, other := register("Shop"), register("Other")
	now := time.Now()
	request := key.sign(t, map[string]any{"iss": shop.ID, "aud": r.env.URL, "iat": now.Unix(), "nbf": now.Unix(),
		"exp": now.Add(time.Minute).Unix(), "jti": "req-1", "scope": "openid", "login_hint": "ada", "binding_message": "Signed 1",
		"requested_expiry": 120, "authorization_details": []any{map[string]any{"type": "countersign_action", "action": "Ship", "target": "order 7"}}})
	status, body := r.postAsKey(key, shop.ID, oauth.BackchannelPath, url.Values{"request": {request}})
	if status != http.StatusOK || body["expires_in"] != float64(120) {
		t.Fatalf("a signed request: %d %v, want 200 with the 120 s it asked for", status, body)
	}
	id := r.askOf(body["auth_req_id"])
	a, err := r.env.Store.GetApproval(ctx, r.env.Account.ID, id)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"authorization":{"authorization_details":[{"action":"Ship","target":"order 7","type":"countersign_action"}],"binding_message":"Signed 1","client":{"id":"` +
		shop.ID + `","name":"Shop"},"scope":"openid"}}`; a.Payload != want || a.AskedOf != "ada" {
		t.Errorf("the signed request's ask: payload %s asked of %q, want %s of ada", a.Payload, a.AskedOf, want)
	}
	if status, body := r.postAsKey(key, shop.ID, oauth.BackchannelPath, url.Values{"request": {request}}); status != http.StatusBadRequest || body["error"] != "invalid_request" {
		t.Errorf("the same request object again: %d %v, want invalid_request", status, body)
	}
	if res := r.ada.Decide(id, "approve", ""); res.Status != http.StatusOK {
		t.Fatalf("ada approves: %s", res)
	}
	status, tokens := r.postAsKey(key, shop.ID, oauth.TokenPath, url.Values{"grant_type": {oauth.CIBAGrantType}, "auth_req_id": {body["auth_req_id"].(string)}})
	if status != http.StatusOK {
		t.Fatalf("the poll after the approve: %d %v", status, tokens)
	}
	hint := url.Values{"scope": {"openid"}, "id_token_hint": {tokens["id_token"].(string)}}
	status, body = r.postAsKey(key, shop.ID, oauth.BackchannelPath, hint)
	if status != http.StatusOK {
		t.Fatalf("the ID token as id_token_hint: %d %v, want 200", status, body)
	}
	if a, err := r.env.Store.GetApproval(ctx, r.env.Account.ID, r.askOf(body["auth_req_id"])); err != nil || a.AskedOf != "ada" {
		t.Errorf("the hinted ask is asked of %q (%v), want ada", a.AskedOf, err)
	}
	hint = url.Values{"scope": {"openid"}, "id_token_hint": {tokens["id_token"].(string)}}
	if status, body := r.postAsKey(key, other.ID, oauth.BackchannelPath, hint); status != http.StatusBadRequest || body["error"] != "invalid_request" ||
		!strings.Contains(body["error_description"].(string), "another client") {
		t.Errorf("another client's ID token as its hint: %d %v, want invalid_request naming another client", status, body)
	}
}

// An address that fails client authentication ten times is held: its next
// request gets 429 and Retry-After even with the right secret, at the
// backchannel, token and introspection endpoints alike, so guessing a
// secret or a key gains nothing by speed.
func TestAnAddressThatKeepsFailingClientAuthenticationIsHeld(t *testing.T) {
	r := newCIBARig(t, apptest.SQLite, nil)
	shop := r.client("Shop", oidc.DeliveryPoll, "", "ada")
	wrong := cibaClient{Client: shop.Client, secret: "guess"}
	for i := range 10 {
		if status, body, _ := r.start(wrong, "ada", nil); status != http.StatusUnauthorized || body["error"] != "invalid_client" {
			t.Fatalf("wrong secret %d: %d %v, want 401 invalid_client", i+1, status, body)
		}
	}
	for _, path := range []string{oauth.BackchannelPath, oauth.TokenPath, oauth.IntrospectPath} {
		form := url.Values{"scope": {"openid"}, "login_hint": {"ada"}, "grant_type": {oauth.CIBAGrantType}, "auth_req_id": {"x"}, "token": {"x"}}
		status, body, h := r.post(shop, path, form)
		if status != http.StatusTooManyRequests || body["error"] != "slow_down" || h.Get("Retry-After") == "" ||
			!strings.Contains(body["error_description"].(string), "failed client authentications") {
			t.Errorf("%s with the right secret after ten failures: %d %v Retry-After %q, want 429 slow_down", path, status, body, h.Get("Retry-After"))
		}
	}
	var n int64
	if err := r.env.Store.DB().Table("ciba_requests").Count(&n).Error; err != nil || n != 0 {
		t.Errorf("%d requests kept while held (%v), want none", n, err)
	}
}
