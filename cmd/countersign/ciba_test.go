package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-jose/go-jose/v4"

	"github.com/countersign/countersign/app"
	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/oidc"
	"github.com/countersign/countersign/models/people"
)

// ciba-client add registers a client_secret_basic client (client_id and
// secret on the last two lines, only the hash kept) and a private_key_jwt
// client from a JWK Set file; it refuses a person who is no member and a
// JWK Set with a private key; list shows the clients; revoke ends one.
func TestTheCIBAClientCommandsAddListAndRevoke(t *testing.T) {
	ctx := context.Background()
	env := map[string]string{"COUNTERSIGN_DATA": t.TempDir()}
	mustCLI(t, env, "account", "list", "--init")
	store, err := app.OpenStore(ctx, mustConfig(t, env), apptest.Logger())
	if err != nil {
		t.Fatal(err)
	}
	acct, err := store.AccountByName(ctx, people.DefaultAccountName)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.AddMember(ctx, acct.ID, "ada", "Ada", core.RoleOwner); err != nil {
		t.Fatal(err)
	}
	if sqlDB, err := store.DB().DB(); err == nil {
		sqlDB.Close()
	}

	added := mustCLI(t, env, "ciba-client", "add", "--name", "Pay Desk", "--method", "client_secret_basic", "--person", "ada")
	last := lastLines(added.stdout, 2)
	id, secret := last[0], last[1]
	if !strings.HasPrefix(id, "ciba_") || !strings.HasPrefix(secret, "cs_ciba_") {
		t.Fatalf("add printed client_id %q and secret %q on its last two lines:\n%s", id, secret, added.stdout)
	}

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	public, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Use: "sig"}}})
	private, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: key, KeyID: "k1"}}})
	for name, raw := range map[string][]byte{"public.json": public, "private.json": private} {
		if err := os.WriteFile(filepath.Join(dir, name), raw, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	signer := mustCLI(t, env, "ciba-client", "add", "--name", "Signer", "--method", "private_key_jwt", "--jwks", filepath.Join(dir, "public.json"),
		"--mode", "ping", "--notification-endpoint", "https://client.example/cb", "--person", "ada")
	signerID := lastLines(signer.stdout, 1)[0]
	if !strings.HasPrefix(signerID, "ciba_") || strings.Contains(signer.stdout, "cs_ciba_") {
		t.Fatalf("add of a private_key_jwt client printed:\n%s", signer.stdout)
	}
	if r := cli(t, env, "ciba-client", "add", "--name", "Leaky", "--method", "private_key_jwt", "--jwks", filepath.Join(dir, "private.json"), "--person", "ada"); r.code != 1 || !strings.Contains(r.stderr, "private key material") {
		t.Errorf("a private JWK Set: %s; want exit 1 saying so", r)
	}
	if r := cli(t, env, "ciba-client", "add", "--name", "Ghost", "--method", "client_secret_basic", "--person", "nobody"); r.code != 1 || !strings.Contains(r.stderr, `no person "nobody"`) {
		t.Errorf("an unknown person: %s; want exit 1 naming them", r)
	}
	if r := cli(t, env, "ciba-client", "add", "--name", "Nobody"); r.code != 2 {
		t.Errorf("add without --method and --person: %s; want the usage, exit 2", r)
	}

	list := mustCLI(t, env, "ciba-client", "list").stdout
	if f := row(t, list, id); len(f) < 8 || f[3] != oidc.AuthClientSecretBasic || f[4] != oidc.DeliveryPoll || f[5] != "ada" || f[6] != "active" {
		t.Errorf("the list's row of %s: %v\n%s", id, f, list)
	}
	if f := row(t, list, signerID); len(f) < 7 || f[2] != oidc.AuthPrivateKeyJWT || f[3] != oidc.DeliveryPing {
		t.Errorf("the list's row of %s: %v\n%s", signerID, f, list)
	}
	if strings.Contains(list, "Leaky") || strings.Contains(list, "Ghost") || strings.Contains(list, secret) {
		t.Errorf("the list shows a refused client or a secret:\n%s", list)
	}

	mustCLI(t, env, "ciba-client", "revoke", id)
	if f := row(t, mustCLI(t, env, "ciba-client", "list").stdout, id); f[6] != "revoked" {
		t.Errorf("after revoke the row is %v", f)
	}
	if r := cli(t, env, "ciba-client", "revoke", "ciba_nobody"); r.code != 1 {
		t.Errorf("revoking an unknown client: %s", r)
	}

	store, err = app.OpenStore(ctx, mustConfig(t, env), apptest.Logger())
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if sqlDB, err := store.DB().DB(); err == nil {
			sqlDB.Close()
		}
	}()
	c, err := store.CIBAClient(ctx, id)
	if err != nil || c.SecretSHA256 != core.HashToken(secret) || c.RevokedAt == nil || c.CreatedBy != "cli" {
		t.Errorf("the stored client: %+v, %v", c, err)
	}
}

// oidc keys lists the provider's keys; rotate-key makes a new current key
// (its kid on the last line) and keeps the old one published for the
// overlap.
func TestTheOIDCKeyCommandsRotateWithOverlap(t *testing.T) {
	env := map[string]string{"COUNTERSIGN_DATA": t.TempDir()}
	if out := mustCLI(t, env, "oidc", "keys", "--init").stdout; !strings.Contains(out, "no signing key yet") {
		t.Errorf("keys before any:\n%s", out)
	}
	first := lastLines(mustCLI(t, env, "oidc", "rotate-key").stdout, 1)[0]
	second := lastLines(mustCLI(t, env, "oidc", "rotate-key", "--overlap", "2h").stdout, 1)[0]
	if first == "" || second == "" || first == second || strings.ContainsAny(second, " \t") {
		t.Fatalf("rotate-key printed kids %q then %q", first, second)
	}
	keys := mustCLI(t, env, "oidc", "keys").stdout
	if f := row(t, keys, second); f[1] != "current" {
		t.Errorf("the new key's row is %v\n%s", f, keys)
	}
	if f := row(t, keys, first); f[1] != "retired," {
		t.Errorf("the old key's row is %v\n%s", f, keys)
	}
	if r := cli(t, env, "oidc", "rotate-key", "--overlap", "-1h"); r.code != 1 || !strings.Contains(r.stderr, "overlap") {
		t.Errorf("a negative overlap: %s", r)
	}
	if r := cli(t, env, "oidc", "spin"); r.code != 2 {
		t.Errorf("an unknown oidc command: %s", r)
	}
}
