package proof_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"
	"time"

	"github.com/countersign/countersign/proof"
	"github.com/countersign/countersign/proof/prooftest"
)

// A proof of a free-text answer carries the answer's text beside it, as the
// decision service writes it: it reads back strictly and verifies, and a
// changed text is caught.
func TestAnAnswerProofReadsBackAndVerifies(t *testing.T) {
	payload := []byte(`{"agent_request":{"title":"Which region first?"}}`)
	sum := sha256.Sum256(payload)
	text := "eu-west-1, then the rest"
	textSum := sha256.Sum256([]byte(text))
	key := prooftest.NewKey()
	p := proof.Proof{
		Format: proof.Format, Domain: proof.Domain, ApprovalID: "appr_answer", PayloadSHA256: hex.EncodeToString(sum[:]), Payload: payload,
		Decision: "answer:" + hex.EncodeToString(textSum[:]), Nonce: make([]byte, proof.NonceSize), CredentialID: []byte("cred-1"),
		RPID:     "approvals.example.com",
		Unsigned: proof.Unsigned{Person: "ada", AccountID: "acct_1", DecidedAt: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC), Answer: text},
	}
	key.Sign(&p, prooftest.Assertion{Counter: 1})
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	read, err := proof.Parse(raw)
	if err != nil {
		t.Fatalf("an answer proof does not read back: %v", err)
	}
	if read.Unsigned.Answer != text {
		t.Fatalf("the answer read back as %q", read.Unsigned.Answer)
	}
	if _, err := proof.Verify(read, proof.Expect{}); err != nil {
		t.Fatalf("an answer proof does not verify: %v", err)
	}
	read.Unsigned.Answer = "us-east-1"
	if _, err := proof.Verify(read, proof.Expect{}); err == nil {
		t.Fatalf("an answer proof whose text was changed verifies")
	}
}
