package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models/asks"
)

// batchRequest picks the asks of a batch and its answer (see
// decision.Service.BeginBatch).
type batchRequest struct {
	ApprovalIDs []string `json:"approval_ids"`
	Decision    string   `json:"decision"` // approve or deny
}

// BatchChallenge answers the WebAuthn options of one signature over a list
// of the viewer's asks and one answer to all of them.
func (h *Handlers) BatchChallenge(c echo.Context) error {
	var req batchRequest
	if err := readJSON(c, &req, maxWebBody); err != nil {
		return err
	}
	id, options, err := h.decisions.BeginBatch(c.Request().Context(), viewerOf(c).member, req.ApprovalIDs, asks.Verdict(req.Decision))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"ceremony": id, "options": options})
}

// BatchDecide records the batch the viewer signed: every ask of it, or none.
func (h *Handlers) BatchDecide(c echo.Context) error {
	var reply ceremonyReply
	if err := readJSON(c, &reply, maxWebBody); err != nil {
		return err
	}
	decided, err := h.decisions.CompleteBatch(c.Request().Context(), viewerOf(c).member, reply.Ceremony, reply.Credential)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"decided": len(decided), "redirect": "/"})
}
