package handlers

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/rules"
	"github.com/countersign/countersign/views"
)

// AdminRules lists the account's approval rules, the removed built-ins
// among them, with the form that proposes a change; ?edit=ID fills the form
// with that rule.
func (h *Handlers) AdminRules(c echo.Context) error {
	form := views.RuleForm{Count: "2", PoolKind: rules.PoolRole, PoolRole: rules.PoolAdmins}
	if id := c.QueryParam("edit"); id != "" {
		rules, err := h.store.RulesWithRemoved(c.Request().Context(), viewerOf(c).account.ID)
		if err != nil {
			return err
		}
		for _, r := range rules {
			if r.ID == id {
				form = ruleFormOf(r.ID, r.RuleSpec)
			}
		}
	}
	return h.rulesPage(c, http.StatusOK, views.RulesView{Form: form})
}

func (h *Handlers) rulesPage(c echo.Context, status int, view views.RulesView) error {
	rules, err := h.store.RulesWithRemoved(c.Request().Context(), viewerOf(c).account.ID)
	if err != nil {
		return err
	}
	for _, r := range rules {
		view.Rules = append(view.Rules, views.RuleRow{ID: r.ID, Name: r.Name, Summary: r.Summary(), Builtin: r.Builtin, Removed: r.Removed, By: r.CreatedBy})
	}
	return h.render(c, status, views.AdminRules(h.page(c, "Rules", "admin"), view))
}

// AdminRulePropose files an ask to set the rule the form describes
// (models.Store.ProposeRuleChange): nothing changes until the quorum the
// rules give to rule changes approves it, on the ask's page, where this
// redirects.
func (h *Handlers) AdminRulePropose(c echo.Context) error {
	var f views.RuleForm
	params, err := c.FormParams()
	if err != nil {
		return h.rulesPage(c, http.StatusBadRequest, views.RulesView{Error: "the form could not be read"})
	}
	for field, to := range map[string]*string{"id": &f.ID, "name": &f.Name, "kinds": &f.Kinds, "effects": &f.Effects, "servers": &f.Servers,
		"tools": &f.Tools, "requesters": &f.Requesters, "min_priority": &f.MinPriority, "count": &f.Count, "pool_kind": &f.PoolKind,
		"pool_role": &f.PoolRole, "group": &f.Group, "people": &f.People, "escalate_role": &f.EscalateRole,
		"escalate_after": &f.EscalateAfter, "escalate_channel": &f.EscalateChannel, "remind_every": &f.RemindEvery, "apply_from": &f.ApplyFrom} {
		*to = strings.TrimSpace(params.Get(field))
	}
	spec, err := ruleSpecOf(f)
	var a *asks.Approval
	if err == nil {
		a, err = h.store.ProposeRuleChange(c.Request().Context(), viewerOf(c).member,
			models.RuleChange{Action: models.RuleChangeSet, RuleID: f.ID, Rule: &spec})
	}
	if msg, status, ok := refusalOf(err); ok {
		return h.rulesPage(c, status, views.RulesView{Error: msg, ErrorField: core.FieldOf(err), Form: f})
	}
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/approvals/"+a.ID)
}

// AdminRuleRemove files an ask to remove the rule (a built-in is switched
// off), for the quorum to approve.
func (h *Handlers) AdminRuleRemove(c echo.Context) error {
	a, err := h.store.ProposeRuleChange(c.Request().Context(), viewerOf(c).member,
		models.RuleChange{Action: models.RuleChangeRemove, RuleID: c.Param("id")})
	if msg, status, ok := refusalOf(err); ok {
		return h.rulesPage(c, status, views.RulesView{Error: msg})
	}
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/approvals/"+a.ID)
}

// ruleSpecOf reads the form into a rule; models.CheckRule checks the rest.
func ruleSpecOf(f views.RuleForm) (rules.RuleSpec, error) {
	spec := rules.RuleSpec{Name: f.Name, Kinds: views.SplitList(f.Kinds), Effects: views.SplitList(f.Effects),
		Servers: views.SplitList(f.Servers), Tools: views.SplitList(f.Tools), Requesters: views.SplitList(f.Requesters),
		Pool: rules.Pool{Kind: f.PoolKind, Role: f.PoolRole}}
	num := func(field, v string, to *int) error {
		if v == "" {
			return nil
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return core.Invalid(field, "a whole number, not %q", v)
		}
		*to = n
		return nil
	}
	dur := func(field, v string, to *rules.Duration) error {
		if v == "" {
			return nil
		}
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return core.Invalid(field, "a duration like 10m or 1h, not %q", v)
		}
		*to = rules.Duration(d)
		return nil
	}
	if f.Count == "" {
		return spec, core.Invalid("count", "how many people must approve: 1 to %d", rules.MaxRuleCount)
	}
	for _, err := range []error{num("count", f.Count, &spec.Count), num("min_priority", f.MinPriority, &spec.MinPriority),
		num("apply_from", f.ApplyFrom, &spec.ApplyFrom), dur("escalate_after", f.EscalateAfter, &spec.EscalateAfter),
		dur("remind_every", f.RemindEvery, &spec.RemindEvery)} {
		if err != nil {
			return spec, err
		}
	}
	if f.PoolKind == rules.PoolGroup {
		spec.Pool.Role, spec.Pool.Group, spec.Pool.People = "", f.Group, views.SplitList(f.People)
	}
	if f.EscalateRole != "" {
		spec.EscalateTo = rules.Pool{Kind: rules.PoolRole, Role: f.EscalateRole}
	}
	spec.EscalateChannel = f.EscalateChannel
	return spec, nil
}

// ruleFormOf fills the form with a rule.
func ruleFormOf(id string, r rules.RuleSpec) views.RuleForm {
	f := views.RuleForm{ID: id, Name: r.Name, Kinds: strings.Join(r.Kinds, ", "), Effects: strings.Join(r.Effects, ", "),
		Servers: strings.Join(r.Servers, ", "), Tools: strings.Join(r.Tools, ", "), Requesters: strings.Join(r.Requesters, ", "),
		Count: strconv.Itoa(r.Count), PoolKind: r.Pool.Kind, PoolRole: r.Pool.Role, Group: r.Pool.Group, People: strings.Join(r.Pool.People, ", ")}
	if r.MinPriority > 0 {
		f.MinPriority = strconv.Itoa(r.MinPriority)
	}
	if r.ApplyFrom > 0 {
		f.ApplyFrom = strconv.Itoa(r.ApplyFrom)
	}
	if r.EscalateTo.Kind == rules.PoolRole {
		f.EscalateRole = r.EscalateTo.Role
	}
	if r.EscalateAfter > 0 {
		f.EscalateAfter = time.Duration(r.EscalateAfter).String()
	}
	f.EscalateChannel = r.EscalateChannel
	if r.RemindEvery > 0 {
		f.RemindEvery = time.Duration(r.RemindEvery).String()
	}
	return f
}
