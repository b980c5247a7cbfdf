package models

import (
	"context"
	"fmt"
	"slices"
	"sort"
)

// Inbox returns, soonest deadline first (then newest first), at most limit
// open asks that wait for the member: those asked of their subject and, for
// owners and admins, those asked of nobody in particular, so a run with
// minutes left is never below asks with days left. An ask whose life ran
// out is left out even before the sweep closes it. The approvals_asked_of
// index (account_id, asked_of, status, seq) finds them; the open asks of one
// person are few (each agent's are capped), so the sort is cheap.
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
		Where("account_id = ? AND asked_of IN ? AND status IN ? AND expires_at > ?", m.AccountID, askedOf, OpenStatuses, s.now()).
		Order("expires_at, seq DESC").Limit(limit).Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("read inbox: %w", err)
	}
	// The asks an approval rule covers wait for the people it froze, asked
	// of someone or not: those the member may sign, or signed, join them.
	var covered []Approval
	if err := s.db.WithContext(ctx).Table("approvals").
		Where("account_id = ? AND requirement IS NOT NULL AND status IN ? AND expires_at > ?", m.AccountID, OpenStatuses, s.now()).
		Order("expires_at, seq DESC").Limit(limit).Find(&covered).Error; err != nil {
		return nil, fmt.Errorf("read inbox: %w", err)
	}
	if len(covered) == 0 {
		return out, nil
	}
	ids := make([]string, len(covered))
	for i, a := range covered {
		ids[i] = a.ID
	}
	signed, err := s.SignedBy(ctx, m, ids)
	if err != nil {
		return nil, err
	}
	for _, a := range covered {
		if (m.MayDecide(&a) || signed[a.ID]) && !slices.ContainsFunc(out, func(o Approval) bool { return o.ID == a.ID }) {
			out = append(out, a)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].ExpiresAt.Equal(out[j].ExpiresAt) {
			return out[i].ExpiresAt.Before(out[j].ExpiresAt)
		}
		return out[i].Seq > out[j].Seq
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// SignedBy says which of the asks (ids) the member has signed, under an
// approval rule's quorum.
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
