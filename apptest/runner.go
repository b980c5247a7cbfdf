package apptest

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"time"

	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
	"github.com/countersign/countersign/models/runners"
)

// Join invites subject to the account with role and accepts the invite in
// a new browser with a new passkey; the browser is then signed in.
func (e *Env) Join(accountID string, role core.Role, subject string) *Browser {
	e.t.Helper()
	token, _, err := e.Store.CreateInvite(context.Background(), people.NewInvite{AccountID: accountID, Role: role, By: people.OperatorInviter("test")})
	if err != nil {
		e.t.Fatalf("create invite: %v", err)
	}
	b := e.Browser()
	if r := b.AcceptInvite(token, subject); r.Status != http.StatusOK || b.Session() == "" {
		e.t.Fatalf("accept the invite of %s: %s", subject, r)
	}
	return b
}

// TestRunner is an enrolled runner: its key, its record and its token.
type TestRunner struct {
	Key    ed25519.PrivateKey
	Runner *runners.Runner
	Token  string
}

// PublicKey is the runner's public key as enrolled.
func (r *TestRunner) PublicKey() string {
	return base64.RawURLEncoding.EncodeToString(r.Key.Public().(ed25519.PublicKey))
}

// EnrollRunner makes a key pair and enrolls a runner of the account with it.
func (e *Env) EnrollRunner(accountID, name string) *TestRunner {
	e.t.Helper()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		e.t.Fatal(err)
	}
	return e.EnrollRunnerKey(accountID, name, key)
}

// EnrollRunnerKey enrolls a runner of the account with a given key.
func (e *Env) EnrollRunnerKey(accountID, name string, key ed25519.PrivateKey) *TestRunner {
	e.t.Helper()
	pub := base64.RawURLEncoding.EncodeToString(key.Public().(ed25519.PublicKey))
	r, token, err := e.Store.EnrollRunner(context.Background(), accountID, name, pub, "test")
	if err != nil {
		e.t.Fatalf("enroll runner: %v", err)
	}
	return &TestRunner{Key: key, Runner: r, Token: token}
}

// ScriptSHA256 is the lower-case hex SHA-256 of a script's bytes.
func ScriptSHA256(script []byte) string {
	sum := sha256.Sum256(script)
	return hex.EncodeToString(sum[:])
}

// Ask is the approvals_create arguments of a pinned run of r (see RunAsk).
func (r *TestRunner) Ask(askedOf, scriptSHA256 string, argv []string, effect string, ahead time.Duration) map[string]any {
	return RunAsk(r.Runner.ID, r.PublicKey(), askedOf, scriptSHA256, argv, effect, ahead)
}

// RunAsk is the approvals_create arguments of a pinned run of the runner
// with runnerID and publicKey, asked of askedOf, running argv of the script
// with scriptSHA256, expiring ahead from now.
func RunAsk(runnerID, publicKey, askedOf, scriptSHA256 string, argv []string, effect string, ahead time.Duration) map[string]any {
	return map[string]any{
		"kind":          "run",
		"title":         "Run " + argv[0],
		"summary":       "A pinned run.",
		"approve_means": "the runner runs it once",
		"deny_means":    "nothing runs",
		"payload": map[string]any{"run": map[string]any{
			"cmd": "./" + argv[0], "script_sha256": scriptSHA256, "runner_id": runnerID, "argv": argv,
			"effect": effect, "runner_public_key": publicKey, "expires_at": time.Now().Add(ahead).Unix(), "asked_of": askedOf,
		}},
		"context": map[string]any{"no_context_reason": "a test run"},
	}
}

// KeysExport is what countersign keys export writes for the account: its
// device keys, for a runner to pin.
func (e *Env) KeysExport(accountID string) []byte {
	e.t.Helper()
	ctx := context.Background()
	u, err := url.Parse(e.URL)
	if err != nil {
		e.t.Fatal(err)
	}
	export, err := e.Store.ExportKeys(ctx, accountID, u.Hostname())
	if err != nil {
		e.t.Fatalf("export keys: %v", err)
	}
	b, err := json.Marshal(export)
	if err != nil {
		e.t.Fatal(err)
	}
	return b
}
