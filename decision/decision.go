// Package decision signs a person's answer to an ask, end to end: the
// challenge for one answer by one person on one ask, the check of their
// passkey's signature over it, the proof built from that signature, and the
// state machine's transition that records it, in that order. Pages call
// Begin and Complete (in a session) or BeginWithLink and CompleteWithLink
// (under a one-time push link); nothing else assembles a decision.
package decision

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/outbox"
	"github.com/countersign/countersign/models/people"
	"github.com/countersign/countersign/models/policy"
	"github.com/countersign/countersign/passkey"
	"github.com/countersign/countersign/proof"
)

// Service runs decision ceremonies against the store with the relying party.
type Service struct {
	store *models.Store
	rp    *passkey.RP
}

// New makes the decision service.
func New(store *models.Store, rp *passkey.RP) *Service {
	return &Service{store: store, rp: rp}
}

// Choice is what a person picked on an ask: a verdict (approve, deny,
// not_mine, question, reply, approve_for, option:<index>, choice:<index> or
// answer) and, for a question, its text, or for a free-text answer, the
// answer's; CheckCode is the check code picked before approving one of the
// riskiest asks.
type Choice struct {
	Verdict   asks.Verdict
	Question  string
	Answer    string
	Reply     string // for reply: what the tool's caller gets in place of its result
	Minutes   int    // for approve_for: how long the same is approved (ask.WindowMinutes)
	CheckCode string
	// Edited is the payload as the person edited it, for approve_edited.
	Edited json.RawMessage
}

// ceremonyKind names a decision's ceremonies in the store.
const ceremonyKind = "decision"

// ceremony is kept server-side between the challenge and the signature.
type ceremony struct {
	ApprovalID string          `json:"approval_id"`
	Decision   string          `json:"decision"` // as signed: question:<sha256> for a question, answer:<sha256> for an answer, reply:<sha256> for a reply, approve_for:<sha256> for a window
	Question   string          `json:"question,omitempty"`
	Answer     string          `json:"answer,omitempty"`
	Reply      string          `json:"reply,omitempty"`
	Edited     proof.B64       `json:"edited,omitempty"`      // the edited payload's RFC 8785 bytes, for approve_edited
	ApproveFor string          `json:"approve_for,omitempty"` // the window's JSON`
	Nonce      proof.B64       `json:"nonce"`
	Session    json.RawMessage `json:"session"`
	Link       string          `json:"link,omitempty"` // the push link it was begun with; "" in a session
}

// Begin checks the choice, issues the single-use nonce of this decision by m
// on the ask, and returns the ceremony id the browser holds and the WebAuthn
// options whose challenge covers the ask, its payload hash, the decision,
// the approval rule's frozen requirement (on an ask a rule covers) and the
// nonce. On such an ask the decision is one signature of the rule's quorum:
// Complete records it, and the ask moves only when the last one needed
// lands (or at the first deny).
func (s *Service) Begin(ctx context.Context, m *people.Member, approvalID string, c Choice) (string, passkey.Options, error) {
	return s.begin(ctx, m, approvalID, c, "")
}

// BeginWithLink is Begin on the authority of an opened one-time push link
// instead of a session: the decision is the link's person's, on the link's
// ask, and only that person's passkeys may sign it.
func (s *Service) BeginWithLink(ctx context.Context, l *outbox.PushLink, approvalID string, c Choice) (string, passkey.Options, error) {
	m, err := s.linkMember(ctx, l, approvalID)
	if err != nil {
		return "", nil, err
	}
	return s.begin(ctx, m, approvalID, c, l.ID)
}

// linkMember is the person a push link was issued to, as a member of the
// ask's account; a link for another ask, or a person no longer a member,
// decides nothing.
func (s *Service) linkMember(ctx context.Context, l *outbox.PushLink, approvalID string) (*people.Member, error) {
	if l.ApprovalID != approvalID {
		return nil, core.Refuse(core.PermissionDenied, "link", "this link opens another ask, not this one")
	}
	m, err := s.store.MemberByID(ctx, l.AccountID, l.PersonID)
	if core.CodeOf(err) == core.NotFound {
		return nil, core.Refuse(core.PermissionDenied, "link", "the person this link was sent to is no longer a member of the ask's account")
	}
	return m, err
}

// begin is Begin, recording in the ceremony the push link it runs under.
func (s *Service) begin(ctx context.Context, m *people.Member, approvalID string, c Choice, link string) (string, passkey.Options, error) {
	a, err := s.store.GetApproval(ctx, m.AccountID, approvalID)
	if err != nil {
		return "", nil, err
	}
	text := c.Question
	switch c.Verdict {
	case asks.VerdictAnswer:
		text = c.Answer
	case asks.VerdictReply:
		text = c.Reply
	case asks.VerdictApproveFor:
		if err := policy.CheckWindow(a); err != nil {
			return "", nil, err
		}
		w, err := asks.WindowOf(a, c.Minutes)
		if err != nil {
			return "", nil, err
		}
		text = w.JSON()
	}
	d, err := asks.ParseVerdict(a, c.Verdict, text)
	if err != nil {
		return "", nil, err
	}
	if d.Verdict == asks.VerdictApproveEdited {
		edited, err := asks.CheckEdit(a, c.Edited, s.store.Now())
		if err != nil {
			return "", nil, err
		}
		d.Edited = edited.Canonical
	}
	if err := checkCodePicked(a, d.Verdict, c.CheckCode); err != nil {
		return "", nil, err
	}
	nonce := make([]byte, proof.NonceSize)
	if _, err := rand.Read(nonce); err != nil {
		return "", nil, fmt.Errorf("decision nonce: %w", err)
	}
	if err := s.store.IssueChallenge(ctx, m, a, d.Signed(), nonce); err != nil {
		return "", nil, err
	}
	u, err := s.user(ctx, m)
	if err != nil {
		return "", nil, err
	}
	challenge, err := proof.DecisionChallenge(a.ID, a.PayloadSHA256, d.Signed(), a.RequirementOf(), nonce)
	if err != nil {
		return "", nil, err
	}
	options, session, err := s.rp.BeginDecision(u, challenge)
	if err != nil {
		return "", nil, err
	}
	question, answer, reply := "", "", ""
	switch d.Verdict {
	case asks.VerdictQuestion:
		question = d.Note
	case asks.VerdictReply:
		reply = d.Note
	}
	if c.Verdict == asks.VerdictAnswer {
		answer = d.Note
	}
	state, err := json.Marshal(ceremony{ApprovalID: a.ID, Decision: d.Signed(), Question: question, Answer: answer, Reply: reply, Edited: d.Edited, ApproveFor: d.Window,
		Nonce: nonce, Session: session, Link: link})
	if err != nil {
		return "", nil, fmt.Errorf("decision ceremony: %w", err)
	}
	id, err := s.store.SaveCeremony(ctx, ceremonyKind, m.ID, state)
	if err != nil {
		return "", nil, err
	}
	return id, options, nil
}

// Complete takes the ceremony begun for m on the ask, verifies the
// assertion over its challenge, builds the proof and records the decision
// through the state machine, which spends the nonce, moves the passkey's
// counter and appends the timeline event in one transaction.
func (s *Service) Complete(ctx context.Context, m *people.Member, approvalID, ceremonyID string, credential []byte) (*asks.Approval, error) {
	return s.complete(ctx, m, approvalID, ceremonyID, credential, "")
}

// CompleteWithLink is Complete for a ceremony begun with the push link l:
// the assertion must be by a passkey of the link's person, and the decision
// spends the link in its transaction.
func (s *Service) CompleteWithLink(ctx context.Context, l *outbox.PushLink, approvalID, ceremonyID string, credential []byte) (*asks.Approval, error) {
	m, err := s.linkMember(ctx, l, approvalID)
	if err != nil {
		return nil, err
	}
	return s.complete(ctx, m, approvalID, ceremonyID, credential, l.ID)
}

// complete is Complete for a ceremony begun under the push link link ("" in a session).
func (s *Service) complete(ctx context.Context, m *people.Member, approvalID, ceremonyID string, credential []byte, link string) (*asks.Approval, error) {
	raw, personID, err := s.store.TakeCeremony(ctx, ceremonyID, ceremonyKind)
	if err != nil {
		return nil, err
	}
	var st ceremony
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil, fmt.Errorf("decision ceremony: %w", err)
	}
	if personID != m.ID || st.ApprovalID != approvalID || st.Link != link {
		return nil, core.Refuse(core.PermissionDenied, "ceremony", "this signature prompt was made for another person, ask or link; nothing was recorded")
	}
	a, err := s.store.GetApproval(ctx, m.AccountID, st.ApprovalID)
	if err != nil {
		return nil, err
	}
	u, err := s.user(ctx, m)
	if err != nil {
		return nil, err
	}
	// The requirement is the ask's, frozen at filing: the same one the
	// challenge bound when it was begun.
	requirement := a.RequirementOf()
	challenge, err := proof.DecisionChallenge(a.ID, a.PayloadSHA256, st.Decision, requirement, st.Nonce)
	if err != nil {
		return nil, err
	}
	assertion, publicKey, err := s.signed(ctx, u, st.Session, credential, challenge)
	if err != nil {
		return nil, err
	}
	d := asks.Decision{Verdict: asks.Verdict(st.Decision), Nonce: st.Nonce, CredentialID: assertion.CredentialID,
		SignCount: assertion.SignCount, Credential: assertion.Credential, PushLink: st.Link}
	if st.Question != "" {
		d.Verdict, d.Note = asks.VerdictQuestion, st.Question
	}
	if st.Answer != "" {
		d.Note = st.Answer // the verdict is answer:<sha256>, which Decide checks against it
	}
	if st.Reply != "" {
		d.Verdict, d.Note = asks.VerdictReply, st.Reply
	}
	if st.Edited != nil {
		d.Verdict, d.Edited = asks.VerdictApproveEdited, st.Edited // its hash is in st.Decision, checked when the nonce is spent
	}
	d.Window = st.ApproveFor // the verdict is approve_for:<sha256>, which Decide checks against it
	p := s.rp.Proof(assertion, publicKey, a.ID, a.PayloadSHA256, st.Decision, st.Nonce, proof.Unsigned{
		Person: m.Subject, AccountID: m.AccountID, DecidedAt: s.store.Now(), Question: st.Question, Answer: st.Answer, Reply: st.Reply,
		ApproveFor: st.ApproveFor,
	})
	p.Payload = proof.B64(a.Payload) // the canonical bytes payload_sha256 covers, so a verifier needs no server
	p.EditedPayload = st.Edited      // and, on approve_edited, the bytes the decision's hash covers
	if requirement != nil {
		p.Domain, p.Requirement = proof.DomainRequirement, requirement
	}
	if d.Proof, err = json.Marshal(p); err != nil {
		return nil, fmt.Errorf("decision proof: %w", err)
	}
	return s.store.Decide(ctx, m.AccountID, a.ID, m, d)
}

// signed checks credential, the assertion a passkey of u made over
// challenge in the session begun for it, and returns it with that passkey's
// public key, for the proof.
func (s *Service) signed(ctx context.Context, u *passkey.User, session json.RawMessage, credential, challenge []byte) (*passkey.Assertion, []byte, error) {
	assertion, err := s.rp.FinishDecision(u, session, credential, challenge)
	if err != nil {
		return nil, nil, err
	}
	key, err := s.store.DeviceKeyByID(ctx, assertion.CredentialID)
	if err != nil {
		return nil, nil, err
	}
	publicKey, err := base64.RawURLEncoding.DecodeString(key.PublicKey)
	if err != nil {
		return nil, nil, fmt.Errorf("passkey %s public key: %w", key.ID, err)
	}
	return assertion, publicKey, nil
}

// user is m as WebAuthn sees them, with their live passkeys.
func (s *Service) user(ctx context.Context, m *people.Member) (*passkey.User, error) {
	keys, err := s.store.DeviceKeys(ctx, m.ID)
	if err != nil {
		return nil, err
	}
	return &passkey.User{ID: m.ID, Subject: m.Subject, DisplayName: m.DisplayName, Keys: keys}, nil
}
