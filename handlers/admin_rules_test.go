package handlers_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/countersign/countersign/ask"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/rules"
)

// postPageForm posts a page's form in b, with its CSRF token, and returns the
// status, the redirect's target and the body.
func postPageForm(t *testing.T, b *apptest.Browser, path string, form url.Values) (int, string, string) {
	t.Helper()
	form.Set("_csrf", b.CSRF)
	req, _ := http.NewRequest(http.MethodPost, b.Origin+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", b.Origin)
	res, err := b.HTTP.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header.Get("Location"), string(body)
}

func ruleChangeAsks(t *testing.T, env *apptest.Env) int64 {
	t.Helper()
	var n int64
	if err := env.Store.DB().Table("approvals").Where("kind = ?", ask.KindRuleChange).Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// section is the part of an HTML page inside the element with data-testid.
func section(body, testid string) string {
	i := strings.Index(body, `data-testid="`+testid+`"`)
	if i < 0 {
		return ""
	}
	rest := body[i:]
	if j := strings.Index(rest, "</section>"); j >= 0 {
		return rest[:j]
	}
	return rest
}

func TestTheRulesPageProposesAChangeThatAppliesOnlyOnceTheQuorumApproves(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		env := apptest.StartWeb(t, db, nil)
		ada := env.Join(env.Account.ID, core.RoleOwner, "ada")
		bob := env.Join(env.Account.ID, core.RoleAdmin, "bob")
		cy := env.Join(env.Account.ID, core.RoleMember, "cy")

		body, _ := pageOf(t, ada, "/admin/rules")
		for _, want := range []string{`data-rule="builtin-production-run"`, `data-testid="builtin"`, "a production run needs two people", `data-testid="rule-form"`} {
			if !strings.Contains(body, want) {
				t.Fatalf("the Rules page lacks %s", want)
			}
		}
		if res, err := cy.HTTP.Get(cy.Origin + "/admin/rules"); err != nil || res.StatusCode == http.StatusOK {
			t.Fatalf("a member opens the Rules page: %v %v", res.StatusCode, err)
		}

		t.Run("a rule that does not read is refused and nothing is filed", func(t *testing.T) {
			status, _, body := postPageForm(t, ada, "/admin/rules", url.Values{"id": {"reviews"}, "count": {"two"}, "pool_kind": {"role"}, "pool_role": {"admins"}})
			if status != http.StatusBadRequest || !strings.Contains(body, "a whole number") || ruleChangeAsks(t, env) != 0 {
				t.Fatalf("count two: %d, %d rule_change asks; want 400 saying a whole number, none filed", status, ruleChangeAsks(t, env))
			}
			// The refusal shows at the field it is about, which says so to a screen reader.
			doc := parseHTML(t, body)
			at := elements(doc, byAttr("id", "rule-count-error"))
			count := elements(doc, byAttr("id", "rule-count"))
			if len(at) != 1 || !strings.Contains(textOf(at[0]), "a whole number") || len(count) != 1 || attrOf(count[0], "aria-invalid") != "true" ||
				!strings.Contains(attrOf(count[0], "aria-describedby"), "rule-count-error") || len(elements(doc, byAttr("data-testid", "refusal"))) != 0 {
				t.Errorf("the refusal of the count is not shown at the count field alone:\n%s", section(body, "rule-form"))
			}
			status, _, _ = postPageForm(t, ada, "/admin/rules", url.Values{"id": {"Bad Id"}, "count": {"1"}, "pool_kind": {"role"}, "pool_role": {"admins"}})
			if status != http.StatusBadRequest || ruleChangeAsks(t, env) != 0 {
				t.Fatalf("a bad id: %d, %d rule_change asks; want 400, none filed", status, ruleChangeAsks(t, env))
			}
			status, _, body = postPageForm(t, ada, "/admin/rules", url.Values{"id": {"reviews"}, "count": {"1"}, "pool_kind": {"role"}, "pool_role": {"admins"},
				"escalate_channel": {"#oncall"}, "escalate_after": {"10m"}})
			if doc := parseHTML(t, body); status != http.StatusBadRequest || ruleChangeAsks(t, env) != 0 ||
				len(elements(doc, byAttr("id", "rule-escalate-channel-error"))) != 1 || !strings.Contains(textOf(elements(doc, byAttr("id", "rule-escalate-channel-error"))[0]), "no shared channel") {
				t.Fatalf("an escalation channel the account lacks: %d, %d rule_change asks; want 400 at the field, none filed", status, ruleChangeAsks(t, env))
			}
		})

		status, to, _ := postPageForm(t, ada, "/admin/rules", url.Values{"id": {"reviews"}, "name": {"reviews need an admin"}, "kinds": {"pull_request"},
			"count": {"1"}, "pool_kind": {"role"}, "pool_role": {"admins"}, "remind_every": {"15m"}})
		if status != http.StatusSeeOther || !strings.HasPrefix(to, "/approvals/") {
			t.Fatalf("propose: %d to %q, want 303 to the ask", status, to)
		}
		id := strings.TrimPrefix(to, "/approvals/")
		if _, err := env.Store.RuleByID(ctx, env.Account.ID, "reviews"); core.CodeOf(err) != core.NotFound {
			t.Fatalf("the proposal applied before anyone signed: %v", err)
		}
		page, _ := pageOf(t, ada, to)
		if !strings.Contains(page, "changing a rule needs two owners or admins") || !strings.Contains(page, "0 of 2 approved") || !strings.Contains(page, "waiting for ada, bob") {
			t.Fatalf("the rule change's page does not show its rule, 0 of 2 and whom it waits for")
		}

		if r := ada.Decide(id, "approve", ""); r.Status != http.StatusOK {
			t.Fatalf("ada signs: %s", r)
		}
		if _, err := env.Store.RuleByID(ctx, env.Account.ID, "reviews"); core.CodeOf(err) != core.NotFound {
			t.Fatalf("one signature applied the change: %v", err)
		}
		page, _ = pageOf(t, ada, to)
		if !strings.Contains(page, "1 of 2 approved (you)") || !strings.Contains(page, "Your approval is in") || !strings.Contains(page, "waiting for bob") {
			t.Fatalf("after ada's signature her page does not say 1 of 2 approved (you), your approval is in, waiting for bob")
		}

		// The inbox: ada signed, so the ask waits for others; bob's signature is awaited.
		inbox, _ := pageOf(t, ada, "/")
		if strings.Contains(section(inbox, "waiting-for-you"), id) || !strings.Contains(section(inbox, "waiting-for-others"), id) ||
			!strings.Contains(section(inbox, "waiting-for-others"), "1 of 2 approved (ada)") {
			t.Errorf("ada's inbox does not list the ask she signed under waiting for others, with its quorum")
		}
		inbox, _ = pageOf(t, bob, "/")
		if !strings.Contains(section(inbox, "waiting-for-you"), id) || strings.Contains(section(inbox, "waiting-for-others"), id) {
			t.Errorf("bob's inbox does not list the ask under waiting for him")
		}

		if r := bob.Decide(id, "approve", ""); r.Status != http.StatusOK {
			t.Fatalf("bob signs: %s", r)
		}
		r, err := env.Store.RuleByID(ctx, env.Account.ID, "reviews")
		if err != nil || r.Count != 1 || r.Pool.Role != rules.PoolAdmins || r.Name != "reviews need an admin" || r.Kinds[0] != ask.KindPullRequest {
			t.Fatalf("the approved change set %+v (%v)", r, err)
		}
		if body, _ := pageOf(t, bob, "/admin/rules"); !strings.Contains(body, `data-rule="reviews"`) {
			t.Fatal("the Rules page does not list the rule once approved")
		}

		// Removing a built-in is a change too; once approved it shows as off.
		status, to, _ = postPageForm(t, bob, "/admin/rules/builtin-roll/remove", url.Values{})
		if status != http.StatusSeeOther || !strings.HasPrefix(to, "/approvals/") {
			t.Fatalf("propose removal: %d to %q", status, to)
		}
		rid := strings.TrimPrefix(to, "/approvals/")
		for _, b := range []*apptest.Browser{bob, ada} {
			if body, _ := pageOf(t, b, "/admin/rules"); strings.Contains(ruleRow(body, "builtin-roll"), `data-testid="rule-off"`) {
				t.Fatal("the roll rule shows as off before the quorum signed")
			}
			if r := b.Decide(rid, "approve", ""); r.Status != http.StatusOK {
				t.Fatalf("sign the removal: %s", r)
			}
		}
		body, _ = pageOf(t, ada, "/admin/rules")
		if row := ruleRow(body, "builtin-roll"); !strings.Contains(row, `data-testid="rule-off"`) || !strings.Contains(row, `data-testid="builtin"`) {
			t.Errorf("the removed built-in is not listed as off: %s", row)
		}
	})
}

// ruleRow is the Rules page's list item of the rule id, "" when not listed.
func ruleRow(body, id string) string {
	i := strings.Index(body, `data-rule="`+id+`"`)
	if i < 0 {
		return ""
	}
	row := body[i:]
	if j := strings.Index(row, "</li>"); j >= 0 {
		row = row[:j]
	}
	return row
}
