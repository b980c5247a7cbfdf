package handlers

import (
	"context"

	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/people"
)

// nextAsk is where the page goes once the person answered the ask done:
// the next open ask they may answer now, soonest deadline first (the
// inbox's order), or the inbox when none is left; an ask a rule covers that
// they signed already waits for others, not for them. A question keeps the
// person on its ask, where the agent's answer arrives.
func (h *Handlers) nextAsk(ctx context.Context, m *people.Member, done *asks.Approval) (string, error) {
	if done.Status == asks.StatusQuestion {
		return "/approvals/" + done.ID, nil
	}
	next, _, err := h.waitingAfter(ctx, m, done)
	return next, err
}

// waitingAfter is, once the person answered the ask done, the next open ask
// they may answer now (or the inbox when none is left), and how many wait.
func (h *Handlers) waitingAfter(ctx context.Context, m *people.Member, done *asks.Approval) (next string, waiting int, err error) {
	open, err := h.store.Inbox(ctx, m, inboxSize)
	if err != nil {
		return "", 0, err
	}
	var covered []string
	for _, a := range open {
		if a.Requirement != nil {
			covered = append(covered, a.ID)
		}
	}
	signed, err := h.store.SignedBy(ctx, m, covered)
	if err != nil {
		return "", 0, err
	}
	next = "/"
	for _, a := range open {
		if a.ID != done.ID && a.Status == asks.StatusPending && m.MayDecide(&a) && !signed[a.ID] {
			if waiting == 0 {
				next = "/approvals/" + a.ID
			}
			waiting++
		}
	}
	return next, waiting, nil
}
