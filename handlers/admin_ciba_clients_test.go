package handlers_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/go-jose/go-jose/v4"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/oidc"
	"github.com/countersign/countersign/oauth"
)

// Admin → CIBA clients registers a client_secret_basic client and shows its
// secret once (only its SHA-256 is kept), registers a private_key_jwt
// client from its JWK Set, lists both with the people they may ask,
// refuses a registration that cannot work on the page, and revokes a
// client. A plain member gets 403 for each.
func TestTheCIBAClientsPageRegistersListsAndRevokes(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		f := newFixture(t, db)
		ctx := context.Background()
		member := signIn(t, f.env, f.member)
		if res, _ := member.get("/admin/ciba-clients"); res.StatusCode != http.StatusForbidden {
			t.Errorf("GET /admin/ciba-clients as a member: %d", res.StatusCode)
		}
		if res, _ := member.post("/admin/ciba-clients", url.Values{"name": {"sneaky"}, "method": {"client_secret_basic"}, "mode": {"poll"}, "person": {f.member.ID}}, true); res.StatusCode != http.StatusForbidden {
			t.Errorf("POST /admin/ciba-clients as a member: %d", res.StatusCode)
		}
		if list, _ := f.env.Store.CIBAClients(ctx, f.env.Account.ID); len(list) != 0 {
			t.Fatalf("a member's registration was kept: %+v", list)
		}

		b := signIn(t, f.env, f.admin)
		res, body := b.get("/admin/ciba-clients")
		if res.StatusCode != http.StatusOK || len(elements(parseHTML(t, body), byAttr("data-testid", "no-ciba-clients"))) != 1 {
			t.Fatalf("the empty page: %d", res.StatusCode)
		}
		if res, _ := b.post("/admin/ciba-clients", url.Values{"name": {"Desk"}, "method": {"client_secret_basic"}, "mode": {"poll"}, "person": {f.owner.ID}}, false); res.StatusCode != http.StatusForbidden {
			t.Errorf("a registration without the CSRF token: %d, want 403", res.StatusCode)
		}

		res, body = b.post("/admin/ciba-clients", url.Values{"name": {"Pay Desk"}, "method": {"client_secret_basic"}, "mode": {"poll"},
			"jwks": {"ignored for a secret client"}, "person": {f.owner.ID, f.member.ID}}, true)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("register: %d\n%s", res.StatusCode, body)
		}
		page := parseHTML(t, body)
		ids, secrets := elements(page, byAttr("data-testid", "ciba-client-id")), elements(page, byAttr("data-testid", "ciba-client-secret"))
		if len(ids) != 1 || len(secrets) != 1 {
			t.Fatalf("the page shows %d client ids and %d secrets, want one each", len(ids), len(secrets))
		}
		secret := textOf(secrets[0])
		c, err := f.env.Store.CIBAClient(ctx, textOf(ids[0]))
		if err != nil {
			t.Fatal(err)
		}
		if c.SecretSHA256 != core.HashToken(secret) || !strings.HasPrefix(secret, oauth.CIBASecretPrefix) || c.Name != "Pay Desk" ||
			c.AuthMethod != oidc.AuthClientSecretBasic || c.DeliveryMode != oidc.DeliveryPoll || c.CreatedBy != "ali" || c.JWKS != "" {
			t.Errorf("shown secret %q; stored %+v", secret, c)
		}
		var raw string
		if err := f.env.Store.DB().Table("oidc_clients").Where("id = ?", c.ID).Select("secret_sha256").Scan(&raw).Error; err != nil || raw == secret || strings.Contains(raw, secret) {
			t.Errorf("the table keeps %q (%v): only the hash may be kept", raw, err)
		}
		if people, _ := f.env.Store.CIBAClientPeople(ctx, c.ID); len(people) != 2 {
			t.Errorf("the client may ask %v, want ada and bob", people)
		}
		_, again := b.get("/admin/ciba-clients")
		if strings.Contains(again, secret) || !strings.Contains(again, c.ID) || !strings.Contains(again, "client_secret_basic") {
			t.Errorf("the list shows the secret again, or not the client")
		}

		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		jwks, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Use: "sig"}}})
		res, body = b.post("/admin/ciba-clients", url.Values{"name": {"Signer"}, "method": {"private_key_jwt"}, "mode": {"ping"},
			"notification_endpoint": {"https://client.example/cb"}, "jwks": {string(jwks)}, "person": {f.owner.ID}}, true)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("register a private_key_jwt client: %d\n%s", res.StatusCode, body)
		}
		page = parseHTML(t, body)
		if len(elements(page, byAttr("data-testid", "ciba-client-secret"))) != 0 {
			t.Error("a private_key_jwt client was shown a secret")
		}
		signer, err := f.env.Store.CIBAClient(ctx, textOf(elements(page, byAttr("data-testid", "ciba-client-id"))[0]))
		if err != nil || signer.AuthMethod != oidc.AuthPrivateKeyJWT || signer.SecretSHA256 != "" || !strings.Contains(signer.JWKS, `"kid":"k1"`) ||
			signer.NotificationEndpoint != "https://client.example/cb" {
			t.Errorf("the private_key_jwt client is %+v (%v)", signer, err)
		}

		private, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: key, KeyID: "oops"}}})
		res, body = b.post("/admin/ciba-clients", url.Values{"name": {"Leaky"}, "method": {"private_key_jwt"}, "mode": {"poll"},
			"jwks": {string(private)}, "person": {f.owner.ID}}, true)
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "private key material") || !strings.Contains(body, `value="Leaky"`) {
			t.Errorf("a private JWK: %d, want 400 saying so with the form filled again", res.StatusCode)
		}
		if list, _ := f.env.Store.CIBAClients(ctx, f.env.Account.ID); len(list) != 2 {
			t.Errorf("%d clients after the refusal, want 2", len(list))
		}

		if res, _ := member.post("/admin/ciba-clients/"+c.ID+"/revoke", nil, true); res.StatusCode != http.StatusForbidden {
			t.Errorf("revoke as a member: %d", res.StatusCode)
		}
		res, _ = b.post("/admin/ciba-clients/"+c.ID+"/revoke", nil, true)
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/admin/ciba-clients" {
			t.Fatalf("revoke: %d %s", res.StatusCode, res.Header.Get("Location"))
		}
		if got, err := f.env.Store.CIBAClient(ctx, c.ID); err != nil || got.RevokedAt == nil {
			t.Errorf("after revoking: %+v %v", got, err)
		}
		if got, err := f.env.Store.CIBAClient(ctx, signer.ID); err != nil || got.RevokedAt != nil {
			t.Errorf("the other client was revoked too: %+v %v", got, err)
		}
		_, after := b.get("/admin/ciba-clients")
		if n := len(elements(parseHTML(t, after), byAttr("data-testid", "revoke-ciba-client"))); n != 1 {
			t.Errorf("%d Revoke buttons after revoking one of two clients, want 1", n)
		}
	})
}
