package handlers

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
	"github.com/countersign/countersign/views"
)

// AdminAgents lists the account's agents.
func (h *Handlers) AdminAgents(c echo.Context) error {
	return h.agentsPage(c, http.StatusOK, views.AgentsView{})
}

// agentsPage renders the agents page over view, which may carry a new
// agent's token or a refusal.
func (h *Handlers) agentsPage(c echo.Context, status int, view views.AgentsView) error {
	ctx, accountID := c.Request().Context(), viewerOf(c).account.ID
	agents, err := h.store.ListAgents(ctx, accountID)
	if err != nil {
		return err
	}
	members, err := h.store.Members(ctx, accountID)
	if err != nil {
		return err
	}
	subjects := map[string]string{}
	for _, m := range members {
		subjects[m.ID] = m.Subject
		view.Members = append(view.Members, m.Subject)
	}
	view.Scopes, view.MCPURL = people.AllScopes, h.baseURL+"/mcp"
	for _, a := range agents {
		row := views.AgentRow{Name: a.Name, Subject: a.Subject, Scopes: a.ScopeList(),
			Disabled: a.Disabled, DisabledReason: a.DisabledReason, CreatedAt: a.CreatedAt}
		if a.ForPersonID != nil {
			row.For = subjects[*a.ForPersonID]
		}
		view.Agents = append(view.Agents, row)
	}
	return h.render(c, status, views.AdminAgents(h.page(c, "Agents", "admin"), view))
}

// AdminAgentCreate makes an agent with the scopes ticked and shows its
// token this once; only its hash is kept.
func (h *Handlers) AdminAgentCreate(c echo.Context) error {
	form, err := c.FormParams()
	if err != nil {
		return core.Invalid("", "the form could not be read")
	}
	name := strings.TrimSpace(form.Get("name"))
	forSubject := strings.TrimSpace(form.Get("for"))
	agent, token, err := h.store.CreateAgentFor(c.Request().Context(), viewerOf(c).account.ID, name, form["scopes"], forSubject)
	if msg, status, ok := refusalOf(err); ok {
		return h.agentsPage(c, status, views.AgentsView{Error: msg, ErrorField: core.FieldOf(err)})
	}
	if err != nil {
		return err
	}
	return h.agentsPage(c, http.StatusOK, views.AgentsView{NewAgent: agent.Name, Token: token})
}

// AdminAgentDisable stops an agent's token and cancels its open asks.
func (h *Handlers) AdminAgentDisable(c echo.Context) error {
	v := viewerOf(c)
	_, err := h.store.DisableAgent(c.Request().Context(), v.account.ID, c.Param("name"), "disabled by "+v.member.Subject, v.member.Subject)
	if msg, status, ok := refusalOf(err); ok {
		return h.agentsPage(c, status, views.AgentsView{Error: msg})
	}
	if err != nil {
		return err
	}
	return h.redirectWithFlash(c, "/admin/agents", "agent-disabled")
}

// AdminAgentDelete retires an agent for good; its asks keep their requester.
func (h *Handlers) AdminAgentDelete(c echo.Context) error {
	v := viewerOf(c)
	err := h.store.DeleteAgent(c.Request().Context(), v.account.ID, c.Param("name"), v.member.Subject)
	if msg, status, ok := refusalOf(err); ok {
		return h.agentsPage(c, status, views.AgentsView{Error: msg})
	}
	if err != nil {
		return err
	}
	return h.redirectWithFlash(c, "/admin/agents", "agent-deleted")
}
