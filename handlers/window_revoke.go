package handlers

import (
	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/views"
)

// WindowRevoke turns one window off now, for any member, as the account's
// policy is: turning it off only makes its asks wait for a person again, so
// it needs no passkey. The timeline of the ask it was opened from says who
// turned it off.
func (h *Handlers) WindowRevoke(c echo.Context) error {
	v := viewerOf(c)
	_, err := h.store.RevokeWindow(c.Request().Context(), v.account.ID, c.Param("id"), v.member.Subject, "")
	if msg, status, ok := refusalOf(err); ok {
		return h.policiesPage(c, status, views.PoliciesView{Error: msg})
	}
	if err != nil {
		return err
	}
	return h.redirectWithFlash(c, "/policies", "window-revoked")
}
