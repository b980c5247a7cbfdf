package oauth_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/oidc"
	"github.com/countersign/countersign/oauth"
)

// A registration that cannot work is refused about the field at fault:
// keys that are private, symmetric, weak, absent or not keys; a secret
// method given keys; a ping client without an https endpoint; a mode or
// method the provider does not offer; no name; nobody to ask. What can
// work is kept, the JWK Set as public keys.
func TestCIBAClientRegistrationRefusesWhatCannotWork(t *testing.T) {
	ctx := context.Background()
	p := newProvider(t, apptest.SQLite)
	p.srv.NotificationPrivateHosts = []string{"10.0.0.7:8443"}
	key := newClientKey(t, jose.ES256)
	jwks := key.jwks(t)
	privateSet, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{key.priv}})
	symmetric, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: []byte("0123456789abcdef0123456789abcdef"), KeyID: "hmac"}}})
	small, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	weak, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &small.PublicKey, KeyID: "small"}}})
	encOnly := strings.Replace(jwks, `"use":"sig"`, `"use":"enc"`, 1)
	hsAlg := strings.Replace(jwks, `"use":"sig"`, `"use":"sig","alg":"HS256"`, 1)
	good := oauth.CIBAClientRegistration{AccountID: p.acct.ID, Name: "Pay Desk", AuthMethod: oidc.AuthPrivateKeyJWT, JWKS: jwks,
		DeliveryMode: oidc.DeliveryPoll, PersonIDs: []string{p.ada.ID}, CreatedBy: "ada"}
	for _, tc := range []struct {
		what   string
		change func(*oauth.CIBAClientRegistration)
		field  string
		says   string
	}{
		{"a private key", func(r *oauth.CIBAClientRegistration) { r.JWKS = string(privateSet) }, "jwks", "private key material"},
		{"a symmetric key", func(r *oauth.CIBAClientRegistration) { r.JWKS = string(symmetric) }, "jwks", "symmetric"},
		{"an RSA key of 1024 bits", func(r *oauth.CIBAClientRegistration) { r.JWKS = string(weak) }, "jwks", "2048 at least"},
		{"an encryption key only", func(r *oauth.CIBAClientRegistration) { r.JWKS = encOnly }, "jwks", "no signing key"},
		{"a key for HS256", func(r *oauth.CIBAClientRegistration) { r.JWKS = hsAlg }, "jwks", "algorithms accepted"},
		{"an empty set", func(r *oauth.CIBAClientRegistration) { r.JWKS = `{"keys":[]}` }, "jwks", "holds no key"},
		{"no set", func(r *oauth.CIBAClientRegistration) { r.JWKS = "" }, "jwks", "needs its JWK Set"},
		{"not JSON", func(r *oauth.CIBAClientRegistration) { r.JWKS = "-----BEGIN PUBLIC KEY-----" }, "jwks", "not a JWK Set"},
		{"a secret client given keys", func(r *oauth.CIBAClientRegistration) { r.AuthMethod = oidc.AuthClientSecretBasic }, "jwks", "has no JWK Set"},
		{"an unknown method", func(r *oauth.CIBAClientRegistration) { r.AuthMethod = "client_secret_post" }, "method", "must be"},
		{"push mode", func(r *oauth.CIBAClientRegistration) { r.DeliveryMode = "push" }, "mode", "push mode is not offered"},
		{"ping without an endpoint", func(r *oauth.CIBAClientRegistration) { r.DeliveryMode = oidc.DeliveryPing }, "notification_endpoint", "needs its notification endpoint"},
		{"ping over http to a public host", func(r *oauth.CIBAClientRegistration) {
			r.DeliveryMode, r.NotificationEndpoint = oidc.DeliveryPing, "http://client.example/cb"
		}, "notification_endpoint", "must be https"},
		{"ping to a private address", func(r *oauth.CIBAClientRegistration) {
			r.DeliveryMode, r.NotificationEndpoint = oidc.DeliveryPing, "https://192.168.1.5/cb"
		}, "notification_endpoint", "private address"},
		{"ping with a user", func(r *oauth.CIBAClientRegistration) {
			r.DeliveryMode, r.NotificationEndpoint = oidc.DeliveryPing, "https://me:pw@client.example/cb"
		}, "notification_endpoint", "without a user"},
		{"poll with an endpoint", func(r *oauth.CIBAClientRegistration) { r.NotificationEndpoint = "https://client.example/cb" }, "notification_endpoint", "poll client has no"},
		{"no name", func(r *oauth.CIBAClientRegistration) { r.Name = "  " }, "name", "name the client"},
		{"nobody to ask", func(r *oauth.CIBAClientRegistration) { r.PersonIDs = nil }, "people", "at least one person"},
	} {
		r := good
		tc.change(&r)
		c, secret, err := p.srv.RegisterCIBAClient(ctx, r)
		if core.CodeOf(err) != core.InvalidArgument || core.FieldOf(err) != tc.field || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %+v %q %v; want INVALID_ARGUMENT about %s saying %q", tc.what, c, secret, err, tc.field, tc.says)
		}
	}
	if list, _ := p.store.CIBAClients(ctx, p.acct.ID); len(list) != 0 {
		t.Fatalf("refused registrations kept %d clients", len(list))
	}

	for _, endpoint := range []string{"https://client.example/cb", "http://127.0.0.1:9/cb", "http://localhost:9/cb", "http://10.0.0.7:8443/cb"} {
		r := good
		r.DeliveryMode, r.NotificationEndpoint = oidc.DeliveryPing, endpoint
		c, _, err := p.srv.RegisterCIBAClient(ctx, r)
		if err != nil || c.NotificationEndpoint != endpoint || c.DeliveryMode != oidc.DeliveryPing {
			t.Errorf("ping to %s: %+v, %v; want kept", endpoint, c, err)
		}
	}
	c, _, err := p.srv.RegisterCIBAClient(ctx, good)
	if err != nil {
		t.Fatal(err)
	}
	var kept jose.JSONWebKeySet
	if err := json.Unmarshal([]byte(c.JWKS), &kept); err != nil || len(kept.Keys) != 1 || kept.Keys[0].KeyID != key.priv.KeyID || !kept.Keys[0].IsPublic() {
		t.Errorf("kept JWKS %s (%v), want the one public key %s", c.JWKS, err, key.priv.KeyID)
	}
}

// A signed authentication request (CIBA §7.1.1) by the client's key, for
// the issuer, with exp, iat, nbf and jti, verifies once and yields its
// claims; each bad one is refused as invalid_request, saying why.
func TestASignedRequestObjectVerifiesOnceAndBadOnesAreRefused(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		p := newProvider(t, db)
		key := newClientKey(t, jose.ES256)
		c, _ := p.register(t, oidc.AuthPrivateKeyJWT, key.jwks(t))
		secretClient, _ := p.register(t, oidc.AuthClientSecretBasic, "")
		now := p.clock.Now()
		n := 0
		claims := func(change func(map[string]any)) map[string]any {
			n++
			m := map[string]any{"iss": c.ID, "aud": testIssuer, "exp": now.Add(5 * time.Minute).Unix(), "iat": now.Unix(),
				"nbf": now.Unix(), "jti": "req-" + string(rune('a'+n)), "login_hint": "ada", "scope": "openid",
				"binding_message": "W4SCT", "authorization_details": []any{map[string]any{"type": "countersign_action", "action": "deploy"}}}
			if change != nil {
				change(m)
			}
			return m
		}
		good := key.sign(t, claims(nil))
		got, e := p.srv.VerifyRequestObject(ctx, c, good)
		if e != nil || got["login_hint"] != "ada" || got["binding_message"] != "W4SCT" || got["scope"] != "openid" {
			t.Fatalf("a good request: %v, %v", got, e)
		}
		if details, _ := got["authorization_details"].([]any); len(details) != 1 {
			t.Errorf("authorization_details came back as %#v", got["authorization_details"])
		}
		other := newClientKey(t, jose.ES256)
		for _, tc := range []struct {
			what    string
			client  *oidc.Client
			request string
			says    string
		}{
			{"the same request again", c, good, "used before"},
			{"signed by another key", c, other.sign(t, claims(nil)), "verifies with no key"},
			{"iss another", c, key.sign(t, claims(func(m map[string]any) { m["iss"] = "someone" })), "iss must be the client_id"},
			{"aud elsewhere", c, key.sign(t, claims(func(m map[string]any) { m["aud"] = "https://elsewhere.example" })), "does not name the issuer"},
			{"no exp", c, key.sign(t, claims(func(m map[string]any) { delete(m, "exp") })), "all required"},
			{"no iat", c, key.sign(t, claims(func(m map[string]any) { delete(m, "iat") })), "all required"},
			{"no nbf", c, key.sign(t, claims(func(m map[string]any) { delete(m, "nbf") })), "all required"},
			{"no jti", c, key.sign(t, claims(func(m map[string]any) { delete(m, "jti") })), "all required"},
			{"expired", c, key.sign(t, claims(func(m map[string]any) { m["exp"] = now.Add(-2 * time.Minute).Unix() })), "expired at"},
			{"not valid yet", c, key.sign(t, claims(func(m map[string]any) { m["nbf"] = now.Add(5 * time.Minute).Unix() })), "not valid before"},
			{"iat in the future", c, key.sign(t, claims(func(m map[string]any) { m["iat"] = now.Add(5 * time.Minute).Unix() })), "iat is in the future"},
			{"living two hours", c, key.sign(t, claims(func(m map[string]any) { m["exp"] = now.Add(2 * time.Hour).Unix() })), "at most 1h0m0s"},
			{"not a JWS", c, "eyJhbGciOiJub25lIn0.e30.", "not a compact JWS"},
			{"from a client with no keys", secretClient, key.sign(t, claims(nil)), "registered no keys"},
		} {
			got, e := p.srv.VerifyRequestObject(ctx, tc.client, tc.request)
			if e == nil || e.Code != "invalid_request" || e.Status != http.StatusBadRequest || !strings.Contains(e.Description, tc.says) {
				t.Errorf("%s: %v, %+v; want 400 invalid_request saying %q", tc.what, got, e, tc.says)
			}
		}
	})
}
