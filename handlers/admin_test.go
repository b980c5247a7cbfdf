package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
	"github.com/countersign/countersign/models/rules"
)

func TestAdminPagesRefuseAMember(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		f := newFixture(t, db)
		b := signIn(t, f.env, f.member)
		for _, path := range []string{"/admin", "/admin/members", "/admin/agents", "/admin/channels", "/admin/audit"} {
			t.Run("GET "+path+" is refused", func(t *testing.T) {
				if res, _ := b.get(path); res.StatusCode != http.StatusForbidden {
					t.Fatalf("GET %s as a member: %d", path, res.StatusCode)
				}
			})
		}
		t.Run("POST /admin/agents is refused and makes nothing", func(t *testing.T) {
			res, _ := b.post("/admin/agents", url.Values{"name": {"sneaky"}, "scopes": {people.ScopeMCPRead}}, true)
			if res.StatusCode != http.StatusForbidden {
				t.Fatalf("POST as a member: %d", res.StatusCode)
			}
			if _, err := f.env.Store.AgentByName(context.Background(), f.env.Account.ID, "sneaky"); core.CodeOf(err) != core.NotFound {
				t.Fatalf("the agent was made: %v", err)
			}
		})
		t.Run("the nav has no admin link", func(t *testing.T) {
			_, body := b.get("/")
			if strings.Contains(body, `href="/admin"`) || strings.Contains(body, `href="/admin/members"`) {
				t.Fatalf("a member's nav links to the admin pages")
			}
		})
	})
}

func TestAPostWithoutTheCSRFTokenIsRefusedAndChangesNothing(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		f := newFixture(t, db)
		ctx := context.Background()
		if err := apptest.SeedDeviceKey(ctx, f.env.Store, f.owner.ID, people.DeviceKey{ID: "cred-1", Name: "iPhone", Credential: "{}", PublicKey: "AQ"}); err != nil {
			t.Fatal(err)
		}
		b := signIn(t, f.env, f.owner)
		cases := []struct {
			name      string
			path      string
			form      url.Values
			unchanged func() error
		}{
			{"making an agent", "/admin/agents", url.Values{"name": {"csrf-bot"}, "scopes": {people.ScopeMCPRead}}, func() error {
				if _, err := f.env.Store.AgentByName(ctx, f.env.Account.ID, "csrf-bot"); core.CodeOf(err) != core.NotFound {
					return fmt.Errorf("the agent exists: %v", err)
				}
				return nil
			}},
			{"disabling an agent", "/admin/agents/bot/disable", nil, func() error {
				if a, err := f.env.Store.AgentByName(ctx, f.env.Account.ID, "bot"); err != nil || a.Disabled {
					return fmt.Errorf("the agent was disabled: %v", err)
				}
				return nil
			}},
			{"changing a role", "/admin/members/" + f.member.ID + "/role", url.Values{"role": {"admin"}}, func() error {
				if m, err := f.env.Store.MemberByID(ctx, f.env.Account.ID, f.member.ID); err != nil || m.Role != core.RoleMember {
					return fmt.Errorf("the role changed: %v", err)
				}
				return nil
			}},
			{"making an invite", "/admin/invites", url.Values{"role": {"member"}}, func() error {
				if inv, err := f.env.Store.Invites(ctx, f.env.Account.ID); err != nil || len(inv) != 0 {
					return fmt.Errorf("%d invites made: %v", len(inv), err)
				}
				return nil
			}},
			{"renaming a passkey", "/devices/cred-1/rename", url.Values{"name": {"Stolen"}}, func() error {
				if k, err := f.env.Store.DeviceKeyByID(ctx, "cred-1"); err != nil || k.Name != "iPhone" {
					return fmt.Errorf("the passkey was renamed: %v", err)
				}
				return nil
			}},
			{"signing out", "/signout", nil, func() error {
				if res, _ := b.get("/"); res.StatusCode != http.StatusOK {
					return fmt.Errorf("signed out: GET / answers %d", res.StatusCode)
				}
				return nil
			}},
		}
		for _, tc := range cases {
			t.Run(tc.name+" without the token is refused", func(t *testing.T) {
				res, _ := b.post(tc.path, tc.form, false)
				if res.StatusCode != http.StatusForbidden {
					t.Fatalf("POST %s without CSRF: %d", tc.path, res.StatusCode)
				}
				if err := tc.unchanged(); err != nil {
					t.Fatal(err)
				}
			})
			t.Run(tc.name+" with a wrong token is refused", func(t *testing.T) {
				form := url.Values{"_csrf": {strings.Repeat("x", 43)}}
				for k, v := range tc.form {
					form[k] = v
				}
				res, _ := b.post(tc.path, form, false)
				if res.StatusCode != http.StatusForbidden {
					t.Fatalf("POST %s with a wrong CSRF token: %d", tc.path, res.StatusCode)
				}
				if err := tc.unchanged(); err != nil {
					t.Fatal(err)
				}
			})
		}
	})
}

func TestMakingAnAgentShowsItsTokenOnceAndKeepsOnlyItsHash(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		f := newFixture(t, db)
		ctx := context.Background()
		b := signIn(t, f.env, f.admin)
		res, body := b.post("/admin/agents", url.Values{"name": {"deploy-bot"}, "scopes": {people.ScopeMCPRead, people.ScopeApprovalsRead}}, true)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("make agent: %d\n%s", res.StatusCode, body)
		}
		secret := elements(parseHTML(t, body), byAttr("data-testid", "agent-token"))
		if len(secret) != 1 || attrOf(secret[0], "class") != "secret" {
			t.Fatalf("no token in a .secret box")
		}
		token := textOf(secret[0])
		if !strings.HasPrefix(token, people.TokenPrefix) {
			t.Fatalf("token %q does not start with %s", token, people.TokenPrefix)
		}
		if !strings.Contains(body, "will not be shown again") {
			t.Fatalf("the page does not say the token is shown once")
		}
		t.Run("the token comes with Copy and the configuration of the common MCP hosts", func(t *testing.T) {
			doc := parseHTML(t, body)
			if len(elements(doc, byAttr("data-copy", "agent-token"))) != 1 {
				t.Errorf("the token has no Copy button")
			}
			mcpURL := f.env.App.Config.BaseURL + "/mcp"
			text := func(id string) string {
				found := elements(doc, byAttr("id", id))
				if len(found) != 1 || len(elements(doc, byAttr("data-copy", id))) != 1 {
					t.Fatalf("no %s with a Copy button", id)
				}
				return textOf(found[0])
			}
			if got, want := text("config-claude-code"), "claude mcp add --transport http countersign "+mcpURL+" --header 'Authorization: Bearer "+token+"'"; got != want {
				t.Errorf("the Claude Code command is %q, want %q", got, want)
			}
			var direct struct {
				MCPServers map[string]struct {
					URL     string            `json:"url"`
					Headers map[string]string `json:"headers"`
				} `json:"mcpServers"`
			}
			if err := json.Unmarshal([]byte(text("config-streamable-http")), &direct); err != nil ||
				direct.MCPServers["countersign"].URL != mcpURL || direct.MCPServers["countersign"].Headers["Authorization"] != "Bearer "+token {
				t.Errorf("the streamable HTTP mcpServers entry reads %+v (%v), want the URL and the bearer header", direct, err)
			}
			var remote struct {
				MCPServers map[string]struct {
					Command string            `json:"command"`
					Args    []string          `json:"args"`
					Env     map[string]string `json:"env"`
				} `json:"mcpServers"`
			}
			if err := json.Unmarshal([]byte(text("config-mcp-remote")), &remote); err != nil {
				t.Fatalf("the mcp-remote entry is not JSON: %v", err)
			}
			if c := remote.MCPServers["countersign"]; c.Command != "npx" || !slices.Contains(c.Args, "mcp-remote") || !slices.Contains(c.Args, mcpURL) ||
				!slices.Contains(c.Args, "Authorization:${COUNTERSIGN_AUTH}") || c.Env["COUNTERSIGN_AUTH"] != "Bearer "+token {
				t.Errorf("the mcp-remote entry reads %+v, want npx mcp-remote with the URL and the header from its env", c)
			}
		})
		agent, err := f.env.Store.AgentByName(ctx, f.env.Account.ID, "deploy-bot")
		if err != nil {
			t.Fatal(err)
		}
		if agent.TokenHash != core.HashToken(token) || agent.Scopes != people.ScopeMCPRead+" "+people.ScopeApprovalsRead || agent.Subject != "agent:deploy-bot" || agent.Disabled {
			t.Fatalf("stored agent = %+v", agent)
		}
		var stored int64
		if err := f.env.Store.DB().Table("agents").Where("token_hash = ? OR scopes LIKE ? OR name LIKE ?", token, "%"+token+"%", "%"+token+"%").Count(&stored).Error; err != nil || stored != 0 {
			t.Fatalf("the token itself is stored (%d rows): %v", stored, err)
		}
		_, again := b.get("/admin/agents")
		if strings.Contains(again, token) {
			t.Fatalf("the agents page shows the token again")
		}
		if !strings.Contains(again, "deploy-bot") {
			t.Fatalf("the agents page does not list the new agent")
		}
		c := f.env.Connect(token)
		if out := c.OK("approvals_list", map[string]any{}); out == nil {
			t.Fatalf("the new token does not list approvals")
		}

		t.Run("an agent made for a member names them, and a stranger is refused", func(t *testing.T) {
			res, body := b.post("/admin/agents", url.Values{"name": {"members-bot"}, "scopes": {people.ScopeMCPRead}, "for": {f.member.Subject}}, true)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("make an agent for %s: %d\n%s", f.member.Subject, res.StatusCode, body)
			}
			agent, err := f.env.Store.AgentByName(ctx, f.env.Account.ID, "members-bot")
			if err != nil || agent.ForPersonID == nil || *agent.ForPersonID != f.member.ID {
				t.Fatalf("members-bot acts for %v (%v), want %s", agent.ForPersonID, err, f.member.ID)
			}
			shown := elements(parseHTML(t, body), byAttr("data-testid", "agent-for"))
			if len(shown) != 1 || !strings.Contains(textOf(shown[0]), "Acts for "+f.member.Subject) {
				t.Fatalf("the page names %d agents' persons, want members-bot's %s", len(shown), f.member.Subject)
			}
			res, body = b.post("/admin/agents", url.Values{"name": {"strangers-bot"}, "scopes": {people.ScopeMCPRead}, "for": {"stranger"}}, true)
			if res.StatusCode != http.StatusNotFound || !strings.Contains(body, "is a member of this account") {
				t.Fatalf("an agent for a stranger: %d", res.StatusCode)
			}
			if _, err := f.env.Store.AgentByName(ctx, f.env.Account.ID, "strangers-bot"); core.CodeOf(err) != core.NotFound {
				t.Fatalf("the refused agent was made: %v", err)
			}
		})

		t.Run("a refused name shows the refusal on the page", func(t *testing.T) {
			res, body := b.post("/admin/agents", url.Values{"name": {"deploy-bot"}, "scopes": {people.ScopeMCPRead}}, true)
			if res.StatusCode != http.StatusConflict || !strings.Contains(body, "exists in this account") {
				t.Fatalf("a second deploy-bot: %d", res.StatusCode)
			}
			doc := parseHTML(t, body)
			if len(elements(doc, byAttr("data-testid", "agent-token"))) != 0 {
				t.Fatalf("a refused agent shows a token")
			}
			at, name := elements(doc, byAttr("id", "agent-name-error")), elements(doc, byAttr("id", "agent-name"))
			if len(at) != 1 || !strings.Contains(textOf(at[0]), "exists in this account") || len(name) != 1 || attrOf(name[0], "aria-invalid") != "true" {
				t.Errorf("the refusal of the name is not shown at the name field")
			}
		})
	})
}

func TestDisablingAndDeletingAnAgent(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		f := newFixture(t, db)
		ctx := context.Background()
		b := signIn(t, f.env, f.owner)
		open := f.ask(t, "Open", "bob")

		res, _ := b.post("/admin/agents/bot/disable", nil, true)
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/admin/agents" {
			t.Fatalf("disable: %d %s", res.StatusCode, res.Header.Get("Location"))
		}
		agent, err := f.env.Store.AgentByName(ctx, f.env.Account.ID, "bot")
		if err != nil || !agent.Disabled || agent.DisabledReason != "disabled by ada" {
			t.Fatalf("after disable: %+v %v", agent, err)
		}
		if a, _ := f.env.Store.GetApproval(ctx, f.env.Account.ID, open.ID); a.Status != asks.StatusCancelled {
			t.Fatalf("its open ask is %s, want cancelled", a.Status)
		}
		_, body := b.get("/admin/agents")
		reason := elements(parseHTML(t, body), byAttr("data-testid", "disabled-reason"))
		if len(reason) != 1 || textOf(reason[0]) != "disabled by ada" {
			t.Fatalf("the page does not show why the agent is disabled")
		}

		other, otherToken := f.env.Agent(f.env.Account.ID, "other-bot")
		otherAsk := fileAsk(t, f.env, other, "Other open", "bob")
		res, _ = b.post("/admin/agents/other-bot/delete", nil, true)
		if res.StatusCode != http.StatusSeeOther {
			t.Fatalf("delete: %d", res.StatusCode)
		}
		if _, err := f.env.Store.AgentByToken(ctx, otherToken); core.CodeOf(err) != core.NotFound {
			t.Fatalf("the deleted agent's token still finds it: %v", err)
		}
		agents, err := f.env.Store.ListAgents(ctx, f.env.Account.ID)
		if err != nil || len(agents) != 1 || agents[0].Name != "bot" {
			t.Fatalf("agents after delete = %v %v", agents, err)
		}
		a, err := f.env.Store.GetApproval(ctx, f.env.Account.ID, otherAsk.ID)
		if err != nil || a.Status != asks.StatusCancelled || a.RequesterSubject != "agent:other-bot" || a.RequesterID != other.ID {
			t.Fatalf("the deleted agent's ask = %+v %v", a, err)
		}
		_, body = b.get("/admin/agents")
		if len(elements(parseHTML(t, body), byAttr("data-agent", "other-bot"))) != 0 {
			t.Fatalf("the agents page lists a deleted agent")
		}
		if res, _ := b.post("/admin/agents/nobody/delete", nil, true); res.StatusCode != http.StatusNotFound {
			t.Fatalf("deleting an unknown agent: %d", res.StatusCode)
		}
	})
}

func TestMembersAndInvites(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		f := newFixture(t, db)
		ctx := context.Background()
		// Here the changes are made at once: the rule that asks two people
		// for them is off (TestWhoDecidesIsChangedOnlyByTwoPeople has it on).
		if err := f.env.Store.RemoveRule(ctx, f.env.Account.ID, rules.RuleMemberChange, "cli:test"); err != nil {
			t.Fatal(err)
		}
		b := signIn(t, f.env, f.owner)

		res, body := b.post("/admin/invites", url.Values{"role": {"member"}, "subject": {"dee"}}, true)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("invite: %d", res.StatusCode)
		}
		box := elements(parseHTML(t, body), byAttr("data-testid", "invite-url"))
		if len(box) != 1 || attrOf(box[0], "class") != "secret" {
			t.Fatalf("no invite URL in a .secret box")
		}
		prefix := f.env.App.Config.BaseURL + "/invite/"
		link := textOf(box[0])
		if !strings.HasPrefix(link, prefix) {
			t.Fatalf("invite URL %q does not start with %s", link, prefix)
		}
		inv, err := f.env.Store.InviteByToken(ctx, strings.TrimPrefix(link, prefix))
		if err != nil || inv.Role != core.RoleMember || inv.Subject != "dee" || inv.CreatedBy != "ada" || inv.AccountID != f.env.Account.ID {
			t.Fatalf("invite = %+v %v", inv, err)
		}
		_, page := b.get("/admin/members")
		if strings.Contains(page, link) {
			t.Fatalf("the members page shows the invite URL again")
		}
		if rows := elements(parseHTML(t, page), byAttr("data-invite-state", "pending")); len(rows) != 1 || !strings.Contains(textOf(rows[0]), "dee") {
			t.Fatalf("the pending invite is not listed")
		}

		cases := []struct {
			name   string
			as     *people.Member
			path   string
			form   url.Values
			status int
			check  func() bool
		}{
			{"an owner makes a member an admin", f.owner, "/admin/members/" + f.member.ID + "/role", url.Values{"role": {"admin"}}, http.StatusSeeOther,
				func() bool {
					m, _ := f.env.Store.MemberByID(ctx, f.env.Account.ID, f.member.ID)
					return m.Role == core.RoleAdmin
				}},
			{"the last owner cannot be demoted", f.owner, "/admin/members/" + f.owner.ID + "/role", url.Values{"role": {"member"}}, http.StatusConflict,
				func() bool {
					m, _ := f.env.Store.MemberByID(ctx, f.env.Account.ID, f.owner.ID)
					return m.Role == core.RoleOwner
				}},
			{"the last owner cannot be removed", f.owner, "/admin/members/" + f.owner.ID + "/remove", nil, http.StatusConflict,
				func() bool { _, err := f.env.Store.MemberByID(ctx, f.env.Account.ID, f.owner.ID); return err == nil }},
			{"an admin cannot remove an owner", f.admin, "/admin/members/" + f.owner.ID + "/remove", nil, http.StatusForbidden,
				func() bool { _, err := f.env.Store.MemberByID(ctx, f.env.Account.ID, f.owner.ID); return err == nil }},
			{"an admin cannot make an owner", f.admin, "/admin/members/" + f.other.ID + "/role", url.Values{"role": {"owner"}}, http.StatusForbidden,
				func() bool {
					m, _ := f.env.Store.MemberByID(ctx, f.env.Account.ID, f.other.ID)
					return m.Role == core.RoleMember
				}},
			{"an admin removes a member", f.admin, "/admin/members/" + f.other.ID + "/remove", nil, http.StatusSeeOther,
				func() bool {
					_, err := f.env.Store.MemberByID(ctx, f.env.Account.ID, f.other.ID)
					return core.CodeOf(err) == core.NotFound
				}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				res, body := signIn(t, f.env, tc.as).post(tc.path, tc.form, true)
				if res.StatusCode != tc.status {
					t.Fatalf("POST %s: %d, want %d\n%s", tc.path, res.StatusCode, tc.status, body)
				}
				if tc.status >= 400 && len(elements(parseHTML(t, body), byAttr("data-testid", "refusal"))) != 1 {
					t.Fatalf("the refusal is not shown on the members page")
				}
				if !tc.check() {
					t.Fatalf("the change is not what was wanted")
				}
			})
		}
	})
}

func TestTheAuditLogFilters(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		f := newFixture(t, db)
		ctx := context.Background()
		a1 := f.ask(t, "One", "bob")
		a2 := f.ask(t, "Two", "bob")
		if _, err := f.env.Store.Decide(ctx, f.env.Account.ID, a1.ID, f.member, asks.Decision{Verdict: asks.VerdictDeny}); err != nil {
			t.Fatal(err)
		}
		b := signIn(t, f.env, f.admin)
		cases := []struct {
			query string
			want  []string // "approval step" of each row, newest first
		}{
			{"", []string{a1.ID + " denied", a2.ID + " created", a1.ID + " created"}},
			{"step=created", []string{a2.ID + " created", a1.ID + " created"}},
			{"actor_kind=person", []string{a1.ID + " denied"}},
			{"actor=bob", []string{a1.ID + " denied"}},
			{"approval=" + a2.ID, []string{a2.ID + " created"}},
			{"actor_kind=agent&approval=" + a1.ID, []string{a1.ID + " created"}},
		}
		for _, tc := range cases {
			t.Run("audit?"+tc.query, func(t *testing.T) {
				res, body := b.get("/admin/audit?" + tc.query)
				if res.StatusCode != http.StatusOK {
					t.Fatalf("GET audit: %d", res.StatusCode)
				}
				var got []string
				for _, li := range elements(parseHTML(t, body), func(n *html.Node) bool { return n.Data == "li" && attrOf(n, "data-seq") != "" }) {
					id := strings.TrimPrefix(attrOf(elements(li, func(n *html.Node) bool { return n.Data == "a" })[0], "href"), "/approvals/")
					step := "?"
					for _, s := range []string{"denied", "created"} {
						if strings.Contains(textOf(li), s) {
							step = s
						}
					}
					got = append(got, id+" "+step)
				}
				if !sameIDs(got, tc.want) {
					t.Fatalf("rows %v, want %v", got, tc.want)
				}
			})
		}
		if res, _ := b.get("/admin/audit?step=bogus"); res.StatusCode != http.StatusBadRequest {
			t.Fatalf("an unknown step: %d", res.StatusCode)
		}

		// The page shows the end of the hash chain once the three events are sealed.
		sealer := f.env.Store.NewAuditSealer()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if _, err := sealer.Seal(ctx); err != nil {
				t.Fatal(err)
			}
			if head, err := f.env.Store.AuditHead(ctx, f.env.Account.ID); err == nil && head.Pos == 3 && head.Unsealed == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the three events were not sealed within 10 s")
			}
		}
		report, err := f.env.Store.VerifyAudit(ctx, f.env.Account.ID)
		if err != nil || !report.OK() {
			t.Fatalf("verify: %+v, %v", report, err)
		}
		_, body := b.get("/admin/audit")
		chain := elements(parseHTML(t, body), byAttr("data-testid", "chain"))
		if len(chain) != 1 || !strings.Contains(textOf(chain[0]), "3 events sealed into the hash chain; its head is "+report.HeadHash[:16]) ||
			strings.Contains(textOf(chain[0]), "wait for the sealer") {
			t.Fatalf("the chain is not shown as sealed through 3 with head %s:\n%s", report.HeadHash, body)
		}
	})
}
