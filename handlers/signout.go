package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// SignOut ends the session.
func (h *Handlers) SignOut(c echo.Context) error {
	if v := viewerOf(c); v != nil {
		if err := h.store.DeleteSession(c.Request().Context(), v.token); err != nil {
			return err
		}
	}
	h.clearSession(c)
	return c.Redirect(http.StatusSeeOther, "/signin")
}
