package handlers

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
	"github.com/countersign/countersign/views"
)

// AdminIndex is /admin: the admin pages, each with what it is for.
func (h *Handlers) AdminIndex(c echo.Context) error {
	return h.render(c, http.StatusOK, views.AdminIndex(h.page(c, "Admin", "admin")))
}

// AdminMembers lists the account's members and invites.
func (h *Handlers) AdminMembers(c echo.Context) error {
	return h.membersPage(c, http.StatusOK, views.MembersView{})
}

// membersPage renders the members page over view, which may carry a new
// invite's URL or a refusal.
func (h *Handlers) membersPage(c echo.Context, status int, view views.MembersView) error {
	ctx := c.Request().Context()
	v := viewerOf(c)
	members, err := h.store.Members(ctx, v.account.ID)
	if err != nil {
		return err
	}
	invites, err := h.store.Invites(ctx, v.account.ID)
	if err != nil {
		return err
	}
	view.Now = h.store.Now()
	view.Roles = []string{string(core.RoleOwner), string(core.RoleAdmin), string(core.RoleMember)}
	view.InviteRoles = view.Roles
	if v.member.Role != core.RoleOwner {
		view.InviteRoles = view.Roles[1:]
	}
	for _, m := range members {
		view.Members = append(view.Members, views.MemberRow{PersonID: m.ID, Subject: m.Subject, DisplayName: m.DisplayName,
			Role: string(m.Role), Self: m.ID == v.member.ID})
	}
	for _, i := range invites {
		view.Invites = append(view.Invites, views.InviteRow{ID: i.TokenHash, AddRole: i.Kind == people.InviteAddRole, Role: string(i.Role), Subject: i.Subject, CreatedBy: i.CreatedBy,
			CreatedAt: i.CreatedAt, ExpiresAt: i.ExpiresAt, UsedAt: i.UsedAt, UsedBy: i.UsedBy, HeldBy: heldBy(i)})
	}
	return h.render(c, status, views.AdminMembers(h.page(c, "Members", "admin"), view))
}

// AdminInviteCreate makes a one-time invite and shows its URL, once: for a
// new person, or (kind add_role) a role for an existing person that only
// they can accept. The store refuses a role above the admin's own.
func (h *Handlers) AdminInviteCreate(c echo.Context) error {
	v := viewerOf(c)
	kind, err := people.ParseInviteKind(c.FormValue("kind"))
	var role core.Role
	if err == nil {
		role, err = core.ParseRole(c.FormValue("role"))
	}
	var (
		token string
		inv   *people.Invite
	)
	if err == nil {
		token, inv, err = h.store.CreateInvite(c.Request().Context(), people.NewInvite{AccountID: v.account.ID, Kind: kind, Role: role,
			Subject: strings.TrimSpace(c.FormValue("subject")), By: v.member.AsInviter()})
	}
	if msg, status, ok := refusalOf(err); ok {
		return h.membersPage(c, status, views.MembersView{Error: msg, ErrorField: core.FieldOf(err)})
	}
	if err != nil {
		return err
	}
	return h.membersPage(c, http.StatusOK, views.MembersView{InviteURL: h.baseURL + "/invite/" + token, InviteAddRole: kind == people.InviteAddRole,
		InviteHeldBy: inv.ApprovalID})
}

// AdminMemberRole changes a member's role; the account keeps an owner.
// Where a rule covers member changes, it files the ask instead
// (models.Store.ChangeRole) and sends the browser to its page: nothing
// changes until the rule's people have signed it.
func (h *Handlers) AdminMemberRole(c echo.Context) error {
	v := viewerOf(c)
	role, err := core.ParseRole(c.FormValue("role"))
	if err == nil {
		err = h.mayManage(c, c.Param("person"), role)
	}
	var a *asks.Approval
	if err == nil {
		a, err = h.store.ChangeRole(c.Request().Context(), v.member, c.Param("person"), role)
	}
	if msg, status, ok := refusalOf(err); ok {
		return h.membersPage(c, status, views.MembersView{Error: msg})
	}
	if err != nil {
		return err
	}
	if a != nil {
		return c.Redirect(http.StatusSeeOther, "/approvals/"+a.ID)
	}
	return h.redirectWithFlash(c, "/admin/members", "member-updated")
}

// AdminMemberRemove takes a person out of the account; the last owner
// stays. Where a rule covers member changes, it files the ask instead
// (models.Store.RemoveMemberAs) and sends the browser to its page.
func (h *Handlers) AdminMemberRemove(c echo.Context) error {
	v := viewerOf(c)
	err := h.mayManage(c, c.Param("person"), "")
	var a *asks.Approval
	if err == nil {
		a, err = h.store.RemoveMemberAs(c.Request().Context(), v.member, c.Param("person"))
	}
	if msg, status, ok := refusalOf(err); ok {
		return h.membersPage(c, status, views.MembersView{Error: msg})
	}
	if err != nil {
		return err
	}
	if a != nil {
		return c.Redirect(http.StatusSeeOther, "/approvals/"+a.ID)
	}
	if c.Param("person") == v.member.ID {
		h.clearSession(c)
		return c.Redirect(http.StatusSeeOther, "/signin")
	}
	return h.redirectWithFlash(c, "/admin/members", "member-removed")
}

// mayManage refuses an admin who is not an owner when the change touches an
// owner or makes one: only owners manage owners.
func (h *Handlers) mayManage(c echo.Context, personID string, role core.Role) error {
	v := viewerOf(c)
	if v.member.Role == core.RoleOwner {
		return nil
	}
	target, err := h.store.MemberByID(c.Request().Context(), v.account.ID, personID)
	if err != nil {
		return err
	}
	if target.Role == core.RoleOwner || role == core.RoleOwner {
		return core.Refuse(core.PermissionDenied, "role", "only an owner can change or remove an owner, or make one")
	}
	return nil
}

// heldBy is the ask an invite waits for, "" when it is not held.
func heldBy(i people.Invite) string {
	if !i.Held {
		return ""
	}
	return i.ApprovalID
}

// AdminInviteRevoke ends an unused invite now: its link stops working. The
// store refuses a used or ended invite, and one whose role is above the
// admin's own; the revocation goes on the audit chain.
func (h *Handlers) AdminInviteRevoke(c echo.Context) error {
	v := viewerOf(c)
	err := h.store.RevokeInvite(c.Request().Context(), v.account.ID, c.Param("id"), v.member.AsInviter())
	if msg, status, ok := refusalOf(err); ok {
		return h.membersPage(c, status, views.MembersView{Error: msg})
	}
	if err != nil {
		return err
	}
	return h.redirectWithFlash(c, "/admin/members", "invite-revoked")
}
