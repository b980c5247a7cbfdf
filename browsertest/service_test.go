package browsertest

import (
	"context"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
	"github.com/countersign/countersign/proof"
)

// service is the app under test, a browser tab on it, and an agent that
// talks to it over MCP.
type service struct {
	t     *testing.T
	env   *apptest.Env
	page  *Page
	agent *apptest.Client
	// expected, when set, says which console errors a test caused on
	// purpose (a refusal it provoked).
	expected func(consoleError string) bool
}

// start runs the service on db for a browser (http://localhost:PORT), opens
// a fresh page on it, and connects an agent named bot with every scope.
func start(t *testing.T, db apptest.Database) *service {
	t.Helper()
	return startWith(t, db, nil)
}

// startWith is start with the service's settings overridden (COUNTERSIGN_…).
func startWith(t *testing.T, db apptest.Database, overrides map[string]string) *service {
	t.Helper()
	NeedChromium(t)
	env := apptest.StartWeb(t, db, overrides)
	p := browser.Open(t, env.URL)
	_, token := env.Agent(env.Account.ID, "bot")
	s := &service{t: t, env: env, page: p, agent: env.Connect(token)}
	t.Cleanup(func() {
		errs := slices.DeleteFunc(p.ConsoleErrors(), func(e string) bool { return s.expected != nil && s.expected(e) })
		if len(errs) > 0 {
			t.Errorf("the pages reported errors in the browser console:\n  %s", strings.Join(errs, "\n  "))
		}
	})
	return s
}

// For returns the service reporting to t (a subtest): the same page and agent.
func (s *service) For(t *testing.T) *service {
	c := *s
	c.t = t
	c.page = s.page.For(t)
	return &c
}

// invite makes an invite to the default account, as `countersign invite`
// does, and returns the path of its page.
func (s *service) invite(role core.Role, subject string) string {
	s.t.Helper()
	token, inv, err := s.env.Store.CreateInvite(context.Background(), people.NewInvite{AccountID: s.env.Account.ID, Role: role, Subject: subject, By: people.OperatorInviter("browsertest")})
	if err != nil {
		s.t.Fatalf("create invite: %v", err)
	}
	if inv.Role != role || inv.Subject != subject {
		s.t.Fatalf("invite = role %q subject %q, want %q %q", inv.Role, inv.Subject, role, subject)
	}
	return "/invite/" + url.PathEscape(token)
}

// signUp accepts an invite in the page as a person would: type a name,
// press the button, let the passkey (the virtual authenticator) answer,
// and land on the inbox.
func (s *service) signUp(subject string, role core.Role) *people.Member {
	s.t.Helper()
	p := s.page
	p.Go(s.invite(role, ""))
	p.Type("#subject", subject)
	p.ClickToLoad("[data-testid=register-passkey]", "/", "[data-testid=sign-out]")
	s.checkInbox()
	m, err := s.env.Store.MemberBySubject(context.Background(), s.env.Account.ID, subject)
	if err != nil {
		p.Fatalf("the person %s is not a member after the invite: %v", subject, err)
	}
	if m.Role != role {
		s.t.Fatalf("role of %s = %q, want %q", subject, m.Role, role)
	}
	return m
}

// checkInbox checks that the page is the signed-in inbox.
func (s *service) checkInbox() {
	s.t.Helper()
	if h := s.page.Text("main h1"); h != "Inbox" {
		s.page.Fatalf("the page at / is headed %q, want Inbox", h)
	}
}

// ask files an ask over MCP and returns its id and payload hash.
func (s *service) ask(args map[string]any) (id, payloadSHA256 string) {
	s.t.Helper()
	out := s.agent.OK("approvals_create", args)
	id, _ = out["approval_id"].(string)
	payloadSHA256, _ = out["payload_sha256"].(string)
	if id == "" || len(payloadSHA256) != 64 || out["status"] != "pending" {
		s.t.Fatalf("approvals_create answered %v", out)
	}
	return id, payloadSHA256
}

// get reads an ask over MCP, as its agent.
func (s *service) get(id string) map[string]any {
	s.t.Helper()
	return s.agent.OK("approvals_get", map[string]any{"approval_id": id})
}

// pullRequestAsk is a valid pull_request ask for the owners and admins.
func pullRequestAsk(number int, head string) map[string]any {
	return map[string]any{
		"kind":          "pull_request",
		"title":         "Merge acme/web#900",
		"summary":       "Fixes the login redirect.",
		"approve_means": "I merge #900; nothing rolls",
		"deny_means":    "#900 stays open",
		"payload": map[string]any{"pull_request": map[string]any{
			"repo": "acme/web", "number": number, "head": head, "title": "Fix login redirect",
		}},
		"context": map[string]any{"plan_id": "plan_1", "plan_item": "item_2", "job_id": "job_42"},
	}
}

// keys exports the account's device keys as `countersign keys export` does.
func (s *service) keys() *proof.Keys {
	s.t.Helper()
	ctx := context.Background()
	u, err := url.Parse(s.env.URL)
	if err != nil {
		s.t.Fatal(err)
	}
	export, err := s.env.Store.ExportKeys(ctx, s.env.Account.ID, u.Hostname())
	if err != nil {
		s.t.Fatalf("export keys: %v", err)
	}
	return export
}

// checkProof reads raw as a decision proof and checks it as `countersign
// verify` does, self-asserted and against the account's key export: it must
// be the browser's passkey signing decision on the ask id with payloadSHA256.
func (s *service) checkProof(raw any, id, payloadSHA256, decision, subject string) *proof.Proof {
	s.t.Helper()
	if raw == nil {
		s.t.Fatalf("no proof for the %s decision on %s", decision, id)
	}
	b, err := json.Marshal(raw)
	if err != nil {
		s.t.Fatal(err)
	}
	var p proof.Proof
	if err := json.Unmarshal(b, &p); err != nil {
		s.t.Fatalf("the proof is not a countersign proof: %v\n%s", err, b)
	}
	self, err := proof.Verify(&p, proof.Expect{RPID: "localhost", Origin: s.env.URL})
	if err != nil {
		s.t.Fatalf("countersign verify refuses the proof: %v\n%s", err, b)
	}
	checked, err := proof.Verify(&p, proof.Expect{RPID: "localhost", Origin: s.env.URL, Keys: s.keys()})
	if err != nil {
		s.t.Fatalf("countersign verify --keys refuses the proof: %v\n%s", err, b)
	}
	for _, r := range []*proof.Result{self, checked} {
		if r.ApprovalID != id || r.PayloadSHA256 != payloadSHA256 || r.Decision != decision || r.Origin != s.env.URL {
			s.t.Errorf("verified proof = approval %s, payload %s, decision %q, origin %s; want %s, %s, %q, %s",
				r.ApprovalID, r.PayloadSHA256, r.Decision, r.Origin, id, payloadSHA256, decision, s.env.URL)
		}
	}
	if self.KeyRegistered || !checked.KeyRegistered || checked.KeyPerson != subject {
		s.t.Errorf("key check: without keys registered=%t; with keys registered=%t person=%q, want false, true, %q",
			self.KeyRegistered, checked.KeyRegistered, checked.KeyPerson, subject)
	}
	if p.Unsigned.Person != subject || p.Unsigned.AccountID != s.env.Account.ID || p.RPID != "localhost" {
		s.t.Errorf("proof claims person %q account %q rp_id %q, want %q %q localhost", p.Unsigned.Person, p.Unsigned.AccountID, p.RPID, subject, s.env.Account.ID)
	}
	// The signing key is the one in the browser's authenticator.
	creds := s.page.Credentials()
	if len(creds) != 1 || string(creds[0].CredentialID) != string(p.CredentialID) {
		s.t.Errorf("the proof's credential %x is not the one passkey of the browser (%d credentials)", []byte(p.CredentialID), len(creds))
	}
	return &p
}
