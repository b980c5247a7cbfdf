package decision

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"fmt"

	"gorm.io/gorm"

	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
	"github.com/countersign/countersign/passkey"
	"github.com/countersign/countersign/proof"
)

// A batch answers many asks with one passkey prompt: the passkey signs the
// canonical list of (approval id, payload hash, decision) and a single-use
// nonce (proof.BatchChallenge), and each ask's proof carries that assertion
// and the list, so it verifies on its own. Only asks that need nothing but a
// yes or a no are batched (asks.WhyNotBatched), at most proof.MaxBatch, and
// either every ask of the batch is decided or none is.

// batchCeremonyKind names a batch's ceremonies in the store.
const batchCeremonyKind = "batch"

// batchCeremony is kept server-side between the challenge and the signature.
type batchCeremony struct {
	Items   []proof.BatchItem `json:"items"`
	Nonce   proof.B64         `json:"nonce"`
	Session json.RawMessage   `json:"session"`
}

// itemNonce is the nonce an ask's decision challenge is issued under for one
// batch: derived from the batch's, so that each ask's nonce is its own and
// is spent by that ask's decision.
func itemNonce(nonce []byte, approvalID string) []byte {
	sum := sha256.Sum256(append(append([]byte("countersign/batch-item/v1\x00"), nonce...), approvalID...))
	return sum[:]
}

// BeginBatch checks that m may answer every ask of ids with verdict
// (approve or deny) in one batch, issues the nonce of each, and returns the
// ceremony id and the WebAuthn options whose challenge covers the list.
func (s *Service) BeginBatch(ctx context.Context, m *people.Member, ids []string, verdict asks.Verdict) (string, passkey.Options, error) {
	if verdict != asks.VerdictApprove && verdict != asks.VerdictDeny {
		return "", nil, core.Invalid("decision", "a batch approves or denies, not %q", verdict)
	}
	if len(ids) == 0 || len(ids) > proof.MaxBatch {
		return "", nil, core.Invalid("approval_ids", "pick 1 to %d asks, not %d", proof.MaxBatch, len(ids))
	}
	seen := map[string]bool{}
	batch := make([]*asks.Approval, len(ids))
	items := make([]proof.BatchItem, len(ids))
	for i, id := range ids {
		if seen[id] {
			return "", nil, core.Invalid("approval_ids", "approval %s is picked twice", id)
		}
		seen[id] = true
		a, err := s.store.GetApproval(ctx, m.AccountID, id)
		if err != nil {
			return "", nil, err
		}
		if why := asks.WhyNotBatched(a); why != "" {
			return "", nil, core.Refuse(core.FailedPrecondition, "approval_ids", "approval %s is answered on its own page: %s; nothing was signed", a.ID, why)
		}
		if _, err := asks.ParseVerdict(a, verdict, ""); err != nil {
			return "", nil, err
		}
		batch[i], items[i] = a, proof.BatchItem{ApprovalID: a.ID, PayloadSHA256: a.PayloadSHA256, Decision: string(verdict)}
	}
	nonce := make([]byte, proof.NonceSize)
	if _, err := rand.Read(nonce); err != nil {
		return "", nil, fmt.Errorf("batch nonce: %w", err)
	}
	for _, a := range batch {
		if err := s.store.IssueChallenge(ctx, m, a, string(verdict), itemNonce(nonce, a.ID)); err != nil {
			return "", nil, err
		}
	}
	u, err := s.user(ctx, m)
	if err != nil {
		return "", nil, err
	}
	challenge, err := proof.BatchChallenge(items, nonce)
	if err != nil {
		return "", nil, err
	}
	options, session, err := s.rp.BeginDecision(u, challenge)
	if err != nil {
		return "", nil, err
	}
	state, err := json.Marshal(batchCeremony{Items: items, Nonce: nonce, Session: session})
	if err != nil {
		return "", nil, fmt.Errorf("batch ceremony: %w", err)
	}
	id, err := s.store.SaveCeremony(ctx, batchCeremonyKind, m.ID, state)
	if err != nil {
		return "", nil, err
	}
	return id, options, nil
}

// CompleteBatch takes the batch ceremony begun for m, verifies the one
// assertion over the list, and decides every ask of it in one transaction,
// each with its own proof carrying the assertion and the list: all of them,
// or none when one can no longer be decided.
func (s *Service) CompleteBatch(ctx context.Context, m *people.Member, ceremonyID string, credential []byte) ([]*asks.Approval, error) {
	raw, personID, err := s.store.TakeCeremony(ctx, ceremonyID, batchCeremonyKind)
	if err != nil {
		return nil, err
	}
	var st batchCeremony
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil, fmt.Errorf("batch ceremony: %w", err)
	}
	if personID != m.ID {
		return nil, core.Refuse(core.PermissionDenied, "ceremony", "this signature prompt was made for another person; nothing was recorded")
	}
	u, err := s.user(ctx, m)
	if err != nil {
		return nil, err
	}
	challenge, err := proof.BatchChallenge(st.Items, st.Nonce)
	if err != nil {
		return nil, err
	}
	assertion, publicKey, err := s.signed(ctx, u, st.Session, credential, challenge)
	if err != nil {
		return nil, err
	}
	decisions := make([]asks.Decision, len(st.Items))
	for i, it := range st.Items {
		a, err := s.store.GetApproval(ctx, m.AccountID, it.ApprovalID)
		if err != nil {
			return nil, err
		}
		p := s.rp.Proof(assertion, publicKey, a.ID, it.PayloadSHA256, it.Decision, st.Nonce, proof.Unsigned{
			Person: m.Subject, AccountID: m.AccountID, DecidedAt: s.store.Now(),
		})
		p.Domain, p.Batch, p.Payload = proof.DomainBatch, st.Items, proof.B64(a.Payload)
		raw, err := json.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("batch proof: %w", err)
		}
		decisions[i] = asks.Decision{Verdict: asks.Verdict(it.Decision), Nonce: itemNonce(st.Nonce, a.ID), CredentialID: assertion.CredentialID,
			SignCount: assertion.SignCount, Credential: assertion.Credential, Proof: raw, KeyUsed: i > 0}
	}
	decided := make([]*asks.Approval, len(st.Items))
	err = s.store.Write(ctx, func(tx *gorm.DB) error {
		in := core.WithTx(ctx, tx) // each decision joins this one transaction
		for i, it := range st.Items {
			a, err := s.store.Decide(in, m.AccountID, it.ApprovalID, m, decisions[i])
			if err != nil {
				return fmt.Errorf("approval %s: %w", it.ApprovalID, err)
			}
			decided[i] = a
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return decided, nil
}
