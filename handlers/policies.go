package handlers

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models/policy"
	"github.com/countersign/countersign/views"
)

// policyAsksShown is how many asks a policy approved the page lists.
const policyAsksShown = 50

// Policies is a person's auto-approve page: the account's newest policy
// with its countdown, count and revoke form, the asks it approved, the
// windows on now with their revoke buttons, and the auto_approve requests
// that wait for a signature.
func (h *Handlers) Policies(c echo.Context) error {
	return h.policiesPage(c, http.StatusOK, views.PoliciesView{})
}

// policiesPage renders the page over view, which may carry a refusal of
// the revoke form.
func (h *Handlers) policiesPage(c echo.Context, status int, view views.PoliciesView) error {
	ctx := c.Request().Context()
	v := viewerOf(c)
	view.Now, view.IsAdmin = h.store.Now(), v.isAdmin()
	newest, _, err := h.store.PolicyList(ctx, v.account.ID, policy.PolicyFilter{Covers: policy.CoversAccount, PageSize: 1})
	if err != nil {
		return err
	}
	if len(newest) == 1 {
		pv := policyView(newest[0])
		view.Policy = &pv
		approved, err := h.store.PolicyApprovals(ctx, v.account.ID, pv.ID, policyAsksShown)
		if err != nil {
			return err
		}
		for _, a := range approved {
			view.Approved = append(view.Approved, views.PolicyAskRow{ID: a.ApprovalID, Title: a.Title, Kind: a.Kind,
				Requester: a.Requester, Status: string(a.Status), At: a.At})
		}
	}
	windows, _, err := h.store.PolicyList(ctx, v.account.ID, policy.PolicyFilter{Covers: policy.CoversWindow, State: policy.PolicyActive, PageSize: policyAsksShown})
	if err != nil {
		return err
	}
	for _, w := range windows {
		view.Windows = append(view.Windows, policyView(w))
	}
	requests, err := h.store.PendingPolicyRequests(ctx, v.account.ID, policyAsksShown)
	if err != nil {
		return err
	}
	view.Requests = askRows(requests)
	if v.isAdmin() {
		all := views.AdminPoliciesView{State: c.QueryParam("state"), States: policy.PolicyStates, Now: view.Now}
		rows, next, err := h.store.PolicyList(ctx, v.account.ID, policy.PolicyFilter{
			State: all.State, PageSize: adminPoliciesSize, PageToken: c.QueryParam("page"),
		})
		if err != nil {
			var ok bool
			if all.Error, status, ok = refusalOf(err); !ok {
				return err
			}
		}
		all.Next = next
		for _, r := range rows {
			all.Policies = append(all.Policies, policyView(r))
		}
		view.All = &all
	}
	return h.render(c, status, views.Policies(h.page(c, "Auto-approve", "policies"), view))
}

// policyView reads a policy into what the policy screens show.
func policyView(r policy.PolicyRow) views.PolicyView {
	sc := r.ScopeOf()
	var window *views.PolicyWindow
	if r.IsWindow() && len(sc.AskKinds) == 1 {
		window = &views.PolicyWindow{Kind: sc.AskKinds[0], Target: r.TargetOf()}
	}
	return views.PolicyView{
		Window: window,
		ID:     r.ID, ApprovalID: r.ApprovalID, Requester: r.Requester, Device: r.Device,
		Scope:    views.PolicyScope{AskKinds: sc.AskKinds, MaxPriority: json.Number(strconv.Itoa(sc.MaxPriority)), Requesters: sc.Requesters},
		SignedBy: r.SignerSubject, CredentialID: r.CredentialID, SignedAt: r.SignedAt, ExpiresAt: r.ExpiresAt,
		State: r.State(), Why: r.Why, ApprovedCount: r.ApprovedCount, SkippedCount: r.SkippedCount, LastApprovedAt: r.LastApprovedAt,
		RevokedAt: r.RevokedAt, RevokedBy: r.RevokedBy, RevokeNote: r.RevokeNote, Replaces: r.Replaces, ReplacedBy: r.ReplacedBy,
	}
}
