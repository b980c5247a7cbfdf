package handlers

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/oidc"
	"github.com/countersign/countersign/oauth"
	"github.com/countersign/countersign/views"
)

// AdminCIBAClients lists the account's CIBA clients and the form to
// register one.
func (h *Handlers) AdminCIBAClients(c echo.Context) error {
	return h.cibaClientsPage(c, http.StatusOK, views.CIBAClientsView{})
}

// cibaClientsPage renders Admin → CIBA clients over view, which may carry a
// refusal with the form to fill again, or a new client and its secret.
func (h *Handlers) cibaClientsPage(c echo.Context, status int, view views.CIBAClientsView) error {
	ctx, accountID := c.Request().Context(), viewerOf(c).account.ID
	members, err := h.store.Members(ctx, accountID)
	if err != nil {
		return err
	}
	subjects := map[string]string{}
	for _, m := range members {
		subjects[m.ID] = m.Subject
		view.People = append(view.People, views.CIBAPersonChoice{ID: m.ID, Subject: m.Subject, Name: m.DisplayName})
	}
	clients, err := h.store.CIBAClients(ctx, accountID)
	if err != nil {
		return err
	}
	agents, err := h.store.ListAgents(ctx, accountID)
	if err != nil {
		return err
	}
	agentNames := map[string]string{}
	for _, a := range agents {
		agentNames[a.ID] = a.Name
	}
	for _, cl := range clients {
		row, err := h.cibaClientRow(c, cl, subjects, agentNames)
		if err != nil {
			return err
		}
		view.Clients = append(view.Clients, row)
		if view.NewClient != nil && view.NewClient.ID == cl.ID {
			view.NewClient = &row
		}
	}
	view.Discovery = h.oauth.Issuer() + oauth.OpenIDConfigurationPath
	return h.render(c, status, views.AdminCIBAClients(h.page(c, "CIBA clients", "admin"), view))
}

func (h *Handlers) cibaClientRow(c echo.Context, cl oidc.Client, subjects, agentNames map[string]string) (views.CIBAClientRow, error) {
	ids, err := h.store.CIBAClientPeople(c.Request().Context(), cl.ID)
	if err != nil {
		return views.CIBAClientRow{}, err
	}
	row := views.CIBAClientRow{ID: cl.ID, Name: cl.Name, Method: cl.AuthMethod, Mode: cl.DeliveryMode, NotificationEndpoint: cl.NotificationEndpoint,
		Agent: agentNames[cl.AgentID], CreatedBy: cl.CreatedBy, CreatedAt: cl.CreatedAt, RevokedAt: cl.RevokedAt}
	for _, id := range ids {
		who := subjects[id]
		if who == "" {
			who = "a former member"
		}
		row.People = append(row.People, who)
	}
	return row, nil
}

// AdminCIBAClientRegister registers a CIBA client with the people it may
// ask; a client_secret_basic client's secret is shown this once, and only
// its SHA-256 is kept.
func (h *Handlers) AdminCIBAClientRegister(c echo.Context) error {
	form, err := c.FormParams()
	if err != nil {
		return h.cibaClientsPage(c, http.StatusBadRequest, views.CIBAClientsView{Error: "the form could not be read"})
	}
	f := views.CIBAClientForm{Name: strings.TrimSpace(form.Get("name")), Method: form.Get("method"), JWKS: form.Get("jwks"),
		Mode: form.Get("mode"), NotificationEndpoint: strings.TrimSpace(form.Get("notification_endpoint")), PersonIDs: form["person"]}
	in := oauth.CIBAClientRegistration{AccountID: viewerOf(c).account.ID, Name: f.Name, AuthMethod: f.Method, DeliveryMode: f.Mode,
		PersonIDs: f.PersonIDs, CreatedBy: viewerOf(c).member.Subject}
	// The form shows the JWK Set and the endpoint whatever the method and
	// mode chosen: each is taken only where it applies.
	if f.Method == oidc.AuthPrivateKeyJWT {
		in.JWKS = f.JWKS
	}
	if f.Mode == oidc.DeliveryPing {
		in.NotificationEndpoint = f.NotificationEndpoint
	}
	cl, secret, err := h.oauth.RegisterCIBAClient(c.Request().Context(), in)
	if msg, status, ok := refusalOf(err); ok {
		return h.cibaClientsPage(c, status, views.CIBAClientsView{Error: msg, ErrorField: core.FieldOf(err), Form: f})
	}
	if err != nil {
		return err
	}
	return h.cibaClientsPage(c, http.StatusOK, views.CIBAClientsView{NewClient: &views.CIBAClientRow{ID: cl.ID}, NewSecret: secret})
}

// AdminCIBAClientRevoke revokes a CIBA client: it can no longer
// authenticate, its agent is disabled and its open asks are cancelled.
func (h *Handlers) AdminCIBAClientRevoke(c echo.Context) error {
	v := viewerOf(c)
	err := h.store.RevokeCIBAClient(c.Request().Context(), v.account.ID, c.Param("id"), v.member.Subject)
	if msg, status, ok := refusalOf(err); ok {
		return h.cibaClientsPage(c, status, views.CIBAClientsView{Error: msg})
	}
	if err != nil {
		return err
	}
	return h.redirectWithFlash(c, "/admin/ciba-clients", "ciba-client-revoked")
}
