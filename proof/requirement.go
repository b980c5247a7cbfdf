package proof

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/gowebpki/jcs"
)

// DomainRequirement separates the challenges of decisions on an ask that an
// approval rule covers: beside the fields of Domain's challenge they bind
// the SHA-256 of the rule's frozen requirement, so that a signature given
// for "two of the admins" cannot be shown as one given for "one person".
const DomainRequirement = "countersign/decision/v2"

// Requirement is an approval rule's requirement as it was frozen into an ask
// when the ask was filed: which rule, how many distinct people, from which
// pool. Every signature on the ask binds its canonical bytes
// (RequirementChallenge). docs/proof.md specifies every member.
type Requirement struct {
	// RuleID names the rule that covered the ask.
	RuleID string `json:"rule_id"`
	// Count is how many distinct people must approve (1 to 5).
	Count int `json:"count"`
	// Pool says, in words, whom the rule asks: "owners", "admins",
	// "members", "group:<name>", or "asked_of+<role>".
	Pool string `json:"pool"`
	// People are the subjects of the pool at filing, sorted: the only
	// people whose signatures count. The requester's own person is never
	// among them.
	People []string `json:"people"`
	// Escalation are the subjects of the rule's escalation pool at filing,
	// sorted, who may also sign once the ask has escalated; EscalateAfter is
	// the delay, in seconds after filing, at which it escalates.
	Escalation    []string `json:"escalation,omitempty"`
	EscalateAfter int      `json:"escalate_after_seconds,omitempty"`
	// NotCounted is the requester's own person, when the requesting agent
	// acts for one: their signature never counts on this ask.
	NotCounted string `json:"not_counted,omitempty"`
}

// Canonical returns the requirement's RFC 8785 bytes: what is stored,
// returned and hashed.
func (r *Requirement) Canonical() ([]byte, error) {
	raw, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("requirement: %w", err)
	}
	out, err := jcs.Transform(raw)
	if err != nil {
		return nil, fmt.Errorf("requirement: %w", err)
	}
	return out, nil
}

// SHA256 is the lower-case hex SHA-256 of the requirement's canonical bytes:
// the field a v2 challenge binds.
func (r *Requirement) SHA256() (string, error) {
	c, err := r.Canonical()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:]), nil
}

// MaySign says whether subject is one of the people whose signature counts,
// escalated saying whether the escalation pool may sign too.
func (r *Requirement) MaySign(subject string, escalated bool) bool {
	if subject == "" || subject == r.NotCounted {
		return false
	}
	return slices.Contains(r.People, subject) || escalated && slices.Contains(r.Escalation, subject)
}

// Vetoes says whether decision is a veto: one person's deny (or not_mine)
// decides an ask a requirement covers, whatever its count, where an
// approval counts only with Count distinct people's.
func Vetoes(decision string) bool { return decision == "deny" || decision == "not_mine" }

// ParseRequirement reads a frozen requirement strictly (only its known
// members) and checks that it is well formed.
func ParseRequirement(raw []byte) (*Requirement, error) {
	var o map[string]json.RawMessage
	if err := json.Unmarshal(raw, &o); err != nil || o == nil {
		return nil, fmt.Errorf("requirement: not a JSON object")
	}
	if err := knownNames(o, requirementMembers, "requirement."); err != nil {
		return nil, err
	}
	var r Requirement
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("requirement: %w", err)
	}
	if r.RuleID == "" {
		return nil, fmt.Errorf("requirement: rule_id is empty")
	}
	if r.Count < 1 || r.Count > 5 {
		return nil, fmt.Errorf("requirement: count is %d, want 1 to 5", r.Count)
	}
	return &r, nil
}

var requirementMembers = []string{"rule_id", "count", "pool", "people", "escalation", "escalate_after_seconds", "not_counted"}

// RequirementChallenge computes the bytes a passkey signs for one decision
// on an ask a rule covers:
//
//	SHA-256( lp("countersign/decision/v2") || lp(approval_id) || lp(payload_sha256) || lp(decision) || lp(requirement_sha256) || lp(nonce) )
//
// requirement_sha256 being the lower-case hex SHA-256 of the requirement's
// RFC 8785 bytes. An ask no rule covers keeps Challenge, unchanged.
func RequirementChallenge(approvalID, payloadSHA256, decision, requirementSHA256 string, nonce []byte) []byte {
	var buf bytes.Buffer
	for _, field := range [][]byte{[]byte(DomainRequirement), []byte(approvalID), []byte(payloadSHA256), []byte(decision), []byte(requirementSHA256), nonce} {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(field)))
		buf.Write(n[:])
		buf.Write(field)
	}
	sum := sha256.Sum256(buf.Bytes())
	return sum[:]
}

// DecisionChallenge is the challenge of one decision: Challenge when
// requirement is nil, RequirementChallenge otherwise.
func DecisionChallenge(approvalID, payloadSHA256, decision string, requirement *Requirement, nonce []byte) ([]byte, error) {
	if requirement == nil {
		return Challenge(Domain, approvalID, payloadSHA256, decision, nonce), nil
	}
	h, err := requirement.SHA256()
	if err != nil {
		return nil, err
	}
	return RequirementChallenge(approvalID, payloadSHA256, decision, h, nonce), nil
}
