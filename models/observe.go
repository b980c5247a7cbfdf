package models

import (
	"context"
	"fmt"
	"time"

	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
)

// ObservedMove is one timeline event read back for metrics: the status the
// ask moved to and, for a decision, how long it waited for it.
type ObservedMove struct {
	Step       string
	FromStatus asks.Status
	ToStatus   asks.Status
	Kind       string        // the ask's kind
	Waited     time.Duration // from filing to this event
}

// MovesIn reads the timeline events of approval id from seq from to seq to
// (from 0: to alone), in order, each with its ask's kind and age: the events
// one published change stands for.
func (s *Store) MovesIn(ctx context.Context, id string, from, to int64) ([]ObservedMove, error) {
	if from <= 0 || from > to {
		from = to
	}
	var rows []struct {
		Step       string
		FromStatus asks.Status
		ToStatus   asks.Status
		At         time.Time
		Kind       string
		CreatedAt  time.Time
	}
	err := s.DB().WithContext(ctx).Table("events").
		Select("events.step, events.from_status, events.to_status, events.at, approvals.kind, approvals.created_at").
		Joins("JOIN approvals ON approvals.id = events.approval_id").
		Where("events.approval_id = ? AND events.seq BETWEEN ? AND ?", id, from, to).Order("events.seq").Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("read events: %w", err)
	}
	if len(rows) == 0 {
		return nil, core.Refuse(core.NotFound, "", "no event %d to %d of %s", from, to, id)
	}
	moves := make([]ObservedMove, len(rows))
	for i, r := range rows {
		moves[i] = ObservedMove{Step: r.Step, FromStatus: r.FromStatus, ToStatus: r.ToStatus, Kind: r.Kind, Waited: r.At.Sub(r.CreatedAt)}
	}
	return moves, nil
}

// OutboxDepth counts the pushes in the outbox that are not done yet.
func (s *Store) OutboxDepth(ctx context.Context) (int64, error) {
	var n int64
	if err := s.DB().WithContext(ctx).Table("push_jobs").Where("done_at IS NULL").Count(&n).Error; err != nil {
		return 0, fmt.Errorf("count the push outbox: %w", err)
	}
	return n, nil
}

// SchemaCurrent refuses a database that lacks a migration this binary has,
// for readiness: an instance must not serve an older schema.
func (s *Store) SchemaCurrent(ctx context.Context) error {
	var have int64
	if err := s.DB().WithContext(ctx).Raw(`SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&have).Error; err != nil {
		return fmt.Errorf("read the schema version: %w", err)
	}
	if want := int64(core.Migrations[len(core.Migrations)-1].Version); have < want {
		return fmt.Errorf("the schema is at version %d, this binary needs %d", have, want)
	}
	return nil
}
