package proof

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/gowebpki/jcs"
)

// DomainBatch separates a batch signature, one assertion over a list of
// decisions, from a decision's and from every other use of a passkey.
const DomainBatch = "countersign/batch/v1"

// MaxBatch is the most decisions one signature covers.
const MaxBatch = 50

// BatchItem is one decision of a batch: the ask, its payload's hash and the
// decision, approve or deny.
type BatchItem struct {
	ApprovalID    string `json:"approval_id"`
	PayloadSHA256 string `json:"payload_sha256"`
	Decision      string `json:"decision"`
}

// BatchListSHA256 is the lower-case hex SHA-256 of the list's RFC 8785
// bytes: the list as a JSON array of its items, in their order.
func BatchListSHA256(items []BatchItem) (string, error) {
	raw, err := json.Marshal(items)
	if err != nil {
		return "", err
	}
	canonical, err := jcs.Transform(raw)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:]), nil
}

// BatchChallenge computes the bytes a passkey signs for a batch:
//
//	SHA-256( lp(DomainBatch) || lp(list_sha256) || lp(nonce) )
//
// with list_sha256 the BatchListSHA256 of items, as its 64 hex characters.
func BatchChallenge(items []BatchItem, nonce []byte) ([]byte, error) {
	h, err := BatchListSHA256(items)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	for _, field := range [][]byte{[]byte(DomainBatch), []byte(h), nonce} {
		buf.Write(lp(field))
	}
	sum := sha256.Sum256(buf.Bytes())
	return sum[:], nil
}

func lp(field []byte) []byte {
	out := make([]byte, 4, 4+len(field))
	out[0], out[1], out[2], out[3] = byte(len(field)>>24), byte(len(field)>>16), byte(len(field)>>8), byte(len(field))
	return append(out, field...)
}

// checkBatch checks a batch proof's list and that the proof's own decision
// is in it, once: one ask's proof verifies from the list alone.
func checkBatch(p *Proof) error {
	if p.Domain != DomainBatch {
		return fail("domain", "domain is %q, want %q for a proof that carries a batch", p.Domain, DomainBatch)
	}
	if p.Requirement != nil {
		return fail("batch", "a batch does not decide an ask an approval rule covers")
	}
	if len(p.Batch) == 0 || len(p.Batch) > MaxBatch {
		return fail("batch", "the batch holds %d decisions, want 1 to %d", len(p.Batch), MaxBatch)
	}
	seen := map[string]bool{}
	found := 0
	for i, it := range p.Batch {
		switch {
		case it.ApprovalID == "":
			return fail("batch", "item %d has no approval_id", i)
		case !isLowerHex(it.PayloadSHA256, 64):
			return fail("batch", "item %d's payload_sha256 is not 64 lower-case hex characters", i)
		case it.Decision != "approve" && it.Decision != "deny":
			return fail("batch", "item %d's decision is %q: a batch approves or denies", i, it.Decision)
		case seen[it.ApprovalID]:
			return fail("batch", "approval %s is in the batch twice", it.ApprovalID)
		}
		seen[it.ApprovalID] = true
		if it.ApprovalID == p.ApprovalID {
			if it.PayloadSHA256 != p.PayloadSHA256 || it.Decision != p.Decision {
				return fail("batch", "the batch's item for %s is %s on %s, not the proof's %s on %s", it.ApprovalID, it.Decision, it.PayloadSHA256, p.Decision, p.PayloadSHA256)
			}
			found++
		}
	}
	if found != 1 {
		return fail("batch", "approval %s is not in the batch the signature covers", p.ApprovalID)
	}
	return nil
}

// BatchItemOf is the item of a batch that decides one ask.
func BatchItemOf(approvalID, payloadSHA256, decision string) BatchItem {
	return BatchItem{ApprovalID: approvalID, PayloadSHA256: payloadSHA256, Decision: decision}
}
