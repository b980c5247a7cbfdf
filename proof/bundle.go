package proof

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// BundleFormat names the layout of the proof of an ask an approval rule
// covers: the single-signer proofs of its signatures, in the order they
// landed, with the requirement each of them binds.
const BundleFormat = "countersign-bundle/v1"

// Bundle is the proof of a decided ask an approval rule covers. Requirement
// is the frozen requirement's RFC 8785 bytes; every proof in Proofs carries
// the same requirement and signs it (RequirementChallenge). docs/proof.md
// specifies every member.
type Bundle struct {
	Format        string            `json:"format"`
	ApprovalID    string            `json:"approval_id"`
	PayloadSHA256 string            `json:"payload_sha256"`
	Requirement   json.RawMessage   `json:"requirement"`
	Proofs        []json.RawMessage `json:"proofs"`
}

var bundleMembers = []string{"format", "approval_id", "payload_sha256", "requirement", "proofs"}

// IsBundle says whether raw is a bundle rather than a single proof (its
// format member says so).
func IsBundle(raw []byte) bool {
	var head struct {
		Format string `json:"format"`
	}
	return json.Unmarshal(raw, &head) == nil && head.Format == BundleFormat
}

// ParseBundle reads a bundle as strictly as Parse reads a proof.
func ParseBundle(raw []byte) (*Bundle, error) {
	if err := strictObject(raw, bundleMembers, "", nil); err != nil {
		return nil, err
	}
	var b Bundle
	if err := json.Unmarshal(raw, &b); err != nil {
		return nil, err
	}
	return &b, nil
}

// BundleResult is what a valid bundle shows.
type BundleResult struct {
	ApprovalID    string
	PayloadSHA256 string
	Requirement   *Requirement
	// Decision is "approve" (or the option all approvers signed) when
	// Count distinct people of the pool approved, or "deny" / "not_mine"
	// when one of them vetoed.
	Decision string
	// Signers are the people whose signatures the bundle holds, in order:
	// the key export's persons with Keys, else the proofs' own unsigned
	// claims (KeysRegistered false).
	Signers        []string
	KeysRegistered bool
	Proofs         []*Result
}

// VerifyBundle checks a bundle offline: every proof verifies as Verify
// checks one (with want), is of the bundle's approval and payload hash, and
// carries and signs exactly the bundle's requirement; the signers, read from
// want.Keys (or, without, from each proof's unsigned person, which only the
// server asserts), are distinct people of the requirement's pool; and either
// one of them denied (a veto), or at least Count of them approved with the
// same decision. A bundle that fails returns a *Failure naming the check.
func VerifyBundle(b *Bundle, want Expect) (*BundleResult, error) {
	if b.Format != BundleFormat {
		return nil, fail("format", "format is %q, want %q", b.Format, BundleFormat)
	}
	req, err := ParseRequirement(b.Requirement)
	if err != nil {
		return nil, fail("requirement", "%v", err)
	}
	canon, err := req.Canonical()
	if err != nil {
		return nil, fail("requirement", "%v", err)
	}
	if len(b.Proofs) == 0 {
		return nil, fail("quorum", "the bundle holds no signature")
	}
	res := &BundleResult{ApprovalID: b.ApprovalID, PayloadSHA256: b.PayloadSHA256, Requirement: req, KeysRegistered: want.Keys != nil}
	seen := map[string]int{}
	approvals, approveDecision := 0, ""
	for i, raw := range b.Proofs {
		p, err := Parse(raw)
		if err != nil {
			return nil, fail("proofs", "proof %d: %v", i+1, err)
		}
		if p.ApprovalID != b.ApprovalID || p.PayloadSHA256 != b.PayloadSHA256 {
			return nil, fail("proofs", "proof %d is of approval %s and payload %s, not the bundle's", i+1, p.ApprovalID, p.PayloadSHA256)
		}
		if p.Requirement == nil {
			return nil, fail("requirement", "proof %d binds no requirement", i+1)
		}
		pc, err := p.Requirement.Canonical()
		if err != nil || !bytes.Equal(pc, canon) {
			return nil, fail("requirement", "proof %d binds another requirement than the bundle's", i+1)
		}
		r, err := Verify(p, want)
		if err != nil {
			if f, ok := err.(*Failure); ok {
				return nil, &Failure{Check: f.Check, Reason: fmt.Sprintf("proof %d: %s", i+1, f.Reason)}
			}
			return nil, err
		}
		person := p.Unsigned.Person
		if want.Keys != nil {
			person = r.KeyPerson
		}
		if j, dup := seen[person]; dup {
			return nil, fail("signers", "proofs %d and %d belong to one person (%s): the same person counts once", j, i+1, person)
		}
		seen[person] = i + 1
		if !req.MaySign(person, true) {
			return nil, fail("signers", "proof %d is signed by %s, who is not one of the people the requirement counts (%v)", i+1, person, req.People)
		}
		res.Signers = append(res.Signers, person)
		res.Proofs = append(res.Proofs, r)
		switch {
		case Vetoes(p.Decision):
			if res.Decision == "" || res.Decision == approveDecision {
				res.Decision = p.Decision
			}
		case approveDecision != "" && p.Decision != approveDecision:
			return nil, fail("decision", "proof %d approves %q where an earlier one approves %q", i+1, p.Decision, approveDecision)
		default:
			approveDecision = p.Decision
			approvals++
		}
	}
	if Vetoes(res.Decision) {
		return res, nil
	}
	if approvals < req.Count {
		return nil, fail("quorum", "%d distinct people approved, the requirement (rule %s) needs %d", approvals, req.RuleID, req.Count)
	}
	res.Decision = approveDecision
	return res, nil
}
