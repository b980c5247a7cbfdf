package asks

import (
	"fmt"

	"gorm.io/gorm"
)

// note appends to the approval's timeline an event that moves nothing, in
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

// noteOn is note for an approval loaded (or filed) in this transaction, whose
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

// appendEvent appends ev to a's timeline and keeps it on a (see Approval.Written).
func (s *Lifecycle) AppendEvent(tx *gorm.DB, a *Approval, ev *TimelineEvent) error {
	if err := tx.Table("events").Create(ev).Error; err != nil {
		return fmt.Errorf("append event: %w", err)
	}
	a.NoteWritten(*ev)
	return nil
}
