package oauth_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
	"github.com/countersign/countersign/oauth"
)

const testIssuer = "https://cs.example"

// fakeClock is a clock a test moves while the store reads it.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// provider is the OpenID provider on a bare store, with a clock the test
// moves, and ada, the one person its clients may ask.
type provider struct {
	srv   *oauth.Server
	store *models.Store
	clock *fakeClock
	acct  *people.Account
	ada   *people.Member
}

func newProvider(t *testing.T, db apptest.Database) *provider {
	t.Helper()
	s, acct := apptest.BareStore(t, db)
	clock := &fakeClock{now: time.Now().UTC().Truncate(time.Second)}
	s.SetClock(clock.Now)
	ada, err := s.AddMember(context.Background(), acct.ID, "ada", "Ada", core.RoleOwner)
	if err != nil {
		t.Fatal(err)
	}
	return &provider{srv: oauth.New(s, testIssuer, testIssuer+"/mcp"), store: s, clock: clock, acct: acct, ada: ada}
}

// clientKey is a key a client signs with: the private JWK (with its kid)
// and its public JWK Set.
type clientKey struct {
	priv jose.JSONWebKey
	alg  jose.SignatureAlgorithm
}

func newClientKey(t *testing.T, alg jose.SignatureAlgorithm) clientKey {
	t.Helper()
	var key any
	var err error
	switch alg {
	case jose.ES256:
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case jose.RS256, jose.PS256:
		key, err = rsa.GenerateKey(rand.Reader, 2048)
	case jose.EdDSA:
		_, key, err = ed25519.GenerateKey(rand.Reader)
	}
	if err != nil {
		t.Fatal(err)
	}
	k := jose.JSONWebKey{Key: key, Use: "sig"}
	thumb, err := k.Thumbprint(crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	k.KeyID = base64.RawURLEncoding.EncodeToString(thumb)
	return clientKey{priv: k, alg: alg}
}

func (k clientKey) jwks(t *testing.T) string {
	t.Helper()
	raw, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{k.priv.Public()}})
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

func (k clientKey) sign(t *testing.T, claims map[string]any) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: k.alg, Key: k.priv}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(signer).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// verifyWith verifies token against set as a relying party does, and
// returns its claims.
func verifyWith(token string, set *jose.JSONWebKeySet) (map[string]any, error) {
	tok, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		return nil, err
	}
	keys := set.Key(tok.Headers[0].KeyID)
	if len(keys) != 1 {
		return nil, jose.ErrUnsupportedKeyType
	}
	var claims map[string]any
	return claims, tok.Claims(keys[0].Key, &claims)
}

// The discovery document names the CIBA provider's endpoints and what it
// accepts, its jwks_uri serves public keys only, and an ID token the
// provider signs verifies against it with go-jose.
func TestTheOpenIDConfigurationDescribesTheCIBAProvider(t *testing.T) {
	env := apptest.StartWeb(t, apptest.SQLite, nil)
	var doc map[string]any
	getJSON(t, env.URL+oauth.OpenIDConfigurationPath, &doc)
	for member, want := range map[string]any{
		"issuer":                              env.URL,
		"token_endpoint":                      env.URL + oauth.TokenPath,
		"jwks_uri":                            env.URL + oauth.JWKSPath,
		"backchannel_authentication_endpoint": env.URL + "/oauth/backchannel",
		"introspection_endpoint":              env.URL + "/oauth/introspect",
		"backchannel_token_delivery_modes_supported":                      []any{"poll", "ping"},
		"backchannel_authentication_request_signing_alg_values_supported": []any{"ES256", "PS256", "RS256", "EdDSA"},
		"backchannel_user_code_parameter_supported":                       false,
		"grant_types_supported":                                           []any{"authorization_code", "refresh_token", "urn:openid:params:grant-type:ciba"},
		"token_endpoint_auth_methods_supported":                           []any{"private_key_jwt", "client_secret_basic", "none"},
		"token_endpoint_auth_signing_alg_values_supported":                []any{"ES256", "PS256", "RS256", "EdDSA"},
		"authorization_details_types_supported":                           []any{"payment_initiation", "account_information", "countersign_action"},
		"id_token_signing_alg_values_supported":                           []any{"ES256"},
		"subject_types_supported":                                         []any{"public"},
		"response_types_supported":                                        []any{"code"},
	} {
		got, _ := json.Marshal(doc[member])
		w, _ := json.Marshal(want)
		if string(got) != string(w) {
			t.Errorf("%s = %s, want %s", member, got, w)
		}
	}
	if scopes, _ := doc["scopes_supported"].([]any); !slices.Contains(scopes, any("openid")) {
		t.Errorf("scopes_supported = %v, want it to include openid", doc["scopes_supported"])
	}
	if claims, _ := doc["claims_supported"].([]any); !slices.Contains(claims, any("sub")) {
		t.Errorf("claims_supported = %v, want it to include sub", doc["claims_supported"])
	}

	token, err := env.App.OAuth.SignJWT(context.Background(), map[string]any{"iss": env.URL, "sub": "ada", "aud": "client-1"})
	if err != nil {
		t.Fatal(err)
	}
	var set jose.JSONWebKeySet
	getJSON(t, env.URL+oauth.JWKSPath, &set)
	if len(set.Keys) != 1 || !set.Keys[0].IsPublic() || set.Keys[0].Algorithm != "ES256" || set.Keys[0].Use != "sig" {
		t.Fatalf("the JWK Set is %+v, want the one public ES256 signing key", set.Keys)
	}
	thumb, err := set.Keys[0].Thumbprint(crypto.SHA256)
	if err != nil || set.Keys[0].KeyID != base64.RawURLEncoding.EncodeToString(thumb) {
		t.Errorf("kid %q is not the key's RFC 7638 thumbprint (%v)", set.Keys[0].KeyID, err)
	}
	claims, err := verifyWith(token, &set)
	if err != nil || claims["sub"] != "ada" || claims["iss"] != env.URL {
		t.Fatalf("the signed JWT verifies as %v, %v", claims, err)
	}
	jws, err := jose.ParseSigned(token, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		t.Fatal(err)
	}
	if h := jws.Signatures[0].Protected; h.Algorithm != "ES256" || h.KeyID != set.Keys[0].KeyID || h.ExtraHeaders["typ"] != "JWT" {
		t.Errorf("the JWT's header is %+v, want alg ES256, the key's kid and typ JWT", h)
	}
	res, err := http.Get(env.URL + oauth.JWKSPath)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/jwk-set+json") {
		t.Errorf("the JWK Set is served as %q, want application/jwk-set+json", ct)
	}
	var published struct{ Keys []map[string]any }
	getJSON(t, env.URL+oauth.JWKSPath, &published)
	for _, k := range published.Keys {
		for _, private := range []string{"d", "p", "q", "dp", "dq", "qi", "k"} {
			if _, ok := k[private]; ok {
				t.Errorf("a published key carries %q: private key material", private)
			}
		}
	}
}

func getJSON(t *testing.T, url string, out any) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if err := json.NewDecoder(res.Body).Decode(out); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: HTTP %d, %v", url, res.StatusCode, err)
	}
}

// A rotation keeps the old key published for its overlap, so what it
// signed still verifies; once the overlap is over the old key is gone from
// the JWK Set and its tokens no longer verify.
func TestARotatedKeyStaysPublishedForItsOverlapThenGoes(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		p := newProvider(t, db)
		old, err := p.srv.SignJWT(ctx, map[string]any{"sub": "old"})
		if err != nil {
			t.Fatal(err)
		}
		before, err := p.srv.JWKS(ctx)
		if err != nil || len(before.Keys) != 1 {
			t.Fatalf("JWKS before rotation: %+v, %v", before, err)
		}
		oldKid := before.Keys[0].KeyID
		newKid, err := p.srv.RotateSigningKey(ctx, time.Hour)
		if err != nil || newKid == oldKid || newKid == "" {
			t.Fatalf("RotateSigningKey = %q, %v", newKid, err)
		}
		fresh, err := p.srv.SignJWT(ctx, map[string]any{"sub": "new"})
		if err != nil {
			t.Fatal(err)
		}
		during, err := p.srv.JWKS(ctx)
		if err != nil || len(during.Keys) != 2 || during.Keys[0].KeyID != newKid || during.Keys[1].KeyID != oldKid {
			t.Fatalf("JWKS during the overlap: %+v, %v; want %s then %s", during, err, newKid, oldKid)
		}
		if _, err := verifyWith(old, during); err != nil {
			t.Errorf("a token of the old key does not verify during the overlap: %v", err)
		}
		if c, err := verifyWith(fresh, during); err != nil || c["sub"] != "new" {
			t.Errorf("a token of the new key: %v, %v", c, err)
		}

		p.clock.Add(time.Hour + time.Minute)
		after, err := p.srv.JWKS(ctx)
		if err != nil || len(after.Keys) != 1 || after.Keys[0].KeyID != newKid {
			t.Fatalf("JWKS after the overlap: %+v, %v; want %s alone", after, err, newKid)
		}
		if _, err := verifyWith(old, after); err == nil {
			t.Error("a token of the retired key still verifies after the overlap")
		}
		if _, err := verifyWith(fresh, after); err != nil {
			t.Errorf("a token of the current key: %v", err)
		}
	})
}
