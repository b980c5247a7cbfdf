package models

import (
	"context"
	"fmt"
)

// Inbox returns, soonest deadline first (then newest first), at most limit
// open asks that wait for the member: those asked of their subject and, for
// owners and admins, those asked of nobody in particular, so a run with
// minutes left is never below asks with days left. An ask whose life ran
// out is left out even before the sweep closes it. The partial indexes
// approvals_open or approvals_expiry (open asks only) find them; the open asks of an
// account are few (each expires, and the sweep closes it), so the sort is cheap.
func (s *Store) Inbox(ctx context.Context, m *Member, limit int) ([]Approval, error) {
	if limit <= 0 || limit > MaxPageSize {
		return nil, Invalid("limit", "must be 1 to %d, not %d", MaxPageSize, limit)
	}
	askedOf := []string{m.Subject}
	if m.Role == RoleOwner || m.Role == RoleAdmin {
		askedOf = append(askedOf, "")
	}
	var out []Approval
	err := s.db.WithContext(ctx).Table("approvals").
		Where("account_id = ? AND asked_of IN ? AND "+openAsks+" AND expires_at > ?", m.AccountID, askedOf, s.now()).
		Order("expires_at, seq DESC").Limit(limit).Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("read inbox: %w", err)
	}
	return out, nil
}
