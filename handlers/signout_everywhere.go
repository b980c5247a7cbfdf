package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// SignOutEverywhere ends every session of the signed-in person, in every
// browser and account, this one included: for a lost or shared device.
func (h *Handlers) SignOutEverywhere(c echo.Context) error {
	if err := h.store.EndSessionsOf(c.Request().Context(), viewerOf(c).member.ID); err != nil {
		return err
	}
	h.clearSession(c)
	return c.Redirect(http.StatusSeeOther, "/signin")
}
