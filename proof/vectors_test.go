package proof_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/proof"
	"github.com/countersign/countersign/proof/prooftest"
)

var update = flag.Bool("update", false, "rewrite testdata/vectors.json (then paste its example into docs/proof.md)")

const vectorsFile = "testdata/vectors.json"

// vectorFile is testdata/vectors.json: one proof made by a known key, the
// bytes a verifier computes from it, and variants with the verdict each must
// get. docs/proof.md describes it.
type vectorFile struct {
	Comment string `json:"comment"`
	Key     struct {
		PrivateScalarHex string `json:"private_scalar_hex"`
		PublicKeyCOSEHex string `json:"public_key_cose_hex"`
	} `json:"key"`
	RPID                 string       `json:"rp_id"`
	Origin               string       `json:"origin"`
	PayloadJSON          string       `json:"payload_json"`
	PreimageHex          string       `json:"preimage_hex"`
	ChallengeHex         string       `json:"challenge_hex"`
	ClientDataJSONText   string       `json:"client_data_json_text"`
	AuthenticatorDataHex string       `json:"authenticator_data_hex"`
	SignedBytesHex       string       `json:"signed_bytes_hex"`
	Proof                *proof.Proof `json:"proof"`
	Keys                 *proof.Keys  `json:"keys_export"`
	Cases                []vectorCase `json:"cases"`
}

type vectorCase struct {
	Name           string       `json:"name"`
	Proof          *proof.Proof `json:"proof"`
	WithKeys       bool         `json:"with_keys"`
	ExpectOrigin   string       `json:"expect_origin,omitempty"`
	Valid          bool         `json:"valid"`
	FailedCheck    string       `json:"failed_check,omitempty"`
	PayloadChecked bool         `json:"payload_checked"`
	KeyRegistered  bool         `json:"key_registered"`
}

// makeVectors builds the vector file with fresh signatures (ECDSA signatures
// are randomised; every other byte is fixed).
func makeVectors(t *testing.T) *vectorFile {
	t.Helper()
	scalar := sha256.Sum256([]byte("countersign proof test vector key"))
	key, err := prooftest.KeyFromScalar(scalar[:])
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := prooftest.KeyFromScalar(func() []byte { s := sha256.Sum256([]byte("a key nobody registered")); return s[:] }())
	if err != nil {
		t.Fatal(err)
	}
	const rpID = "approvals.example.com"
	payload := []byte(`{"pull_request":{"head":"abcdef1234567","number":900,"repo":"acme/web","title":"Fix login redirect"}}`)
	other := []byte(`{"pull_request":{"head":"abcdef1234567","number":901,"repo":"acme/web","title":"Fix login redirect"}}`)
	hash := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
	nonce := make([]byte, proof.NonceSize)
	for i := range nonce {
		nonce[i] = byte(i)
	}
	credentialID, _ := hex.DecodeString("5a1d0c0ffee0ddba11cafe0123456789")
	base := proof.Proof{
		Format: proof.Format, Domain: proof.Domain, ApprovalID: "appr_q7tk3m2xv4b6n8p1", PayloadSHA256: hash(payload), Payload: payload,
		Decision: "approve", Nonce: nonce, CredentialID: credentialID, RPID: rpID,
		Unsigned: proof.Unsigned{Person: "ada", AccountID: "acct_example", DecidedAt: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)},
	}
	key.Sign(&base, prooftest.Assertion{Counter: 7})
	removedAt := time.Date(2026, 5, 1, 18, 0, 0, 0, time.UTC) // after the decision: the key signed while it was live

	v := &vectorFile{
		Comment: "countersign-proof/v1 test vectors, specified in docs/proof.md. The key is a test key: never trust it. " +
			"ECDSA signatures are randomised, so regenerating (go test ./proof -run TestVectors -update) changes every signature and nothing else.",
		RPID: rpID, Origin: "https://" + rpID, PayloadJSON: string(payload), Proof: &base,
		Keys: &proof.Keys{Format: proof.KeysFormat, AccountID: "acct_example", RPID: rpID, Exported: time.Date(2026, 5, 2, 9, 0, 0, 0, time.UTC),
			Keys: []proof.DeviceKey{{CredentialID: credentialID, PublicKey: key.COSE(), Person: "ada", Name: "ada's laptop", CreatedAt: time.Date(2026, 4, 1, 8, 0, 0, 0, time.UTC),
				Removed: true, RemovedAt: &removedAt}}},
	}
	v.Key.PrivateScalarHex, v.Key.PublicKeyCOSEHex = hex.EncodeToString(key.Scalar()), hex.EncodeToString(key.COSE())
	v.PreimageHex = hex.EncodeToString(preimage(&base))
	v.ChallengeHex = hex.EncodeToString(proof.Challenge(base.Domain, base.ApprovalID, base.PayloadSHA256, base.Decision, base.Nonce))
	v.ClientDataJSONText = string(base.ClientDataJSON)
	v.AuthenticatorDataHex = hex.EncodeToString(base.AuthenticatorData)
	cdHash := sha256.Sum256(base.ClientDataJSON)
	v.SignedBytesHex = hex.EncodeToString(append(bytes.Clone(base.AuthenticatorData), cdHash[:]...))

	variant := func(change func(p *proof.Proof)) *proof.Proof {
		p := cloneProof(t, &base)
		change(p)
		return p
	}
	resigned := func(a prooftest.Assertion, change func(p *proof.Proof)) *proof.Proof {
		return variant(func(p *proof.Proof) {
			change(p)
			key.Sign(p, a)
		})
	}
	same := func(*proof.Proof) {}
	decidedAt := func(at time.Time) func(p *proof.Proof) { return func(p *proof.Proof) { p.Unsigned.DecidedAt = at } }
	q := "Does this touch the session cookie?"
	v.Cases = []vectorCase{
		{Name: "the proof as made, without a key export", Proof: &base, Valid: true, PayloadChecked: true},
		{Name: "the proof as made, with the key export", Proof: &base, WithKeys: true, Valid: true, PayloadChecked: true, KeyRegistered: true},
		{Name: "a question decision, its text beside it", Valid: true, PayloadChecked: true, Proof: resigned(prooftest.Assertion{Counter: 8}, func(p *proof.Proof) {
			p.Decision, p.Unsigned.Question = proof.QuestionDecision(q), q
		})},
		{Name: "the payload of pull request 901 in place of 900's", FailedCheck: "payload", Proof: variant(func(p *proof.Proof) { p.Payload = other })},
		{Name: "the payload with white space (not canonical)", FailedCheck: "payload", Proof: variant(func(p *proof.Proof) {
			p.Payload = []byte(strings.Replace(string(payload), `"number":900`, `"number": 900`, 1))
		})},
		{Name: "payload and payload_sha256 both of pull request 901", FailedCheck: "challenge", Proof: variant(func(p *proof.Proof) {
			p.Payload, p.PayloadSHA256 = other, hash(other)
		})},
		{Name: "the decision changed to deny", FailedCheck: "challenge", Proof: variant(func(p *proof.Proof) { p.Decision = "deny" })},
		{Name: "the nonce's last byte changed", FailedCheck: "challenge", Proof: variant(func(p *proof.Proof) { p.Nonce[31] ^= 1 })},
		{Name: "another approval_id", FailedCheck: "challenge", Proof: variant(func(p *proof.Proof) { p.ApprovalID = "appr_q7tk3m2xv4b6n8p2" })},
		{Name: "a signature byte changed", FailedCheck: "signature", Proof: variant(func(p *proof.Proof) { p.Signature[10] ^= 1 })},
		{Name: "another key's public key in its place", FailedCheck: "signature", Proof: variant(func(p *proof.Proof) { p.PublicKey = stranger.COSE() })},
		{Name: "signed by the registered key at https://phish.example in a cross-origin frame", WithKeys: true, FailedCheck: "origin",
			Proof: resigned(prooftest.Assertion{Origin: "https://phish.example", CrossOrigin: true, Counter: 9}, same)},
		{Name: "signed by the registered key with two origin members in clientDataJSON, https://phish.example first and ours last", WithKeys: true,
			FailedCheck: "client_data_json", Proof: resigned(prooftest.Assertion{OriginFirst: "https://phish.example", Counter: 9}, same)},
		{Name: "signed at the right origin but in a cross-origin frame", WithKeys: true, FailedCheck: "cross_origin",
			Proof: resigned(prooftest.Assertion{CrossOrigin: true, Counter: 9}, same)},
		{Name: "the right proof held against the origin http://approvals.example.com", ExpectOrigin: "http://" + rpID, FailedCheck: "origin", Proof: &base},
		{Name: "a registration (webauthn.create) in place of an assertion", FailedCheck: "type",
			Proof: resigned(prooftest.Assertion{Type: "webauthn.create", Counter: 9}, same)},
		{Name: "user present but not verified (flags 0x01)", FailedCheck: "flags", Proof: resigned(prooftest.Assertion{Flags: 0x01, Counter: 9}, same)},
		{Name: "authenticator data made for evil.example.com", FailedCheck: "rp_id_hash",
			Proof: resigned(prooftest.Assertion{RPID: "evil.example.com", Counter: 9}, same)},
		{Name: "signed by a key the export does not hold", WithKeys: true, FailedCheck: "keys", Proof: variant(func(p *proof.Proof) { stranger.Sign(p, prooftest.Assertion{Counter: 1}) })},
		{Name: "an older proof without its payload", Valid: true, Proof: variant(func(p *proof.Proof) { p.Payload = nil })},
		{Name: "decided, the proof says, before the key was registered", WithKeys: true, FailedCheck: "key_lifetime",
			Proof: variant(decidedAt(time.Date(2026, 3, 31, 12, 0, 0, 0, time.UTC)))},
		{Name: "decided, the proof says, one second before the key was registered (the clock skew allowed)", WithKeys: true, Valid: true,
			PayloadChecked: true, KeyRegistered: true, Proof: variant(decidedAt(time.Date(2026, 4, 1, 7, 59, 59, 0, time.UTC)))},
		{Name: "decided, the proof says, after the key was removed", WithKeys: true, FailedCheck: "key_lifetime",
			Proof: variant(decidedAt(time.Date(2026, 5, 1, 20, 0, 0, 0, time.UTC)))},
	}
	return v
}

// preimage is the length-prefixed byte string whose SHA-256 is the challenge.
func preimage(p *proof.Proof) []byte {
	var out []byte
	for _, f := range [][]byte{[]byte(p.Domain), []byte(p.ApprovalID), []byte(p.PayloadSHA256), []byte(p.Decision), p.Nonce} {
		out = append(out, byte(len(f)>>24), byte(len(f)>>16), byte(len(f)>>8), byte(len(f)))
		out = append(out, f...)
	}
	return out
}

func cloneProof(t *testing.T, p *proof.Proof) *proof.Proof {
	t.Helper()
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	out, err := proof.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func readVectors(t *testing.T) *vectorFile {
	t.Helper()
	if *update {
		raw, err := json.MarshalIndent(makeVectors(t), "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(vectorsFile, append(raw, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(vectorsFile)
	if err != nil {
		t.Fatal(err)
	}
	var v vectorFile
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return &v
}

func TestVectorsHoldTheBytesAVerifierComputes(t *testing.T) {
	v := readVectors(t)
	p := v.Proof
	key, err := hex.DecodeString(v.Key.PrivateScalarHex)
	if err != nil {
		t.Fatal(err)
	}
	k, err := prooftest.KeyFromScalar(key)
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(k.COSE()); got != v.Key.PublicKeyCOSEHex || !bytes.Equal(p.PublicKey, k.COSE()) {
		t.Fatalf("the key's COSE form %s is not the vector's %s or the proof's %x", got, v.Key.PublicKeyCOSEHex, p.PublicKey)
	}
	if string(p.Payload) != v.PayloadJSON {
		t.Fatalf("payload %s, want %s", p.Payload, v.PayloadJSON)
	}
	sum := sha256.Sum256([]byte(v.PayloadJSON))
	if hex.EncodeToString(sum[:]) != p.PayloadSHA256 {
		t.Fatalf("SHA-256 of payload_json is %x, the proof says %s", sum, p.PayloadSHA256)
	}
	if got := hex.EncodeToString(preimage(p)); got != v.PreimageHex {
		t.Fatalf("preimage %s, want %s", got, v.PreimageHex)
	}
	pre, _ := hex.DecodeString(v.PreimageHex)
	if s := sha256.Sum256(pre); hex.EncodeToString(s[:]) != v.ChallengeHex {
		t.Fatalf("the preimage does not hash to challenge_hex")
	}
	challenge := proof.Challenge(p.Domain, p.ApprovalID, p.PayloadSHA256, p.Decision, p.Nonce)
	if hex.EncodeToString(challenge) != v.ChallengeHex {
		t.Fatalf("Challenge = %x, want %s", challenge, v.ChallengeHex)
	}
	if string(p.ClientDataJSON) != v.ClientDataJSONText ||
		!strings.Contains(v.ClientDataJSONText, `"challenge":"`+base64.RawURLEncoding.EncodeToString(challenge)+`"`) {
		t.Fatalf("client_data_json %s does not carry the challenge %x", v.ClientDataJSONText, challenge)
	}
	if hex.EncodeToString(p.AuthenticatorData) != v.AuthenticatorDataHex {
		t.Fatalf("authenticator_data %x, want %s", p.AuthenticatorData, v.AuthenticatorDataHex)
	}
	cdHash := sha256.Sum256(p.ClientDataJSON)
	if got := hex.EncodeToString(append(bytes.Clone(p.AuthenticatorData), cdHash[:]...)); got != v.SignedBytesHex {
		t.Fatalf("signed bytes %s, want %s", got, v.SignedBytesHex)
	}
}

func TestVectorsGetTheirVerdicts(t *testing.T) {
	v := readVectors(t)
	if len(v.Cases) < 15 {
		t.Fatalf("%d cases, want at least 15", len(v.Cases))
	}
	for _, c := range v.Cases {
		t.Run(c.Name, func(t *testing.T) {
			raw, err := json.Marshal(c.Proof)
			if err != nil {
				t.Fatal(err)
			}
			p, err := proof.Parse(raw)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			want := proof.Expect{RPID: v.RPID, Origin: c.ExpectOrigin}
			if c.WithKeys {
				want.Keys = v.Keys
			}
			res, err := proof.Verify(p, want)
			if !c.Valid {
				var f *proof.Failure
				if !errors.As(err, &f) || f.Check != c.FailedCheck {
					t.Fatalf("Verify = %+v, %v; want the %q check to fail", res, err, c.FailedCheck)
				}
				return
			}
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if res.PayloadTold != c.PayloadChecked || res.KeyRegistered != c.KeyRegistered || res.Origin != v.Origin {
				t.Fatalf("result %+v; want payload checked %v, key registered %v, origin %s", res, c.PayloadChecked, c.KeyRegistered, v.Origin)
			}
		})
	}
}

// The document shows the vectors' proof and bytes and names every check a
// vector fails, so neither can change without the other.
func TestTheDocumentShowsTheVectors(t *testing.T) {
	v := readVectors(t)
	raw, err := os.ReadFile("../docs/proof.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	example, err := json.MarshalIndent(v.Proof, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"the example proof": string(example), "preimage_hex": v.PreimageHex, "challenge_hex": v.ChallengeHex,
		"client_data_json_text": v.ClientDataJSONText, "payload_json": v.PayloadJSON, "the key's private scalar": v.Key.PrivateScalarHex,
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("docs/proof.md does not show %s:\n%s\n(after go test -update, paste testdata/vectors.json's values into the document)", name, want)
		}
	}
	named := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| \\d+ \\| `([a-z_]+)`").FindAllStringSubmatch(doc, -1) {
		named[m[1]] = true
	}
	for _, c := range v.Cases {
		if !c.Valid && !named[c.FailedCheck] {
			t.Errorf("the check %q is not in docs/proof.md's table of checks", c.FailedCheck)
		}
	}
}
