package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/views"
)

// inboxSize is how many open asks the inbox shows at once.
const inboxSize = 100

// Inbox lists the open asks waiting for the signed-in person, soonest
// deadline first, each marked with the rule that kept it asking when an
// active policy skipped it.
func (h *Handlers) Inbox(c echo.Context) error {
	v := viewerOf(c)
	asks, err := h.store.Inbox(c.Request().Context(), v.member, inboxSize+1)
	if err != nil {
		return err
	}
	view := views.InboxView{Now: h.store.Now(), MCPURL: h.baseURL + "/mcp", IsAdmin: v.isAdmin()}
	if len(asks) > inboxSize {
		asks, view.More = asks[:inboxSize], true
	}
	view.Asks = askRows(asks)
	ids := make([]string, len(asks))
	for i, a := range asks {
		ids[i] = a.ID
	}
	kept, err := h.store.PolicySkips(c.Request().Context(), v.account.ID, ids)
	if err != nil {
		return err
	}
	for i := range view.Asks {
		view.Asks[i].KeptAsking = kept[view.Asks[i].ID]
	}
	return h.render(c, http.StatusOK, views.Inbox(h.page(c, "Inbox", "inbox"), view))
}

// askRows is asks as lists show them.
func askRows(asks []models.Approval) []views.AskRow {
	rows := make([]views.AskRow, len(asks))
	for i, a := range asks {
		rows[i] = views.AskRow{ID: a.ID, Kind: a.Kind, Title: a.Title, AgentLabel: a.AgentLabel, Requester: a.RequesterSubject,
			AskedOf: a.AskedOf, Status: string(a.Status), CreatedAt: a.CreatedAt, ExpiresAt: a.ExpiresAt}
	}
	return rows
}
