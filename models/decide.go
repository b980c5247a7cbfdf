package models

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/countersign/countersign/ask"

	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
	"gorm.io/gorm"
)

// AddProgress records a step the requesting agent reports on its ask.
func (s *Store) AddProgress(ctx context.Context, agent *people.Agent, id string, p asks.Progress) (*asks.Approval, error) {
	if !slices.Contains(asks.ProgressSteps, p.Step) {
		return nil, core.Invalid("step", "must be one of %s, not %q", strings.Join(asks.ProgressSteps, ", "), p.Step)
	}
	expected, err := asks.ParseExpectedState(p.ExpectedState)
	if err != nil {
		return nil, err
	}
	if n := core.RuneCount(p.Note); n > asks.NoteLimit {
		return nil, core.Invalid("note", "at most %d characters (got %d)", asks.NoteLimit, n)
	}
	if p.Step == "answered" && strings.TrimSpace(p.Note) == "" {
		return nil, core.Invalid("note", "\"answered\" needs a note: your reply to the person's question")
	}
	var observedHash string
	if p.Step == "started" {
		if len(p.Observed) == 0 || string(p.Observed) == "null" {
			return nil, core.Invalid("observed", "\"started\" needs observed: the payload as you see it now")
		}
		_, h, err := ask.CanonicalHash(p.Observed)
		if err != nil {
			return nil, core.Invalid("observed", "not JSON that can be canonicalized: %v", err)
		}
		observedHash = h
	} else if len(p.Observed) > 0 && string(p.Observed) != "null" {
		return nil, core.Invalid("observed", "only \"started\" takes observed")
	}
	return s.Update(ctx, agent.AccountID, id, expected, func(_ *gorm.DB, a *asks.Approval) (*asks.StatusChange, error) {
		if a.RequesterID != agent.ID {
			return nil, core.Refuse(core.PermissionDenied, "approval_id", "only the agent that filed approval %s reports progress on it", a.ID)
		}
		if a.Kind == ask.KindRun && p.Step != "answered" {
			return nil, core.Refuse(core.PermissionDenied, "step", "%q on a pinned run is refused for agents: only the enrolled runner's own signature moves it", p.Step)
		}
		ch := &asks.StatusChange{ActorKind: asks.ActorAgent, Actor: agent.Subject, Note: p.Note}
		switch p.Step {
		case "started":
			ch.Event = asks.EventStarted
			ch.Data = map[string]string{"observed_sha256": observedHash}
			if observedHash != a.ActedOnSHA256() && a.Status == asks.StatusApproved {
				ch.Event = asks.EventObservedChanged
				ch.Set = map[string]any{"note": "observed payload differs from the approved one"}
			}
		case "step":
			ch.Event = asks.EventStep
		case "answered":
			ch.Event = asks.EventAnswered
		case "done":
			ch.Event = asks.EventDone
		case "failed":
			ch.Event = asks.EventFailed
		case "stale":
			ch.Event = asks.EventWithdraw
		}
		return ch, nil
	})
}

// Decide records a person's answer to an ask. The caller has verified the
// person's signature over the decision; Decide checks that the person may
// decide this ask and that the ask is still open and alive.
func (s *Store) Decide(ctx context.Context, accountID, id string, m *people.Member, d asks.Decision) (*asks.Approval, error) {
	if n := core.RuneCount(d.Note); n > asks.NoteLimit {
		return nil, core.Invalid("note", "at most %d characters (got %d)", asks.NoteLimit, n)
	}
	a, err := s.Update(ctx, accountID, id, "", func(tx *gorm.DB, a *asks.Approval) (*asks.StatusChange, error) {
		if !m.MayDecide(a) {
			return nil, core.Refuse(core.PermissionDenied, "approval_id", "approval %s is not asked of %s", a.ID, m.Subject)
		}
		if a.Status != asks.StatusPending {
			return nil, asks.StateError(a, "; only a pending ask can be answered")
		}
		if (a.Kind == ask.KindRun || a.Kind == ask.KindAutoApprove || a.Kind == ask.KindRuleChange || a.Kind == ask.KindMemberChange) && d.Nonce == nil {
			return nil, core.Refuse(core.PermissionDenied, "proof", "a %s ask is decided only with a device-key signature", a.Kind)
		}
		if d.Verdict == asks.VerdictQuestion && strings.TrimSpace(d.Note) == "" {
			return nil, core.Invalid("note", "a question needs its text")
		}
		text := d.Note
		if d.Window != "" {
			text = d.Window // approve_for: the window its signature hashes
		}
		v, err := asks.ParseVerdict(a, d.Verdict, text)
		if err != nil {
			return nil, err
		}
		if v.Verdict == asks.VerdictApproveFor && d.Nonce == nil {
			return nil, core.Refuse(core.PermissionDenied, "proof", "a window is opened only with a device-key signature")
		}
		var edited *asks.Edited
		if v.Verdict == asks.VerdictApproveEdited {
			if d.Nonce == nil {
				return nil, core.Refuse(core.PermissionDenied, "proof", "an edited payload is approved only with a device-key signature over its hash")
			}
			if edited, err = asks.CheckEdit(a, d.Edited, s.Now()); err != nil {
				return nil, err
			}
		}
		if d.Nonce != nil {
			if err := s.SpendChallenge(tx, a, m.ID, d.Signed(), d.Nonce); err != nil {
				return nil, err
			}
			if !d.KeyUsed {
				if err := s.UseDeviceKeyTx(tx, m.ID, d.CredentialID, d.SignCount, d.Credential); err != nil {
					return nil, err
				}
			}
		}
		if d.PushLink != "" {
			if err := s.SpendPushLink(tx, d.PushLink, a, m.ID); err != nil {
				return nil, err
			}
		}
		now := s.Now()
		ch := &asks.StatusChange{ActorKind: asks.ActorPerson, Actor: m.Subject, Note: d.Note}
		decided := map[string]any{"decided_by": m.Subject, "decided_at": now, "note": d.Note, "proof": core.NullableJSON(d.Proof)}
		switch v.Verdict {
		case asks.VerdictApprove, asks.VerdictApproveFor: // approve_for is an approve that also opens a window
			ch.Event, ch.Set = asks.EventApprove, withDecision(decided, string(asks.VerdictApprove))
			if a.Kind == ask.KindAutoApprove {
				ch.After = func(tx *gorm.DB, a *asks.Approval) error { return s.EnablePolicy(tx, a, m, d.CredentialID) }
			}
			if a.Kind == ask.KindRuleChange {
				ch.After = func(tx *gorm.DB, a *asks.Approval) error { return s.applyRuleChange(tx, a, m.Subject) }
			}
			if a.Kind == ask.KindMemberChange {
				ch.After = func(tx *gorm.DB, a *asks.Approval) error { return s.applyMemberChange(tx, a, m.Subject) }
			}
			if a.IsRequest() {
				// A command executes in the transaction that records the
				// approval, which update opened after checking the stored deadline.
				ch.After = func(tx *gorm.DB, a *asks.Approval) error { return s.ExecuteRequest(tx, a, m.Subject) }
			}
			if v.Verdict == asks.VerdictApproveFor {
				then := ch.After
				ch.After = func(tx *gorm.DB, a *asks.Approval) error {
					if then != nil {
						if err := then(tx, a); err != nil {
							return err
						}
					}
					return s.OpenWindow(tx, a, m, d.CredentialID, v.Window)
				}
			}
		case asks.VerdictApproveEdited: // the signed decision binds the edited payload's hash (SpendChallenge above)
			decided["edited_payload"], decided["edited_payload_sha256"] = string(edited.Canonical), edited.SHA256
			ch.Event, ch.Set = asks.EventApprove, withDecision(decided, string(v.Verdict))
			ch.Data = map[string]string{"edited_payload_sha256": edited.SHA256, "edited": edited.Paths()}
		case asks.VerdictDeny:
			ch.Event, ch.Set = asks.EventDeny, withDecision(decided, string(v.Verdict))
		case asks.VerdictReply: // a deny whose note the gate returns in place of the tool's result
			decided["note"] = v.Note
			ch.Event, ch.Set, ch.Note = asks.EventDeny, withDecision(decided, string(v.Verdict)), v.Note
		case asks.VerdictNotMine:
			ch.Event, ch.Set = asks.EventNotMine, withDecision(decided, string(v.Verdict))
			ch.After = func(tx *gorm.DB, a *asks.Approval) error {
				return s.disableAgent(tx, a.RequesterID, "not mine: "+m.Subject, m.Subject, "requesting agent blocked by "+m.Subject+" (not mine)")
			}
		case asks.VerdictQuestion:
			ch.Event, ch.Set = asks.EventQuestion, map[string]any{"note": d.Note}
			if d.Proof != nil {
				ch.Data = json.RawMessage(d.Proof)
			}
		default: // an option, checked against the ask's
			decided["note"] = v.Note
			ch.Event, ch.Set, ch.Note = asks.EventApprove, withDecision(decided, string(v.Verdict)), v.Note
		}
		if req := a.RequirementOf(); req != nil {
			return s.Countersign(tx, a, req, m, d, v.Verdict, ch)
		}
		return ch, nil
	})
	return a, err
}

func withDecision(m map[string]any, decision string) map[string]any {
	m["decision"] = decision
	return m
}

// IssueChallenge makes the single-use nonce for one decision by one person
// on one ask, after checking that the ask is open and theirs to decide.
func (s *Store) IssueChallenge(ctx context.Context, m *people.Member, a *asks.Approval, decision string, nonce []byte) error {
	if !m.MayDecide(a) {
		return core.Refuse(core.PermissionDenied, "approval_id", "approval %s is not asked of %s", a.ID, m.Subject)
	}
	if a.Status != asks.StatusPending {
		return asks.StateError(a, "; only a pending ask can be answered")
	}
	if !s.Now().Before(a.ExpiresAt) {
		return core.Refuse(core.FailedPrecondition, "", "approval %s expired at %s", a.ID, a.ExpiresAt.Format(time.RFC3339))
	}
	if a.Requirement != nil {
		if err := s.NotSignedYet(ctx, a, m); err != nil {
			return err
		}
	}
	now := s.Now()
	issued := false
	err := s.Write(ctx, func(tx *gorm.DB) error {
		if err := tx.Exec(`DELETE FROM decision_challenges WHERE expires_at < ?`, now.Add(-time.Hour)).Error; err != nil {
			return err
		}
		// Only while the ask is still pending as the caller read it: a nonce
		// issued after it moved would outlive the move (killChallenges).
		res := tx.Exec(`INSERT INTO decision_challenges (nonce, approval_id, person_id, decision, payload_sha256, created_at, expires_at)
			SELECT ?, ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM approvals WHERE id = ? AND status = ? AND version = ?)`,
			fmt.Sprintf("%x", nonce), a.ID, m.ID, decision, a.PayloadSHA256, now, now.Add(asks.ChallengeTTL), a.ID, asks.StatusPending, a.Version)
		issued = res.RowsAffected == 1
		return res.Error
	})
	if err != nil {
		return fmt.Errorf("issue challenge: %w", err)
	}
	if !issued {
		return core.Refuse(core.FailedPrecondition, "", "approval %s changed while the signature prompt was made; read it again", a.ID)
	}
	return nil
}
