package outbox

import (
	"context"
	"time"

	"github.com/countersign/countersign/models/core"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// claim leases up to n due rows of an outbox table (push_jobs or
// channel_messages: seq, done_at, not_before, leased_until, attempts) and
// reads the leased rows with read, in one transaction. Several instances
// claim at once without taking a row twice (SKIP LOCKED on PostgreSQL; on
// SQLite one write at a time). Most wakes find nothing due: a read says so
// first, without taking a writer's turn.
func (s *Queue) claim(ctx context.Context, table string, n int, lease time.Duration, read func(tx *gorm.DB, seqs []int64) error) error {
	now := s.Now()
	due := func(tx *gorm.DB) *gorm.DB {
		return tx.Table(table).Select("seq").
			Where("done_at IS NULL AND not_before <= ? AND (leased_until IS NULL OR leased_until < ?)", now, now).Order("seq").Limit(n)
	}
	var first []int64
	if err := due(s.DB().WithContext(ctx)).Limit(1).Pluck("seq", &first).Error; err != nil || len(first) == 0 {
		return err
	}
	return s.Write(ctx, func(tx *gorm.DB) error {
		q := due(tx)
		if s.Dialect() == core.Postgres {
			q = q.Clauses(clause.Locking{Strength: "UPDATE", Options: "SKIP LOCKED"})
		}
		var seqs []int64
		if err := q.Pluck("seq", &seqs).Error; err != nil || len(seqs) == 0 {
			return err
		}
		if err := tx.Table(table).Where("seq IN ?", seqs).
			Updates(map[string]any{"leased_until": now.Add(lease), "attempts": gorm.Expr("attempts + 1")}).Error; err != nil {
			return err
		}
		return read(tx, seqs)
	})
}
