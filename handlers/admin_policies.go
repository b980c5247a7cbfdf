package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// adminPoliciesSize is how many policies one page of the list of every
// policy shows.
const adminPoliciesSize = 50

// AdminPolicies is the Policies page: there is one, for everyone, and an
// owner or admin finds every policy of the account on it. Old links keep
// their filter.
func (h *Handlers) AdminPolicies(c echo.Context) error {
	to := "/policies"
	if q := c.QueryString(); q != "" {
		to += "?" + q
	}
	return c.Redirect(http.StatusSeeOther, localPath(to))
}
