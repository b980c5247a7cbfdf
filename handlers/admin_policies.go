package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/views"
)

// adminPoliciesSize is how many policies one page of the admin list shows.
const adminPoliciesSize = 50

// AdminPolicies lists every auto-approve policy of the account, newest
// first, filtered by state: who signed it and when, its scope, its end, its
// counts, and its revocation or replacement.
func (h *Handlers) AdminPolicies(c echo.Context) error {
	view := views.AdminPoliciesView{State: c.QueryParam("state"), States: models.PolicyStates, Now: h.store.Now()}
	rows, next, err := h.store.PolicyList(c.Request().Context(), viewerOf(c).account.ID, models.PolicyFilter{
		State: view.State, PageSize: adminPoliciesSize, PageToken: c.QueryParam("page"),
	})
	status := http.StatusOK
	if err != nil {
		var ok bool
		if view.Error, status, ok = refusalOf(err); !ok {
			return err
		}
	}
	view.Next = next
	for _, r := range rows {
		view.Policies = append(view.Policies, policyView(r))
	}
	return h.render(c, status, views.AdminPolicies(h.page(c, "Auto-approve policies", "admin"), view))
}
