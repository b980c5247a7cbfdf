package handlers

import (
	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/views"
)

// PolicyRevoke turns the account's auto-approve policy off now, for any
// member: turning it off only makes asks wait for a person again, so it
// needs no passkey. The note goes on the enabling ask's timeline.
func (h *Handlers) PolicyRevoke(c echo.Context) error {
	v := viewerOf(c)
	note := c.FormValue("note")
	_, err := h.store.RevokePolicy(c.Request().Context(), v.account.ID, v.member.Subject, note)
	if msg, status, ok := refusalOf(err); ok {
		return h.policiesPage(c, status, views.PoliciesView{Error: msg, Note: note})
	}
	if err != nil {
		return err
	}
	return h.redirectWithFlash(c, "/policies", "policy-revoked")
}
