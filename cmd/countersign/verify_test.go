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

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/proof"
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
		if err != nil || m.Role != models.RoleAdmin {
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

		t.Run("a valid proof without keys: exit 0, the decision, the hash, self-asserted", func(t *testing.T) {
			r := mustCLI(t, nil, "verify", d.file)
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

		t.Run("with --rp-id: the right one passes, another fails", func(t *testing.T) {
			mustCLI(t, nil, "verify", "--rp-id", "localhost", d.file)
			if r := cli(t, nil, "verify", d.file, "--rp-id", "example.com"); r.code != 1 || !strings.Contains(r.stderr, "NOT valid") {
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
			if err := d.env.Store.AddDeviceKey(ctx, person.ID, models.DeviceKey{ID: gone.CredentialIDString(), Name: "old phone",
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
				if !ok || !bytes.Equal(k.PublicKey, w.PublicKey) || k.Person != w.Person || k.Name != w.Name || k.Removed != w.Removed || k.CreatedAt.IsZero() {
					t.Fatalf("exported key %+v; want %+v", k, w)
				}
			}

			v := mustCLI(t, nil, "verify", d.file, "--keys", keysFile)
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
			if r := cli(t, nil, "verify", d.file, "--keys", other); r.code != 1 || !strings.Contains(r.stderr, "not a registered device key") {
				t.Fatalf("verify with an export that lacks the key: %s; want exit 1", r)
			}
		})

		changes := []struct {
			name, field string
			change      func(string) string
		}{
			{"payload_sha256", "payload_sha256", changeChar(10)},
			{"payload_sha256 (last character)", "payload_sha256", changeChar(63)},
			{"decision", "decision", changeChar(0)},
			{"approval_id", "approval_id", changeChar(len("appr_") + 2)},
			{"signature", "signature", flipByte(20)},
			{"authenticator_data (RP ID hash)", "authenticator_data", flipByte(3)},
			{"authenticator_data (counter)", "authenticator_data", flipByte(36)},
			{"client_data_json", "client_data_json", flipByte(30)},
			{"nonce", "nonce", flipByte(0)},
		}
		for _, tt := range changes {
			t.Run("one byte changed in "+tt.name+": exit 1", func(t *testing.T) {
				file := d.tampered(t, strings.NewReplacer(" ", "-", "(", "", ")", "").Replace(tt.name), tt.field, tt.change)
				r := cli(t, nil, "verify", file)
				if r.code != 1 || !strings.Contains(r.stderr, "NOT valid") || strings.Contains(r.stdout, "VALID") {
					t.Fatalf("verify of a proof with %s changed: %s; want exit 1, NOT valid", tt.name, r)
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
