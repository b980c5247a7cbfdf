package handlers_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
	"github.com/countersign/countersign/proof"
)

// testClock is the store's clock, moved by tests; it starts at the real time.
type testClock struct{ offset atomic.Int64 }

func (c *testClock) now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *testClock) advance(d time.Duration) { c.offset.Add(int64(d)) }

// scene is a running service with an owner signed in over HTTP with a
// passkey, and an agent connected over MCP.
type scene struct {
	env        *apptest.Env
	clock      *testClock
	owner      *apptest.Browser
	agent      *apptest.Client
	agentToken string
	asks       atomic.Int64
}

func newScene(t *testing.T, db apptest.Database, overrides map[string]string) *scene {
	t.Helper()
	env := apptest.StartWeb(t, db, overrides)
	s := &scene{env: env, clock: &testClock{}}
	env.Store.SetClock(s.clock.now)
	s.owner = join(t, env, env.Account.ID, core.RoleOwner, "ada")
	_, s.agentToken = env.Agent(env.Account.ID, "bot")
	s.agent = env.Connect(s.agentToken)
	return s
}

// join invites subject to the account with role and accepts the invite in
// a new browser, which is then signed in.
func join(t *testing.T, env *apptest.Env, accountID string, role core.Role, subject string) *apptest.Browser {
	t.Helper()
	token, _, err := env.Store.CreateInvite(context.Background(), people.NewInvite{AccountID: accountID, Role: role, By: people.OperatorInviter("test")})
	if err != nil {
		t.Fatalf("create invite: %v", err)
	}
	b := apptest.NewBrowser(t, env.URL)
	b.CheckCode = env.CheckCode // the person reads the code where the agent runs
	r := b.AcceptInvite(token, subject)
	if r.Status != http.StatusOK || r.Body["redirect"] != "/" || b.Session() == "" {
		t.Fatalf("accept the invite of %s: %s (session cookie %q)", subject, r, b.Session())
	}
	return b
}

// prAsk is a pull request ask asked of askedOf ("" for owners and admins).
func (s *scene) prAsk(t *testing.T, askedOf string) string {
	t.Helper()
	n := s.asks.Add(1)
	args := map[string]any{
		"kind":          "pull_request",
		"title":         fmt.Sprintf("Merge acme/web#%d", 900+n),
		"summary":       "Fixes the login redirect.",
		"approve_means": "I merge it; nothing rolls",
		"deny_means":    "it stays open",
		"payload": map[string]any{"pull_request": map[string]any{
			"repo": "acme/web", "number": 900 + n, "head": fmt.Sprintf("abcdef%07d", n), "title": "Fix login redirect",
		}},
		"context": map[string]any{"plan_id": "plan_1", "plan_item": "item_2"},
	}
	if askedOf != "" {
		args["asked_of"] = askedOf
	}
	out := s.agent.OK("approvals_create", args)
	id, _ := out["approval_id"].(string)
	if id == "" || out["status"] != "pending" {
		t.Fatalf("approvals_create answered %v", out)
	}
	return id
}

// decisionAsk is a decision ask with options.
func (s *scene) decisionAsk(t *testing.T, options ...string) string {
	t.Helper()
	out := s.agent.OK("approvals_create", map[string]any{
		"kind":          "decision",
		"title":         "When do we ship?",
		"approve_means": "I do what the option says",
		"deny_means":    "I wait",
		"payload":       map[string]any{"decision": map[string]any{"options": options}},
		"context":       map[string]any{"plan_id": "plan_1", "plan_item": "item_3"},
	})
	id, _ := out["approval_id"].(string)
	if id == "" {
		t.Fatalf("approvals_create answered %v", out)
	}
	return id
}

// askState is what a refusal must leave as it was.
type askState struct {
	Status     asks.Status
	Version    int
	Events     int
	Decision   string
	DecidedBy  string
	Note       string
	HasProof   bool
	Nonces     int64 // decision challenges issued for the ask
	UsedNonces int64 // of which spent
}

func (s *scene) state(t *testing.T, id string) askState {
	t.Helper()
	ctx := context.Background()
	a, err := s.env.Store.GetApproval(ctx, s.env.Account.ID, id)
	if err != nil {
		t.Fatalf("get approval: %v", err)
	}
	events, err := s.env.Store.Timeline(ctx, s.env.Account.ID, id)
	if err != nil {
		t.Fatalf("timeline: %v", err)
	}
	st := askState{Status: a.Status, Version: a.Version, Events: len(events), Decision: a.Decision,
		DecidedBy: a.DecidedBy, Note: a.Note, HasProof: a.Proof != nil}
	db := s.env.Store.DB()
	if err := db.Raw(`SELECT COUNT(*) FROM decision_challenges WHERE approval_id = ?`, id).Scan(&st.Nonces).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Raw(`SELECT COUNT(*) FROM decision_challenges WHERE approval_id = ? AND used_at IS NOT NULL`, id).Scan(&st.UsedNonces).Error; err != nil {
		t.Fatal(err)
	}
	return st
}

// refused checks a refusal's status and code.
func refused(t *testing.T, r apptest.Response, status int, code string) {
	t.Helper()
	if r.Status != status || r.Code() != code {
		t.Fatalf("answer %s; want HTTP %d %s", r, status, code)
	}
}

// unchanged checks that an ask is as it was, and that every nonce issued
// for it is still unused.
func (s *scene) unchanged(t *testing.T, id string, before askState) {
	t.Helper()
	after := s.state(t, id)
	if after.Nonces < before.Nonces {
		t.Fatalf("nonces went from %d to %d", before.Nonces, after.Nonces)
	}
	after.Nonces = before.Nonces // a refusal may have issued a new challenge; none may be spent
	if after != before {
		t.Fatalf("the ask changed:\nbefore %+v\nafter  %+v", before, after)
	}
}

// proofOf reads a proof from an approvals_get answer.
func proofOf(t *testing.T, v any) *proof.Proof {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil || v == nil {
		t.Fatalf("no proof: %v (%v)", v, err)
	}
	var p proof.Proof
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatalf("read proof: %v\n%s", err, raw)
	}
	return &p
}

// checkProof verifies a proof offline and checks that it says what was decided.
func (s *scene) checkProof(t *testing.T, p *proof.Proof, b *apptest.Browser, id, payloadSHA256, decision, person string) {
	t.Helper()
	res, err := proof.Verify(p, proof.Expect{RPID: "localhost", Origin: s.env.URL})
	if err != nil {
		t.Fatalf("proof.Verify: %v", err)
	}
	if res.ApprovalID != id || res.PayloadSHA256 != payloadSHA256 || res.Decision != decision ||
		res.CredentialID != b.Passkey.CredentialIDString() || res.Origin != s.env.URL || res.SignCount != b.Passkey.Counter {
		t.Fatalf("proof result %+v; want approval %s, hash %s, decision %s, credential %s, origin %s, count %d",
			res, id, payloadSHA256, decision, b.Passkey.CredentialIDString(), s.env.URL, b.Passkey.Counter)
	}
	if !bytes.Equal(p.PublicKey, b.Passkey.PublicKeyCOSE()) || p.RPID != "localhost" {
		t.Fatalf("proof key/rp_id = %x / %q; want the passkey's and localhost", p.PublicKey, p.RPID)
	}
	if p.Unsigned.Person != person || p.Unsigned.AccountID != s.env.Account.ID || p.Unsigned.DecidedAt.IsZero() {
		t.Fatalf("unsigned claims %+v; want person %s, account %s and a time", p.Unsigned, person, s.env.Account.ID)
	}
	want := proof.Challenge(proof.Domain, id, payloadSHA256, decision, p.Nonce)
	if res, err := proof.Verify(p, proof.Expect{Origin: s.env.URL}); err != nil || res == nil {
		t.Fatalf("proof.Verify without an RP ID: %v", err)
	}
	var cd struct{ Challenge string }
	if err := json.Unmarshal(p.ClientDataJSON, &cd); err != nil || cd.Challenge != base64.RawURLEncoding.EncodeToString(want) {
		t.Fatalf("clientDataJSON challenge %q, want the layout's %x", cd.Challenge, want)
	}
}

func TestInviteRegisterSignInAndDecideOverHTTP(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := newScene(t, db, nil)
		ctx := context.Background()
		owner := s.owner.For(t)

		t.Run("the invite made a person with the passkey, and cannot be used again", func(t *testing.T) {
			members, err := s.env.Store.Members(ctx, s.env.Account.ID)
			if err != nil || len(members) != 1 || members[0].Subject != "ada" || members[0].Role != core.RoleOwner {
				t.Fatalf("members = %+v (%v); want ada, owner", members, err)
			}
			keys, err := s.env.Store.DeviceKeys(ctx, members[0].ID)
			if err != nil || len(keys) != 1 || keys[0].ID != owner.Passkey.CredentialIDString() ||
				keys[0].PublicKey != base64.RawURLEncoding.EncodeToString(owner.Passkey.PublicKeyCOSE()) || keys[0].Name != "test passkey" {
				t.Fatalf("device keys = %+v (%v); want the passkey, named", keys, err)
			}
			if string(owner.Passkey.UserHandle) != members[0].ID {
				t.Fatalf("user handle %q, want the person id %q", owner.Passkey.UserHandle, members[0].ID)
			}
			token, _, err := s.env.Store.CreateInvite(ctx, people.NewInvite{AccountID: s.env.Account.ID, Role: core.RoleMember, By: people.OperatorInviter("test")})
			if err != nil {
				t.Fatal(err)
			}
			b := apptest.NewBrowser(t, s.env.URL)
			if r := b.AcceptInvite(token, "grace"); r.Status != http.StatusOK {
				t.Fatalf("accept: %s", r)
			}
			again := apptest.NewBrowser(t, s.env.URL)
			refused(t, again.AcceptInvite(token, "mallory"), http.StatusConflict, "FAILED_PRECONDITION")
			if _, err := s.env.Store.PersonBySubject(ctx, "mallory"); core.CodeOf(err) != core.NotFound {
				t.Fatalf("a person was made from a used invite: %v", err)
			}
		})

		t.Run("a passkey that does not verify the user, or answers for another origin, does not spend the invite", func(t *testing.T) {
			token, _, err := s.env.Store.CreateInvite(ctx, people.NewInvite{AccountID: s.env.Account.ID, Role: core.RoleMember, By: people.OperatorInviter("test")})
			if err != nil {
				t.Fatal(err)
			}
			for _, lie := range []apptest.Misbehaviour{{NoUserVerification: true}, {Origin: "https://evil.example"}, {RPID: "evil.example"}} {
				b := apptest.NewBrowser(t, s.env.URL)
				b.Passkey.Misbehave = lie
				refused(t, b.AcceptInvite(token, "heidi"), http.StatusForbidden, "PERMISSION_DENIED")
				if b.Session() != "" {
					t.Fatalf("%+v: a session cookie was set", lie)
				}
				if _, err := s.env.Store.PersonBySubject(ctx, "heidi"); core.CodeOf(err) != core.NotFound {
					t.Fatalf("%+v: a person was made: %v", lie, err)
				}
			}
			b := apptest.NewBrowser(t, s.env.URL)
			if r := b.AcceptInvite(token, "heidi"); r.Status != http.StatusOK {
				t.Fatalf("the invite no longer works after the refusals: %s", r)
			}
		})

		t.Run("a synced passkey (backup eligible) registers, signs in and decides", func(t *testing.T) {
			token, _, err := s.env.Store.CreateInvite(ctx, people.NewInvite{AccountID: s.env.Account.ID, Role: core.RoleAdmin, By: people.OperatorInviter("test")})
			if err != nil {
				t.Fatal(err)
			}
			b := apptest.NewBrowser(t, s.env.URL)
			b.Passkey.BackupEligible = true
			if r := b.AcceptInvite(token, "ivan"); r.Status != http.StatusOK {
				t.Fatalf("accept: %s", r)
			}
			p, err := s.env.Store.PersonBySubject(ctx, "ivan")
			if err != nil {
				t.Fatal(err)
			}
			keys, err := s.env.Store.DeviceKeys(ctx, p.ID)
			if err != nil || len(keys) != 1 || !keys[0].BackupEligible || !keys[0].BackedUp {
				t.Fatalf("device keys %+v (%v); want one, backup eligible and backed up", keys, err)
			}
			if r := b.SignIn(); r.Status != http.StatusOK {
				t.Fatalf("sign in: %s", r)
			}
			id := s.prAsk(t, "")
			if r := b.Decide(id, "approve", ""); r.Status != http.StatusOK {
				t.Fatalf("decide: %s", r)
			}
			got := s.agent.OK("approvals_get", map[string]any{"approval_id": id})
			s.checkProof(t, proofOf(t, got["proof"]), b, id, got["payload_sha256"].(string), "approve", "ivan")
		})

		t.Run("signing in starts a fresh session and ends the old one", func(t *testing.T) {
			old := owner.Session()
			counter := owner.Passkey.Counter
			r := owner.SignIn()
			if r.Status != http.StatusOK || r.Body["redirect"] != "/" {
				t.Fatalf("sign in: %s", r)
			}
			if now := owner.Session(); now == "" || now == old {
				t.Fatalf("session cookie %q after sign-in, was %q: not rotated", now, old)
			}
			if owner.Passkey.Counter != counter+1 {
				t.Fatalf("the passkey signed %d times, want once", owner.Passkey.Counter-counter)
			}
			// The old cookie no longer signs anyone in.
			stale := apptest.NewBrowser(t, s.env.URL)
			u := mustURL(t, s.env.URL)
			stale.HTTP.Jar.SetCookies(u, []*http.Cookie{{Name: "cs_session", Value: old, Path: "/"}})
			refused(t, stale.Challenge(s.prAsk(t, ""), "approve", ""), http.StatusUnauthorized, "UNAUTHORIZED")
			// The new one does.
			if r := owner.Challenge(s.prAsk(t, ""), "approve", ""); r.Status != http.StatusOK {
				t.Fatalf("challenge with the new session: %s", r)
			}
		})

		t.Run("sign-in with a passkey the server never registered is refused", func(t *testing.T) {
			// A passkey that claims ada's user handle with a key of its own.
			forged := apptest.NewBrowser(t, s.env.URL)
			forged.Passkey.RPID, forged.Passkey.UserHandle = "localhost", bytes.Clone(owner.Passkey.UserHandle)
			refused(t, forged.SignIn(), http.StatusForbidden, "PERMISSION_DENIED")
			if forged.Session() != "" {
				t.Fatalf("a session cookie was set")
			}
			// A passkey of a person this server does not know.
			stranger := apptest.NewBrowser(t, s.env.URL)
			stranger.Passkey.RPID, stranger.Passkey.UserHandle = "localhost", []byte(people.NewPersonID())
			r := stranger.SignIn()
			refused(t, r, http.StatusForbidden, "PERMISSION_DENIED")
			if stranger.Session() != "" {
				t.Fatalf("a session cookie was set")
			}
		})

		t.Run("approve: the agent reads approved, by ada, with a proof that verifies", func(t *testing.T) {
			id := s.prAsk(t, "")
			r := owner.Decide(id, "approve", "")
			if r.Status != http.StatusOK || r.Body["status"] != "approved" || r.Body["redirect"] == "/approvals/"+id {
				t.Fatalf("decide: %s", r)
			}
			got := s.agent.OK("approvals_get", map[string]any{"approval_id": id})
			if got["status"] != "approved" || got["decision"] != "approve" || got["decided_by"] != "ada" {
				t.Fatalf("approvals_get: status %v, decision %v, decided_by %v", got["status"], got["decision"], got["decided_by"])
			}
			s.checkProof(t, proofOf(t, got["proof"]), owner, id, got["payload_sha256"].(string), "approve", "ada")
			if st := s.state(t, id); st.Nonces != 1 || st.UsedNonces != 1 || st.Events != 2 {
				t.Fatalf("state %+v; want one spent nonce and two events", st)
			}
			dl := owner.Get("/approvals/" + id + "/proof.json")
			var downloaded proof.Proof
			if dl.Status != http.StatusOK || json.Unmarshal(dl.Raw, &downloaded) != nil {
				t.Fatalf("proof.json: %s", dl)
			}
			s.checkProof(t, &downloaded, owner, id, got["payload_sha256"].(string), "approve", "ada")
		})

		t.Run("deny: the agent reads denied, by ada, with a proof that verifies", func(t *testing.T) {
			id := s.prAsk(t, "")
			if r := owner.Decide(id, "deny", ""); r.Status != http.StatusOK || r.Body["status"] != "denied" {
				t.Fatalf("decide: %s", r)
			}
			got := s.agent.OK("approvals_get", map[string]any{"approval_id": id})
			if got["status"] != "denied" || got["decision"] != "deny" || got["decided_by"] != "ada" {
				t.Fatalf("approvals_get: %v", got)
			}
			s.checkProof(t, proofOf(t, got["proof"]), owner, id, got["payload_sha256"].(string), "deny", "ada")
		})

		t.Run("question: the agent reads it, answers, and the ask is pending again", func(t *testing.T) {
			id := s.prAsk(t, "")
			question := "Does this touch the session cookie?"
			if r := owner.Decide(id, "question", question); r.Status != http.StatusOK || r.Body["status"] != "question" {
				t.Fatalf("decide: %s", r)
			}
			got := s.agent.OK("approvals_get", map[string]any{"approval_id": id})
			if got["status"] != "question" || got["note"] != question {
				t.Fatalf("approvals_get: status %v, note %v", got["status"], got["note"])
			}
			events, err := s.env.Store.Timeline(ctx, s.env.Account.ID, id)
			if err != nil || len(events) != 2 || events[1].Step != "question" || events[1].Actor != "ada" || events[1].Data == nil {
				t.Fatalf("timeline %+v (%v); want the question by ada with its proof", events, err)
			}
			p := proofOf(t, json.RawMessage(*events[1].Data))
			s.checkProof(t, p, owner, id, got["payload_sha256"].(string), proof.QuestionDecision(question), "ada")
			if p.Unsigned.Question != question {
				t.Fatalf("the proof carries question %q, want %q", p.Unsigned.Question, question)
			}
			answered := s.agent.OK("approvals_add_progress", map[string]any{"approval_id": id, "step": "answered", "note": "No, only the redirect."})
			if answered["status"] != "pending" {
				t.Fatalf("after answered: %v", answered["status"])
			}
			if r := owner.Decide(id, "approve", ""); r.Status != http.StatusOK || r.Body["status"] != "approved" {
				t.Fatalf("approve after the answer: %s", r)
			}
		})

		t.Run("a question without text is refused", func(t *testing.T) {
			id := s.prAsk(t, "")
			before := s.state(t, id)
			r := owner.Challenge(id, "question", "   ")
			refused(t, r, http.StatusBadRequest, "INVALID_ARGUMENT")
			if r.Field() != "question" {
				t.Fatalf("field %q, want question", r.Field())
			}
			s.unchanged(t, id, before)
		})

		t.Run("an option of a decision ask comes back to the agent as the note", func(t *testing.T) {
			id := s.decisionAsk(t, "Ship today", "Wait for Monday")
			if r := owner.Decide(id, "option:1", ""); r.Status != http.StatusOK || r.Body["status"] != "approved" {
				t.Fatalf("decide: %s", r)
			}
			got := s.agent.OK("approvals_get", map[string]any{"approval_id": id})
			if got["status"] != "approved" || got["decision"] != "option:1" || got["note"] != "Wait for Monday" || got["decided_by"] != "ada" {
				t.Fatalf("approvals_get: status %v, decision %v, note %v, decided_by %v", got["status"], got["decision"], got["note"], got["decided_by"])
			}
			s.checkProof(t, proofOf(t, got["proof"]), owner, id, got["payload_sha256"].(string), "option:1", "ada")
		})

		t.Run("a decision ask refuses approve and an option it does not have", func(t *testing.T) {
			id := s.decisionAsk(t, "Ship today", "Wait for Monday")
			before := s.state(t, id)
			refused(t, owner.Challenge(id, "approve", ""), http.StatusBadRequest, "INVALID_ARGUMENT")
			refused(t, owner.Challenge(id, "option:2", ""), http.StatusBadRequest, "INVALID_ARGUMENT")
			s.unchanged(t, id, before)
		})

		t.Run("not mine: denied, the agent disabled, its next MCP call 401", func(t *testing.T) {
			_, token := s.env.Agent(s.env.Account.ID, "pushy")
			pushy := s.env.Connect(token)
			create := func() string {
				out := pushy.OK("approvals_create", map[string]any{
					"kind": "review", "title": "Review this", "approve_means": "I go on", "deny_means": "I stop",
					"payload": map[string]any{"review": map[string]any{"url": "https://example.com/r/" + fmt.Sprint(s.asks.Add(1))}},
					"context": map[string]any{"plan_id": "plan_1", "plan_item": "item_9"},
				})
				return out["approval_id"].(string)
			}
			id, other := create(), create()
			if r := owner.Decide(id, "not_mine", ""); r.Status != http.StatusOK || r.Body["status"] != "denied" {
				t.Fatalf("decide: %s", r)
			}
			a, err := s.env.Store.GetApproval(ctx, s.env.Account.ID, id)
			if err != nil || a.Status != asks.StatusDenied || a.Decision != "not_mine" || a.DecidedBy != "ada" || a.Proof == nil {
				t.Fatalf("approval %+v (%v); want denied, not_mine, by ada, with a proof", a, err)
			}
			var p proof.Proof
			if err := json.Unmarshal([]byte(*a.Proof), &p); err != nil {
				t.Fatal(err)
			}
			s.checkProof(t, &p, owner, id, a.PayloadSHA256, "not_mine", "ada")
			if o, err := s.env.Store.GetApproval(ctx, s.env.Account.ID, other); err != nil || o.Status != asks.StatusCancelled {
				t.Fatalf("the agent's other open ask is %v (%v), want cancelled", o.Status, err)
			}
			agent, err := s.env.Store.AgentByName(ctx, s.env.Account.ID, "pushy")
			if err != nil || !agent.Disabled || !strings.Contains(agent.DisabledReason, "ada") {
				t.Fatalf("agent %+v (%v); want disabled by ada", agent, err)
			}
			if _, err := apptest.CallTool(ctx, pushy.Session, "approvals_get", map[string]any{"approval_id": id}); err == nil {
				t.Fatalf("the disabled agent's session still calls tools")
			}
			if status := mcpStatus(t, s.env.URL, token); status != http.StatusUnauthorized {
				t.Fatalf("a new MCP call with the disabled token: HTTP %d, want 401", status)
			}
			if status := mcpStatus(t, s.env.URL, s.agentToken); status != http.StatusOK {
				t.Fatalf("another agent's MCP call: HTTP %d, want 200", status)
			}
		})
	})
}

// mcpStatus posts an MCP initialize with token and returns the HTTP status.
func mcpStatus(t *testing.T, base, token string) int {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	req, err := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// tamper flips the low bit of byte i of the base64url field of an
// assertion's response (i < 0 counts from the end).
func tamper(t *testing.T, credential json.RawMessage, field string, i int) json.RawMessage {
	t.Helper()
	var c map[string]any
	if err := json.Unmarshal(credential, &c); err != nil {
		t.Fatal(err)
	}
	resp := c["response"].(map[string]any)
	b, err := base64.RawURLEncoding.DecodeString(resp[field].(string))
	if err != nil {
		t.Fatal(err)
	}
	if i < 0 {
		i += len(b)
	}
	b[i] ^= 0x01
	resp[field] = base64.RawURLEncoding.EncodeToString(b)
	out, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// prompt asks for a decision's signature prompt and signs it.
func prompt(t *testing.T, b *apptest.Browser, id, decision string) (ceremony string, options, credential json.RawMessage) {
	t.Helper()
	ch := b.Challenge(id, decision, "")
	if ch.Status != http.StatusOK {
		t.Fatalf("challenge %s on %s: %s", decision, id, ch)
	}
	ceremony, options = ch.Ceremony()
	if ceremony == "" || len(options) == 0 {
		t.Fatalf("challenge answered no ceremony or options: %s", ch)
	}
	return ceremony, options, b.Sign(options)
}

func TestDecideRefusalsChangeNothing(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		// Asks live 10 minutes here, so that one can expire while a nonce lives.
		s := newScene(t, db, map[string]string{"COUNTERSIGN_ASK_TTL": "10m"})
		ctx := context.Background()
		owner := s.owner.For(t)

		t.Run("a flipped signature byte is refused", func(t *testing.T) {
			for _, i := range []int{0, 8, 40, -1} {
				id := s.prAsk(t, "")
				ceremony, _, credential := prompt(t, owner, id, "approve")
				before := s.state(t, id)
				refused(t, owner.DecideWith(id, ceremony, tamper(t, credential, "signature", i)), http.StatusForbidden, "PERMISSION_DENIED")
				s.unchanged(t, id, before)
			}
		})

		t.Run("a flipped authenticatorData byte is refused", func(t *testing.T) {
			// the RP ID hash, the flags (UP), the counter
			for _, i := range []int{0, 31, 32, 36} {
				id := s.prAsk(t, "")
				ceremony, _, credential := prompt(t, owner, id, "approve")
				before := s.state(t, id)
				refused(t, owner.DecideWith(id, ceremony, tamper(t, credential, "authenticatorData", i)), http.StatusForbidden, "PERMISSION_DENIED")
				s.unchanged(t, id, before)
			}
		})

		t.Run("a changed clientDataJSON byte is refused", func(t *testing.T) {
			id := s.prAsk(t, "")
			ceremony, _, credential := prompt(t, owner, id, "approve")
			var c struct {
				Response struct{ ClientDataJSON string } `json:"response"`
			}
			_ = json.Unmarshal(credential, &c)
			cd, _ := base64.RawURLEncoding.DecodeString(c.Response.ClientDataJSON)
			i := bytes.Index(cd, []byte(`"challenge":"`)) + len(`"challenge":"`) + 3
			before := s.state(t, id)
			refused(t, owner.DecideWith(id, ceremony, tamper(t, credential, "clientDataJSON", i)), http.StatusForbidden, "PERMISSION_DENIED")
			s.unchanged(t, id, before)
		})

		t.Run("a replayed decide with the same ceremony is refused: the ceremony is gone", func(t *testing.T) {
			id := s.prAsk(t, "")
			ceremony, _, credential := prompt(t, owner, id, "approve")
			if r := owner.DecideWith(id, ceremony, credential); r.Status != http.StatusOK || r.Body["status"] != "approved" {
				t.Fatalf("first decide: %s", r)
			}
			before := s.state(t, id)
			r := owner.DecideWith(id, ceremony, credential)
			refused(t, r, http.StatusConflict, "FAILED_PRECONDITION")
			if r.Field() != "ceremony" {
				t.Fatalf("field %q, want ceremony", r.Field())
			}
			s.unchanged(t, id, before)
		})

		t.Run("an assertion replayed under a fresh ceremony is refused: it signs another challenge", func(t *testing.T) {
			id := s.prAsk(t, "")
			_, _, first := prompt(t, owner, id, "approve")
			fresh := owner.Challenge(id, "approve", "")
			ceremony, _ := fresh.Ceremony()
			before := s.state(t, id)
			refused(t, owner.DecideWith(id, ceremony, first), http.StatusForbidden, "PERMISSION_DENIED")
			s.unchanged(t, id, before)
			if before.Nonces != 2 || before.UsedNonces != 0 {
				t.Fatalf("state %+v; want two unused nonces", before)
			}

			// The assertion that decided one ask, replayed on another ask's fresh ceremony.
			decided := s.prAsk(t, "")
			c1, _, used := prompt(t, owner, decided, "approve")
			if r := owner.DecideWith(decided, c1, used); r.Status != http.StatusOK {
				t.Fatalf("decide: %s", r)
			}
			other := s.prAsk(t, "")
			c2, _, _ := prompt(t, owner, other, "approve")
			before = s.state(t, other)
			refused(t, owner.DecideWith(other, c2, used), http.StatusForbidden, "PERMISSION_DENIED")
			s.unchanged(t, other, before)
		})

		t.Run("a ceremony for approve on ask A cannot decide ask B", func(t *testing.T) {
			a, b := s.prAsk(t, ""), s.prAsk(t, "")
			ceremony, _, credential := prompt(t, owner, a, "approve")
			beforeA, beforeB := s.state(t, a), s.state(t, b)
			r := owner.DecideWith(b, ceremony, credential)
			refused(t, r, http.StatusForbidden, "PERMISSION_DENIED")
			if r.Field() != "ceremony" {
				t.Fatalf("field %q, want ceremony", r.Field())
			}
			s.unchanged(t, a, beforeA)
			s.unchanged(t, b, beforeB)
		})

		t.Run("a signature over deny cannot pass as approve, and deny is recorded as deny", func(t *testing.T) {
			id := s.prAsk(t, "")
			approveCeremony, _, _ := prompt(t, owner, id, "approve")
			denyCeremony, _, denySigned := prompt(t, owner, id, "deny")
			before := s.state(t, id)
			refused(t, owner.DecideWith(id, approveCeremony, denySigned), http.StatusForbidden, "PERMISSION_DENIED")
			s.unchanged(t, id, before)

			r := owner.DecideWith(id, denyCeremony, denySigned)
			if r.Status != http.StatusOK || r.Body["status"] != "denied" {
				t.Fatalf("decide deny: %s", r)
			}
			got := s.agent.OK("approvals_get", map[string]any{"approval_id": id})
			if got["status"] != "denied" || got["decision"] != "deny" || got["decided_by"] != "ada" {
				t.Fatalf("approvals_get: status %v, decision %v, decided_by %v", got["status"], got["decision"], got["decided_by"])
			}
			s.checkProof(t, proofOf(t, got["proof"]), owner, id, got["payload_sha256"].(string), "deny", "ada")
			if st := s.state(t, id); st.UsedNonces != 1 || st.Nonces != 1 {
				t.Fatalf("state %+v; want the deny nonce spent and the approve one gone (it died when the ask left pending)", st)
			}
		})

		t.Run("an expired nonce is refused", func(t *testing.T) {
			id := s.prAsk(t, "")
			ceremony, _, credential := prompt(t, owner, id, "approve")
			before := s.state(t, id)
			s.clock.advance(6 * time.Minute)
			refused(t, owner.DecideWith(id, ceremony, credential), http.StatusConflict, "FAILED_PRECONDITION")
			s.unchanged(t, id, before)
		})

		t.Run("an ask that is no longer open is refused", func(t *testing.T) {
			id := s.prAsk(t, "")
			deny := owner.Challenge(id, "deny", "")
			denyCeremony, denyOptions := deny.Ceremony()
			if r := owner.Decide(id, "approve", ""); r.Status != http.StatusOK {
				t.Fatalf("approve: %s", r)
			}
			before := s.state(t, id)
			// Signed after the approve (so its counter is the newest), sent while the deny prompt still lives.
			refused(t, owner.DecideWith(id, denyCeremony, owner.Sign(denyOptions)), http.StatusConflict, "FAILED_PRECONDITION")
			s.unchanged(t, id, before)
			refused(t, owner.Challenge(id, "deny", ""), http.StatusConflict, "FAILED_PRECONDITION")
			s.unchanged(t, id, before)

			// Signed while open, sent after the agent withdrew it.
			withdrawn := s.prAsk(t, "")
			ceremony, _, credential := prompt(t, owner, withdrawn, "approve")
			s.agent.OK("approvals_add_progress", map[string]any{"approval_id": withdrawn, "step": "stale", "note": "superseded"})
			before = s.state(t, withdrawn)
			refused(t, owner.DecideWith(withdrawn, ceremony, credential), http.StatusConflict, "FAILED_PRECONDITION")
			s.unchanged(t, withdrawn, before)
			if before.Status != asks.StatusStale {
				t.Fatalf("status %s, want stale", before.Status)
			}
		})

		t.Run("an ask past its expiry is refused and nobody's decision is recorded", func(t *testing.T) {
			id := s.prAsk(t, "")
			s.clock.advance(9 * time.Minute)
			ceremony, _, credential := prompt(t, owner, id, "approve")
			s.clock.advance(2 * time.Minute) // the ask is past its 10 minutes; the nonce is 2 minutes old
			before := s.state(t, id)
			refused(t, owner.DecideWith(id, ceremony, credential), http.StatusConflict, "FAILED_PRECONDITION")
			after := s.state(t, id)
			if after.Status != asks.StatusExpired || after.Decision != "" || after.DecidedBy != "" || after.HasProof ||
				after.UsedNonces != 0 || after.Events != before.Events+1 {
				t.Fatalf("after: %+v; want expired (by the system), no decision, no proof, the nonce unused", after)
			}
			events, _ := s.env.Store.Timeline(ctx, s.env.Account.ID, id)
			if last := events[len(events)-1]; last.Step != "expired" || last.ActorKind != asks.ActorSystem {
				t.Fatalf("last event %+v; want expired by the system", last)
			}

			// An ask past its life that nobody has swept yet gets no challenge.
			late := s.prAsk(t, "")
			s.clock.advance(11 * time.Minute)
			before = s.state(t, late)
			refused(t, owner.Challenge(late, "approve", ""), http.StatusConflict, "FAILED_PRECONDITION")
			s.unchanged(t, late, before)
		})

		misbehaving := []struct {
			name string
			lie  apptest.Misbehaviour
		}{
			{"an assertion without the user-verified flag is refused", apptest.Misbehaviour{NoUserVerification: true}},
			{"an assertion from another origin is refused", apptest.Misbehaviour{Origin: "https://evil.example"}},
			{"an assertion naming another origin first and ours last is refused", apptest.Misbehaviour{OriginFirst: "https://evil.example"}},
			{"an assertion from another port of localhost is refused", apptest.Misbehaviour{Origin: "http://localhost:1"}},
			{"an assertion for another RP ID is refused", apptest.Misbehaviour{RPID: "evil.example"}},
			{"an assertion whose counter does not grow is refused", apptest.Misbehaviour{FrozenCounter: true}},
		}
		for _, tt := range misbehaving {
			t.Run(tt.name, func(t *testing.T) {
				id := s.prAsk(t, "")
				before := s.state(t, id)
				owner.Passkey.Misbehave = tt.lie
				r := owner.Decide(id, "approve", "")
				owner.Passkey.Misbehave = apptest.Misbehaviour{}
				refused(t, r, http.StatusForbidden, "PERMISSION_DENIED")
				s.unchanged(t, id, before)
				// The same passkey, behaving, decides it.
				if r := owner.Decide(id, "approve", ""); r.Status != http.StatusOK {
					t.Fatalf("decide after the lie: %s", r)
				}
			})
		}

		t.Run("an assertion whose counter goes back is refused", func(t *testing.T) {
			id := s.prAsk(t, "")
			before := s.state(t, id)
			saved := owner.Passkey.Counter
			owner.Passkey.Counter = 1
			r := owner.Decide(id, "approve", "")
			owner.Passkey.Counter = saved
			refused(t, r, http.StatusForbidden, "PERMISSION_DENIED")
			if r.Field() != "credential" {
				t.Fatalf("field %q, want credential", r.Field())
			}
			// It says what happened and what to do.
			if msg, _ := r.Body["message"].(string); !strings.Contains(msg, "Nothing was signed") || !strings.Contains(msg, "cloned") ||
				!strings.Contains(msg, "remove it under Devices") || !strings.Contains(msg, "add it again") {
				t.Errorf("the refusal says %q, want what happened and the next step (remove it under Devices, add it again)", msg)
			}
			s.unchanged(t, id, before)
		})

		t.Run("a member of another account can neither see nor decide the ask", func(t *testing.T) {
			other, err := s.env.Store.CreateAccount(ctx, "other")
			if err != nil {
				t.Fatal(err)
			}
			eve := join(t, s.env, other.ID, core.RoleOwner, "eve")

			decided := s.prAsk(t, "")
			if r := owner.Decide(decided, "approve", ""); r.Status != http.StatusOK {
				t.Fatalf("decide: %s", r)
			}
			if r := owner.Get("/approvals/" + decided + "/proof.json"); r.Status != http.StatusOK {
				t.Fatalf("the owner's proof.json: %s", r)
			}
			refused(t, eve.Get("/approvals/"+decided+"/proof.json"), http.StatusNotFound, "NOT_FOUND")

			id := s.prAsk(t, "")
			before := s.state(t, id)
			refused(t, eve.Challenge(id, "approve", ""), http.StatusNotFound, "NOT_FOUND")
			refused(t, eve.Decide(id, "deny", ""), http.StatusNotFound, "NOT_FOUND")
			s.unchanged(t, id, before)
			// Even holding ada's ceremony and signature, eve's session decides nothing.
			ceremony, _, credential := prompt(t, owner, id, "approve")
			before = s.state(t, id)
			refused(t, eve.DecideWith(id, ceremony, credential), http.StatusForbidden, "PERMISSION_DENIED")
			s.unchanged(t, id, before)
		})

		t.Run("a plain member decides only the asks asked of them", func(t *testing.T) {
			bob := join(t, s.env, s.env.Account.ID, core.RoleMember, "bob")
			forAdmins := s.prAsk(t, "")
			before := s.state(t, forAdmins)
			r := bob.Challenge(forAdmins, "approve", "")
			refused(t, r, http.StatusForbidden, "PERMISSION_DENIED")
			if r.Field() != "approval_id" {
				t.Fatalf("field %q, want approval_id", r.Field())
			}
			s.unchanged(t, forAdmins, before)
			ceremony, _, credential := prompt(t, owner, forAdmins, "approve")
			before = s.state(t, forAdmins)
			refused(t, bob.DecideWith(forAdmins, ceremony, credential), http.StatusForbidden, "PERMISSION_DENIED")
			s.unchanged(t, forAdmins, before)

			forBob := s.prAsk(t, "bob")
			before = s.state(t, forBob)
			refused(t, owner.Challenge(forBob, "approve", ""), http.StatusForbidden, "PERMISSION_DENIED")
			s.unchanged(t, forBob, before)
			if r := bob.Decide(forBob, "approve", ""); r.Status != http.StatusOK || r.Body["status"] != "approved" {
				t.Fatalf("bob decides his own ask: %s", r)
			}
			got := s.agent.OK("approvals_get", map[string]any{"approval_id": forBob})
			if got["decided_by"] != "bob" {
				t.Fatalf("decided_by %v, want bob", got["decided_by"])
			}
			s.checkProof(t, proofOf(t, got["proof"]), bob, forBob, got["payload_sha256"].(string), "approve", "bob")
		})

		t.Run("a POST without the CSRF token is refused and changes nothing", func(t *testing.T) {
			id := s.prAsk(t, "")
			before := s.state(t, id)
			body := map[string]string{"decision": "approve"}
			refused(t, owner.PostWithToken("/approvals/"+id+"/challenge", body, ""), http.StatusForbidden, "FORBIDDEN")
			refused(t, owner.PostWithToken("/approvals/"+id+"/challenge", body, "not-the-token-of-this-browser-at-all-000"), http.StatusForbidden, "FORBIDDEN")
			s.unchanged(t, id, before)
			if before.Nonces != 0 {
				t.Fatalf("a nonce was issued before any challenge: %+v", before)
			}

			ceremony, _, credential := prompt(t, owner, id, "approve")
			before = s.state(t, id)
			reply := map[string]any{"ceremony": ceremony, "credential": credential}
			refused(t, owner.PostWithToken("/approvals/"+id+"/decide", reply, ""), http.StatusForbidden, "FORBIDDEN")
			s.unchanged(t, id, before)
			// The refusal spent nothing: the same signature, sent with the token, decides.
			if r := owner.DecideWith(id, ceremony, credential); r.Status != http.StatusOK || r.Body["status"] != "approved" {
				t.Fatalf("decide with the token: %s", r)
			}
			refused(t, owner.PostWithToken("/signin/begin", map[string]string{}, ""), http.StatusForbidden, "FORBIDDEN")
		})
	})
}
