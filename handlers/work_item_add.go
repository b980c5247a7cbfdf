package handlers

import (
	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models/asks"
)

// WorkItemAdd puts a new item on the board, in the column the person picked.
func (h *Handlers) WorkItemAdd(c echo.Context) error {
	v := viewerOf(c)
	_, err := h.store.AddItem(c.Request().Context(), v.account.ID, c.FormValue("column"), c.FormValue("title"),
		c.FormValue("description"), asks.ActorPerson, v.member.Subject)
	if err != nil {
		return h.workRefused(c, err)
	}
	return h.redirectWithFlash(c, "/work", "work-item-added")
}
