package mcp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"time"

	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/proof"
)

// QuorumOut is where an ask an approval rule covers stands: the rule's
// frozen requirement and who has signed.
type QuorumOut struct {
	Summary     string          `json:"summary" jsonschema:"In words, as the ask page shows it: \"1 of 2 approved (ada)\"."`
	RuleID      string          `json:"rule_id"`
	Count       int             `json:"count" jsonschema:"How many distinct people must approve."`
	Pool        string          `json:"pool" jsonschema:"Whom the rule asks: owners, admins, members, group:<name> or asked_of+<role>."`
	People      []string        `json:"people" jsonschema:"The people whose signatures count; the requesting agent's own person is never among them."`
	Approved    []string        `json:"approved,omitempty" jsonschema:"Who has approved, in order."`
	DeniedBy    string          `json:"denied_by,omitempty" jsonschema:"Who vetoed it."`
	Waiting     []string        `json:"waiting,omitempty" jsonschema:"Who may still sign."`
	Requirement json.RawMessage `json:"requirement" jsonschema:"The frozen requirement, as its RFC 8785 bytes: every signature on the ask binds it."`
}

// SignatureOut is one person's signature on an ask a rule covers.
type SignatureOut struct {
	Signer       string          `json:"signer" jsonschema:"The subject of the person who signed."`
	CredentialID string          `json:"credential_id" jsonschema:"Their passkey's credential id (base64url)."`
	PublicKey    string          `json:"public_key,omitempty" jsonschema:"Their passkey's COSE public key (base64url)."`
	Decision     string          `json:"decision"`
	SignedAt     time.Time       `json:"signed_at"`
	Proof        json.RawMessage `json:"proof" jsonschema:"The single-signer proof, checkable with countersign verify."`
}

// quorumOut reads the quorum and signatures of a; nils when no rule covers it.
func (s *Server) quorumOut(ctx context.Context, a *asks.Approval) (*QuorumOut, []SignatureOut, []string, error) {
	q, sigs, err := s.store.QuorumOf(ctx, a)
	if err != nil || q == nil {
		return nil, nil, nil, err
	}
	out := &QuorumOut{Summary: q.String(), RuleID: q.Requirement.RuleID, Count: q.Requirement.Count, Pool: q.Requirement.Pool,
		People: q.Requirement.People, Approved: q.Approved, DeniedBy: q.DeniedBy, Requirement: json.RawMessage(*a.Requirement)}
	if a.Status.Open() {
		out.Waiting = q.Waiting()
	}
	var signed []SignatureOut
	var signers []string
	for _, g := range sigs {
		o := SignatureOut{Signer: g.Subject, CredentialID: g.CredentialID, Decision: g.Decision, SignedAt: g.CreatedAt, Proof: json.RawMessage(g.Proof)}
		if p, err := proof.Parse([]byte(g.Proof)); err == nil {
			o.PublicKey = base64.RawURLEncoding.EncodeToString(p.PublicKey)
		}
		signed = append(signed, o)
		signers = append(signers, g.Subject)
	}
	return out, signed, signers, nil
}
