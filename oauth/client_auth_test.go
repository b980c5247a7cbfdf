package oauth_test

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/oidc"
	"github.com/countersign/countersign/oauth"
)

func basic(id, secret string) http.Header {
	h := http.Header{}
	h.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(id)+":"+url.QueryEscape(secret))))
	return h
}

// register registers a CIBA client that may ask ada and returns it with its
// secret ("" for private_key_jwt).
func (p *provider) register(t *testing.T, method, jwks string) (*oidc.Client, string) {
	t.Helper()
	c, secret, err := p.srv.RegisterCIBAClient(context.Background(), oauth.CIBAClientRegistration{AccountID: p.acct.ID, Name: "Pay Desk",
		AuthMethod: method, JWKS: jwks, DeliveryMode: oidc.DeliveryPoll, PersonIDs: []string{p.ada.ID}, CreatedBy: "ada"})
	if err != nil {
		t.Fatal(err)
	}
	return c, secret
}

// refusedAsClient checks an invalid_client refusal that names what failed.
func refusedAsClient(t *testing.T, what string, c *oidc.Client, e *oauth.Error, says string) {
	t.Helper()
	if e == nil {
		t.Errorf("%s: accepted as %s, want invalid_client", what, c.ID)
		return
	}
	if e.Code != "invalid_client" || e.Status != http.StatusUnauthorized || !strings.Contains(e.Description, says) {
		t.Errorf("%s: %d %s %q, want 401 invalid_client saying %q", what, e.Status, e.Code, e.Description, says)
	}
}

// client_secret_basic: the right secret authenticates; a wrong secret, an
// unknown or revoked client, a client_id in the form of another client, the
// secret in the body and no authentication at all are refused, with a Basic
// challenge where Basic was tried.
func TestClientSecretBasicIsRefusedOnAWrongSecretOrARevokedClient(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		p := newProvider(t, db)
		c, secret := p.register(t, oidc.AuthClientSecretBasic, "")
		if !strings.HasPrefix(secret, oauth.CIBASecretPrefix) || c.SecretSHA256 != core.HashToken(secret) || c.JWKS != "" {
			t.Fatalf("registered %+v with secret %q: want a %s secret of which only the SHA-256 is kept", c, secret, oauth.CIBASecretPrefix)
		}
		got, e := p.srv.AuthenticateClient(ctx, basic(c.ID, secret), url.Values{"client_id": {c.ID}}, testIssuer+"/oauth/backchannel")
		if e != nil || got.ID != c.ID {
			t.Fatalf("the right secret: %+v, %v", got, e)
		}
		_, e = p.srv.AuthenticateClient(ctx, basic(c.ID, secret+"x"), url.Values{}, "")
		refusedAsClient(t, "a wrong secret", got, e, "secret of "+c.ID+" is wrong")
		if e != nil && e.Challenge == "" {
			t.Error("a Basic refusal carries no WWW-Authenticate challenge")
		}
		_, e = p.srv.AuthenticateClient(ctx, basic("ciba_nobody", secret), url.Values{}, "")
		refusedAsClient(t, "an unknown client", got, e, "no CIBA client is registered")
		_, e = p.srv.AuthenticateClient(ctx, basic(c.ID, secret), url.Values{"client_id": {"ciba_other"}}, "")
		refusedAsClient(t, "another client_id in the form", got, e, "is not the client that authenticated")
		_, e = p.srv.AuthenticateClient(ctx, http.Header{}, url.Values{"client_id": {c.ID}, "client_secret": {secret}}, "")
		refusedAsClient(t, "the secret in the body", got, e, "client_secret_post")
		_, e = p.srv.AuthenticateClient(ctx, http.Header{}, url.Values{"client_id": {c.ID}}, "")
		refusedAsClient(t, "no authentication", got, e, "did not authenticate")
		h := http.Header{"Authorization": {"Basic !!!"}}
		_, e = p.srv.AuthenticateClient(ctx, h, url.Values{}, "")
		refusedAsClient(t, "Basic that is not base64", got, e, "not base64")

		if err := p.store.RevokeCIBAClient(ctx, p.acct.ID, c.ID, "ada"); err != nil {
			t.Fatal(err)
		}
		_, e = p.srv.AuthenticateClient(ctx, basic(c.ID, secret), url.Values{}, "")
		refusedAsClient(t, "a revoked client", got, e, "was revoked")
	})
}

// private_key_jwt: an assertion signed by the client's registered key,
// with iss = sub = client_id, the issuer or the endpoint as audience, a
// short life and a fresh jti authenticates; each way of getting one of
// these wrong is refused, saying which.
func TestPrivateKeyJWTIsRefusedForEachBadAssertion(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		p := newProvider(t, db)
		key := newClientKey(t, jose.ES256)
		c, secret := p.register(t, oidc.AuthPrivateKeyJWT, key.jwks(t))
		if secret != "" || c.SecretSHA256 != "" {
			t.Fatalf("a private_key_jwt client got a secret %q", secret)
		}
		basicClient, basicSecret := p.register(t, oidc.AuthClientSecretBasic, "")
		endpoint := testIssuer + "/oauth/backchannel"
		now := p.clock.Now()
		n := 0
		claims := func(change func(map[string]any)) map[string]any {
			n++
			m := map[string]any{"iss": c.ID, "sub": c.ID, "aud": testIssuer, "exp": now.Add(2 * time.Minute).Unix(),
				"iat": now.Unix(), "jti": "jti-" + string(rune('a'+n))}
			if change != nil {
				change(m)
			}
			return m
		}
		form := func(assertion string) url.Values {
			return url.Values{"client_assertion_type": {oauth.ClientAssertionType}, "client_assertion": {assertion}}
		}

		good := key.sign(t, claims(nil))
		got, e := p.srv.AuthenticateClient(ctx, http.Header{}, form(good), endpoint)
		if e != nil || got.ID != c.ID {
			t.Fatalf("a good assertion: %+v, %v", got, e)
		}
		_, e = p.srv.AuthenticateClient(ctx, http.Header{}, form(good), endpoint)
		refusedAsClient(t, "the same assertion again", got, e, "used before")
		for _, aud := range []any{endpoint, testIssuer + oauth.TokenPath, []any{"https://elsewhere.example", testIssuer}} {
			if _, e := p.srv.AuthenticateClient(ctx, http.Header{}, form(key.sign(t, claims(func(m map[string]any) { m["aud"] = aud }))), endpoint); e != nil {
				t.Errorf("aud %v: %v, want accepted", aud, e)
			}
		}
		withForm := form(key.sign(t, claims(nil)))
		withForm.Set("client_id", c.ID)
		if _, e := p.srv.AuthenticateClient(ctx, http.Header{}, withForm, endpoint); e != nil {
			t.Errorf("the same client_id in the form: %v, want accepted", e)
		}

		other := newClientKey(t, jose.ES256)
		for _, tc := range []struct {
			what string
			form url.Values
			says string
		}{
			{"signed by another key", form(other.sign(t, claims(nil))), "verifies with no key"},
			{"another key under the client's kid", form(func() string {
				k := other
				k.priv.KeyID = key.priv.KeyID
				return k.sign(t, claims(nil))
			}()), "verifies with no key"},
			{"iss not the client", form(key.sign(t, claims(func(m map[string]any) { m["iss"] = "someone" }))), "iss and sub must both be"},
			{"sub an unknown client", form(key.sign(t, claims(func(m map[string]any) { m["sub"] = "ciba_nobody" }))), "no CIBA client is registered"},
			{"no sub", form(key.sign(t, claims(func(m map[string]any) { delete(m, "sub") }))), "has no sub"},
			{"aud elsewhere", form(key.sign(t, claims(func(m map[string]any) { m["aud"] = "https://elsewhere.example" }))), "names neither the issuer"},
			{"expired", form(key.sign(t, claims(func(m map[string]any) { m["exp"] = now.Add(-2 * time.Minute).Unix() }))), "expired at"},
			{"exp too far ahead", form(key.sign(t, claims(func(m map[string]any) { m["exp"] = now.Add(10 * time.Minute).Unix() }))), "more than 5m0s ahead"},
			{"no exp", form(key.sign(t, claims(func(m map[string]any) { delete(m, "exp") }))), "has no exp"},
			{"not valid yet", form(key.sign(t, claims(func(m map[string]any) { m["nbf"] = now.Add(3 * time.Minute).Unix() }))), "not valid before"},
			{"no jti", form(key.sign(t, claims(func(m map[string]any) { delete(m, "jti") }))), "has no jti"},
			{"the wrong assertion type", url.Values{"client_assertion_type": {"urn:other"}, "client_assertion": {key.sign(t, claims(nil))}}, "client_assertion_type must be"},
			{"no assertion", url.Values{"client_assertion_type": {oauth.ClientAssertionType}}, "client_assertion is missing"},
			{"not a JWS", form("not.a.jws"), "not a compact JWS"},
			{"a client_secret_basic client", form(key.sign(t, claims(func(m map[string]any) { m["iss"], m["sub"] = basicClient.ID, basicClient.ID }))), "registered client_secret_basic"},
			{"another client_id in the form", func() url.Values {
				f := form(key.sign(t, claims(nil)))
				f.Set("client_id", basicClient.ID)
				return f
			}(), "is not the client that authenticated"},
		} {
			_, e := p.srv.AuthenticateClient(ctx, http.Header{}, tc.form, endpoint)
			refusedAsClient(t, tc.what, c, e, tc.says)
		}
		_, e = p.srv.AuthenticateClient(ctx, basic(c.ID, "whatever"), url.Values{}, endpoint)
		refusedAsClient(t, "Basic for a private_key_jwt client", c, e, "registered private_key_jwt")
		_, e = p.srv.AuthenticateClient(ctx, basic(basicClient.ID, basicSecret), form(key.sign(t, claims(nil))), endpoint)
		refusedAsClient(t, "both Basic and an assertion", c, e, "use one")

		if err := p.store.RevokeCIBAClient(ctx, p.acct.ID, c.ID, "ada"); err != nil {
			t.Fatal(err)
		}
		_, e = p.srv.AuthenticateClient(ctx, http.Header{}, form(key.sign(t, claims(nil))), endpoint)
		refusedAsClient(t, "a revoked client", c, e, "was revoked")
	})
}

// Assertions signed with each algorithm the provider announces verify
// against a key of that type.
func TestPrivateKeyJWTAcceptsEachAnnouncedAlgorithm(t *testing.T) {
	p := newProvider(t, apptest.SQLite)
	for _, alg := range []jose.SignatureAlgorithm{jose.ES256, jose.PS256, jose.RS256, jose.EdDSA} {
		key := newClientKey(t, alg)
		c, _ := p.register(t, oidc.AuthPrivateKeyJWT, key.jwks(t))
		now := p.clock.Now()
		assertion := key.sign(t, map[string]any{"iss": c.ID, "sub": c.ID, "aud": testIssuer, "exp": now.Add(time.Minute).Unix(), "jti": string(alg)})
		form := url.Values{"client_assertion_type": {oauth.ClientAssertionType}, "client_assertion": {assertion}}
		if got, e := p.srv.AuthenticateClient(context.Background(), http.Header{}, form, ""); e != nil || got.ID != c.ID {
			t.Errorf("%s: %+v, %v", alg, got, e)
		}
	}
}
