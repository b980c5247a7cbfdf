package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
	"github.com/countersign/countersign/proof"
	"github.com/countersign/countersign/proof/prooftest"
)

// cliEnv is the environment that points the binary at env's database and base URL.
func cliEnv(env *apptest.Env) map[string]string {
	return map[string]string{
		"COUNTERSIGN_DATA":         env.App.Config.Data,
		"COUNTERSIGN_DATABASE_URL": env.App.Config.DatabaseURL,
		"COUNTERSIGN_BASE_URL":     env.App.Config.BaseURL,
	}
}

// lastLine is the last line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// inviteToken runs `countersign invite` and returns the token of the URL it
// prints alone on its last line.
func inviteToken(t *testing.T, env *apptest.Env, args ...string) string {
	t.Helper()
	r := mustCLI(t, cliEnv(env), append([]string{"invite"}, args...)...)
	url := lastLine(r.stdout)
	m := regexp.MustCompile(`^` + regexp.QuoteMeta(env.URL) + `/invite/(inv_[a-z2-7]{40,})$`).FindStringSubmatch(url)
	if m == nil {
		t.Fatalf("the last line of stdout is %q, want %s/invite/inv_… alone\n%s", url, env.URL, r)
	}
	return m[1]
}

func TestInviteCommandPrintsAURLTheServiceAccepts(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		env := apptest.StartWeb(t, db, nil)
		ctx := context.Background()
		token := inviteToken(t, env, "--role", "admin", "--subject", "carol")

		b := apptest.NewBrowser(t, env.URL)
		page := b.Get("/invite/" + token)
		if page.Status != http.StatusOK {
			t.Fatalf("GET /invite/<token>: %s", page)
		}
		if r := b.Get("/invite/inv_" + strings.Repeat("a", 52)); r.Status != http.StatusNotFound {
			t.Fatalf("GET /invite/<a token nobody made>: %s, want 404", r)
		}
		if r := b.AcceptInvite(token, "carol"); r.Status != http.StatusOK || b.Session() == "" {
			t.Fatalf("accept: %s", r)
		}
		p, err := env.Store.PersonBySubject(ctx, "carol")
		if err != nil {
			t.Fatal(err)
		}
		m, err := env.Store.MemberByID(ctx, env.Account.ID, p.ID)
		if err != nil || m.Role != core.RoleAdmin {
			t.Fatalf("carol is %+v (%v), want an admin of the default account", m, err)
		}
		if r := b.Get("/invite/" + token); r.Status != http.StatusConflict {
			t.Fatalf("GET of a used invite: %s, want 409", r)
		}

		t.Run("a subject the invite names is the one the person gets", func(t *testing.T) {
			token := inviteToken(t, env, "--role", "member", "--subject", "dave")
			b := apptest.NewBrowser(t, env.URL)
			if r := b.AcceptInvite(token, "someone-else"); r.Status != http.StatusOK {
				t.Fatalf("accept: %s", r)
			}
			if _, err := env.Store.PersonBySubject(ctx, "dave"); err != nil {
				t.Fatalf("no person dave: %v", err)
			}
			if _, err := env.Store.PersonBySubject(ctx, "someone-else"); err == nil {
				t.Fatalf("the subject the invite did not name was taken")
			}
		})

		t.Run("usage errors exit 2 and print no URL", func(t *testing.T) {
			for _, args := range [][]string{{"invite"}, {"invite", "--role", "boss"}, {"invite", "--role", "member", "extra"}} {
				r := cli(t, cliEnv(env), args...)
				if r.code != 2 || strings.Contains(r.stdout, "/invite/") {
					t.Fatalf("countersign %s: %s; want exit 2 and no URL", strings.Join(args, " "), r)
				}
			}
			if r := cli(t, cliEnv(env), "invite", "--role", "member", "--account", "nope"); r.code != 1 || strings.Contains(r.stdout, "/invite/") {
				t.Fatalf("invite to an unknown account: %s; want exit 1 and no URL", r)
			}
		})
	})
}

// decided is a proof made over HTTP, downloaded, in a file.
type decided struct {
	env      *apptest.Env
	owner    *apptest.Browser
	dir      string
	file     string
	proof    map[string]any
	id, hash string
}

// decideOverHTTP invites ada with the CLI, registers her passkey, has an
// agent file an ask over MCP, approves it over HTTP and downloads the proof.
func decideOverHTTP(t *testing.T, db apptest.Database) *decided {
	t.Helper()
	env := apptest.StartWeb(t, db, nil)
	owner := apptest.NewBrowser(t, env.URL)
	if r := owner.AcceptInvite(inviteToken(t, env, "--role", "owner"), "ada"); r.Status != http.StatusOK {
		t.Fatalf("accept: %s", r)
	}
	_, token := env.Agent(env.Account.ID, "bot")
	agent := env.Connect(token)
	created := agent.OK("approvals_create", map[string]any{
		"kind": "pull_request", "title": "Merge acme/web#900",
		"approve_means": "I merge #900; nothing rolls", "deny_means": "#900 stays open",
		"payload": map[string]any{"pull_request": map[string]any{
			"repo": "acme/web", "number": 900, "head": "abcdef1234567", "title": "Fix login redirect",
		}},
		"context": map[string]any{"plan_id": "plan_1", "plan_item": "item_2"},
	})
	d := &decided{env: env, owner: owner, dir: t.TempDir(), id: created["approval_id"].(string), hash: created["payload_sha256"].(string)}
	if r := owner.Decide(d.id, "approve", ""); r.Status != http.StatusOK {
		t.Fatalf("decide: %s", r)
	}
	dl := owner.Get("/approvals/" + d.id + "/proof.json")
	if dl.Status != http.StatusOK {
		t.Fatalf("download the proof: %s", dl)
	}
	d.file = filepath.Join(d.dir, "proof.json")
	if err := os.WriteFile(d.file, dl.Raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(dl.Raw, &d.proof); err != nil {
		t.Fatal(err)
	}
	return d
}

// tampered writes the proof with field changed by change and returns the file.
func (d *decided) tampered(t *testing.T, name, field string, change func(v string) string) string {
	t.Helper()
	p := map[string]any{}
	for k, v := range d.proof {
		p[k] = v
	}
	p[field] = change(p[field].(string))
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(d.dir, name+".json")
	if err := os.WriteFile(file, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// flipByte flips one bit of byte i of a base64url value.
func flipByte(i int) func(string) string {
	return func(v string) string {
		b, err := base64.RawURLEncoding.DecodeString(v)
		if err != nil || i >= len(b) {
			panic(fmt.Sprintf("flip byte %d of %q: %v", i, v, err))
		}
		b[i] ^= 0x01
		return base64.RawURLEncoding.EncodeToString(b)
	}
}

// changeChar changes character i of a string to another.
func changeChar(i int) func(string) string {
	return func(v string) string {
		b := []byte(v)
		if b[i] == 'a' {
			b[i] = 'b'
		} else {
			b[i] = 'a'
		}
		return string(b)
	}
}

func TestVerifyCommandChecksAProofMadeOverHTTP(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		d := decideOverHTTP(t, db)
		env := cliEnv(d.env)
		credentialID := d.owner.Passkey.CredentialIDString()

		origin := d.env.URL // http://localhost:PORT: accepted only when given
		t.Run("a valid proof without keys: exit 1 unless --allow-self-asserted, and says why", func(t *testing.T) {
			refused := cli(t, nil, "verify", "--origin", origin, d.file)
			if refused.code != 1 || !strings.Contains(refused.stdout, "NOT ACCEPTED") || strings.Contains(refused.stdout, "VALID:") ||
				!strings.Contains(refused.stderr, "only self-asserted") || !strings.Contains(refused.stderr, "--allow-self-asserted") {
				t.Fatalf("verify without --keys: %s; want exit 1, NOT ACCEPTED, self-asserted and the flag named", refused)
			}
			r := mustCLI(t, nil, "verify", "--origin", origin, "--allow-self-asserted", d.file)
			t.Logf("countersign verify says:\n%s", r.stdout)
			for _, want := range []string{"VALID", "decision", "approve", d.hash, d.id, credentialID, "self-asserted",
				"NOT covered by the signature", "ada", d.env.Account.ID, d.env.URL} {
				if !strings.Contains(r.stdout, want) {
					t.Fatalf("the output does not say %q:\n%s", want, r)
				}
			}
			if strings.Contains(r.stdout, "registered device key of account") {
				t.Fatalf("without --keys the output claims the key is registered:\n%s", r)
			}
			// The unsigned claims come after the heading that says so.
			heading := strings.Index(r.stdout, "NOT covered by the signature")
			if person := strings.LastIndex(r.stdout, "ada"); person < heading {
				t.Fatalf("the person is not under the unsigned heading:\n%s", r)
			}
		})

		t.Run("the payload is in the proof and verify recomputes its hash", func(t *testing.T) {
			r := mustCLI(t, nil, "verify", "--origin", origin, "--allow-self-asserted", d.file)
			for _, want := range []string{"Payload (its SHA-256 was recomputed", `"number": 900`, `"repo": "acme/web"`} {
				if !strings.Contains(r.stdout, want) {
					t.Fatalf("the output does not say %q:\n%s", want, r)
				}
			}
			// Another payload beside the signed hash.
			other := d.tampered(t, "other-payload", "payload", func(string) string {
				return base64.RawURLEncoding.EncodeToString([]byte(`{"pull_request":{"head":"abcdef1234567","number":901,"repo":"acme/web","title":"Fix login redirect"}}`))
			})
			if r := cli(t, nil, "verify", "--origin", origin, "--allow-self-asserted", other); r.code != 1 || !strings.Contains(r.stderr, "payload: the payload does not hash to payload_sha256") {
				t.Fatalf("verify of a proof with another payload: %s; want exit 1 on the payload check", r)
			}
		})

		t.Run("an older proof without its payload: exit 1 unless --allow-missing-payload, and says why", func(t *testing.T) {
			p := map[string]any{}
			for k, v := range d.proof {
				if k != "payload" {
					p[k] = v
				}
			}
			raw, _ := json.Marshal(p)
			file := filepath.Join(d.dir, "no-payload.json")
			if err := os.WriteFile(file, raw, 0o644); err != nil {
				t.Fatal(err)
			}
			r := cli(t, nil, "verify", "--origin", origin, "--allow-self-asserted", file)
			if r.code != 1 || !strings.Contains(r.stderr, "carries no payload") || !strings.Contains(r.stderr, "--allow-missing-payload") ||
				!strings.Contains(r.stdout, "Payload: ABSENT") || !strings.Contains(r.stdout, "NOT ACCEPTED") {
				t.Fatalf("verify of a proof without payload: %s; want exit 1, the payload absent, the flag named", r)
			}
			ok := mustCLI(t, nil, "verify", "--origin", origin, "--allow-self-asserted", "--allow-missing-payload", file)
			if !strings.Contains(ok.stdout, "VALID:") || !strings.Contains(ok.stdout, "could not be checked") {
				t.Fatalf("with --allow-missing-payload: %s", ok)
			}
		})

		t.Run("the origin: https://<rp id> unless --origin says otherwise", func(t *testing.T) {
			for _, o := range []string{"", "https://localhost", "http://localhost:1", origin + "/", "http://127.0.0.1" + strings.TrimPrefix(origin, "http://localhost")} {
				args := []string{"verify", "--allow-self-asserted", d.file}
				if o != "" {
					args = append(args, "--origin", o)
				}
				if r := cli(t, nil, args...); r.code != 1 || !strings.Contains(r.stderr, "origin") || !strings.Contains(r.stderr, "run again with --origin "+origin+"\n") {
					t.Fatalf("verify with origin %q of a proof signed at %s: %s; want exit 1 on the origin, suggesting --origin %s", o, origin, r, origin)
				}
			}
		})

		t.Run("with --rp-id: the right one passes, another fails", func(t *testing.T) {
			mustCLI(t, nil, "verify", "--origin", origin, "--allow-self-asserted", "--rp-id", "localhost", d.file)
			if r := cli(t, nil, "verify", "--origin", origin, "--allow-self-asserted", d.file, "--rp-id", "example.com"); r.code != 1 || !strings.Contains(r.stderr, "NOT valid") {
				t.Fatalf("--rp-id example.com: %s; want exit 1, NOT valid", r)
			}
		})

		t.Run("keys export, and verify with it: registered", func(t *testing.T) {
			ctx := context.Background()
			person, err := d.env.Store.PersonBySubject(ctx, "ada")
			if err != nil {
				t.Fatal(err)
			}
			// A second passkey, removed since: exported and flagged.
			gone := apptest.NewAuthenticator()
			if err := apptest.SeedDeviceKey(ctx, d.env.Store, person.ID, people.DeviceKey{ID: gone.CredentialIDString(), Name: "old phone",
				Credential: "{}", PublicKey: base64.RawURLEncoding.EncodeToString(gone.PublicKeyCOSE())}); err != nil {
				t.Fatal(err)
			}
			if err := d.env.Store.RemoveDeviceKey(ctx, person.ID, gone.CredentialIDString()); err != nil {
				t.Fatal(err)
			}

			keysFile := filepath.Join(d.dir, "keys.json")
			r := mustCLI(t, env, "keys", "export", "--out", keysFile)
			if !strings.Contains(r.stdout, "wrote 2 device keys") || !strings.Contains(r.stdout, keysFile) {
				t.Fatalf("keys export says:\n%s", r)
			}
			raw, err := os.ReadFile(keysFile)
			if err != nil {
				t.Fatal(err)
			}
			stdout := mustCLI(t, env, "keys", "export")
			var keys, fromStdout proof.Keys
			if err := json.Unmarshal(raw, &keys); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(stdout.stdout), &fromStdout); err != nil {
				t.Fatalf("keys export to stdout is not the JSON alone: %v\n%s", err, stdout)
			}
			if keys.Format != proof.KeysFormat || keys.AccountID != d.env.Account.ID || keys.RPID != "localhost" || len(keys.Keys) != 2 ||
				keys.Exported.IsZero() || fromStdout.AccountID != keys.AccountID || len(fromStdout.Keys) != 2 {
				t.Fatalf("export %+v; want %s, account %s, RP ID localhost, two keys (stdout: %+v)", keys, proof.KeysFormat, d.env.Account.ID, fromStdout)
			}
			want := map[string]proof.DeviceKey{
				credentialID:              {CredentialID: d.owner.Passkey.CredentialID, PublicKey: d.owner.Passkey.PublicKeyCOSE(), Person: "ada", Name: "test passkey"},
				gone.CredentialIDString(): {CredentialID: gone.CredentialID, PublicKey: gone.PublicKeyCOSE(), Person: "ada", Name: "old phone", Removed: true},
			}
			for _, k := range keys.Keys {
				w, ok := want[base64.RawURLEncoding.EncodeToString(k.CredentialID)]
				if !ok || !bytes.Equal(k.PublicKey, w.PublicKey) || k.Person != w.Person || k.Name != w.Name || k.Removed != w.Removed || k.CreatedAt.IsZero() ||
					(k.RemovedAt != nil) != w.Removed || k.RemovedAt != nil && k.RemovedAt.Before(k.CreatedAt) {
					t.Fatalf("exported key %+v; want %+v", k, w)
				}
			}

			v := mustCLI(t, nil, "verify", d.file, "--origin", origin, "--keys", keysFile)
			t.Logf("countersign verify --keys says:\n%s", v.stdout)
			for _, want := range []string{"VALID", "registered device key of account " + d.env.Account.ID, "person ada", `"test passkey"`} {
				if !strings.Contains(v.stdout, want) {
					t.Fatalf("the output does not say %q:\n%s", want, v)
				}
			}
			if strings.Contains(v.stdout, "self-asserted") {
				t.Fatalf("with --keys the output still says self-asserted:\n%s", v)
			}

			// An export without the signing key: exit 1.
			keys.Keys = keys.Keys[1:]
			if !bytes.Equal(keys.Keys[0].CredentialID, gone.CredentialID) {
				t.Fatalf("keys are not oldest first")
			}
			other := filepath.Join(d.dir, "other-keys.json")
			b, _ := json.Marshal(keys)
			if err := os.WriteFile(other, b, 0o644); err != nil {
				t.Fatal(err)
			}
			if r := cli(t, nil, "verify", d.file, "--origin", origin, "--keys", other); r.code != 1 || !strings.Contains(r.stderr, "not a registered device key") {
				t.Fatalf("verify with an export that lacks the key: %s; want exit 1", r)
			}
		})

		t.Run("a key registered after the decision, or removed before it, does not verify it: exit 1", func(t *testing.T) {
			ctx := context.Background()
			store := d.env.Store
			person, err := store.PersonBySubject(ctx, "ada")
			if err != nil {
				t.Fatal(err)
			}
			decidedAt, err := time.Parse(time.RFC3339Nano, d.proof["unsigned"].(map[string]any)["decided_at"].(string))
			if err != nil {
				t.Fatalf("the proof's decided_at: %v", err)
			}
			// Two more passkeys of ada's: one registered a minute before the
			// decision and removed an hour after it, one registered an hour
			// after it. (Registered "now", the first would be seconds younger
			// than the decision on a slow machine, and rightly refused.)
			b64 := base64.RawURLEncoding.EncodeToString
			removedLater, registeredLater := prooftest.NewKey(), prooftest.NewKey()
			removedID, registeredID := []byte("removed an hour after the decision"), []byte("registered an hour after the decision")
			seed := func(id []byte, k *prooftest.Key, name string) {
				t.Helper()
				if err := apptest.SeedDeviceKey(ctx, store, person.ID, people.DeviceKey{ID: b64(id), Name: name, Credential: "{}", PublicKey: b64(k.COSE())}); err != nil {
					t.Fatal(err)
				}
			}
			store.SetClock(func() time.Time { return decidedAt.Add(-time.Minute) })
			seed(removedID, removedLater, "removed later")
			store.SetClock(func() time.Time { return decidedAt.Add(time.Hour) })
			defer store.SetClock(time.Now)
			seed(registeredID, registeredLater, "registered later")
			if err := store.RemoveDeviceKey(ctx, person.ID, b64(removedID)); err != nil {
				t.Fatal(err)
			}
			store.SetClock(time.Now)
			keysFile := filepath.Join(d.dir, "keys-life.json")
			mustCLI(t, env, "keys", "export", "--out", keysFile)

			// The decided ask, signed by a key, claiming the decision time decided.
			signedBy := func(name string, k *prooftest.Key, id []byte, decided time.Time) string {
				t.Helper()
				raw, err := os.ReadFile(d.file)
				if err != nil {
					t.Fatal(err)
				}
				p, err := proof.Parse(raw)
				if err != nil {
					t.Fatal(err)
				}
				p.CredentialID, p.Unsigned.DecidedAt = id, decided
				k.Sign(p, prooftest.Assertion{Origin: origin, Counter: 1})
				if raw, err = json.Marshal(p); err != nil {
					t.Fatal(err)
				}
				file := filepath.Join(d.dir, name+".json")
				if err := os.WriteFile(file, raw, 0o644); err != nil {
					t.Fatal(err)
				}
				return file
			}

			// Removed an hour after the decision: it was live when it signed.
			live := mustCLI(t, nil, "verify", signedBy("removed-after", removedLater, removedID, decidedAt), "--origin", origin, "--keys", keysFile)
			if !strings.Contains(live.stdout, "VALID:") || !strings.Contains(live.stdout, `passkey "removed later"`) || !strings.Contains(live.stdout, "removed since, at") {
				t.Fatalf("verify of a decision signed before its key was removed: %s; want VALID and the key removed since", live)
			}
			for _, tt := range []struct {
				name, file, reason string
			}{
				{"a key registered an hour after the decision", signedBy("registered-after", registeredLater, registeredID, decidedAt),
					"NOT valid: key_lifetime: the signing key was registered at "},
				{"a key removed an hour before the time the proof claims", signedBy("removed-before", removedLater, removedID, decidedAt.Add(2*time.Hour)),
					"NOT valid: key_lifetime: the signing key was removed at "},
			} {
				r := cli(t, nil, "verify", tt.file, "--origin", origin, "--keys", keysFile)
				if r.code != 1 || !strings.Contains(r.stderr, tt.reason) || strings.Contains(r.stdout, "VALID") {
					t.Fatalf("verify of a decision signed by %s: %s; want exit 1, %q", tt.name, r, tt.reason)
				}
			}
			// Without the export, nothing says when the key lived: the signature alone verifies.
			mustCLI(t, nil, "verify", signedBy("registered-after-self", registeredLater, registeredID, decidedAt), "--origin", origin, "--allow-self-asserted")
		})

		changes := []struct {
			name, field string
			change      func(string) string
			check       string // the check of docs/proof.md that fails
		}{
			{"payload_sha256", "payload_sha256", changeChar(10), "payload"},
			{"payload_sha256 (last character)", "payload_sha256", changeChar(63), "payload"},
			{"payload", "payload", flipByte(12), "payload"},
			{"decision", "decision", changeChar(0), "decision"},
			{"approval_id", "approval_id", changeChar(len("appr_") + 2), "challenge"},
			{"signature", "signature", flipByte(20), "signature"},
			{"authenticator_data (RP ID hash)", "authenticator_data", flipByte(3), "rp_id_hash"},
			{"authenticator_data (counter)", "authenticator_data", flipByte(36), "signature"},
			{"client_data_json", "client_data_json", flipByte(30), ""},
			{"nonce", "nonce", flipByte(0), "challenge"},
		}
		for _, tt := range changes {
			t.Run("one byte changed in "+tt.name+": exit 1", func(t *testing.T) {
				file := d.tampered(t, strings.NewReplacer(" ", "-", "(", "", ")", "").Replace(tt.name), tt.field, tt.change)
				r := cli(t, nil, "verify", "--origin", origin, "--allow-self-asserted", file)
				if r.code != 1 || !strings.Contains(r.stderr, "NOT valid: "+tt.check) || strings.Contains(r.stdout, "VALID") {
					t.Fatalf("verify of a proof with %s changed: %s; want exit 1, NOT valid: %s", tt.name, r, tt.check)
				}
			})
		}

		t.Run("usage errors exit 2", func(t *testing.T) {
			for _, args := range [][]string{{"verify"}, {"verify", d.file, d.file}, {"verify", "--bogus", d.file}, {"verify", d.file, "--keys"}} {
				if r := cli(t, nil, args...); r.code != 2 {
					t.Fatalf("countersign %s: %s; want exit 2", strings.Join(args, " "), r)
				}
			}
		})

		t.Run("a file that is not a proof: exit 1", func(t *testing.T) {
			file := filepath.Join(d.dir, "not-a-proof.json")
			sum := sha256.Sum256([]byte("x"))
			if err := os.WriteFile(file, fmt.Appendf(nil, `{"payload_sha256": "%x"}`, sum), 0o644); err != nil {
				t.Fatal(err)
			}
			if r := cli(t, nil, "verify", file); r.code != 1 {
				t.Fatalf("verify of a file that is no proof: %s; want exit 1", r)
			}
		})
	})
}

// TestVerifyRefusesAPhishedCrossOriginAssertion replays the finding: a key
// registered in the account signs a decision on a phishing page, inside a
// cross-origin frame. Its signature, challenge, RP ID hash and flags are all
// right; only clientDataJSON says where it was made. verify --keys used to
// accept it.
func TestVerifyRefusesAPhishedCrossOriginAssertion(t *testing.T) {
	dir := t.TempDir()
	key := prooftest.NewKey()
	const rpID = "approvals.example.com"
	payload := []byte(`{"review":{"url":"https://example.com/r/1"}}`)
	sum := sha256.Sum256(payload)
	credentialID := []byte("a registered passkey, sixteen+ bytes")
	keys := proof.Keys{Format: proof.KeysFormat, AccountID: "acct_test", RPID: rpID,
		Keys: []proof.DeviceKey{{CredentialID: credentialID, PublicKey: key.COSE(), Person: "ada", Name: "laptop"}}}
	keysFile := filepath.Join(dir, "keys.json")
	write := func(name string, v any) string {
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(dir, name)
		if err := os.WriteFile(file, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		return file
	}
	write("keys.json", keys)
	signed := func(name string, a prooftest.Assertion) string {
		p := &proof.Proof{Format: proof.Format, Domain: proof.Domain, ApprovalID: "appr_test", PayloadSHA256: fmt.Sprintf("%x", sum),
			Payload: payload, Decision: "approve", Nonce: bytes.Repeat([]byte{7}, proof.NonceSize), CredentialID: credentialID, RPID: rpID,
			Unsigned: proof.Unsigned{Person: "ada", AccountID: "acct_test", DecidedAt: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}}
		key.Sign(p, a)
		return write(name, p)
	}

	honest := signed("honest.json", prooftest.Assertion{Counter: 1})
	if r := mustCLI(t, nil, "verify", honest, "--keys", keysFile, "--rp-id", rpID); !strings.Contains(r.stdout, "VALID:") ||
		!regexp.MustCompile(`origin\s+https://`+regexp.QuoteMeta(rpID)+"\n").MatchString(r.stdout) {
		t.Fatalf("the same decision signed at https://%s: %s", rpID, r)
	}
	for _, tt := range []struct {
		name  string
		a     prooftest.Assertion
		check string
	}{
		{"phish", prooftest.Assertion{Origin: "https://phish.example", CrossOrigin: true, Counter: 2}, "origin"},
		{"phish-same-site-frame", prooftest.Assertion{Origin: "https://phish.example", Counter: 2}, "origin"},
		{"two-origins", prooftest.Assertion{OriginFirst: "https://phish.example", Counter: 2}, "client_data_json"},
		{"framed", prooftest.Assertion{CrossOrigin: true, Counter: 2}, "cross_origin"},
		{"registration", prooftest.Assertion{Type: "webauthn.create", Counter: 2}, "type"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			file := signed(tt.name+".json", tt.a)
			r := cli(t, nil, "verify", file, "--keys", keysFile, "--rp-id", rpID)
			if r.code != 1 || !strings.Contains(r.stderr, "NOT valid: "+tt.check+":") || strings.Contains(r.stdout, "VALID") {
				t.Fatalf("verify --keys of an assertion %+v: %s; want exit 1 on the %s check", tt.a, r, tt.check)
			}
			if strings.Contains(r.stderr, "--origin") {
				t.Fatalf("verify of an assertion %+v suggests an --origin: %s; a phishing origin is never suggested", tt.a, r)
			}
		})
	}
	// Naming the phishing origin does not help: it is not of the RP ID.
	if r := cli(t, nil, "verify", signed("phish2.json", prooftest.Assertion{Origin: "https://phish.example", Counter: 3}),
		"--keys", keysFile, "--origin", "https://phish.example"); r.code != 1 || !strings.Contains(r.stderr, "not of the RP ID") {
		t.Fatalf("verify --origin https://phish.example: %s; want exit 1", r)
	}
}

// countersign verify shows a reply decision's words beside the proof, and
// refuses words that are not the signed ones.
func TestVerifyShowsTheReplyOfADenyWithAReply(t *testing.T) {
	dir := t.TempDir()
	key := prooftest.NewKey()
	const rpID = "approvals.example.com"
	payload := []byte(`{"tool_call":{"arguments":{"path":"/srv/prod/notes.txt"},"server":"filesystem","tool":"write_file"}}`)
	sum := sha256.Sum256(payload)
	reply := "Write it to the staging folder instead."
	signed := func(name, claimed string) string {
		p := &proof.Proof{Format: proof.Format, Domain: proof.Domain, ApprovalID: "appr_test", PayloadSHA256: fmt.Sprintf("%x", sum),
			Payload: payload, Decision: proof.ReplyDecision(reply), Nonce: bytes.Repeat([]byte{9}, proof.NonceSize), CredentialID: []byte("a passkey of sixteen bytes or more"), RPID: rpID,
			Unsigned: proof.Unsigned{Person: "ada", AccountID: "acct_test", DecidedAt: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC), Reply: claimed}}
		key.Sign(p, prooftest.Assertion{Counter: 1})
		raw, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(dir, name)
		if err := os.WriteFile(file, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		return file
	}
	r := mustCLI(t, nil, "verify", signed("reply.json", reply), "--rp-id", rpID, "--allow-self-asserted")
	if !strings.Contains(r.stdout, "VALID:") || !strings.Contains(r.stdout, "in place of the tool's result") || !strings.Contains(r.stdout, reply) {
		t.Fatalf("verify of a reply proof: %s; want it valid, with the reply's words", r)
	}
	if r := cli(t, nil, "verify", signed("other.json", "Write it to production."), "--rp-id", rpID, "--allow-self-asserted"); r.code != 1 || !strings.Contains(r.stderr, "reply") {
		t.Fatalf("verify of a reply proof beside other words: %s; want exit 1 on the reply check", r)
	}
}

// verify of an edited approve shows both hashes and each edited member
// with its value before and after; an edited payload other than the one
// signed fails.
func TestVerifyShowsWhatAnEditedApproveChanged(t *testing.T) {
	dir := t.TempDir()
	key := prooftest.NewKey()
	const rpID = "approvals.example.com"
	payload := []byte(`{"tool_call":{"arguments":{"content":"v1.4 ships on Monday","path":"/srv/notes.txt"},"server":"filesystem","tool":"write_file"}}`)
	edited := []byte(`{"tool_call":{"arguments":{"content":"v1.4 ships on Tuesday","path":"/srv/notes.txt"},"server":"filesystem","tool":"write_file"}}`)
	sum, editedSum := sha256.Sum256(payload), sha256.Sum256(edited)
	signed := func(name string, carried []byte) string {
		p := &proof.Proof{Format: proof.Format, Domain: proof.Domain, ApprovalID: "appr_test", PayloadSHA256: fmt.Sprintf("%x", sum),
			Payload: payload, EditedPayload: carried, Decision: proof.EditedDecision(fmt.Sprintf("%x", editedSum)), Nonce: bytes.Repeat([]byte{9}, proof.NonceSize),
			CredentialID: []byte("a passkey of sixteen bytes or more"), RPID: rpID,
			Unsigned: proof.Unsigned{Person: "ada", AccountID: "acct_test", DecidedAt: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}}
		key.Sign(p, prooftest.Assertion{Counter: 1})
		raw, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(dir, name)
		if err := os.WriteFile(file, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		return file
	}
	r := mustCLI(t, nil, "verify", signed("edited.json", edited), "--rp-id", rpID, "--allow-self-asserted")
	for _, want := range []string{"VALID:", "Approved with changes", fmt.Sprintf("%x", sum), fmt.Sprintf("%x", editedSum),
		`/tool_call/arguments/content: "v1.4 ships on Monday" -> "v1.4 ships on Tuesday"`} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("verify of an edited approve: %s; want it to say %q", r, want)
		}
	}
	if strings.Contains(r.stdout, "/tool_call/arguments/path") {
		t.Errorf("verify names a member that did not change: %s", r.stdout)
	}
	other := []byte(`{"tool_call":{"arguments":{"content":"rm -rf /","path":"/srv/notes.txt"},"server":"filesystem","tool":"write_file"}}`)
	if r := cli(t, nil, "verify", signed("other.json", other), "--rp-id", rpID, "--allow-self-asserted"); r.code != 1 || !strings.Contains(r.stderr, "edited_payload") {
		t.Fatalf("verify of a proof carrying another edited payload: %s; want exit 1 on the edited_payload check", r)
	}
}

// countersign verify shows the window an approve_for decision signed, and
// refuses a window beside it that is not the signed one.
func TestVerifyShowsTheWindowOfAnApproveFor(t *testing.T) {
	dir := t.TempDir()
	key := prooftest.NewKey()
	const rpID = "approvals.example.com"
	payload := []byte(`{"tool_call":{"arguments":{"path":"/tmp/notes.txt"},"server":"filesystem","tool":"write_file"}}`)
	sum := sha256.Sum256(payload)
	window := `{"agent":"agent:bot","kind":"tool_call","minutes":30,"target":{"server":"filesystem","tool":"write_file"}}`
	signed := func(name, claimed string) string {
		p := &proof.Proof{Format: proof.Format, Domain: proof.Domain, ApprovalID: "appr_test", PayloadSHA256: fmt.Sprintf("%x", sum),
			Payload: payload, Decision: proof.WindowDecision(window), Nonce: bytes.Repeat([]byte{9}, proof.NonceSize), CredentialID: []byte("a passkey of sixteen bytes or more"), RPID: rpID,
			Unsigned: proof.Unsigned{Person: "ada", AccountID: "acct_test", DecidedAt: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC), ApproveFor: claimed}}
		key.Sign(p, prooftest.Assertion{Counter: 1})
		raw, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(dir, name)
		if err := os.WriteFile(file, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		return file
	}
	r := mustCLI(t, nil, "verify", signed("window.json", window), "--rp-id", rpID, "--allow-self-asserted")
	if !strings.Contains(r.stdout, "VALID:") || !strings.Contains(r.stdout, "the same for a while") || !strings.Contains(r.stdout, window) {
		t.Fatalf("verify of a window's proof: %s; want it valid, with the window", r)
	}
	longer := strings.Replace(window, `"minutes":30`, `"minutes":480`, 1)
	if r := cli(t, nil, "verify", signed("longer.json", longer), "--rp-id", rpID, "--allow-self-asserted"); r.code != 1 || !strings.Contains(r.stderr, "approve_for") {
		t.Fatalf("verify of a window's proof beside a longer window: %s; want exit 1 on the approve_for check", r)
	}
}
