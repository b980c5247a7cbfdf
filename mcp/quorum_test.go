package mcp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/ask"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
	"github.com/countersign/countersign/models/policy"
	"github.com/countersign/countersign/models/rules"
	"github.com/countersign/countersign/proof"
)

// quorumScene is a service with two people who may decide a run (ada, the
// owner, and bob, an admin), each with a passkey in a browser of their own,
// an agent and an enrolled runner.
type quorumScene struct {
	env      *apptest.Env
	ada, bob *apptest.Browser
	agent    *apptest.Client
	runner   *apptest.TestRunner
}

func newQuorumScene(t *testing.T, db apptest.Database) *quorumScene {
	t.Helper()
	env := apptest.StartWeb(t, db, nil)
	s := &quorumScene{env: env,
		ada: env.Join(env.Account.ID, core.RoleOwner, "ada"),
		bob: env.Join(env.Account.ID, core.RoleAdmin, "bob")}
	_, token := env.Agent(env.Account.ID, "bot")
	s.agent = env.Connect(token)
	s.runner = env.EnrollRunner(env.Account.ID, "host-1")
	return s
}

// productionRun files a production run asked of ada and returns the answer.
func (s *quorumScene) productionRun(t *testing.T, c *apptest.Client) apptest.Result {
	t.Helper()
	return c.Call("approvals_create", s.runner.Ask("ada", apptest.ScriptSHA256([]byte("deploy")), []string{"deploy.sh"}, "production", 10*time.Minute))
}

// get reads the ask as its agent sees it.
func (s *quorumScene) get(t *testing.T, id string) map[string]any {
	t.Helper()
	return s.agent.OK("approvals_get", map[string]any{"approval_id": id})
}

func quorumSummary(out map[string]any) string {
	q, _ := out["quorum"].(map[string]any)
	s, _ := q["summary"].(string)
	return s
}

// bundleOf reads the proof bundle of a decided ask.
func bundleOf(t *testing.T, out map[string]any) *proof.Bundle {
	t.Helper()
	raw, err := json.Marshal(out["proof"])
	if err != nil {
		t.Fatal(err)
	}
	if !proof.IsBundle(raw) {
		t.Fatalf("the proof is not a bundle: %s", raw)
	}
	b, err := proof.ParseBundle(raw)
	if err != nil {
		t.Fatalf("parse bundle: %v", err)
	}
	return b
}

// addPasskey gives b's person a second passkey through the devices page
// (authorised by the first) and returns a browser with the same session
// that signs with it.
func addPasskey(t *testing.T, b *apptest.Browser) *apptest.Browser {
	t.Helper()
	begin := b.Post("/devices/authorise/begin", map[string]any{})
	if begin.Status != http.StatusOK {
		t.Fatalf("authorise begin: %s", begin)
	}
	id, options := begin.Ceremony()
	r := b.Post("/devices/authorise/finish", map[string]any{"ceremony": id, "credential": b.Sign(options)})
	grant, _ := r.Body["grant"].(string)
	if r.Status != http.StatusOK || grant == "" {
		t.Fatalf("authorise: %s", r)
	}
	key := apptest.NewAuthenticator()
	begin = b.Post("/devices/begin", map[string]string{"grant": grant, "device_name": "second phone"})
	if begin.Status != http.StatusOK {
		t.Fatalf("add begin: %s", begin)
	}
	id, options = begin.Ceremony()
	credential, err := key.Register(b.Origin, options)
	if err != nil {
		t.Fatalf("register: %v", err)
	}
	if r := b.Post("/devices/finish", map[string]any{"ceremony": id, "grant": grant, "credential": json.RawMessage(credential)}); r.Status != http.StatusOK {
		t.Fatalf("add finish: %s", r)
	}
	second := b.For(t)
	second.Passkey = key
	return second
}

func (s *quorumScene) keys(t *testing.T) *proof.Keys {
	t.Helper()
	k, err := proof.ParseKeys(s.env.KeysExport(s.env.Account.ID))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestAProductionRunNeedsTwoPeopleEachSigningOnceAndTheBundleVerifiesOffline(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := newQuorumScene(t, db)
		adaTwo := addPasskey(t, s.ada)

		filed := s.productionRun(t, s.agent)
		if filed.IsError {
			t.Fatalf("file: %s", filed)
		}
		id := filed.Out["approval_id"].(string)
		q, _ := filed.Out["quorum"].(map[string]any)
		if q["rule_id"] != rules.RuleProductionRun || q["count"] != float64(2) || !slices.Equal(strs(q["people"]), []string{"ada", "bob"}) ||
			quorumSummary(filed.Out) != "0 of 2 approved" {
			t.Fatalf("filed quorum = %v", q)
		}

		// Ada's second passkey gets its prompt before her first approval lands.
		early := adaTwo.Challenge(id, "approve", "")
		if early.Status != http.StatusOK {
			t.Fatalf("challenge with the second passkey: %s", early)
		}
		if r := s.ada.Decide(id, "approve", ""); r.Status != http.StatusOK {
			t.Fatalf("ada approves: %s", r)
		}
		got := s.get(t, id)
		if got["status"] != "pending" || quorumSummary(got) != "1 of 2 approved (ada)" || !slices.Equal(strs(got["signers"]), []string{"ada"}) {
			t.Fatalf("after one approval: status %v, quorum %q, signers %v", got["status"], quorumSummary(got), got["signers"])
		}
		if w := strs(got["quorum"].(map[string]any)["waiting"]); !slices.Equal(w, []string{"bob"}) {
			t.Errorf("waiting = %v, want [bob]", w)
		}

		// The same person again, with her other passkey: refused at the
		// prompt, and at the signature of the prompt she got before.
		if r := adaTwo.Challenge(id, "approve", ""); r.Status == http.StatusOK || !strings.Contains(r.String(), "the same person counts once") {
			t.Fatalf("a second approval by ada was offered a prompt: %s", r)
		}
		ceremony, options := early.Ceremony()
		if r := adaTwo.DecideWith(id, ceremony, adaTwo.Sign(options)); r.Status == http.StatusOK || !strings.Contains(r.String(), "the same person counts once") {
			t.Fatalf("ada's second passkey counted: %s", r)
		}
		if got := s.get(t, id); got["status"] != "pending" || quorumSummary(got) != "1 of 2 approved (ada)" {
			t.Fatalf("after the refused second signature: %v %q", got["status"], quorumSummary(got))
		}

		if r := s.bob.Decide(id, "approve", ""); r.Status != http.StatusOK {
			t.Fatalf("bob approves: %s", r)
		}
		got = s.get(t, id)
		if got["status"] != "approved" || got["decided_by"] != "bob" || !slices.Equal(strs(got["signers"]), []string{"ada", "bob"}) {
			t.Fatalf("after two: status %v decided_by %v signers %v", got["status"], got["decided_by"], got["signers"])
		}
		sigs, _ := got["signatures"].([]any)
		if len(sigs) != 2 || sigs[0].(map[string]any)["public_key"] == "" || sigs[1].(map[string]any)["signer"] != "bob" {
			t.Fatalf("signatures = %v", sigs)
		}

		keys := s.keys(t)
		want := proof.Expect{Origin: s.env.URL, Keys: keys}
		b := bundleOf(t, got)
		res, err := proof.VerifyBundle(b, want)
		if err != nil || res.Decision != "approve" || !slices.Equal(res.Signers, []string{"ada", "bob"}) {
			t.Fatalf("the bundle does not verify: %v %+v", err, res)
		}
		check := func(name string, b *proof.Bundle, failure string) {
			t.Run(name, func(t *testing.T) {
				_, err := proof.VerifyBundle(b, want)
				var f *proof.Failure
				if err == nil || !asFailure(err, &f) || f.Check != failure {
					t.Fatalf("verify = %v, want a %s failure", err, failure)
				}
			})
		}
		dropped := *b
		dropped.Proofs = b.Proofs[:1]
		check("a dropped signature fails", &dropped, "quorum")

		// A valid signature by ada's second passkey over the same payload,
		// decision and requirement: it cannot stand in for bob's.
		p, err := proof.Parse(b.Proofs[0])
		if err != nil {
			t.Fatal(err)
		}
		forged := signAs(t, adaTwo.Passkey, s.env.URL, p)
		swapped := *b
		swapped.Proofs = []json.RawMessage{b.Proofs[0], forged}
		check("a signature swapped for a second key of the same person fails", &swapped, "signers")

		edited := *b
		var r proof.Requirement
		if err := json.Unmarshal(b.Requirement, &r); err != nil {
			t.Fatal(err)
		}
		r.Count = 1
		edited.Requirement, _ = r.Canonical()
		check("an edited requirement fails", &edited, "requirement")
		edited.Proofs = nil
		for _, raw := range b.Proofs {
			var p map[string]any
			_ = json.Unmarshal(raw, &p)
			p["requirement"].(map[string]any)["count"] = 1
			raw, _ = json.Marshal(p)
			edited.Proofs = append(edited.Proofs, raw)
		}
		check("a requirement edited in every proof fails its challenge", &edited, "challenge")
	})
}

func asFailure(err error, f **proof.Failure) bool {
	ff, ok := err.(*proof.Failure)
	*f = ff
	return ok
}

// signAs makes, with key, a valid signature over the same approval,
// payload, decision and requirement as p (with a nonce of its own), as a
// person holding that key could: the proof it returns verifies alone.
func signAs(t *testing.T, key *apptest.Authenticator, origin string, p *proof.Proof) json.RawMessage {
	t.Helper()
	nonce := make([]byte, proof.NonceSize)
	nonce[0] = 7
	challenge, err := proof.DecisionChallenge(p.ApprovalID, p.PayloadSHA256, p.Decision, p.Requirement, nonce)
	if err != nil {
		t.Fatal(err)
	}
	opts, _ := json.Marshal(map[string]any{"challenge": b64(challenge), "rpId": p.RPID, "userVerification": "required"})
	raw, err := key.Assert(origin, opts)
	if err != nil {
		t.Fatal(err)
	}
	var cred struct {
		Response struct {
			ClientDataJSON    proof.B64 `json:"clientDataJSON"`
			AuthenticatorData proof.B64 `json:"authenticatorData"`
			Signature         proof.B64 `json:"signature"`
		} `json:"response"`
	}
	if err := json.Unmarshal(raw, &cred); err != nil {
		t.Fatal(err)
	}
	q := *p
	q.Nonce, q.CredentialID, q.PublicKey = nonce, key.CredentialID, key.PublicKeyCOSE()
	q.ClientDataJSON, q.AuthenticatorData, q.Signature = cred.Response.ClientDataJSON, cred.Response.AuthenticatorData, cred.Response.Signature
	out, err := json.Marshal(q)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func b64(b []byte) string {
	raw, _ := json.Marshal(proof.B64(b))
	return strings.Trim(string(raw), `"`)
}

func TestADenyByTheSecondPersonEndsTheAskDenied(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := newQuorumScene(t, db)
		id := s.productionRun(t, s.agent).Out["approval_id"].(string)
		if r := s.ada.Decide(id, "approve", ""); r.Status != http.StatusOK {
			t.Fatalf("ada approves: %s", r)
		}
		if r := s.bob.Decide(id, "deny", ""); r.Status != http.StatusOK {
			t.Fatalf("bob denies: %s", r)
		}
		got := s.get(t, id)
		q, _ := got["quorum"].(map[string]any)
		if got["status"] != "denied" || got["decided_by"] != "bob" || q["denied_by"] != "bob" || quorumSummary(got) != "1 of 2 approved (ada); denied by bob" {
			t.Fatalf("after bob's veto: status %v decided_by %v quorum %v", got["status"], got["decided_by"], q)
		}
		res, err := proof.VerifyBundle(bundleOf(t, got), proof.Expect{Origin: s.env.URL, Keys: s.keys(t)})
		if err != nil || res.Decision != "deny" {
			t.Fatalf("the veto's bundle: %v %+v", err, res)
		}
	})
}

func TestTheAgentsOwnPersonDoesNotCount(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := newQuorumScene(t, db)
		ctx := context.Background()
		_, adaToken, err := s.env.Store.CreateAgentFor(ctx, s.env.Account.ID, "adas-laptop", people.AllScopes, "ada")
		if err != nil {
			t.Fatal(err)
		}
		adas := s.env.Connect(adaToken)

		// ada and bob are the only people who may decide: without ada, one is left.
		r := s.productionRun(t, adas)
		if !r.IsError || r.Code != "FAILED_PRECONDITION" || !strings.Contains(r.Text, rules.RuleProductionRun) || !strings.Contains(r.Text, "ada, whom the requesting agent acts for, does not count") {
			t.Fatalf("a run only bob could approve was filed: %s", r)
		}

		cy := s.env.Join(s.env.Account.ID, core.RoleAdmin, "cy")
		filed := s.productionRun(t, adas)
		if filed.IsError {
			t.Fatalf("file with cy there: %s", filed)
		}
		id := filed.Out["approval_id"].(string)
		q := filed.Out["quorum"].(map[string]any)
		if !slices.Equal(strs(q["people"]), []string{"bob", "cy"}) {
			t.Fatalf("people = %v, want bob and cy: not ada", q["people"])
		}
		if r := s.ada.Decide(id, "approve", ""); r.Status == http.StatusOK || r.Status == 0 {
			t.Fatalf("ada approved her own agent's run: %s", r)
		}
		if r := s.bob.Decide(id, "approve", ""); r.Status != http.StatusOK {
			t.Fatalf("bob: %s", r)
		}
		if got := s.get(t, id); got["status"] != "pending" || quorumSummary(got) != "1 of 2 approved (bob)" {
			t.Fatalf("after bob: %v %q", got["status"], quorumSummary(got))
		}
		if r := cy.Decide(id, "approve", ""); r.Status != http.StatusOK {
			t.Fatalf("cy: %s", r)
		}
		if got := s.get(t, id); got["status"] != "approved" || !slices.Equal(strs(got["signers"]), []string{"bob", "cy"}) {
			t.Fatalf("after cy: %v %v", got["status"], got["signers"])
		}
	})
}

func TestARuleThatCannotBeMetIsRefusedAtFilingNamingIt(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := newQuorumScene(t, db)
		ctx := context.Background()
		if _, err := s.env.Store.SetRule(ctx, s.env.Account.ID, "three-for-merges", rules.RuleSpec{
			Kinds: []string{ask.KindPullRequest}, Count: 3, Pool: rules.Pool{Kind: rules.PoolRole, Role: rules.PoolAdmins}}, "cli:test"); err != nil {
			t.Fatal(err)
		}
		r := s.agent.Call("approvals_create", prAsk(901, "abcdef1234567"))
		if !r.IsError || r.Code != "FAILED_PRECONDITION" || !strings.Contains(r.Text, "rule three-for-merges") || !strings.Contains(r.Text, "has 2 people") {
			t.Fatalf("an ask nobody could approve was filed: %s", r)
		}
		var n int64
		s.env.Store.DB().Table("approvals").Where("kind = ?", ask.KindPullRequest).Count(&n)
		if n != 0 {
			t.Fatalf("%d asks were stored", n)
		}

		// A rule of two for every kind cannot cover a decision, which one person answers by picking an option.
		if _, err := s.env.Store.SetRule(ctx, s.env.Account.ID, "two-for-all", rules.RuleSpec{
			Count: 2, Pool: rules.Pool{Kind: rules.PoolRole, Role: rules.PoolAdmins}}, "cli:test"); err != nil {
			t.Fatal(err)
		}
		r = s.agent.Call("approvals_create", map[string]any{
			"kind": "decision", "title": "Pick the doc theme", "approve_means": "I use the theme you pick", "deny_means": "The theme stays",
			"payload": map[string]any{"decision": map[string]any{"options": []string{"Light", "Dark"}}},
			"context": map[string]any{"no_context_reason": "a theme choice"}})
		if !r.IsError || r.Code != "FAILED_PRECONDITION" || !strings.Contains(r.Text, "rule two-for-all") || !strings.Contains(r.Text, "picking an option") {
			t.Fatalf("a decision ask under a rule of two was filed: %s", r)
		}
	})
}

func TestAPolicyNeverCountsAsOneOfTheRulesPeople(t *testing.T) {
	s := newQuorumScene(t, apptest.SQLite)
	ctx := context.Background()
	// Two of two owners and admins for every review, and an auto-approve
	// policy for reviews that bob and ada both signed.
	if _, err := s.env.Store.SetRule(ctx, s.env.Account.ID, "two-for-reviews", rules.RuleSpec{
		Kinds: []string{ask.KindReview}, Count: 2, Pool: rules.Pool{Kind: rules.PoolRole, Role: rules.PoolAdmins}}, "cli:test"); err != nil {
		t.Fatal(err)
	}
	req := s.agent.OK("approvals_request_auto_approve", map[string]any{"scope": map[string]any{"ask_kinds": []string{"review"}},
		"until": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
	pid := req["approval_id"].(string)
	for _, b := range []*apptest.Browser{s.ada, s.bob} {
		if r := b.Decide(pid, "approve", ""); r.Status != http.StatusOK {
			t.Fatalf("approve the policy: %s", r)
		}
	}
	if got := s.get(t, pid); got["status"] != "approved" {
		t.Fatalf("the policy request is %v", got["status"])
	}
	review := s.agent.OK("approvals_create", map[string]any{"kind": "review", "title": "Review the notes", "summary": "Release notes.",
		"approve_means": "they ship", "deny_means": "they wait",
		"payload": map[string]any{"review": map[string]any{"url": "https://example.com/notes"}},
		"context": map[string]any{"no_context_reason": "a test"}})
	if review["status"] != "pending" {
		t.Fatalf("a policy approved an ask the rule gives to two people: %v", review["status"])
	}
	var skipped bool
	for _, e := range review["timeline"].([]any) {
		ev := e.(map[string]any)
		skipped = skipped || ev["step"] == policy.StepPolicySkipped && strings.Contains(ev["note"].(string), "a policy is none of them")
	}
	if !skipped {
		t.Errorf("the timeline does not say why the policy stood aside: %v", review["timeline"])
	}
}

func TestARuleChangeItselfNeedsTheQuorum(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := newQuorumScene(t, db)
		ctx := context.Background()
		ada, err := s.env.Store.MemberBySubject(ctx, s.env.Account.ID, "ada")
		if err != nil {
			t.Fatal(err)
		}
		a, err := s.env.Store.ProposeRuleChange(ctx, ada, models.RuleChange{Action: models.RuleChangeRemove, RuleID: rules.RuleProductionRun})
		if err != nil {
			t.Fatalf("propose: %v", err)
		}
		if req := a.RequirementOf(); req == nil || req.RuleID != rules.RuleRuleChange || req.Count != 2 {
			t.Fatalf("the rule change's requirement = %+v", req)
		}
		if r := s.ada.Decide(a.ID, "approve", ""); r.Status != http.StatusOK {
			t.Fatalf("ada signs her proposal: %s", r)
		}
		if _, err := s.env.Store.RuleByID(ctx, s.env.Account.ID, rules.RuleProductionRun); err != nil {
			t.Fatalf("one signature removed the rule: %v", err)
		}
		if r := s.productionRun(t, s.agent); r.IsError || r.Out["quorum"] == nil {
			t.Fatalf("a production run no longer needs two after one signature: %s", r)
		}
		if r := s.bob.Decide(a.ID, "approve", ""); r.Status != http.StatusOK {
			t.Fatalf("bob signs: %s", r)
		}
		if _, err := s.env.Store.RuleByID(ctx, s.env.Account.ID, rules.RuleProductionRun); core.CodeOf(err) != core.NotFound {
			t.Fatalf("the approved change did not remove the rule: %v", err)
		}
		if r := s.productionRun(t, s.agent); r.IsError || r.Out["quorum"] != nil {
			t.Fatalf("a production run still needs two after the rule was removed: %s", r)
		}
		var audited int64
		s.env.Store.DB().Table("events").Where("account_id = ? AND step = ? AND approval_id = ''", s.env.Account.ID, rules.StepRuleRemoved).Count(&audited)
		if audited != 1 {
			t.Errorf("%d rule_removed events on the audit log, want 1", audited)
		}
	})
}

func TestTwoApprovalsAtTheSameInstantCompleteTheQuorumOnce(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := newQuorumScene(t, db)
		cy := s.env.Join(s.env.Account.ID, core.RoleAdmin, "cy")
		for round := range 3 {
			id := s.productionRun(t, s.agent).Out["approval_id"].(string)
			if r := s.ada.Decide(id, "approve", ""); r.Status != http.StatusOK {
				t.Fatalf("ada: %s", r)
			}
			type signed struct {
				b         *apptest.Browser
				ceremony  string
				signature json.RawMessage
			}
			var ready []signed
			for _, b := range []*apptest.Browser{s.bob, cy} {
				ch := b.Challenge(id, "approve", "")
				if ch.Status != http.StatusOK {
					t.Fatalf("challenge: %s", ch)
				}
				c, o := ch.Ceremony()
				ready = append(ready, signed{b, c, b.Sign(o)})
			}
			answers := make([]apptest.Response, len(ready))
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i, r := range ready {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					answers[i] = r.b.DecideWith(id, r.ceremony, r.signature)
				}()
			}
			close(start)
			wg.Wait()
			ok := 0
			for _, a := range answers {
				if a.Status == http.StatusOK {
					ok++
				}
			}
			got := s.get(t, id)
			if ok != 1 || got["status"] != "approved" || eventCount(t, s.env, id, string(asks.EventApprove)) != 1 || len(strs(got["signers"])) != 2 {
				t.Fatalf("round %d: %d answers succeeded (%v), status %v, %d approved events, signers %v",
					round, ok, answers, got["status"], eventCount(t, s.env, id, string(asks.EventApprove)), got["signers"])
			}
		}
	})
}

func TestAnApprovalRacingExpiryNeverApprovesAfterTheDeadline(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := newQuorumScene(t, db)
		ctx := context.Background()
		for round := range 3 {
			id := s.productionRun(t, s.agent).Out["approval_id"].(string)
			if r := s.ada.Decide(id, "approve", ""); r.Status != http.StatusOK {
				t.Fatalf("ada: %s", r)
			}
			ch := s.bob.Challenge(id, "approve", "")
			if ch.Status != http.StatusOK {
				t.Fatalf("challenge: %s", ch)
			}
			c, o := ch.Ceremony()
			signature := s.bob.Sign(o)
			a, err := s.env.Store.GetApproval(ctx, s.env.Account.ID, id)
			if err != nil {
				t.Fatal(err)
			}
			// The deadline passes as bob's signature lands and the sweeper runs.
			s.env.Store.SetClock(func() time.Time { return a.ExpiresAt.Add(time.Millisecond) })
			var answer apptest.Response
			var wg sync.WaitGroup
			wg.Add(2)
			go func() { defer wg.Done(); answer = s.bob.DecideWith(id, c, signature) }()
			go func() { defer wg.Done(); _, _ = s.env.Store.ExpireDue(ctx) }()
			wg.Wait()
			s.env.Store.SetClock(time.Now)
			got := s.get(t, id)
			if answer.Status == http.StatusOK || got["status"] != "expired" || eventCount(t, s.env, id, string(asks.EventApprove)) != 0 {
				t.Fatalf("round %d: bob's answer %s, status %v", round, answer, got["status"])
			}
		}
	})
}
