package mcp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/ask"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/outbox"
	"github.com/countersign/countersign/models/people"
	"github.com/countersign/countersign/models/policy"
	"github.com/countersign/countersign/proof"
)

// policyWorld is a service reached at http://localhost (so that passkeys
// work), with a local push service, an owner (ada) signed in with a
// passkey and subscribed to pushes, a member (bob), and two agents: bot,
// which asks for auto-approve, and other.
type policyWorld struct {
	env   *apptest.Env
	ps    *apptest.PushService
	ada   *apptest.Browser
	adaID string
	bob   *people.Member
	bot   *apptest.Client
	other *apptest.Client
}

func newPolicyWorld(t *testing.T, db apptest.Database) *policyWorld {
	t.Helper()
	ctx := context.Background()
	ps := apptest.NewPushService(t)
	env := apptest.StartWeb(t, db, map[string]string{"COUNTERSIGN_PUSH_ALLOWED_HOSTS": ps.Host(), "COUNTERSIGN_PUSH_RETRY": "10ms"})
	w := &policyWorld{env: env, ps: ps}
	// Registered after the service, so it runs before the service stops: a
	// push cut off by the shutdown would reach the push service half sent.
	t.Cleanup(func() { drainPushes(t, env) })
	token, _, err := env.Store.CreateInvite(ctx, people.NewInvite{AccountID: env.Account.ID, Role: core.RoleOwner, By: people.OperatorInviter("test")})
	if err != nil {
		t.Fatalf("create invite: %v", err)
	}
	w.ada = apptest.NewBrowser(t, env.URL)
	if r := w.ada.AcceptInvite(token, "ada"); r.Status != http.StatusOK || w.ada.Session() == "" {
		t.Fatalf("ada accepts the invite: %s", r)
	}
	m, err := env.Store.MemberBySubject(ctx, env.Account.ID, "ada")
	if err != nil {
		t.Fatal(err)
	}
	w.adaID = m.ID
	endpoint, p256dh, auth := ps.Subscribe("ada-phone")
	if _, err := env.Store.SavePushSubscription(ctx, m.ID, outbox.PushSubscription{Endpoint: endpoint, P256dh: p256dh, Auth: auth, UserAgent: "test phone"}); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	w.bob = env.Member(env.Account.ID, "bob", core.RoleMember)
	_, botToken := env.Agent(env.Account.ID, "bot")
	_, otherToken := env.Agent(env.Account.ID, "other")
	w.bot, w.other = env.Connect(botToken), env.Connect(otherToken)
	return w
}

// drainPushes waits until the outbox holds no push still to send.
func drainPushes(t *testing.T, env *apptest.Env) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int64
		// A collapsed push waits its delay on purpose: only due pushes count.
		if err := env.Store.DB().Table("push_jobs").Where("done_at IS NULL AND not_before <= ?", env.Store.Now()).Count(&n).Error; err != nil {
			t.Errorf("count queued pushes: %v", err)
			return
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%d pushes still queued 10 s after the test", n)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// until is an RFC 3339 time d from now, as an agent sends it.
func until(d time.Duration) string { return time.Now().Add(d).UTC().Format(time.RFC3339) }

// request files an auto_approve ask as bot and returns its output.
func (w *policyWorld) request(t *testing.T, args map[string]any) map[string]any {
	t.Helper()
	out := w.bot.OK("approvals_request_auto_approve", args)
	if out["kind"] != "auto_approve" || out["status"] != "pending" {
		t.Fatalf("approvals_request_auto_approve filed %v", out)
	}
	asFiled(t, w.bot, out)
	return out
}

// asFiled checks that what a tool answered on filing an ask, its timeline
// too, is what approvals_get reads right after.
func asFiled(t *testing.T, c *apptest.Client, filed map[string]any) {
	t.Helper()
	if got := c.OK("approvals_get", map[string]any{"approval_id": filed["approval_id"]}); !reflect.DeepEqual(got, filed) {
		t.Errorf("filed as\n%v\nread back as\n%v", filed, got)
	}
}

// approveOverHTTP has ada approve the ask with her passkey.
func (w *policyWorld) approveOverHTTP(t *testing.T, id string) {
	t.Helper()
	r := w.ada.Decide(id, "approve", "")
	if r.Status != http.StatusOK || r.Body["status"] != "approved" {
		t.Fatalf("ada approves %s: %s", id, r)
	}
}

// enable requests a policy with args and has ada sign it; it returns the
// enabling ask's id and the policy as approvals_get_auto_approve_policy shows it.
func (w *policyWorld) enable(t *testing.T, args map[string]any) (string, map[string]any) {
	t.Helper()
	id := w.request(t, args)["approval_id"].(string)
	w.approveOverHTTP(t, id)
	return id, w.policy(t)
}

// policy reads the account's policy as bot; it fails when there is none.
func (w *policyWorld) policy(t *testing.T) map[string]any {
	t.Helper()
	out := w.bot.OK("approvals_get_auto_approve_policy", map[string]any{})
	p, ok := out["policy"].(map[string]any)
	if !ok {
		t.Fatalf("approvals_get_auto_approve_policy = %v, want a policy", out)
	}
	return p
}

// harmless is a review ask no always-ask word is in.
func harmless(title string) map[string]any {
	return map[string]any{
		"kind": "review", "title": title, "summary": "A short read of the onboarding doc draft.",
		"approve_means": "I mark the review done", "deny_means": "The review waits",
		"payload": map[string]any{"review": map[string]any{"url": "https://docs.example.com/onboarding/" + strings.ReplaceAll(strings.ToLower(title), " ", "-")}},
	}
}

// timelineOf reads the timeline of an approvals_get or create answer.
func timelineOf(t *testing.T, out map[string]any) []map[string]any {
	t.Helper()
	raw, _ := out["timeline"].([]any)
	events := make([]map[string]any, len(raw))
	for i, e := range raw {
		events[i] = e.(map[string]any)
	}
	return events
}

// stepsOf lists the steps of a timeline.
func stepsOf(events []map[string]any) []string {
	var steps []string
	for _, e := range events {
		steps = append(steps, e["step"].(string))
	}
	return steps
}

// eventWith returns the one event of a timeline with step, failing unless there is exactly one.
func eventWith(t *testing.T, events []map[string]any, step string) map[string]any {
	t.Helper()
	var found []map[string]any
	for _, e := range events {
		if e["step"] == step {
			found = append(found, e)
		}
	}
	if len(found) != 1 {
		t.Fatalf("timeline %v has %d %q events, want 1", stepsOf(events), len(found), step)
	}
	return found[0]
}

// pushJobs counts the pushes queued for an approval.
func pushJobs(t *testing.T, env *apptest.Env, approvalID string) int64 {
	t.Helper()
	var n int64
	if err := env.Store.DB().Table("push_jobs").Where("approval_id = ?", approvalID).Count(&n).Error; err != nil {
		t.Fatalf("count push jobs: %v", err)
	}
	return n
}

// timeOf reads an RFC 3339 time field of a tool output.
func timeOf(t *testing.T, out map[string]any, name string) time.Time {
	t.Helper()
	s, _ := out[name].(string)
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("%s = %v, want an RFC 3339 time", name, out[name])
	}
	return at
}

// mustStayPending files an ask and checks that it is pending, not auto-approved.
func mustStayPending(t *testing.T, c *apptest.Client, args map[string]any, why string) map[string]any {
	t.Helper()
	out := c.OK("approvals_create", args)
	if out["status"] != "pending" || out["decided_by"] != nil {
		t.Errorf("%s: the ask came back %v decided by %v, want pending", why, out["status"], out["decided_by"])
	}
	if slices.Contains(stepsOf(timelineOf(t, out)), "auto_approved") {
		t.Errorf("%s: the timeline has an auto_approved event", why)
	}
	return out
}

// RFC 3339 lets T and Z be written in lower case and a time carry any
// offset: until is read so, frozen in the payload as that instant in UTC, and
// the request's expiry is that instant too, in UTC like every time answered
// (w.request reads the ask back and compares).
func TestUntilIsReadAsRFC3339WritesIt(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		w := newPolicyWorld(t, db)
		at := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Second)
		want := at.Format(time.RFC3339)
		for _, written := range []string{strings.ToLower(want), at.In(time.FixedZone("", 5*3600+30*60)).Format(time.RFC3339)} {
			req := w.request(t, map[string]any{"until": written, "device": "mac"})
			if got := req["payload"].(map[string]any)["auto_approve"].(map[string]any)["until"]; got != want {
				t.Errorf("until %q is frozen as %v, want %s", written, got, want)
			}
		}
	})
}

func TestAnAutoApprovePolicyFromRequestToRevoke(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		w := newPolicyWorld(t, db)
		env := w.env
		end := until(2 * time.Hour)

		// The request: an auto_approve ask, pushed at once.
		req := w.request(t, map[string]any{
			"until": end, "device": "mac",
			"scope": map[string]any{"ask_kinds": []string{"review"}, "requesters": []string{"agent:bot"}},
		})
		reqID := req["approval_id"].(string)
		if req["requester"] != "agent:bot" || req["asked_of"] != nil || req["agent"] != "mac" {
			t.Errorf("request = requester %v, asked_of %v, agent %v; want agent:bot, the owners and admins, mac", req["requester"], req["asked_of"], req["agent"])
		}
		if s, _ := req["summary"].(string); !strings.Contains(s, "agent:bot asks that new asks of kind review, filed by agent:bot, be approved without asking you until "+end) {
			t.Errorf("the request's summary reads %q", s)
		}
		wantPayload := map[string]any{"auto_approve": map[string]any{
			"device": "mac", "requester": "agent:bot", "until": end,
			"scope": map[string]any{"ask_kinds": []any{"review"}, "max_priority": float64(0), "requesters": []any{"agent:bot"}},
		}}
		if !reflect.DeepEqual(req["payload"], wantPayload) {
			t.Errorf("payload = %v, want %v", req["payload"], wantPayload)
		}
		if _, sum, err := ask.CanonicalHash(mustMarshal(t, req["payload"])); err != nil || sum != req["payload_sha256"] {
			t.Errorf("payload_sha256 = %v, want the hash of the canonical payload %s (%v)", req["payload_sha256"], sum, err)
		}
		if got := timeOf(t, req, "expires_at"); !got.Equal(mustTime(t, end)) {
			t.Errorf("the request expires at %s, want its until %s: it is moot after", got, end)
		}
		if e := eventWith(t, timelineOf(t, req), "auto_approve_requested"); e["by"] != "agent" || e["actor"] != "agent:bot" || e["note"] != "asked from mac" {
			t.Errorf("the device is not on the timeline: %v", e)
		}
		d, ok := w.ps.Next(10 * time.Second)
		if !ok {
			t.Fatal("the request was not pushed")
		}
		var msg outbox.PushMessage
		if err := json.Unmarshal(d.Plaintext, &msg); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(msg.URL, "/link/"+reqID+"/") || msg.Notification == nil {
			t.Errorf("the push opens %q (declarative %+v), want the request's one-time link", msg.URL, msg.Notification)
		}
		msg.URL, msg.Notification = "", nil
		if want := (outbox.PushMessage{Event: outbox.PushAsk, ApprovalID: reqID, Title: req["title"].(string), WebPush: outbox.DeclarativeWebPush}); msg != want || d.Device != "ada-phone" {
			t.Errorf("push to %s = %+v, want %+v to ada-phone", d.Device, msg, want)
		}

		// The agent cannot approve it: no tool answers an ask, and an
		// answer without a device-key signature is refused.
		for _, step := range []string{"started", "step", "answered", "done", "failed"} {
			args := map[string]any{"approval_id": reqID, "step": step, "note": "approve it"}
			if step == "started" {
				args["observed"] = req["payload"]
			}
			r := w.bot.Call("approvals_add_progress", args)
			if !r.IsError || r.Code != string(core.FailedPrecondition) {
				t.Errorf("approvals_add_progress %s on the request: %s, want FAILED_PRECONDITION", step, r)
			}
		}
		adaMember, err := env.Store.MemberBySubject(ctx, env.Account.ID, "ada")
		if err != nil {
			t.Fatal(err)
		}
		_, err = env.Store.Decide(ctx, env.Account.ID, reqID, adaMember, asks.Decision{Verdict: asks.VerdictApprove})
		if core.CodeOf(err) != core.PermissionDenied || core.FieldOf(err) != "proof" {
			t.Errorf("approving without a signature: %v, want PERMISSION_DENIED on proof", err)
		}
		if out := w.bot.OK("approvals_get_auto_approve_policy", map[string]any{}); out["policy"] != nil {
			t.Fatalf("a policy is on before anyone signed: %v", out)
		}
		if st, _ := approvalRow(t, env, reqID); st != asks.StatusPending {
			t.Fatalf("the request is %s, want pending", st)
		}

		// Ada signs it over HTTP with her passkey.
		w.approveOverHTTP(t, reqID)
		signed := w.bot.OK("approvals_get", map[string]any{"approval_id": reqID})
		if signed["status"] != "approved" || signed["decided_by"] != "ada" || signed["decision"] != "approve" {
			t.Fatalf("the request after ada's approval = %v by %v", signed["status"], signed["decided_by"])
		}
		var pr proof.Proof
		if err := json.Unmarshal(mustMarshal(t, signed["proof"]), &pr); err != nil {
			t.Fatalf("proof: %v", err)
		}
		if res, err := proof.Verify(&pr, proof.Expect{RPID: "localhost", Origin: w.env.URL}); err != nil || res.ApprovalID != reqID || res.Decision != "approve" ||
			res.PayloadSHA256 != req["payload_sha256"] || res.CredentialID != w.ada.Passkey.CredentialIDString() {
			t.Errorf("the request's proof does not verify as ada's approval: %+v, %v", res, err)
		}
		pol := w.policy(t)
		polID, _ := pol["policy_id"].(string)
		enabled := eventWith(t, timelineOf(t, signed), "policy_enabled")
		if enabled["actor"] != "ada" || !strings.Contains(enabled["note"].(string), polID) {
			t.Errorf("policy_enabled event = %v, want ada turning on %s", enabled, polID)
		}
		wantScope := map[string]any{"ask_kinds": []any{"review"}, "max_priority": float64(0), "requesters": []any{"agent:bot"}}
		if pol["active"] != true || pol["approval_id"] != reqID || !reflect.DeepEqual(pol["scope"], wantScope) ||
			pol["signed_by"] != "ada" || pol["credential_id"] != w.ada.Passkey.CredentialIDString() ||
			pol["approved_count"] != float64(0) || pol["last_approved_at"] != nil || pol["revoked_at"] != nil || pol["inactive_reason"] != nil ||
			!strings.HasPrefix(polID, "pol_") {
			t.Fatalf("policy = %v", pol)
		}
		if got := timeOf(t, pol, "expires_at"); !got.Equal(mustTime(t, end)) {
			t.Errorf("expires_at = %s, want the until %s", got, end)
		}
		if signedAt := timeOf(t, pol, "signed_at"); time.Since(signedAt) > time.Minute || time.Until(signedAt) > time.Minute {
			t.Errorf("signed_at = %s, want about now", signedAt)
		}

		// A matching ask comes back approved, in ada's name, by the policy.
		matching := w.bot.OK("approvals_create", harmless("Read the onboarding doc"))
		asFiled(t, w.bot, matching)
		matchID := matching["approval_id"].(string)
		if matching["status"] != "approved" || matching["decided_by"] != "ada" || matching["decision"] != "approve" || matching["decided_at"] == nil {
			t.Fatalf("the matching ask = %v decided by %v (%v)", matching["status"], matching["decided_by"], matching["decision"])
		}
		auto := eventWith(t, timelineOf(t, matching), "auto_approved")
		if auto["by"] != "policy" || auto["actor"] != polID || auto["from"] != "pending" || auto["to"] != "approved" ||
			!strings.Contains(auto["note"].(string), polID) || !strings.Contains(auto["note"].(string), "ada") {
			t.Errorf("auto_approved event = %v, want the policy %s and its signer ada", auto, polID)
		}
		if got := w.bot.OK("approvals_get", map[string]any{"approval_id": matchID}); got["status"] != "approved" || got["decided_by"] != "ada" {
			t.Errorf("approvals_get of the matching ask = %v by %v", got["status"], got["decided_by"])
		}
		if n := pushJobs(t, env, matchID); n != 0 {
			t.Errorf("%d pushes queued for an auto-approved ask, want none", n)
		}
		pol = w.policy(t)
		if pol["approved_count"] != float64(1) || pol["last_approved_at"] == nil {
			t.Errorf("after one auto-approval: approved_count %v, last_approved_at %v", pol["approved_count"], pol["last_approved_at"])
		}
		// Asked of ada by name: she could decide it, so the policy covers it.
		askedOfAda := w.bot.OK("approvals_create", withArgs(harmless("Read the glossary"), "asked_of", "ada"))
		if askedOfAda["status"] != "approved" || askedOfAda["decided_by"] != "ada" {
			t.Errorf("an ask of ada = %v by %v, want approved by ada", askedOfAda["status"], askedOfAda["decided_by"])
		}

		// What keeps asking.
		alwaysAsk := mustStayPending(t, w.bot, harmless("Delete the old bucket"), "an always-ask title")
		asFiled(t, w.bot, alwaysAsk)
		skipped := eventWith(t, timelineOf(t, alwaysAsk), "policy_skipped")
		if skipped["by"] != "policy" || skipped["actor"] != polID || skipped["note"] != "keeps asking: a delete" {
			t.Errorf("policy_skipped event = %v", skipped)
		}
		if n := pushJobs(t, env, alwaysAsk["approval_id"].(string)); n == 0 {
			t.Errorf("the ask that keeps asking was not pushed")
		}
		mustStayPending(t, w.bot, prAsk(900, "abcdef1234567"), "a pull_request ask")
		mustStayPending(t, w.bot, map[string]any{
			"kind": "decision", "title": "Pick the doc theme", "approve_means": "I use the theme you pick", "deny_means": "The theme stays",
			"payload": map[string]any{"decision": map[string]any{"options": []string{"Light", "Dark"}}},
			"context": map[string]any{"no_context_reason": "a theme choice"},
		}, "a decision ask")
		mustStayPending(t, w.bot, map[string]any{
			"kind": "document", "title": "Read the style guide", "approve_means": "I mark the review done", "deny_means": "The review waits",
			"payload": map[string]any{"document": map[string]any{"document_id": "doc_style", "version": 0}},
		}, "a kind outside the scope")
		mustStayPending(t, w.other, harmless("Read the onboarding doc"), "another requester")
		mustStayPending(t, w.bot, withArgs(harmless("Read the team page"), "asked_of", "bob"), "an ask of another person")
		if pol = w.policy(t); pol["approved_count"] != float64(2) {
			t.Errorf("approved_count = %v, want 2", pol["approved_count"])
		}

		// Revoke: at once, twice is harmless, the note on the enabling ask.
		revoked := w.bot.OK("approvals_revoke_auto_approve_policy", map[string]any{"note": "the docs sprint is over"})
		rp, _ := revoked["policy"].(map[string]any)
		if rp["policy_id"] != polID || rp["active"] != false || rp["inactive_reason"] != "revoked" || rp["revoked_by"] != "agent:bot" || rp["revoked_at"] == nil {
			t.Fatalf("after revoke: %v", rp)
		}
		again := w.bot.OK("approvals_revoke_auto_approve_policy", map[string]any{"note": "once more"})
		if !reflect.DeepEqual(again, revoked) {
			t.Errorf("a second revoke answered\n%v\nwant the same as the first\n%v", again, revoked)
		}
		if got := w.bot.OK("approvals_get_auto_approve_policy", map[string]any{}); !reflect.DeepEqual(got, revoked) {
			t.Errorf("get after revoke = %v, want %v", got, revoked)
		}
		reqTimeline := timelineOf(t, w.bot.OK("approvals_get", map[string]any{"approval_id": reqID}))
		if e := eventWith(t, reqTimeline, "policy_revoked"); e["actor"] != "agent:bot" || e["by"] != "agent" || !strings.Contains(e["note"].(string), "the docs sprint is over") {
			t.Errorf("policy_revoked event = %v", e)
		}
		mustStayPending(t, w.bot, harmless("Read the onboarding doc"), "an ask after the revoke")
	})
}

func TestANewerPolicyReplacesTheOlderOnBoth(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		w := newPolicyWorld(t, db)
		firstAsk, first := w.enable(t, map[string]any{"until": until(3 * time.Hour)})
		secondAsk, second := w.enable(t, map[string]any{"until": until(5 * time.Hour), "scope": map[string]any{"requesters": []string{"agent:other"}}})
		firstID, secondID := first["policy_id"].(string), second["policy_id"].(string)
		if firstID == secondID || second["active"] != true || second["replaces"] != firstID || second["approval_id"] != secondAsk {
			t.Fatalf("the newer policy = %v, want active, replacing %s", second, firstID)
		}
		rows, _, err := w.env.Store.PolicyList(ctx, w.env.Account.ID, policy.PolicyFilter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 2 || rows[1].ID != firstID {
			t.Fatalf("policy list = %d rows, want the newer and the older", len(rows))
		}
		older := rows[1]
		if older.RevokedAt == nil || older.ReplacedBy != secondID || older.RevokedBy != "ada" || older.Active || older.State() != policy.PolicyRevoked {
			t.Errorf("the older policy = revoked %v, replaced_by %q, revoked_by %q, active %t", older.RevokedAt, older.ReplacedBy, older.RevokedBy, older.Active)
		}
		replaced := eventWith(t, timelineOf(t, w.bot.OK("approvals_get", map[string]any{"approval_id": firstAsk})), "policy_replaced")
		if !strings.Contains(replaced["note"].(string), secondID) || replaced["actor"] != "ada" {
			t.Errorf("policy_replaced on the older request = %v", replaced)
		}
		enabled := eventWith(t, timelineOf(t, w.bot.OK("approvals_get", map[string]any{"approval_id": secondAsk})), "policy_enabled")
		if !strings.Contains(enabled["note"].(string), "replacing "+firstID) {
			t.Errorf("policy_enabled on the newer request = %v", enabled)
		}
		// The newer scope rules: bot's asks wait, other's are approved by the newer policy.
		mustStayPending(t, w.bot, harmless("Read the onboarding doc"), "a requester only the older policy covered")
		out := w.other.OK("approvals_create", harmless("Read the onboarding doc"))
		if out["status"] != "approved" || eventWith(t, timelineOf(t, out), "auto_approved")["actor"] != secondID {
			t.Errorf("other's ask = %v, want approved by %s", out["status"], secondID)
		}
	})
}

func TestAnExpiredPolicyIsOffAndAsksWait(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		w := newPolicyWorld(t, db)
		end := until(time.Hour)
		_, pol := w.enable(t, map[string]any{"until": end})
		if out := w.bot.OK("approvals_create", harmless("Read the onboarding doc")); out["status"] != "approved" {
			t.Fatalf("before expiry the ask is %v, want approved", out["status"])
		}
		w.env.Store.SetClock(func() time.Time { return mustTime(t, end).Add(time.Second) })
		got := w.policy(t)
		if got["policy_id"] != pol["policy_id"] || got["active"] != false || got["inactive_reason"] != "expired" || got["revoked_at"] != nil || got["approved_count"] != float64(1) {
			t.Fatalf("after its until: %v, want inactive (expired)", got)
		}
		mustStayPending(t, w.bot, harmless("Read the glossary"), "an ask after expiry")
		// Revoking an expired policy changes nothing.
		if r := w.bot.OK("approvals_revoke_auto_approve_policy", map[string]any{}); r["policy"].(map[string]any)["inactive_reason"] != "expired" {
			t.Errorf("revoking an expired policy: %v, want it still expired", r)
		}
	})
}

func TestRemovingTheSigningPasskeyTurnsThePolicyOff(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		w := newPolicyWorld(t, db)
		_, pol := w.enable(t, map[string]any{"until": until(time.Hour)})
		if err := apptest.SeedDeviceKey(ctx, w.env.Store, w.adaID, people.DeviceKey{ID: "ipad-key", Name: "iPad", Credential: "{}", PublicKey: "AQ"}); err != nil {
			t.Fatal(err)
		}
		// Another passkey of ada's going does not matter.
		if err := apptest.SeedDeviceKey(ctx, w.env.Store, w.adaID, people.DeviceKey{ID: "old-key", Name: "old", Credential: "{}", PublicKey: "AQ"}); err != nil {
			t.Fatal(err)
		}
		if err := w.env.Store.RemoveDeviceKey(ctx, w.adaID, "old-key"); err != nil {
			t.Fatal(err)
		}
		if got := w.policy(t); got["active"] != true {
			t.Fatalf("removing a passkey that did not sign turned the policy off: %v", got)
		}
		if err := w.env.Store.RemoveDeviceKey(ctx, w.adaID, w.ada.Passkey.CredentialIDString()); err != nil {
			t.Fatalf("remove the signing passkey: %v", err)
		}
		got := w.policy(t)
		if got["policy_id"] != pol["policy_id"] || got["active"] != false || got["inactive_reason"] != "the signing passkey was removed" || got["revoked_at"] != nil {
			t.Fatalf("after the signing passkey went: %v", got)
		}
		mustStayPending(t, w.bot, harmless("Read the onboarding doc"), "an ask after the passkey went")
	})
}

func TestEveryAutoApproveToolRefusesBadArguments(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		w := newPolicyWorld(t, db)
		other, err := w.env.Store.CreateAccount(ctx, "other")
		if err != nil {
			t.Fatal(err)
		}
		w.env.Agent(other.ID, "stranger") // agent:stranger exists, in another account
		const (
			request = "approvals_request_auto_approve"
			get     = "approvals_get_auto_approve_policy"
			revoke  = "approvals_revoke_auto_approve_policy"
		)
		ok := until(time.Hour)
		scope := func(kv ...any) map[string]any {
			s := map[string]any{}
			for i := 0; i+1 < len(kv); i += 2 {
				s[kv[i].(string)] = kv[i+1]
			}
			return map[string]any{"until": ok, "scope": s}
		}
		cases := []struct {
			name, tool string
			args       map[string]any
			code       core.Code
			field      string
		}{
			{"a request without until", request, map[string]any{"device": "mac"}, core.InvalidArgument, "until"},
			{"until in words", request, map[string]any{"until": "tomorrow"}, core.InvalidArgument, "until"},
			{"until without a zone", request, map[string]any{"until": time.Now().Add(time.Hour).Format("2006-01-02T15:04:05")}, core.InvalidArgument, "until"},
			{"until with a space for T", request, map[string]any{"until": time.Now().Add(time.Hour).UTC().Format("2006-01-02 15:04:05Z")}, core.InvalidArgument, "until"},
			{"until in the past", request, map[string]any{"until": until(-time.Minute)}, core.InvalidArgument, "until"},
			{"until more than 24 hours ahead", request, map[string]any{"until": until(24*time.Hour + time.Minute)}, core.InvalidArgument, "until"},
			{"ask_kinds with pull_request", request, scope("ask_kinds", []string{"review", "pull_request"}), core.InvalidArgument, "scope.ask_kinds[1]"},
			{"ask_kinds with roll", request, scope("ask_kinds", []string{"roll"}), core.InvalidArgument, "scope.ask_kinds[0]"},
			{"ask_kinds with run", request, scope("ask_kinds", []string{"run"}), core.InvalidArgument, "scope.ask_kinds[0]"},
			{"ask_kinds with auto_approve", request, scope("ask_kinds", []string{"document", "auto_approve"}), core.InvalidArgument, "scope.ask_kinds[1]"},
			{"ask_kinds with decision", request, scope("ask_kinds", []string{"review", "decision"}), core.InvalidArgument, "scope.ask_kinds[1]"},
			{"ask_kinds with an unknown kind", request, scope("ask_kinds", []string{"deploy"}), core.InvalidArgument, "scope.ask_kinds[0]"},
			{"ask_kinds naming a kind twice", request, scope("ask_kinds", []string{"review", "document", "review"}), core.InvalidArgument, "scope.ask_kinds[2]"},
			{"max_priority 1", request, scope("max_priority", 1), core.InvalidArgument, "scope.max_priority"},
			{"max_priority -1", request, scope("max_priority", -1), core.InvalidArgument, "scope.max_priority"},
			{"a requester no agent has", request, scope("requesters", []string{"agent:nobody"}), core.InvalidArgument, "scope.requesters[0]"},
			{"a requester of another account", request, scope("requesters", []string{"agent:bot", "agent:stranger"}), core.InvalidArgument, "scope.requesters[1]"},
			{"a requester named twice", request, scope("requesters", []string{"agent:bot", "agent:bot"}), core.InvalidArgument, "scope.requesters[1]"},
			{"a scope that is no object", request, map[string]any{"until": ok, "scope": "review"}, core.InvalidArgument, "scope"},
			{"a device of 65 characters", request, map[string]any{"until": ok, "device": strings.Repeat("m", 65)}, core.InvalidArgument, "device"},
			{"a device of two lines", request, map[string]any{"until": ok, "device": "mac\nios"}, core.InvalidArgument, "device"},
			{"a request for another account", request, map[string]any{"until": ok, "account_id": other.ID}, core.PermissionDenied, "account_id"},
			{"a read of another account", get, map[string]any{"account_id": other.ID}, core.PermissionDenied, "account_id"},
			{"a revoke note of 501 characters", revoke, map[string]any{"note": strings.Repeat("n", 501)}, core.InvalidArgument, "note"},
			{"a revoke for another account", revoke, map[string]any{"account_id": other.ID}, core.PermissionDenied, "account_id"},
			{"a revoke for a made-up account", revoke, map[string]any{"account_id": madeUpAccountID}, core.PermissionDenied, "account_id"},
		}
		for _, tc := range cases {
			t.Run(tc.tool+" refuses "+tc.name, func(t *testing.T) {
				before := snapshot(t, w.env)
				r := w.bot.Call(tc.tool, tc.args)
				if !r.IsError || r.Code != string(tc.code) || r.Field != tc.field {
					t.Errorf("%s, want %s on %s", r, tc.code, tc.field)
				}
				before.mustEqual(t, snapshot(t, w.env), tc.name)
			})
		}
		t.Run("decision in ask_kinds is refused saying a person must choose", func(t *testing.T) {
			r := w.bot.Call(request, scope("ask_kinds", []string{"decision"}))
			if !r.IsError || r.Field != "scope.ask_kinds[0]" || !strings.Contains(r.Text, "a person must choose one of the options, which a policy cannot") {
				t.Errorf("%s, want INVALID_ARGUMENT on scope.ask_kinds[0] saying why", r)
			}
		})
		t.Run("the read refuses a note, which only revoke takes", func(t *testing.T) {
			before := snapshot(t, w.env)
			r := w.bot.Call(get, map[string]any{"note": "why"})
			if !r.IsError || r.Code != string(core.InvalidArgument) || r.Field != "note" {
				t.Errorf("%s, want INVALID_ARGUMENT on field note", r)
			}
			before.mustEqual(t, snapshot(t, w.env), "a read with a note")
		})
		// The edges that are allowed go through.
		for _, args := range []map[string]any{
			{"until": until(24 * time.Hour), "device": strings.Repeat("m", 64)},
			{"until": time.Now().Add(time.Hour).Format(time.RFC3339)}, // a local zone offset is RFC 3339 too
			scope("ask_kinds", []string{"review", "document", "tool_call", "work_change"}, "max_priority", 0, "requesters", []string{"agent:bot", "agent:other"}),
		} {
			if r := w.bot.Call(request, args); r.IsError {
				t.Errorf("request %v: %s", args, r)
			}
		}
		if r := w.bot.Call(revoke, map[string]any{"note": strings.Repeat("n", 500)}); r.IsError || r.Out["policy"] != nil {
			t.Errorf("revoke with a 500-character note and no policy: %s %v, want policy null", r, r.Out)
		}
	})
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return at
}

// The service writes approve_means on every request itself ("Your decision is
// recorded; nothing executes."); the always-ask classifier reads only what
// the agent wrote, so those words never keep a request asking, and an
// advisory request of a kind the policy names is approved by it.
func TestAPolicyApprovesAnAdvisoryRequestOfAKindItNames(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		w := newPolicyWorld(t, db)
		kinds := []string{"work_change", "memory_change", "life_change", "agent_request"}
		_, pol := w.enable(t, map[string]any{"until": until(2 * time.Hour), "device": "mac", "scope": map[string]any{"ask_kinds": kinds}})
		polID := pol["policy_id"].(string)
		file := func(kind, title, description string, extra ...any) map[string]any {
			args := withArgs(map[string]any{"kind": kind, "title": title, "description": description, "proposal": advisory(),
				"idempotencyKey": kind + ": " + title}, extra...)
			return w.bot.OK("approval_request", args)
		}
		status := func(id any) map[string]any {
			return w.bot.OK("approval_status", map[string]any{"approvalId": id})
		}
		for _, kind := range kinds {
			t.Run("an advisory "+kind+" is approved by the policy in ada's name", func(t *testing.T) {
				filed := file(kind, "Tidy the "+kind+" notes", "Reword two lines of the notes for clarity.", "targetType", "notes", "targetId", "n_1")
				if filed["status"] != "approved" {
					t.Fatalf("filed as %v, want approved by the policy", filed["status"])
				}
				if st := status(filed["approvalId"]); st["status"] != "approved" || st["decidedBy"] != "ada" {
					t.Errorf("approval_status = %v decided by %v, want approved by ada", st["status"], st["decidedBy"])
				}
				got := w.bot.OK("approvals_get", map[string]any{"approval_id": filed["approvalId"]})
				if e := eventWith(t, timelineOf(t, got), "auto_approved"); e["actor"] != polID {
					t.Errorf("auto_approved event = %v, want the policy %s", e, polID)
				}
				if slices.Contains(stepsOf(timelineOf(t, got)), "policy_skipped") {
					t.Errorf("the timeline has a policy_skipped event: %v", stepsOf(timelineOf(t, got)))
				}
			})
		}
		// What the agent wrote is still read, its target included.
		for _, tc := range []struct {
			name, description string
			extra             []any
			category          string
		}{
			{"a description that deletes", "Delete the stale notes.", nil, "a delete"},
			{"a target that is a secret", "Reword two lines.", []any{"targetType", "secret"}, "security"},
		} {
			t.Run("a request whose "+tc.name+" keeps asking", func(t *testing.T) {
				filed := file("work_change", "Tidy the notes ("+tc.name+")", tc.description, tc.extra...)
				if filed["status"] != "pending" {
					t.Fatalf("filed as %v, want pending", filed["status"])
				}
				got := w.bot.OK("approvals_get", map[string]any{"approval_id": filed["approvalId"]})
				if e := eventWith(t, timelineOf(t, got), "policy_skipped"); e["note"] != "keeps asking: "+tc.category {
					t.Errorf("policy_skipped note = %v, want keeps asking: %s", e["note"], tc.category)
				}
			})
		}
		// A question waits for a person whatever the policy says.
		question := file("agent_request", "Which notes first?", "", "question", map[string]any{})
		if question["status"] != "pending" {
			t.Errorf("a question under the policy = %v, want pending", question["status"])
		}
		if pol = w.policy(t); pol["approved_count"] != float64(len(kinds)) {
			t.Errorf("approved_count = %v, want %d", pol["approved_count"], len(kinds))
		}
	})
}

// An ask the person may edit is answered by that person: a policy that
// covers its kind approves the same call filed without editable members,
// and never the one with them.
func TestAPolicyNeverApprovesAnAskThePersonMayEdit(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		w := newPolicyWorld(t, db)
		w.enable(t, map[string]any{"until": until(time.Hour), "scope": map[string]any{"ask_kinds": []string{"tool_call"}}})
		search := func(query string) map[string]any {
			return map[string]any{
				"kind": "tool_call", "title": "Search the notes", "approve_means": "I search the notes once", "deny_means": "Nothing is searched",
				"payload": map[string]any{"tool_call": map[string]any{"server": "notes", "tool": "search_notes", "arguments": map[string]any{"query": query}}},
			}
		}
		if out := w.bot.OK("approvals_create", search("onboarding")); out["status"] != "approved" {
			t.Fatalf("the policy left a plain tool_call %v, want approved (else this test shows nothing): %v", out["status"], out["timeline"])
		}
		editable := search("glossary")
		editable["editable"] = []string{"tool_call.arguments.query"}
		mustStayPending(t, w.bot, editable, "a tool_call the person may edit")
	})
}
