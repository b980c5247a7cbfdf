package models

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// ObservedMove is one timeline event read back for metrics: the status the
// ask moved to and, for a decision, how long it waited for it.
type ObservedMove struct {
	Step       string
	FromStatus Status
	ToStatus   Status
	Kind       string        // the ask's kind
	Waited     time.Duration // from filing to this event
}

// MoveAt reads the timeline event seq of approval id with its ask's kind
// and age; NOT_FOUND when there is none.
func (s *Store) MoveAt(ctx context.Context, id string, seq int64) (ObservedMove, error) {
	var row struct {
		Step       string
		FromStatus Status
		ToStatus   Status
		At         time.Time
		Kind       string
		CreatedAt  time.Time
	}
	err := s.db.WithContext(ctx).Table("events").
		Select("events.step, events.from_status, events.to_status, events.at, approvals.kind, approvals.created_at").
		Joins("JOIN approvals ON approvals.id = events.approval_id").
		Where("events.seq = ? AND events.approval_id = ?", seq, id).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return ObservedMove{}, Refuse(NotFound, "", "no event %d of %s", seq, id)
	}
	if err != nil {
		return ObservedMove{}, fmt.Errorf("read event: %w", err)
	}
	return ObservedMove{Step: row.Step, FromStatus: row.FromStatus, ToStatus: row.ToStatus, Kind: row.Kind, Waited: row.At.Sub(row.CreatedAt)}, nil
}

// OutboxDepth counts the pushes in the outbox that are not done yet.
func (s *Store) OutboxDepth(ctx context.Context) (int64, error) {
	var n int64
	if err := s.db.WithContext(ctx).Table("push_jobs").Where("done_at IS NULL").Count(&n).Error; err != nil {
		return 0, fmt.Errorf("count the push outbox: %w", err)
	}
	return n, nil
}

// SchemaCurrent refuses a database that lacks a migration this binary has,
// for readiness: an instance must not serve an older schema.
func (s *Store) SchemaCurrent(ctx context.Context) error {
	var have int64
	if err := s.db.WithContext(ctx).Raw(`SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&have).Error; err != nil {
		return fmt.Errorf("read the schema version: %w", err)
	}
	if want := int64(migrations[len(migrations)-1].version); have < want {
		return fmt.Errorf("the schema is at version %d, this binary needs %d", have, want)
	}
	return nil
}
