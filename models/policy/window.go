package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/countersign/countersign/ask"

	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
	"gorm.io/gorm"
)

// CheckWindow refuses to open a window from ask a when none would approve
// an ask like it: the rules of asks.WindowOf, and the words of a itself,
// when they fall in a category that always asks a person.
func CheckWindow(a *asks.Approval) error {
	if _, err := asks.WindowOf(a, ask.DefaultWindowMinutes); err != nil {
		return err
	}
	if reason := AlwaysAsks(AskText(a)); reason != "" {
		return core.Refuse(core.FailedPrecondition, "decision", "approval %s reads as %s, which always asks a person, so no window would approve the next one like it: approve it alone", a.ID, reason)
	}
	return nil
}

// OpenWindow stores, inside the transaction that records m's approval of a
// "and the same for a while", the window the signature covers (window, its
// JSON, checked against a by asks.ParseVerdict): a policy that approves the
// asks of a's agent, of a's kind, about a's target, for the window's
// minutes from now. It replaces an open window of the same agent, kind and
// target, recorded on both.
func (s *Policies) OpenWindow(tx *gorm.DB, a *asks.Approval, m *people.Member, credentialID, window string) error {
	w, err := ask.ReadWindow(window)
	if err != nil {
		return err
	}
	if err := CheckWindow(a); err != nil {
		return err
	}
	now := s.Now()
	scope, err := json.Marshal(PolicyScope{AskKinds: []string{w.Kind}, Requesters: []string{w.Agent}})
	if err != nil {
		return fmt.Errorf("window scope: %w", err)
	}
	pol := &Policy{
		ID: core.NewID("pol"), AccountID: a.AccountID, ApprovalID: a.ID, Scope: string(scope), Requester: w.Agent, Target: w.Target.JSON(),
		SignerID: m.ID, SignerSubject: m.Subject, CredentialID: credentialID,
		SignedAt: now, ExpiresAt: now.Add(time.Duration(w.Minutes) * time.Minute), CreatedAt: now,
	}
	var same []Policy
	if err := s.Lock(tx.Table("policies")).Where("account_id = ? AND requester = ? AND target = ? AND revoked_at IS NULL AND expires_at > ?",
		a.AccountID, pol.Requester, pol.Target, now).Find(&same).Error; err != nil {
		return err
	}
	for _, o := range same {
		if o.Scope != pol.Scope {
			continue // another kind about the same target
		}
		pol.Replaces = o.ID
		if err := tx.Table("policies").Where("id = ?", o.ID).Updates(map[string]any{
			"revoked_at": now, "revoked_by": m.Subject, "revoke_note": "replaced by " + pol.ID, "replaced_by": pol.ID,
		}).Error; err != nil {
			return err
		}
		if err := s.Note(tx, o.AccountID, o.ApprovalID, asks.ActorPerson, m.Subject, StepPolicyReplaced, "replaced by window "+pol.ID+" (opened on "+a.ID+")"); err != nil {
			return err
		}
	}
	if err := tx.Table("policies").Create(pol).Error; err != nil {
		return fmt.Errorf("store window: %w", err)
	}
	note := fmt.Sprintf("approved, and the same for %s: window %s on until %s", ask.WindowLength(w.Minutes), pol.ID, pol.ExpiresAt.UTC().Format(time.RFC3339))
	if pol.Replaces != "" {
		note += ", replacing " + pol.Replaces
	}
	return s.NoteOn(tx, a, asks.ActorPerson, m.Subject, StepPolicyEnabled, note)
}

// RevokeWindow turns the account's window id off now; off twice is
// harmless. The note goes on the timeline of the ask it was opened from. It
// returns the window as it now stands; an id that is no window of the
// account is NOT_FOUND.
func (s *Policies) RevokeWindow(ctx context.Context, accountID, id, by, note string) (*PolicyState, error) {
	st, err := s.revoke(ctx, by, note, "window turned off", func(q *gorm.DB) *gorm.DB {
		return q.Where("id = ? AND account_id = ? AND target <> ''", id, accountID)
	})
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, core.Refuse(core.NotFound, "policy_id", "no window %q in this account", id)
	}
	return st, err
}
