package rules

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
	"github.com/countersign/countersign/proof"
	"gorm.io/gorm"
)

// Signature is one person's signed answer on an ask an approval rule covers
// (table approval_signatures): each is a separate WebAuthn assertion over
// the same payload hash and the frozen requirement. One person has at most
// one, whichever of their passkeys signed it.
type Signature struct {
	Seq          int64 `gorm:"primaryKey;autoIncrement"`
	AccountID    string
	ApprovalID   string
	PersonID     string
	Subject      string
	CredentialID string
	Decision     string
	Proof        string // the single-signer proof (proof.Proof), JSON
	CreatedAt    time.Time
}

// Approves says whether the signature counts towards the quorum (it is not a deny).
func (g *Signature) Approves() bool {
	return g.Decision != string(asks.VerdictDeny) && g.Decision != string(asks.VerdictNotMine)
}

// Signatures returns the signatures on an ask of the account, in the order
// they landed.
func (s *Book) Signatures(ctx context.Context, accountID, approvalID string) ([]Signature, error) {
	return signaturesOf(s.DB().WithContext(ctx), accountID, approvalID)
}

func signaturesOf(db *gorm.DB, accountID, approvalID string) ([]Signature, error) {
	var out []Signature
	if err := db.Table("approval_signatures").Where("approval_id = ? AND account_id = ?", approvalID, accountID).
		Order("seq").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("read signatures: %w", err)
	}
	return out, nil
}

// Quorum is where an ask a rule covers stands: the requirement and who has
// signed. It is what approvals_get and approval_status show as
// "1 of 2 approved (ada)".
type Quorum struct {
	Requirement *proof.Requirement
	Approved    []string // subjects who approved, in order
	DeniedBy    string   // the subject whose deny ended it, if any
}

// QuorumOf reads the quorum of a; nil when no rule covers it.
func (s *Book) QuorumOf(ctx context.Context, a *asks.Approval) (*Quorum, []Signature, error) {
	req := a.RequirementOf()
	if req == nil {
		return nil, nil, nil
	}
	sigs, err := s.Signatures(ctx, a.AccountID, a.ID)
	if err != nil {
		return nil, nil, err
	}
	return quorumOf(req, sigs), sigs, nil
}

func quorumOf(req *proof.Requirement, sigs []Signature) *Quorum {
	q := &Quorum{Requirement: req}
	for _, g := range sigs {
		if g.Approves() {
			q.Approved = append(q.Approved, g.Subject)
		} else if q.DeniedBy == "" {
			q.DeniedBy = g.Subject
		}
	}
	return q
}

// Met says whether enough distinct people approved.
func (q *Quorum) Met() bool { return len(q.Approved) >= q.Requirement.Count }

// Waiting returns the people of the pool who have not signed yet.
func (q *Quorum) Waiting() []string {
	var out []string
	for _, p := range q.Requirement.People {
		if !strings.Contains(" "+strings.Join(q.Approved, " ")+" ", " "+p+" ") && p != q.DeniedBy {
			out = append(out, p)
		}
	}
	return out
}

// String is the quorum in words: "1 of 2 approved (ada)".
func (q *Quorum) String() string {
	s := fmt.Sprintf("%d of %d approved", len(q.Approved), q.Requirement.Count)
	if len(q.Approved) > 0 {
		s += " (" + strings.Join(q.Approved, ", ") + ")"
	}
	if q.DeniedBy != "" {
		s += "; denied by " + q.DeniedBy
	}
	return s
}

// Countersign records, inside Decide's transaction, a person's signed
// answer on an ask a rule covers, and turns the change Decide would make
// into the one the quorum allows: an approval that does not complete the
// quorum only countersigns (the ask stays pending); the one that completes
// it approves, with the bundle of every signature as the proof; a deny by
// anyone in the pool is a veto. A question records no signature.
func (s *Book) Countersign(tx *gorm.DB, a *asks.Approval, req *proof.Requirement, m *people.Member, d asks.Decision, v asks.Verdict, ch *asks.StatusChange) (*asks.StatusChange, error) {
	if d.Nonce == nil {
		return nil, core.Refuse(core.PermissionDenied, "proof", "approval %s is covered by rule %s: it is decided only with device-key signatures", a.ID, req.RuleID)
	}
	if v == asks.VerdictQuestion {
		return ch, nil
	}
	approves := v != asks.VerdictDeny && v != asks.VerdictNotMine
	if approves && v != asks.VerdictApprove && req.Count > 1 {
		return nil, core.Refuse(core.InvalidArgument, "decision", "approval %s needs %d people under rule %s: each approves or denies it; %q is not counted", a.ID, req.Count, req.RuleID, v)
	}
	var prior []Signature
	if err := tx.Table("approval_signatures").Where("approval_id = ?", a.ID).Order("seq").Find(&prior).Error; err != nil {
		return nil, fmt.Errorf("read signatures: %w", err)
	}
	for _, g := range prior {
		if g.PersonID == m.ID {
			return nil, core.Refuse(core.FailedPrecondition, "credential",
				"%s already signed approval %s (%s, with passkey %s); the same person counts once, whichever passkey signs; nothing was recorded",
				m.Subject, a.ID, g.Decision, g.CredentialID)
		}
	}
	g := Signature{AccountID: a.AccountID, ApprovalID: a.ID, PersonID: m.ID, Subject: m.Subject, CredentialID: d.CredentialID,
		Decision: d.Signed(), Proof: string(d.Proof), CreatedAt: s.Now()}
	if err := tx.Table("approval_signatures").Create(&g).Error; err != nil {
		return nil, fmt.Errorf("record signature: %w", err)
	}
	sigs := append(prior, g)
	q := quorumOf(req, sigs)
	data := map[string]any{"credential_id": d.CredentialID, "decision": g.Decision, "rule_id": req.RuleID, "quorum": q.String()}
	if approves && !q.Met() {
		return &asks.StatusChange{Event: asks.EventCountersigned, ActorKind: asks.ActorPerson, Actor: m.Subject, Note: q.String(), Data: data}, nil
	}
	bundle, err := bundleOf(a, sigs)
	if err != nil {
		return nil, err
	}
	ch.Set["proof"] = core.NullableJSON(bundle)
	ch.Data = data
	if ch.Note == "" {
		ch.Note = q.String()
	}
	return ch, nil
}

// bundleOf is the proof of a decided ask a rule covers: every signature's
// proof, in the order they landed, with the frozen requirement.
func bundleOf(a *asks.Approval, sigs []Signature) ([]byte, error) {
	b := proof.Bundle{Format: proof.BundleFormat, ApprovalID: a.ID, PayloadSHA256: a.PayloadSHA256,
		Requirement: json.RawMessage(*a.Requirement)}
	for _, g := range sigs {
		b.Proofs = append(b.Proofs, json.RawMessage(g.Proof))
	}
	out, err := json.Marshal(b)
	if err != nil {
		return nil, fmt.Errorf("proof bundle: %w", err)
	}
	return out, nil
}

// NotSignedYet refuses a second signature by a person who already signed
// an ask a rule covers, before their passkey is asked for one: the same
// person counts once, whichever passkey signs. Decide checks it again in
// its transaction, and the (approval_id, person_id) key holds under a race.
func (s *Book) NotSignedYet(ctx context.Context, a *asks.Approval, m *people.Member) error {
	var g Signature
	err := s.DB().WithContext(ctx).Table("approval_signatures").Where("approval_id = ? AND person_id = ?", a.ID, m.ID).Take(&g).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read signatures: %w", err)
	}
	return core.Refuse(core.FailedPrecondition, "credential",
		"%s already signed approval %s (%s, with passkey %s); the same person counts once, whichever passkey signs; nothing was recorded",
		m.Subject, a.ID, g.Decision, g.CredentialID)
}
