package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/ask"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/views"
)

// inboxSize is how many open asks the inbox shows at once.
const inboxSize = 100

// Inbox lists the open asks waiting for the signed-in person, soonest
// deadline first, each marked with the rule that kept it asking when an
// active policy skipped it; the asks an approval rule covers that wait for
// other people's signatures (the viewer signed, or may not) are listed
// apart, each with its quorum.
func (h *Handlers) Inbox(c echo.Context) error {
	v := viewerOf(c)
	open, err := h.store.Inbox(c.Request().Context(), v.member, inboxSize+1)
	if err != nil {
		return err
	}
	view := views.InboxView{Now: h.store.Now(), MCPURL: h.baseURL + "/mcp", IsAdmin: v.isAdmin()}
	if len(open) > inboxSize {
		open, view.More = open[:inboxSize], true
	}
	view.Asks = askRows(open)
	ids := make([]string, len(open))
	for i, a := range open {
		ids[i] = a.ID
	}
	kept, err := h.store.PolicySkips(c.Request().Context(), v.account.ID, ids)
	if err != nil {
		return err
	}
	signed, err := h.store.SignedBy(c.Request().Context(), v.member, ids)
	if err != nil {
		return err
	}
	rows := view.Asks
	view.Asks = nil
	for i := range rows {
		rows[i].KeptAsking = kept[rows[i].ID]
		a := &open[i]
		if a.Requirement == nil {
			if v.member.MayDecide(a) {
				rows[i].NotBatched = asks.WhyNotBatched(a)
				rows[i].Batchable = rows[i].NotBatched == ""
			}
			view.Asks = append(view.Asks, rows[i])
			continue
		}
		if q, _, err := h.store.QuorumOf(c.Request().Context(), a); err == nil && q != nil {
			rows[i].Quorum = q.String()
		} else if err != nil {
			return err
		}
		// An ask a rule covers waits for the viewer only while they may
		// still sign it.
		if a.Status == asks.StatusPending && v.member.MayDecide(a) && !signed[a.ID] {
			view.Asks = append(view.Asks, rows[i])
		} else {
			view.Others = append(view.Others, rows[i])
		}
	}
	if len(view.Asks) == 0 && len(view.Others) == 0 {
		if view.Push, err = h.pushView(c.Request().Context(), v.member.ID); err != nil {
			return err
		}
	}
	return h.render(c, http.StatusOK, views.Inbox(h.page(c, "Inbox", "inbox"), view))
}

// askRows is asks as lists show them, with the badges the inbox's cards
// carry: production or high risk, a check code to pick, how many people.
func askRows(list []asks.Approval) []views.AskRow {
	rows := make([]views.AskRow, len(list))
	for i, a := range list {
		rows[i] = views.AskRow{ID: a.ID, Kind: a.Kind, Title: a.Title, AgentLabel: a.AgentLabel, Requester: a.RequesterSubject,
			AskedOf: a.AskedOf, Status: string(a.Status), CreatedAt: a.CreatedAt, ExpiresAt: a.ExpiresAt,
			NeedsCode: ask.NeedsCheckCode(a.Kind, a.Payload)}
		// A payload or context that no longer reads has no badge; its page
		// says why (askView logs it).
		payload, _ := views.DecodePayload(a.Kind, a.Payload)
		var actx views.Context
		if a.Context != nil {
			actx, _ = views.DecodeContext(*a.Context)
		}
		rows[i].Danger = views.Ask{Kind: a.Kind, Payload: payload, Context: actx}.Danger()
		if r := a.RequirementOf(); r != nil {
			rows[i].People = r.Count
		}
	}
	return rows
}
