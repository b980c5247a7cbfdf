package proof_test

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/people"
	"github.com/countersign/countersign/passkey"
	"github.com/countersign/countersign/proof"
	"github.com/countersign/countersign/proof/prooftest"
)

const origin = "http://localhost:8080"

// signed is a proof made the way the server makes one: a passkey registered
// with the relying party signs the decision challenge, go-webauthn checks
// it, and the proof is built from the checked assertion.
type signed struct {
	proof *proof.Proof
	key   *people.DeviceKey
	auth  *apptest.Authenticator
}

// withPasskey is a relying party at origin and ada, who registered a
// software passkey with it.
func withPasskey(t *testing.T) (*passkey.RP, *passkey.User, *apptest.Authenticator, *people.DeviceKey) {
	t.Helper()
	rp, err := passkey.New(origin)
	if err != nil {
		t.Fatal(err)
	}
	auth := apptest.NewAuthenticator()
	u := &passkey.User{ID: "per_test", Subject: "ada", DisplayName: "Ada"}
	options, session, err := rp.BeginRegistration(u)
	if err != nil {
		t.Fatal(err)
	}
	credential, err := auth.Register(origin, options)
	if err != nil {
		t.Fatal(err)
	}
	key, err := rp.FinishRegistration(u, session, credential, "test passkey")
	if err != nil {
		t.Fatalf("the relying party refused the software passkey: %v", err)
	}
	u.Keys = []people.DeviceKey{*key}
	return rp, u, auth, key
}

func makeProof(t *testing.T, approvalID, decision string, unsigned proof.Unsigned) signed {
	t.Helper()
	rp, u, auth, key := withPasskey(t)

	payload := sha256.Sum256([]byte(`{"review":{"url":"https://example.com/r/1"}}`))
	payloadSHA256 := hex.EncodeToString(payload[:])
	nonce := make([]byte, proof.NonceSize)
	if _, err := rand.Read(nonce); err != nil {
		t.Fatal(err)
	}
	challenge := proof.Challenge(proof.Domain, approvalID, payloadSHA256, decision, nonce)
	options, session, err := rp.BeginDecision(u, challenge)
	if err != nil {
		t.Fatal(err)
	}
	assertion, err := auth.Assert(origin, options)
	if err != nil {
		t.Fatal(err)
	}
	a, err := rp.FinishDecision(u, session, assertion, challenge)
	if err != nil {
		t.Fatalf("the relying party refused the signature: %v", err)
	}
	publicKey, err := base64.RawURLEncoding.DecodeString(key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return signed{proof: rp.Proof(a, publicKey, approvalID, payloadSHA256, decision, nonce, unsigned), key: key, auth: auth}
}

// clone copies a proof through its JSON, as a verifier reads it.
func clone(t *testing.T, p *proof.Proof) *proof.Proof {
	t.Helper()
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var out proof.Proof
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}

var unsigned = proof.Unsigned{Person: "ada", AccountID: "acct_test", DecidedAt: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}

// window is the JSON of a window as the service writes it: bot's write_file
// calls on filesystem, approved for 30 minutes.
const window = `{"agent":"agent:bot","kind":"tool_call","minutes":30,"target":{"server":"filesystem","tool":"write_file"}}`

func TestAProofMadeWithThePasskeyVerifies(t *testing.T) {
	for _, decision := range []string{"approve", "deny", "not_mine", "option:3", proof.QuestionDecision("Why now?"), proof.ReplyDecision("Use the staging bucket instead"), proof.WindowDecision(window)} {
		t.Run(decision, func(t *testing.T) {
			u := unsigned
			if strings.HasPrefix(decision, "question:") {
				u.Question = "Why now?"
			}
			if strings.HasPrefix(decision, "reply:") {
				u.Reply = "Use the staging bucket instead"
			}
			if strings.HasPrefix(decision, "approve_for:") {
				u.ApproveFor = window
			}
			s := makeProof(t, "appr_test", decision, u)
			p := clone(t, s.proof)
			res, err := proof.Verify(p, proof.Expect{RPID: "localhost", Origin: origin})
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			want := proof.Result{
				ApprovalID: "appr_test", PayloadSHA256: p.PayloadSHA256, Decision: decision,
				CredentialID: s.auth.CredentialIDString(), Origin: origin, SignCount: s.auth.Counter,
			}
			if !reflect.DeepEqual(*res, want) {
				t.Fatalf("result %+v, want %+v", *res, want)
			}
			if p.Format != proof.Format || p.Domain != proof.Domain || p.RPID != "localhost" ||
				!bytes.Equal(p.PublicKey, s.auth.PublicKeyCOSE()) || !bytes.Equal(p.CredentialID, s.auth.CredentialID) || p.Unsigned != u {
				t.Fatalf("proof %+v does not hold what was signed", p)
			}
		})
	}
}

// otherChar is a character that is not c, of the same kind where it matters
// (a hex digit stays a hex digit).
func otherChar(c byte) byte {
	if c == 'a' {
		return 'b'
	}
	return 'a'
}

func changeChar(s string, i int) string {
	b := []byte(s)
	b[i] = otherChar(b[i])
	return string(b)
}

func TestAnyChangedByteMakesVerifyFail(t *testing.T) {
	s := makeProof(t, "appr_test", "approve", unsigned)
	if _, err := proof.Verify(clone(t, s.proof), proof.Expect{Origin: origin}); err != nil {
		t.Fatalf("the untouched proof does not verify: %v", err)
	}
	bytesFields := []struct {
		name string
		get  func(p *proof.Proof) []byte
	}{
		{"nonce", func(p *proof.Proof) []byte { return p.Nonce }},
		{"signature", func(p *proof.Proof) []byte { return p.Signature }},
		{"authenticator_data", func(p *proof.Proof) []byte { return p.AuthenticatorData }},
		{"client_data_json", func(p *proof.Proof) []byte { return p.ClientDataJSON }},
		{"public_key", func(p *proof.Proof) []byte { return p.PublicKey }},
	}
	for _, f := range bytesFields {
		n := len(f.get(s.proof))
		t.Run("any byte of "+f.name+" flipped", func(t *testing.T) {
			if n == 0 {
				t.Fatalf("%s is empty", f.name)
			}
			for i := range n {
				for _, mask := range []byte{0x01, 0x80} {
					p := clone(t, s.proof)
					f.get(p)[i] ^= mask
					if _, err := proof.Verify(p, proof.Expect{Origin: origin}); err == nil {
						t.Fatalf("%s with byte %d ^ %#x verifies", f.name, i, mask)
					}
				}
			}
		})
	}
	stringFields := []struct {
		name string
		get  func(p *proof.Proof) *string
	}{
		{"payload_sha256", func(p *proof.Proof) *string { return &p.PayloadSHA256 }},
		{"decision", func(p *proof.Proof) *string { return &p.Decision }},
		{"approval_id", func(p *proof.Proof) *string { return &p.ApprovalID }},
		{"rp_id", func(p *proof.Proof) *string { return &p.RPID }},
		{"domain", func(p *proof.Proof) *string { return &p.Domain }},
		{"format", func(p *proof.Proof) *string { return &p.Format }},
	}
	for _, f := range stringFields {
		n := len(*f.get(s.proof))
		t.Run("any character of "+f.name+" changed", func(t *testing.T) {
			if n == 0 {
				t.Fatalf("%s is empty", f.name)
			}
			for i := range n {
				p := clone(t, s.proof)
				v := f.get(p)
				*v = changeChar(*v, i)
				if _, err := proof.Verify(p, proof.Expect{Origin: origin}); err == nil {
					t.Fatalf("%s %q verifies", f.name, *v)
				}
			}
		})
	}
	t.Run("another valid decision in place of the signed one", func(t *testing.T) {
		for _, d := range []string{"deny", "not_mine", "option:0", proof.QuestionDecision("x")} {
			p := clone(t, s.proof)
			p.Decision = d
			if _, err := proof.Verify(p, proof.Expect{Origin: origin}); err == nil {
				t.Fatalf("decision %q verifies with a signature over approve", d)
			}
		}
	})
	t.Run("a question text beside the proof that is not the signed one", func(t *testing.T) {
		q := makeProof(t, "appr_test", proof.QuestionDecision("Why now?"), proof.Unsigned{Question: "Why now?"})
		if _, err := proof.Verify(clone(t, q.proof), proof.Expect{Origin: origin}); err != nil {
			t.Fatalf("the question proof does not verify: %v", err)
		}
		p := clone(t, q.proof)
		p.Unsigned.Question = "Why not now?"
		if _, err := proof.Verify(p, proof.Expect{Origin: origin}); err == nil {
			t.Fatalf("a proof verifies beside a question it did not sign")
		}
	})
	t.Run("a reply beside the proof that is not the signed one", func(t *testing.T) {
		r := makeProof(t, "appr_test", proof.ReplyDecision("Use the staging bucket instead"), proof.Unsigned{Reply: "Use the staging bucket instead"})
		if _, err := proof.Verify(clone(t, r.proof), proof.Expect{Origin: origin}); err != nil {
			t.Fatalf("the reply proof does not verify: %v", err)
		}
		p := clone(t, r.proof)
		p.Unsigned.Reply = "Use the production bucket"
		if _, err := proof.Verify(p, proof.Expect{Origin: origin}); err == nil || !strings.Contains(err.Error(), "reply") {
			t.Fatalf("a proof beside a reply it did not sign: %v, want the reply check to refuse it", err)
		}
	})
	t.Run("a window beside the proof that is not the signed one", func(t *testing.T) {
		w := makeProof(t, "appr_test", proof.WindowDecision(window), proof.Unsigned{ApproveFor: window})
		if _, err := proof.Verify(clone(t, w.proof), proof.Expect{Origin: origin}); err != nil {
			t.Fatalf("the window proof does not verify: %v", err)
		}
		for name, other := range map[string]string{
			"eight hours":  strings.Replace(window, `"minutes":30`, `"minutes":480`, 1),
			"another tool": strings.Replace(window, `"write_file"`, `"delete_file"`, 1),
			"white space":  strings.Replace(window, `,"kind"`, `, "kind"`, 1),
		} {
			p := clone(t, w.proof)
			p.Unsigned.ApproveFor = other
			if _, err := proof.Verify(p, proof.Expect{Origin: origin}); err == nil || !strings.Contains(err.Error(), "approve_for") {
				t.Errorf("a proof beside a window it did not sign (%s): %v, want the approve_for check to refuse it", name, err)
			}
		}
		p := clone(t, w.proof)
		p.Decision = "approve"
		if _, err := proof.Verify(p, proof.Expect{Origin: origin}); err == nil {
			t.Errorf("a window's signature verifies as a plain approve")
		}
	})
}

func TestVerifyChecksTheRPIDAskedFor(t *testing.T) {
	s := makeProof(t, "appr_test", "approve", unsigned)
	if _, err := proof.Verify(clone(t, s.proof), proof.Expect{RPID: "localhost", Origin: origin}); err != nil {
		t.Fatalf("--rp-id localhost: %v", err)
	}
	for _, rpID := range []string{"example.com", "localhost.", "LOCALHOST", "evil.localhost"} {
		if _, err := proof.Verify(clone(t, s.proof), proof.Expect{RPID: rpID, Origin: origin}); err == nil {
			t.Fatalf("a proof made for localhost verifies with --rp-id %q", rpID)
		}
	}
	// A proof that claims another RP ID than its authenticator data hashes.
	p := clone(t, s.proof)
	p.RPID = "example.com"
	if _, err := proof.Verify(p, proof.Expect{RPID: "example.com", Origin: origin}); err == nil {
		t.Fatalf("a proof whose authenticator data is for localhost verifies as example.com")
	}
}

func TestVerifyWithKeysChecksTheKeyIsRegistered(t *testing.T) {
	s := makeProof(t, "appr_test", "approve", unsigned)
	registered := proof.DeviceKey{CredentialID: s.auth.CredentialID, PublicKey: s.auth.PublicKeyCOSE(), Person: "ada", Name: "test passkey"}
	stranger := apptest.NewAuthenticator()
	keys := func(ks ...proof.DeviceKey) *proof.Keys {
		return &proof.Keys{Format: proof.KeysFormat, AccountID: "acct_test", RPID: "localhost", Keys: ks}
	}
	other := proof.DeviceKey{CredentialID: stranger.CredentialID, PublicKey: stranger.PublicKeyCOSE(), Person: "bob"}

	res, err := proof.Verify(clone(t, s.proof), proof.Expect{RPID: "localhost", Origin: origin, Keys: keys(other, registered)})
	if err != nil || !res.KeyRegistered || res.KeyPerson != "ada" {
		t.Fatalf("registered key: %+v, %v; want registered, of ada", res, err)
	}
	removed := registered
	removed.Removed = true
	if res, err := proof.Verify(clone(t, s.proof), proof.Expect{Origin: origin, Keys: keys(removed)}); err != nil || !res.KeyRegistered {
		t.Fatalf("a key removed since it signed: %+v, %v; want registered (it was when it signed)", res, err)
	}
	if res, err := proof.Verify(clone(t, s.proof), proof.Expect{Origin: origin}); err != nil || res.KeyRegistered || res.KeyPerson != "" {
		t.Fatalf("without keys: %+v, %v; want valid, not registered", res, err)
	}

	refusals := []struct {
		name string
		keys *proof.Keys
	}{
		{"an unknown key", keys(other)},
		{"no keys at all", keys()},
		{"the same credential id with another public key", keys(proof.DeviceKey{CredentialID: s.auth.CredentialID, PublicKey: stranger.PublicKeyCOSE(), Person: "ada"})},
		{"keys of another account", &proof.Keys{Format: proof.KeysFormat, AccountID: "acct_other", RPID: "localhost", Keys: []proof.DeviceKey{registered}}},
		{"keys of another RP ID", &proof.Keys{Format: proof.KeysFormat, AccountID: "acct_test", RPID: "example.com", Keys: []proof.DeviceKey{registered}}},
		{"keys of another format", &proof.Keys{Format: "countersign-keys/v0", AccountID: "acct_test", RPID: "localhost", Keys: []proof.DeviceKey{registered}}},
	}
	for _, tt := range refusals {
		t.Run(tt.name+" is refused", func(t *testing.T) {
			if res, err := proof.Verify(clone(t, s.proof), proof.Expect{Origin: origin, Keys: tt.keys}); err == nil {
				t.Fatalf("verifies: %+v", res)
			}
		})
	}
	t.Run("a credential id changed to another registered key's is refused", func(t *testing.T) {
		p := clone(t, s.proof)
		p.CredentialID = stranger.CredentialID
		if _, err := proof.Verify(p, proof.Expect{Origin: origin, Keys: keys(registered, other)}); err == nil {
			t.Fatalf("verifies")
		}
	})
}

// A key export says when each key was registered and removed; a proof
// whose decision time falls outside that life was not signed by a live key.
func TestVerifyWithKeysHoldsTheKeysLifeAgainstTheDecisionTime(t *testing.T) {
	s := makeProof(t, "appr_test", "approve", unsigned)
	decided := unsigned.DecidedAt
	at := func(d time.Duration) *time.Time { t := decided.Add(d); return &t }
	tests := []struct {
		name      string
		created   time.Time
		removedAt *time.Time
		removed   bool
		decidedAt time.Time
		reason    string // "" when it verifies
	}{
		{name: "registered a month before, never removed", created: decided.AddDate(0, -1, 0), decidedAt: decided},
		{name: "registered within the clock skew after the decision", created: decided.Add(proof.ClockSkew), decidedAt: decided},
		{name: "registered a microsecond beyond the clock skew after the decision", created: decided.Add(proof.ClockSkew + time.Microsecond), decidedAt: decided,
			reason: "registered at 2026-05-01T12:00:01.000001Z, after the decision's time 2026-05-01T12:00:00Z"},
		{name: "registered a day after the decision", created: decided.AddDate(0, 0, 1), decidedAt: decided,
			reason: "a key registered after a decision cannot have signed it"},
		{name: "removed a day after the decision", created: decided.AddDate(0, -1, 0), removed: true, removedAt: at(24 * time.Hour), decidedAt: decided},
		{name: "removed within the clock skew before the decision", created: decided.AddDate(0, -1, 0), removed: true,
			removedAt: at(-proof.ClockSkew + time.Microsecond), decidedAt: decided},
		{name: "removed the clock skew before the decision", created: decided.AddDate(0, -1, 0), removed: true, removedAt: at(-proof.ClockSkew), decidedAt: decided,
			reason: "removed at 2026-05-01T11:59:59Z, before the decision's time 2026-05-01T12:00:00Z"},
		{name: "removed an hour before the decision", created: decided.AddDate(0, -1, 0), removed: true, removedAt: at(-time.Hour), decidedAt: decided,
			reason: "a key removed before a decision cannot have signed it"},
		{name: "removed at a time an older export does not say", created: decided.AddDate(0, -1, 0), removed: true, decidedAt: decided},
		{name: "a proof that does not say when it was decided", created: decided.AddDate(0, -1, 0), reason: "does not say when it was decided"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := clone(t, s.proof)
			p.Unsigned.DecidedAt = tt.decidedAt // unsigned: the signature still verifies
			keys := &proof.Keys{Format: proof.KeysFormat, AccountID: "acct_test", RPID: "localhost", Keys: []proof.DeviceKey{{
				CredentialID: s.auth.CredentialID, PublicKey: s.auth.PublicKeyCOSE(), Person: "ada", Name: "test passkey",
				CreatedAt: tt.created, Removed: tt.removed, RemovedAt: tt.removedAt}}}
			res, err := proof.Verify(p, proof.Expect{RPID: "localhost", Origin: origin, Keys: keys})
			if tt.reason == "" {
				if err != nil || !res.KeyRegistered || res.KeyPerson != "ada" {
					t.Fatalf("Verify = %+v, %v; want valid, a registered key of ada", res, err)
				}
				return
			}
			var f *proof.Failure
			if !errors.As(err, &f) || f.Check != "key_lifetime" || !strings.Contains(f.Reason, tt.reason) {
				t.Fatalf("Verify = %+v, %v; want the key_lifetime check to fail saying %q", res, err, tt.reason)
			}
			// Without a key export there is no key life to hold it against.
			if _, err := proof.Verify(p, proof.Expect{RPID: "localhost", Origin: origin}); err != nil {
				t.Fatalf("without keys: %v; want valid (self-asserted)", err)
			}
		})
	}
}

func TestParseKeysReadsRemovedAt(t *testing.T) {
	const head = `{"format":"countersign-keys/v1","account_id":"acct_test","rp_id":"localhost","exported_at":"2026-05-02T09:00:00Z","keys":[{"credential_id":"AQI","public_key":"pQE","person":"ada","name":"laptop","created_at":"2026-04-01T08:00:00Z"`
	keys, err := proof.ParseKeys([]byte(head + `,"removed":true,"removed_at":"2026-05-01T18:00:00.5Z"}]}`))
	if err != nil {
		t.Fatalf("ParseKeys of a removed key with its time: %v", err)
	}
	if k := keys.Keys[0]; !k.Removed || k.RemovedAt == nil || !k.RemovedAt.Equal(time.Date(2026, 5, 1, 18, 0, 0, 5e8, time.UTC)) {
		t.Fatalf("key %+v; want removed at 2026-05-01T18:00:00.5Z", k)
	}
	for name, raw := range map[string]string{
		"removed_at on a key not removed":         head + `,"removed_at":"2026-05-01T18:00:00Z"}]}`,
		"removed_at on a key removed: false":      head + `,"removed":false,"removed_at":"2026-05-01T18:00:00Z"}]}`,
		"removed_at that is not an RFC 3339 time": head + `,"removed":true,"removed_at":"yesterday"}]}`,
	} {
		if _, err := proof.ParseKeys([]byte(raw)); err == nil {
			t.Errorf("ParseKeys accepts %s", name)
		}
	}
}

// vectors is proof/testdata/challenge_vectors.json, computed by
// challenge_vectors.py with Python's hashlib, not with this package.
type vectors struct {
	Vectors []struct {
		Name          string `json:"name"`
		Domain        string `json:"domain"`
		ApprovalID    string `json:"approval_id"`
		PayloadSHA256 string `json:"payload_sha256"`
		Decision      string `json:"decision"`
		Question      string `json:"question"`
		Reply         string `json:"reply"`
		EditedPayload string `json:"edited_payload"`
		ApproveFor    string `json:"approve_for"`
		NonceHex      string `json:"nonce_hex"`
		PreimageHex   string `json:"preimage_hex"`
		ChallengeHex  string `json:"challenge_hex"`
	} `json:"vectors"`
}

func TestChallengeLayoutMatchesTheGoldenVectors(t *testing.T) {
	raw, err := os.ReadFile("testdata/challenge_vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var vs vectors
	if err := json.Unmarshal(raw, &vs); err != nil {
		t.Fatal(err)
	}
	if len(vs.Vectors) < 5 {
		t.Fatalf("%d vectors, want at least 5", len(vs.Vectors))
	}
	for _, v := range vs.Vectors {
		t.Run(v.Name, func(t *testing.T) {
			nonce, err := hex.DecodeString(v.NonceHex)
			if err != nil || len(nonce) != proof.NonceSize {
				t.Fatalf("nonce %q: %v", v.NonceHex, err)
			}
			if v.Domain != proof.Domain {
				t.Fatalf("domain %q, want %q", v.Domain, proof.Domain)
			}
			if !proof.ValidDecision(v.Decision) {
				t.Fatalf("decision %q is not valid", v.Decision)
			}
			if sum := sha256.Sum256([]byte(v.EditedPayload)); v.EditedPayload != "" && proof.EditedDecision(hex.EncodeToString(sum[:])) != v.Decision {
				t.Fatalf("EditedDecision(SHA-256 of %s) = %q, want %q", v.EditedPayload, proof.EditedDecision(hex.EncodeToString(sum[:])), v.Decision)
			}
			if v.Reply != "" && proof.ReplyDecision(v.Reply) != v.Decision {
				t.Fatalf("ReplyDecision(%q) = %q, want %q", v.Reply, proof.ReplyDecision(v.Reply), v.Decision)
			}
			if v.ApproveFor != "" && proof.WindowDecision(v.ApproveFor) != v.Decision {
				t.Fatalf("WindowDecision(%q) = %q, want %q", v.ApproveFor, proof.WindowDecision(v.ApproveFor), v.Decision)
			}
			if v.Question != "" && proof.QuestionDecision(v.Question) != v.Decision {
				t.Fatalf("QuestionDecision(%q) = %q, want %q", v.Question, proof.QuestionDecision(v.Question), v.Decision)
			}
			preimage, _ := hex.DecodeString(v.PreimageHex)
			sum := sha256.Sum256(preimage)
			if hex.EncodeToString(sum[:]) != v.ChallengeHex {
				t.Fatalf("the vector's preimage does not hash to its challenge")
			}
			got := proof.Challenge(v.Domain, v.ApprovalID, v.PayloadSHA256, v.Decision, nonce)
			if hex.EncodeToString(got) != v.ChallengeHex {
				t.Fatalf("Challenge = %x, want %s", got, v.ChallengeHex)
			}
		})
	}
}

func TestRequestDecisionsAreOfTheLayout(t *testing.T) {
	for d, want := range map[string]bool{
		"choice:0": true, "choice:5": true, "choice:99": true, "choice:01": false, "choice:100": false, "choice:": false, "choice:-1": false,
		proof.AnswerDecision("call it Atlas"): true, "answer:" + strings.Repeat("A", 64): false, "answer:" + strings.Repeat("a", 63): false,
	} {
		if got := proof.ValidDecision(d); got != want {
			t.Errorf("ValidDecision(%q) = %t, want %t", d, got, want)
		}
	}
}

// An approve_for decision is the SHA-256 of its window in lower-case hex, and
// a proof that carries the window beside it reads strictly and verifies.
func TestAWindowDecisionIsOfTheLayoutAndItsProofReads(t *testing.T) {
	for d, want := range map[string]bool{
		proof.WindowDecision(window): true, "approve_for:" + strings.Repeat("A", 64): false,
		"approve_for:" + strings.Repeat("a", 63): false, "approve_for": false, "approve_for:": false,
	} {
		if got := proof.ValidDecision(d); got != want {
			t.Errorf("ValidDecision(%q) = %t, want %t", d, got, want)
		}
	}
	u := unsigned
	u.ApproveFor = window
	s := makeProof(t, "appr_test", proof.WindowDecision(window), u)
	raw, err := json.Marshal(s.proof)
	if err != nil {
		t.Fatal(err)
	}
	p, err := proof.Parse(raw)
	if err != nil {
		t.Fatalf("Parse of a window's proof: %v", err)
	}
	if p.Unsigned.ApproveFor != window {
		t.Fatalf("unsigned.approve_for = %q, want the window", p.Unsigned.ApproveFor)
	}
	if res, err := proof.Verify(p, proof.Expect{Origin: origin}); err != nil || res.Decision != proof.WindowDecision(window) {
		t.Fatalf("Verify = %+v, %v; want the window's decision", res, err)
	}
}

// encoding/json keeps the last of two members with one name, another reader
// may keep the first: two readers would see two documents in the same
// bytes. A proof, and the clientDataJSON inside it, that names any member
// twice, at any depth, is refused.
func TestAMemberNamedTwiceIsRefusedInTheProofAndInClientDataJSON(t *testing.T) {
	key := prooftest.NewKey()
	base := &proof.Proof{Format: proof.Format, Domain: proof.Domain, ApprovalID: "appr_test",
		PayloadSHA256: strings.Repeat("ab", 32), Decision: "approve", Nonce: bytes.Repeat([]byte{7}, proof.NonceSize),
		CredentialID: []byte("credential-id-16bytes"), RPID: "approvals.example.com", Unsigned: unsigned}
	key.Sign(base, prooftest.Assertion{})
	if _, err := proof.Verify(clone(t, base), proof.Expect{}); err != nil {
		t.Fatalf("the honest proof: %v", err)
	}
	t.Run("a clientDataJSON naming the phishing origin first and ours last fails the client_data_json check", func(t *testing.T) {
		p := clone(t, base)
		key.Sign(p, prooftest.Assertion{OriginFirst: "https://phish.example"})
		if !bytes.Contains(p.ClientDataJSON, []byte(`"origin":"https://phish.example","origin":"https://approvals.example.com"`)) {
			t.Fatalf("the forged clientDataJSON is %s", p.ClientDataJSON)
		}
		_, err := proof.Verify(p, proof.Expect{})
		var f *proof.Failure
		if !errors.As(err, &f) || f.Check != "client_data_json" || !strings.Contains(f.Reason, `"origin" is named twice`) {
			t.Fatalf("Verify = %v, want the client_data_json check to fail naming origin twice", err)
		}
	})
	for _, tc := range []struct{ name, from, to, member string }{
		{"a top-level member", `"decision":"approve"`, `"decision":"deny","decision":"approve"`, "decision"},
		{"a member of unsigned", `"person":"ada"`, `"person":"mallory","person":"ada"`, "unsigned.person"},
		{"a member spelt with an escape", `"decision":"approve"`, `"decision":"approve","d\u0065cision":"approve"`, "decision"},
	} {
		t.Run("a proof naming "+tc.name+" twice is refused by Parse", func(t *testing.T) {
			raw, err := json.Marshal(base)
			if err != nil {
				t.Fatal(err)
			}
			twice := strings.Replace(string(raw), tc.from, tc.to, 1)
			if twice == string(raw) {
				t.Fatalf("%s is not in the proof", tc.from)
			}
			if _, err := proof.Parse([]byte(twice)); err == nil || !strings.Contains(err.Error(), `"`+tc.member+`" is named twice`) {
				t.Fatalf("Parse = %v, want a refusal naming %s twice", err, tc.member)
			}
		})
	}
	t.Run("a nested member named twice in clientDataJSON is refused", func(t *testing.T) {
		p := clone(t, base)
		p.ClientDataJSON = []byte(strings.Replace(string(p.ClientDataJSON), `"crossOrigin":false`, `"crossOrigin":false,"tokenBinding":{"status":"present","status":"supported"}`, 1))
		_, err := proof.Verify(p, proof.Expect{})
		var f *proof.Failure
		if !errors.As(err, &f) || f.Check != "client_data_json" || !strings.Contains(f.Reason, `"tokenBinding.status" is named twice`) {
			t.Fatalf("Verify = %v, want the client_data_json check to fail naming tokenBinding.status twice", err)
		}
	})
}
