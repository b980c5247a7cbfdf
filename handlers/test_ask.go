package handlers

import (
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"
)

// TestAskSend files a test ask of the signed-in person from the service's
// own test agent (models.Store.SendTestAsk) and opens it: the push, the
// answer, the receipt and the proof, without an MCP host.
func (h *Handlers) TestAskSend(c echo.Context) error {
	a, err := h.store.SendTestAsk(c.Request().Context(), viewerOf(c).member)
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/approvals/"+url.PathEscape(a.ID))
}
