package models

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
)

// Inbox returns, soonest deadline first (then newest first), at most limit
// open asks that wait for the member: those asked of their subject and, for
// owners and admins, those asked of nobody in particular, and on an ask an
// approval rule covers, only if the rule counts them; so a run with
// minutes left is never below asks with days left. An ask whose life ran
// out is left out even before the sweep closes it. The partial indexes
// approvals_open or approvals_expiry (open asks only) find them; the open asks of an
// account are few (each expires, and the sweep closes it), so the sort is cheap.
func (s *Store) Inbox(ctx context.Context, m *people.Member, limit int) ([]asks.Approval, error) {
	if limit <= 0 || limit > core.MaxPageSize {
		return nil, core.Invalid("limit", "must be 1 to %d, not %d", core.MaxPageSize, limit)
	}
	askedOf := []string{m.Subject}
	if m.Role == core.RoleOwner || m.Role == core.RoleAdmin {
		askedOf = append(askedOf, "")
	}
	var out []asks.Approval
	err := s.DB().WithContext(ctx).Table("approvals").
		Where("account_id = ? AND asked_of IN ? AND "+asks.OpenAsks+" AND expires_at > ?", m.AccountID, askedOf, s.Now()).
		Order("expires_at, seq DESC").Limit(limit).Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("read inbox: %w", err)
	}
	// The asks an approval rule covers wait for the people its frozen
	// requirement counts, whoever they are asked of; the open ones of an
	// account are few.
	var covered []asks.Approval
	if err := s.DB().WithContext(ctx).Table("approvals").
		Where("account_id = ? AND requirement IS NOT NULL AND asked_of NOT IN ? AND status IN ? AND expires_at > ?", m.AccountID, askedOf, asks.OpenStatuses, s.Now()).
		Order("expires_at, seq DESC").Limit(core.MaxPageSize).Find(&covered).Error; err != nil {
		return nil, fmt.Errorf("read inbox: %w", err)
	}
	out = slices.DeleteFunc(append(out, covered...), func(a asks.Approval) bool { return !m.MayDecide(&a) })
	slices.SortStableFunc(out, func(a, b asks.Approval) int {
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
func (s *Store) SignedBy(ctx context.Context, m *people.Member, ids []string) (map[string]bool, error) {
	var got []string
	if len(ids) == 0 {
		return nil, nil
	}
	if err := s.DB().WithContext(ctx).Table("approval_signatures").Where("account_id = ? AND person_id = ? AND approval_id IN ?", m.AccountID, m.ID, ids).
		Pluck("approval_id", &got).Error; err != nil {
		return nil, fmt.Errorf("read signatures: %w", err)
	}
	out := make(map[string]bool, len(got))
	for _, id := range got {
		out[id] = true
	}
	return out, nil
}
