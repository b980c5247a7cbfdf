package handlers

import "github.com/labstack/echo/v4"

// WorkColumnAdd adds a column at the end of the board (owners and admins).
func (h *Handlers) WorkColumnAdd(c echo.Context) error {
	if _, err := h.store.AddColumn(c.Request().Context(), viewerOf(c).account.ID, c.FormValue("key"), c.FormValue("name")); err != nil {
		return h.workRefused(c, err)
	}
	return h.redirectWithFlash(c, "/work", "work-column-added")
}
