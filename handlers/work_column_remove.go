package handlers

import "github.com/labstack/echo/v4"

// WorkColumnRemove removes an empty column; one that holds items is refused
// (owners and admins).
func (h *Handlers) WorkColumnRemove(c echo.Context) error {
	if err := h.store.RemoveColumn(c.Request().Context(), viewerOf(c).account.ID, c.Param("key")); err != nil {
		return h.workRefused(c, err)
	}
	return h.redirectWithFlash(c, "/work", "work-column-removed")
}
