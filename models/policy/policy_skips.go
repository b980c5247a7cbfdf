package policy

import (
	"context"
	"fmt"
	"strings"

	"github.com/countersign/countersign/models/asks"
)

// PolicySkips says, for each of the asks ids of the account that an active
// policy would have approved but kept asking, the rule that kept it asking
// ("a roll or release"), from its policy_skipped event; asks no policy
// skipped are not in the map. The inbox marks them, so a person sees why a
// policy they signed did not answer for them.
func (s *Policies) PolicySkips(ctx context.Context, accountID string, ids []string) (map[string]string, error) {
	out := map[string]string{}
	if len(ids) == 0 {
		return out, nil
	}
	var rows []struct {
		ApprovalID string
		Note       string
	}
	if err := s.DB().WithContext(ctx).Table("events").Select("approval_id, note").
		Where("account_id = ? AND approval_id IN ? AND "+asks.NotCreated+" AND step = ? AND actor_kind = ?", accountID, ids, StepPolicySkipped, asks.ActorPolicy).
		Order("seq").Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("read policy skips: %w", err)
	}
	for _, r := range rows {
		out[r.ApprovalID] = strings.TrimPrefix(r.Note, policySkipNote)
	}
	return out, nil
}

// policySkipNote starts the note of a policy_skipped event; the rule follows.
const policySkipNote = "keeps asking: "
