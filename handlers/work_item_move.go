package handlers

import (
	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models/asks"
)

// WorkItemMove moves an item to another column. A person's own move needs
// no approval: approvals are for what agents propose.
func (h *Handlers) WorkItemMove(c echo.Context) error {
	v := viewerOf(c)
	err := h.store.MoveItem(c.Request().Context(), v.account.ID, c.Param("id"), c.FormValue("column"), asks.ActorPerson, v.member.Subject)
	if err != nil {
		return h.workRefused(c, err)
	}
	return h.redirectWithFlash(c, "/work", "work-item-moved")
}
