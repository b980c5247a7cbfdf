package handlers

// Placeholders until the page handlers land; each answers 501.

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

func notYet(c echo.Context) error {
	return echo.NewHTTPError(http.StatusNotImplemented, "not built yet")
}

func (h *Handlers) Inbox(c echo.Context) error             { return notYet(c) }
func (h *Handlers) History(c echo.Context) error           { return notYet(c) }
func (h *Handlers) ApprovalShow(c echo.Context) error      { return notYet(c) }
func (h *Handlers) ApprovalEvents(c echo.Context) error    { return notYet(c) }
func (h *Handlers) Devices(c echo.Context) error           { return notYet(c) }
func (h *Handlers) DeviceAddBegin(c echo.Context) error    { return notYet(c) }
func (h *Handlers) DeviceAddFinish(c echo.Context) error   { return notYet(c) }
func (h *Handlers) DeviceRename(c echo.Context) error      { return notYet(c) }
func (h *Handlers) DeviceRemove(c echo.Context) error      { return notYet(c) }
func (h *Handlers) AdminMembers(c echo.Context) error      { return notYet(c) }
func (h *Handlers) AdminInviteCreate(c echo.Context) error { return notYet(c) }
func (h *Handlers) AdminMemberRole(c echo.Context) error   { return notYet(c) }
func (h *Handlers) AdminMemberRemove(c echo.Context) error { return notYet(c) }
func (h *Handlers) AdminAgents(c echo.Context) error       { return notYet(c) }
func (h *Handlers) AdminAgentCreate(c echo.Context) error  { return notYet(c) }
func (h *Handlers) AdminAgentDisable(c echo.Context) error { return notYet(c) }
func (h *Handlers) AdminAgentDelete(c echo.Context) error  { return notYet(c) }
func (h *Handlers) AdminAudit(c echo.Context) error        { return notYet(c) }
