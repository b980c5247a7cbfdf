package models

import (
	"cmp"
	"context"
	"fmt"
	"slices"
)

// Inbox returns, soonest deadline first (then newest first), at most limit
// open asks that wait for the member: those asked of their subject and, for
// owners and admins, those asked of nobody in particular, and on an ask an
// approval rule covers, only if the rule counts them; so a run with
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
	// The asks an approval rule covers wait for the people its frozen
	// requirement counts, whoever they are asked of; the open ones of an
	// account are few.
	var covered []Approval
	if err := s.db.WithContext(ctx).Table("approvals").
		Where("account_id = ? AND requirement IS NOT NULL AND asked_of NOT IN ? AND status IN ? AND expires_at > ?", m.AccountID, askedOf, OpenStatuses, s.now()).
		Order("expires_at, seq DESC").Limit(MaxPageSize).Find(&covered).Error; err != nil {
		return nil, fmt.Errorf("read inbox: %w", err)
	}
	out = slices.DeleteFunc(append(out, covered...), func(a Approval) bool { return !m.MayDecide(&a) })
	slices.SortStableFunc(out, func(a, b Approval) int {
		if c := a.ExpiresAt.Compare(b.ExpiresAt); c != 0 {
			return c
		}
		return cmp.Compare(b.Seq, a.Seq)
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// SignedBy says which of the asks (ids) the member has signed, under an
// approval rule's quorum: the inbox lists those apart, as waiting for others.
func (s *Store) SignedBy(ctx context.Context, m *Member, ids []string) (map[string]bool, error) {
	var got []string
	if len(ids) == 0 {
		return nil, nil
	}
	if err := s.db.WithContext(ctx).Table("approval_signatures").Where("account_id = ? AND person_id = ? AND approval_id IN ?", m.AccountID, m.ID, ids).
		Pluck("approval_id", &got).Error; err != nil {
		return nil, fmt.Errorf("read signatures: %w", err)
	}
	out := make(map[string]bool, len(got))
	for _, id := range got {
		out[id] = true
	}
	return out, nil
}
