package asks

import (
	"github.com/countersign/countersign/models/core"
	"gorm.io/gorm"

	"fmt"

	"encoding/json"
	"time"

	"github.com/countersign/countersign/proof"
)

// NotCreated is the predicate of the partial index events_account_step,
// written out for the same reason as OpenAsks.
const NotCreated = "step <> 'created'"

// approvalChanged records that ev, just appended to its ask's timeline,
// changed the ask.
func (s *Lifecycle) approvalChanged(tx *gorm.DB, ev *TimelineEvent) error {
	return s.Changed(tx, core.Change{Kind: core.ApprovalChanged, AccountID: ev.AccountID, ApprovalID: ev.ApprovalID, Seq: ev.Seq})
}

// Note appends to the approval's timeline an event that moves nothing, in
// the state the approval is in.
func (s *Lifecycle) Note(tx *gorm.DB, accountID, approvalID, actorKind, actor, step, note string) error {
	var status Status
	if err := tx.Table("approvals").Select("status").Where("id = ?", approvalID).Scan(&status).Error; err != nil {
		return err
	}
	ev := &TimelineEvent{
		AccountID: accountID, ApprovalID: approvalID, At: s.Now(), ActorKind: actorKind, Actor: actor,
		Step: step, FromStatus: status, ToStatus: status, Note: note,
	}
	if err := tx.Table("events").Create(ev).Error; err != nil {
		return fmt.Errorf("append event: %w", err)
	}
	return s.approvalChanged(tx, ev)
}

// NoteOn is note for an approval loaded (or filed) in this transaction, whose
// state it knows; the event is kept on a (see Approval.Written).
func (s *Lifecycle) NoteOn(tx *gorm.DB, a *Approval, actorKind, actor, step, note string) error {
	ev := &TimelineEvent{
		AccountID: a.AccountID, ApprovalID: a.ID, At: s.Now(), ActorKind: actorKind, Actor: actor,
		Step: step, FromStatus: a.Status, ToStatus: a.Status, Note: note,
	}
	if err := s.AppendEvent(tx, a, ev); err != nil {
		return err
	}
	return s.approvalChanged(tx, ev)
}

// AppendEvent appends ev to a's timeline and keeps it on a (see Approval.Written).
func (s *Lifecycle) AppendEvent(tx *gorm.DB, a *Approval, ev *TimelineEvent) error {
	if err := tx.Table("events").Create(ev).Error; err != nil {
		return fmt.Errorf("append event: %w", err)
	}
	a.NoteWritten(*ev)
	return nil
}

// AccountEvent appends, inside tx, an event of the account that is about no
// approval to its audit log, at time at; data, when not nil, is kept with it
// as JSON.
func (s *Lifecycle) AccountEvent(tx *gorm.DB, at time.Time, accountID, actorKind, actor, step, note string, data any) error {
	ev := &TimelineEvent{AccountID: accountID, At: at, ActorKind: actorKind, Actor: actor, Step: step, Note: note}
	if data != nil {
		b, err := json.Marshal(data)
		if err != nil {
			return fmt.Errorf("event data: %w", err)
		}
		text := string(b)
		ev.Data = &text
	}
	if err := tx.Table("events").Create(ev).Error; err != nil {
		return fmt.Errorf("append event: %w", err)
	}
	return nil
}

// RunnerSignature is the runner's signature a timeline event carries, or nil.
func (e *TimelineEvent) RunnerSignature() *proof.RunnerReport {
	if e.ActorKind != ActorRunner || e.Data == nil {
		return nil
	}
	var d struct {
		Runner *proof.RunnerReport `json:"runner"`
	}
	if json.Unmarshal([]byte(*e.Data), &d) != nil {
		return nil
	}
	return d.Runner
}
