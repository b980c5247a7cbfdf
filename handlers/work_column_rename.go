package handlers

import "github.com/labstack/echo/v4"

// WorkColumnRename gives a column a new name; its key, which agents name in
// a work_move, stays (owners and admins).
func (h *Handlers) WorkColumnRename(c echo.Context) error {
	if err := h.store.RenameColumn(c.Request().Context(), viewerOf(c).account.ID, c.Param("key"), c.FormValue("name")); err != nil {
		return h.workRefused(c, err)
	}
	return h.redirectWithFlash(c, "/work", "work-column-renamed")
}
