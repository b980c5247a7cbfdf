package handlers

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/audit"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/views"
)

// auditSize is how many events one page of the audit log shows.
const auditSize = 100

// AdminAudit shows the account's timeline events, newest first, filtered by
// ask, actor kind, step and actor, one page at a time.
func (h *Handlers) AdminAudit(c echo.Context) error {
	view := views.AuditView{ApprovalID: c.QueryParam("approval"), ActorKind: c.QueryParam("actor_kind"),
		Step: c.QueryParam("step"), Actor: c.QueryParam("actor"), ActorKinds: audit.ActorKinds, Steps: audit.AuditSteps}
	f := audit.AuditFilter{ApprovalID: view.ApprovalID, ActorKind: view.ActorKind, Step: view.Step, Actor: view.Actor, PageSize: auditSize}
	var err error
	if b := c.QueryParam("before"); b != "" {
		if f.Before, err = strconv.ParseInt(b, 10, 64); err != nil {
			err = core.Invalid("before", "must be the cursor of a page this log gave")
		}
	}
	var events []asks.TimelineEvent
	if err == nil {
		events, view.Next, err = h.store.Audit(c.Request().Context(), viewerOf(c).account.ID, f)
	}
	status := http.StatusOK
	if err != nil {
		var ok bool
		if view.Error, status, ok = refusalOf(err); !ok {
			return err
		}
	}
	for _, e := range events {
		view.Events = append(view.Events, views.AuditRow{Event: eventView(e), ApprovalID: e.ApprovalID})
	}
	if head, err := h.store.AuditHead(c.Request().Context(), viewerOf(c).account.ID); err != nil {
		h.log.Error("read the audit chain head", "err", err) // the log itself is still worth showing
	} else {
		view.Chain = &views.ChainView{Pos: head.Pos, Hash: head.Hash, Unsealed: head.Unsealed}
	}
	return h.render(c, status, views.AdminAudit(h.page(c, "Audit log", "admin"), view))
}
