package proof_test

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/countersign/countersign/proof"
)

// signBatch has a software passkey sign one batch of n approvals, and
// returns the proof of each.
func signBatch(t *testing.T, n int) []*proof.Proof {
	t.Helper()
	rp, u, auth, key := withPasskey(t)
	items := make([]proof.BatchItem, n)
	for i := range items {
		items[i] = proof.BatchItem{ApprovalID: fmt.Sprintf("appr_batch%02d", i), PayloadSHA256: strings.Repeat(fmt.Sprintf("%x", i%16), 64), Decision: "approve"}
	}
	nonce := make([]byte, proof.NonceSize)
	if _, err := rand.Read(nonce); err != nil {
		t.Fatal(err)
	}
	challenge, err := proof.BatchChallenge(items, nonce)
	if err != nil {
		t.Fatal(err)
	}
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
		t.Fatalf("the relying party refused the batch signature: %v", err)
	}
	publicKey, err := base64.RawURLEncoding.DecodeString(key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]*proof.Proof, n)
	for i, it := range items {
		p := rp.Proof(a, publicKey, it.ApprovalID, it.PayloadSHA256, it.Decision, nonce, unsigned)
		p.Domain, p.Batch = proof.DomainBatch, items
		out[i] = p
	}
	return out
}

// One assertion over a batch of ten: each ask's proof verifies from the list
// alone; dropping, changing or adding an item breaks it, and a proof of an
// ask the list does not hold does not verify.
func TestEachProofOfABatchVerifiesFromTheListAlone(t *testing.T) {
	proofs := signBatch(t, 10)
	for _, p := range proofs {
		res, err := proof.Verify(clone(t, p), proof.Expect{RPID: "localhost", Origin: origin})
		if err != nil {
			t.Fatalf("the proof of %s does not verify: %v", p.ApprovalID, err)
		}
		if res.ApprovalID != p.ApprovalID || res.Decision != "approve" {
			t.Errorf("verified %+v, want %s approved", res, p.ApprovalID)
		}
	}
	for name, change := range map[string]func(p *proof.Proof){
		"an item dropped":           func(p *proof.Proof) { p.Batch = p.Batch[:len(p.Batch)-1] },
		"an item's decision turned": func(p *proof.Proof) { p.Batch[9].Decision = "deny" },
		"an item added": func(p *proof.Proof) {
			p.Batch = append(p.Batch, proof.BatchItem{ApprovalID: "appr_extra", PayloadSHA256: strings.Repeat("a", 64), Decision: "approve"})
		},
		"the list reordered":  func(p *proof.Proof) { p.Batch[1], p.Batch[2] = p.Batch[2], p.Batch[1] },
		"the decision domain": func(p *proof.Proof) { p.Domain = proof.Domain },
	} {
		p := clone(t, proofs[0])
		change(p)
		if _, err := proof.Verify(p, proof.Expect{Origin: origin}); err == nil {
			t.Errorf("a batch proof verifies with %s", name)
		}
	}
	p := clone(t, proofs[0])
	p.ApprovalID = "appr_not_in_the_list"
	if _, err := proof.Verify(p, proof.Expect{Origin: origin}); err == nil || !strings.Contains(err.Error(), "not in the batch") {
		t.Errorf("a proof of an ask the batch does not hold: %v", err)
	}
	p = clone(t, proofs[0])
	p.Batch = nil
	if _, err := proof.Verify(p, proof.Expect{Origin: origin}); err == nil {
		t.Error("a batch's assertion verifies as one decision's")
	}
}

// The batch challenge matches vectors computed apart from this package, with
// Python's hashlib.
func TestBatchChallengeMatchesTheGoldenVectors(t *testing.T) {
	raw, err := os.ReadFile("testdata/batch_challenge_vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var vs struct {
		Vectors []struct {
			Name         string            `json:"name"`
			Items        []proof.BatchItem `json:"items"`
			NonceHex     string            `json:"nonce_hex"`
			ListSHA256   string            `json:"list_sha256"`
			ChallengeHex string            `json:"challenge_hex"`
		} `json:"vectors"`
	}
	if err := json.Unmarshal(raw, &vs); err != nil {
		t.Fatal(err)
	}
	if len(vs.Vectors) < 2 {
		t.Fatalf("%d vectors, want 2", len(vs.Vectors))
	}
	doc, err := os.ReadFile("../docs/proof.md")
	if err != nil {
		t.Fatal(err)
	}
	if first := vs.Vectors[0]; !strings.Contains(string(doc), first.ListSHA256) || !strings.Contains(string(doc), first.ChallengeHex) {
		t.Errorf("docs/proof.md does not show the first batch vector's list_sha256 %s and challenge %s", first.ListSHA256, first.ChallengeHex)
	}
	for _, v := range vs.Vectors {
		nonce, err := hex.DecodeString(v.NonceHex)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := proof.BatchListSHA256(v.Items); err != nil || got != v.ListSHA256 {
			t.Errorf("%s: list hash %s (%v), want %s", v.Name, got, err, v.ListSHA256)
		}
		if got, err := proof.BatchChallenge(v.Items, nonce); err != nil || hex.EncodeToString(got) != v.ChallengeHex {
			t.Errorf("%s: challenge %x (%v), want %s", v.Name, got, err, v.ChallengeHex)
		}
	}
}
