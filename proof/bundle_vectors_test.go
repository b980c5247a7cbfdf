package proof_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/proof"
	"github.com/countersign/countersign/proof/prooftest"
)

const bundleVectorsFile = "testdata/bundle_vectors.json"

// bundleVectorFile is testdata/bundle_vectors.json: a two-person bundle made
// by known keys (ada's, bob's, and ada's second passkey), the bytes of the
// v2 challenge of its first proof, and variants with the verdict each must
// get against the key export. docs/proof.md describes it.
type bundleVectorFile struct {
	Comment          string            `json:"comment"`
	RPID             string            `json:"rp_id"`
	RequirementJSON  string            `json:"requirement_json"`
	RequirementHash  string            `json:"requirement_sha256"`
	PreimageHex      string            `json:"first_proof_preimage_hex"`
	ChallengeHex     string            `json:"first_proof_challenge_hex"`
	Bundle           *proof.Bundle     `json:"bundle"`
	Keys             *proof.Keys       `json:"keys_export"`
	Cases            []bundleCase      `json:"cases"`
	PrivateScalarHex map[string]string `json:"private_scalars_hex"`
}

type bundleCase struct {
	Name        string        `json:"name"`
	Bundle      *proof.Bundle `json:"bundle"`
	Valid       bool          `json:"valid"`
	Decision    string        `json:"decision,omitempty"`
	FailedCheck string        `json:"failed_check,omitempty"`
}

func makeBundleVectors(t *testing.T) *bundleVectorFile {
	t.Helper()
	key := func(seed string) *prooftest.Key {
		s := sha256.Sum256([]byte(seed))
		k, err := prooftest.KeyFromScalar(s[:])
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	ada, bob, adaTwo, cy := key("countersign bundle vector key: ada"), key("countersign bundle vector key: bob"),
		key("countersign bundle vector key: ada's second passkey"), key("countersign bundle vector key: cy")
	const rpID = "approvals.example.com"
	payload := []byte(`{"run":{"argv":["deploy.sh"],"asked_of":"ada","cmd":"./deploy.sh","effect":"production","expires_at":1777636800,"runner_id":"run_h7","runner_public_key":"MCowBQYDK2VwAyEA","script_sha256":"` + strings.Repeat("c", 64) + `"}}`)
	sum := sha256.Sum256(payload)
	req := &proof.Requirement{RuleID: "builtin-production-run", Count: 2, Pool: "asked_of+admins", People: []string{"ada", "bob"}}
	canon, err := req.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	reqHash, _ := req.SHA256()
	credential := func(b byte) []byte { c := make([]byte, 16); c[0], c[15] = 0xc5, b; return c }
	one := func(k *prooftest.Key, person string, cred byte, decision string, r *proof.Requirement, at int) json.RawMessage {
		nonce := make([]byte, proof.NonceSize)
		nonce[0], nonce[31] = cred, byte(at)
		p := proof.Proof{Format: proof.Format, Domain: proof.DomainRequirement, ApprovalID: "appr_two7people2sign", PayloadSHA256: hex.EncodeToString(sum[:]),
			Payload: payload, Decision: decision, Nonce: nonce, CredentialID: credential(cred), RPID: rpID, Requirement: r,
			Unsigned: proof.Unsigned{Person: person, AccountID: "acct_example", DecidedAt: time.Date(2026, 5, 1, 12, at, 0, 0, time.UTC)}}
		k.Sign(&p, prooftest.Assertion{Counter: uint32(at + 1)})
		raw, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	bundle := func(reqJSON []byte, proofs ...json.RawMessage) *proof.Bundle {
		return &proof.Bundle{Format: proof.BundleFormat, ApprovalID: "appr_two7people2sign", PayloadSHA256: hex.EncodeToString(sum[:]),
			Requirement: reqJSON, Proofs: proofs}
	}
	adaOK, bobOK := one(ada, "ada", 1, "approve", req, 1), one(bob, "bob", 2, "approve", req, 2)
	base := bundle(canon, adaOK, bobOK)
	three := *req
	three.Count = 1
	edited, _ := three.Canonical()
	tampered := func(raw json.RawMessage) json.RawMessage {
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		m["requirement"].(map[string]any)["count"] = 1
		out, _ := json.Marshal(m)
		return out
	}
	v1 := func(k *prooftest.Key, person string, cred byte) json.RawMessage {
		var p proof.Proof
		_ = json.Unmarshal(one(k, person, cred, "approve", nil, 3), &p)
		p.Domain = proof.Domain
		k.Sign(&p, prooftest.Assertion{Counter: 9})
		raw, _ := json.Marshal(p)
		return raw
	}
	created := time.Date(2026, 4, 1, 8, 0, 0, 0, time.UTC)
	v := &bundleVectorFile{
		Comment: "countersign-bundle/v1 test vectors, specified in docs/proof.md. The keys are test keys: never trust them. " +
			"Regenerating (go test ./proof -run TestBundleVectors -update) changes every signature and nothing else.",
		RPID: rpID, RequirementJSON: string(canon), RequirementHash: reqHash, Bundle: base,
		Keys: &proof.Keys{Format: proof.KeysFormat, AccountID: "acct_example", RPID: rpID, Exported: time.Date(2026, 5, 2, 9, 0, 0, 0, time.UTC),
			Keys: []proof.DeviceKey{
				{CredentialID: credential(1), PublicKey: ada.COSE(), Person: "ada", Name: "ada's laptop", CreatedAt: created},
				{CredentialID: credential(2), PublicKey: bob.COSE(), Person: "bob", Name: "bob's phone", CreatedAt: created},
				{CredentialID: credential(3), PublicKey: adaTwo.COSE(), Person: "ada", Name: "ada's phone", CreatedAt: created},
				{CredentialID: credential(4), PublicKey: cy.COSE(), Person: "cy", Name: "cy's phone", CreatedAt: created},
			}},
		PrivateScalarHex: map[string]string{"ada": hex.EncodeToString(ada.Scalar()), "bob": hex.EncodeToString(bob.Scalar()),
			"ada_second": hex.EncodeToString(adaTwo.Scalar()), "cy": hex.EncodeToString(cy.Scalar())},
	}
	first, _ := proof.Parse(adaOK)
	var pre []byte
	for _, f := range [][]byte{[]byte(first.Domain), []byte(first.ApprovalID), []byte(first.PayloadSHA256), []byte(first.Decision), []byte(reqHash), first.Nonce} {
		pre = append(pre, byte(len(f)>>24), byte(len(f)>>16), byte(len(f)>>8), byte(len(f)))
		pre = append(pre, f...)
	}
	v.PreimageHex = hex.EncodeToString(pre)
	c := sha256.Sum256(pre)
	v.ChallengeHex = hex.EncodeToString(c[:])
	v.Cases = []bundleCase{
		{Name: "the bundle as made: ada and bob approve", Bundle: base, Valid: true, Decision: "approve"},
		{Name: "bob's signature dropped", Bundle: bundle(canon, adaOK), FailedCheck: "quorum"},
		{Name: "bob's signature swapped for one by ada's second passkey", Bundle: bundle(canon, adaOK, one(adaTwo, "bob", 3, "approve", req, 3)), FailedCheck: "signers"},
		{Name: "signed by cy, who is not among the requirement's people", Bundle: bundle(canon, adaOK, one(cy, "cy", 4, "approve", req, 4)), FailedCheck: "signers"},
		{Name: "the bundle's requirement edited to count 1", Bundle: bundle(edited, adaOK, bobOK), FailedCheck: "requirement"},
		{Name: "the requirement edited to count 1 in the bundle and in every proof", Bundle: bundle(edited, tampered(adaOK), tampered(bobOK)), FailedCheck: "challenge"},
		{Name: "a signature that binds no requirement (v1)", Bundle: bundle(canon, adaOK, v1(bob, "bob", 2)), FailedCheck: "requirement"},
		{Name: "ada approves and bob denies: a veto", Bundle: bundle(canon, adaOK, one(bob, "bob", 2, "deny", req, 5)), Valid: true, Decision: "deny"},
	}
	return v
}

func readBundleVectors(t *testing.T) *bundleVectorFile {
	t.Helper()
	if *update {
		raw, err := json.MarshalIndent(makeBundleVectors(t), "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(bundleVectorsFile, append(raw, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(bundleVectorsFile)
	if err != nil {
		t.Fatal(err)
	}
	var v bundleVectorFile
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return &v
}

func TestBundleVectorsGetTheirVerdicts(t *testing.T) {
	v := readBundleVectors(t)
	req, err := proof.ParseRequirement([]byte(v.RequirementJSON))
	if err != nil {
		t.Fatal(err)
	}
	if h, _ := req.SHA256(); h != v.RequirementHash {
		t.Fatalf("requirement_sha256 %s, want %s", v.RequirementHash, h)
	}
	first, err := proof.Parse(v.Bundle.Proofs[0])
	if err != nil {
		t.Fatal(err)
	}
	pre, _ := hex.DecodeString(v.PreimageHex)
	if s := sha256.Sum256(pre); hex.EncodeToString(s[:]) != v.ChallengeHex {
		t.Fatal("the preimage does not hash to the challenge")
	}
	if got := hex.EncodeToString(proof.RequirementChallenge(first.ApprovalID, first.PayloadSHA256, first.Decision, v.RequirementHash, first.Nonce)); got != v.ChallengeHex {
		t.Fatalf("RequirementChallenge = %s, want %s", got, v.ChallengeHex)
	}
	for _, c := range v.Cases {
		t.Run(c.Name, func(t *testing.T) {
			raw, err := json.Marshal(c.Bundle)
			if err != nil {
				t.Fatal(err)
			}
			b, err := proof.ParseBundle(raw)
			if err != nil {
				t.Fatal(err)
			}
			res, err := proof.VerifyBundle(b, proof.Expect{RPID: v.RPID, Keys: v.Keys})
			if !c.Valid {
				var f *proof.Failure
				if !errors.As(err, &f) || f.Check != c.FailedCheck {
					t.Fatalf("VerifyBundle = %+v, %v; want the %q check to fail", res, err, c.FailedCheck)
				}
				return
			}
			if err != nil || res.Decision != c.Decision {
				t.Fatalf("VerifyBundle = %+v, %v; want %s", res, err, c.Decision)
			}
		})
	}
}

// The document shows the bundle vectors' requirement and challenge and names
// every check a bundle vector fails.
func TestTheDocumentShowsTheBundleVectors(t *testing.T) {
	v := readBundleVectors(t)
	raw, err := os.ReadFile("../docs/proof.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	for name, want := range map[string]string{"requirement_json": v.RequirementJSON, "requirement_sha256": v.RequirementHash,
		"first_proof_challenge_hex": v.ChallengeHex} {
		if !strings.Contains(doc, want) {
			t.Errorf("docs/proof.md does not show %s: %s", name, want)
		}
	}
	for _, c := range v.Cases {
		if !c.Valid && !strings.Contains(doc, "`"+c.FailedCheck+"`") {
			t.Errorf("docs/proof.md does not name the check %q", c.FailedCheck)
		}
	}
}
