package oauth_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
	"github.com/countersign/countersign/models/rules"
	"github.com/countersign/countersign/oauth"
)

func TestNoClientOrAgentPassesForTheServicesRulesAgent(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	bob := r.env.Join(r.env.Account.ID, core.RoleMember, "bob")
	const redirect = "http://localhost:9/callback"

	t.Run("registration refuses a name the service keeps", func(t *testing.T) {
		for _, name := range []string{models.ServiceAgentName, "Countersign Rules", "countersign"} {
			raw, _ := json.Marshal(map[string]any{"client_name": name, "redirect_uris": []string{redirect}})
			res, err := http.Post(r.env.URL+oauth.RegisterPath, "application/json", strings.NewReader(string(raw)))
			if err != nil {
				t.Fatal(err)
			}
			var body map[string]any
			_ = json.NewDecoder(res.Body).Decode(&body)
			res.Body.Close()
			if res.StatusCode != http.StatusBadRequest || body["error"] != "invalid_client_metadata" || !strings.Contains(body["error_description"].(string), "reserved for the service") {
				t.Errorf("register %q: HTTP %d %v, want 400 invalid_client_metadata saying the name is reserved", name, res.StatusCode, body)
			}
		}
	})
	t.Run("consent refuses a client registered under such a name before", func(t *testing.T) {
		c, err := r.env.Store.RegisterOAuthClient(ctx, models.ServiceAgentName, []string{redirect}, oauth.MaxUnconnectedClients)
		if err != nil {
			t.Fatal(err)
		}
		res := r.consentIn(bob, r.authorizeQuery(c.ID, redirect, "verifier-verifier-verifier-verifier-verifier-1"), "mcp:read", "approvals:read")
		if res.Status != http.StatusBadRequest || !strings.Contains(string(res.Raw), "reserved for the service") {
			t.Errorf("bob connects a client named %s: %s; want 400 saying the name is reserved", models.ServiceAgentName, res)
		}
		if _, err := r.env.Store.AgentByName(ctx, r.env.Account.ID, models.ServiceAgentName); core.CodeOf(err) != core.NotFound {
			t.Errorf("an agent named %s was made: %v", models.ServiceAgentName, err)
		}
	})
	t.Run("agent create refuses it", func(t *testing.T) {
		res := r.ada.PostForm("/admin/agents", url.Values{"name": {models.ServiceAgentName}, "scopes": {"approvals:read"}})
		if res.Status != http.StatusBadRequest || !strings.Contains(string(res.Raw), "reserved for the service") {
			t.Errorf("ada makes an agent named %s: %s; want 400 saying the name is reserved", models.ServiceAgentName, res)
		}
	})

	// A client bob connected under the name before it was reserved: his
	// agent holds the name, with a token he knows.
	squatter, token, err := r.env.Store.CreateAgentFor(ctx, r.env.Account.ID, "bobs-client", people.AllScopes, "bob")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.env.Store.DB().Table("agents").Where("id = ?", squatter.ID).
		Updates(map[string]any{"name": models.ServiceAgentName, "subject": "agent:" + models.ServiceAgentName}).Error; err != nil {
		t.Fatal(err)
	}
	res := r.ada.PostForm("/admin/rules/"+rules.RuleRoll+"/remove", url.Values{})
	id := strings.TrimPrefix(res.Header.Get("Location"), "/approvals/")
	if res.Status != http.StatusSeeOther || !strings.HasPrefix(id, "appr_") {
		t.Fatalf("ada proposes removing %s: %s", rules.RuleRoll, res)
	}
	a, err := r.env.Store.GetApproval(ctx, r.env.Account.ID, id)
	if err != nil {
		t.Fatal(err)
	}
	var requester people.Agent
	if err := r.env.Store.DB().Table("agents").Where("id = ?", a.RequesterID).Take(&requester).Error; err != nil {
		t.Fatal(err)
	}
	if a.RequesterID == squatter.ID || !requester.Service || requester.ForPersonID != nil || a.RequesterSubject == "agent:"+models.ServiceAgentName {
		t.Fatalf("the rule change's requester is %+v (%s), want the service's own agent, not bob's %s", requester, a.RequesterSubject, squatter.ID)
	}
	out := r.env.Connect(token).Call("approvals_add_progress", map[string]any{"approval_id": id, "step": "stale", "note": "withdrawn"})
	if !out.IsError || out.Code != "PERMISSION_DENIED" {
		t.Errorf("bob's client withdraws the rule change: %s; want PERMISSION_DENIED", out)
	}
	if a, _ := r.env.Store.GetApproval(ctx, r.env.Account.ID, id); a.Status != asks.StatusPending {
		t.Errorf("the rule change is %s after bob's client tried to withdraw it, want pending", a.Status)
	}
}
