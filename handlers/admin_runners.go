package handlers

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/views"
)

// AdminRunners lists the account's runners.
func (h *Handlers) AdminRunners(c echo.Context) error {
	return h.runnersPage(c, http.StatusOK, views.RunnersView{})
}

// runnersPage renders the runners page over view, which may carry a new
// runner's id and token or a refusal.
func (h *Handlers) runnersPage(c echo.Context, status int, view views.RunnersView) error {
	runners, err := h.store.ListRunners(c.Request().Context(), viewerOf(c).account.ID)
	if err != nil {
		return err
	}
	view.MCPURL = h.baseURL + "/mcp"
	view.ServerURL = h.baseURL
	for _, r := range runners {
		view.Runners = append(view.Runners, views.RunnerRow{ID: r.ID, Name: r.Name, PublicKey: r.PublicKey,
			Disabled: r.Disabled, DisabledBy: r.DisabledBy, CreatedAt: r.CreatedAt})
	}
	return h.render(c, status, views.AdminRunners(h.page(c, "Runners", "admin"), view))
}

// AdminRunnerEnroll enrolls a runner with the public key its host printed
// and shows its id and token this once; only the token's hash is kept.
func (h *Handlers) AdminRunnerEnroll(c echo.Context) error {
	form, err := c.FormParams()
	if err != nil {
		return h.runnersPage(c, http.StatusBadRequest, views.RunnersView{Error: "the form could not be read"})
	}
	v := viewerOf(c)
	r, token, err := h.store.EnrollRunner(c.Request().Context(), v.account.ID, strings.TrimSpace(form.Get("name")),
		form.Get("public_key"), v.member.Subject)
	if msg, status, ok := refusalOf(err); ok {
		return h.runnersPage(c, status, views.RunnersView{Error: msg})
	}
	if err != nil {
		return err
	}
	return h.runnersPage(c, http.StatusOK, views.RunnersView{NewRunner: r.Name, NewRunnerID: r.ID, Token: token})
}

// AdminRunnerDisable stops a runner's token and fails its runs that have not ended.
func (h *Handlers) AdminRunnerDisable(c echo.Context) error {
	v := viewerOf(c)
	_, err := h.store.DisableRunner(c.Request().Context(), v.account.ID, c.Param("name"), v.member.Subject)
	if msg, status, ok := refusalOf(err); ok {
		return h.runnersPage(c, status, views.RunnersView{Error: msg})
	}
	if err != nil {
		return err
	}
	return h.redirectWithFlash(c, "/admin/runners", "runner-disabled")
}
