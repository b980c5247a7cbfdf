package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/views"
)

// sessionsShown is how many sessions the sessions page lists.
const sessionsShown = 200

// Sessions lists the account's agent sessions, waiting ones first, with the
// requests each waits on and its last heartbeat.
func (h *Handlers) Sessions(c echo.Context) error {
	list, err := h.store.ListSessions(c.Request().Context(), viewerOf(c).account.ID, sessionsShown)
	if err != nil {
		return err
	}
	view := views.Sessions{Now: h.store.Now()}
	for _, s := range list {
		row := views.SessionRow{ID: s.ID, Label: s.Label, Agent: s.AgentSubject, State: s.State, StartedAt: s.StartedAt,
			HeartbeatAt: s.HeartbeatAt, EndedAt: s.EndedAt, EndReason: s.EndReason}
		for _, a := range s.WaitingOn {
			row.WaitingOn = append(row.WaitingOn, views.SessionAsk{ID: a.ID, Title: a.Title, Kind: a.Kind, ExpiresAt: a.ExpiresAt})
		}
		view.Sessions = append(view.Sessions, row)
	}
	return h.render(c, http.StatusOK, views.SessionsPage(h.page(c, "Agent sessions", "sessions"), view))
}
