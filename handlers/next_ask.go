package handlers

import (
	"context"

	"github.com/countersign/countersign/models"
)

// nextAsk is where the page goes once the person answered the ask done:
// the next open ask they may answer now, soonest deadline first (the
// inbox's order), or the inbox when none is left; an ask a rule covers that
// they signed already waits for others, not for them. A question keeps the
// person on its ask, where the agent's answer arrives.
func (h *Handlers) nextAsk(ctx context.Context, m *models.Member, done *models.Approval) (string, error) {
	if done.Status == models.StatusQuestion {
		return "/approvals/" + done.ID, nil
	}
	asks, err := h.store.Inbox(ctx, m, inboxSize)
	if err != nil {
		return "", err
	}
	var covered []string
	for _, a := range asks {
		if a.Requirement != nil {
			covered = append(covered, a.ID)
		}
	}
	signed, err := h.store.SignedBy(ctx, m, covered)
	if err != nil {
		return "", err
	}
	for _, a := range asks {
		if a.ID != done.ID && a.Status == models.StatusPending && m.MayDecide(&a) && !signed[a.ID] {
			return "/approvals/" + a.ID, nil
		}
	}
	return "/", nil
}
