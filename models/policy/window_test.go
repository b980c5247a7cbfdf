package policy_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/ask"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
	"github.com/countersign/countersign/models/policy"
	"github.com/countersign/countersign/proof"
)

// windowWorld is a store with an owner, ada, who has a passkey, and two
// agents, bot and other, that file asks.
type windowWorld struct {
	t          *testing.T
	s          *models.Store
	account    string
	ada        *people.Member
	bot, other *people.Agent
	calls      int
}

func newWindowWorld(t *testing.T, db apptest.Database) *windowWorld {
	t.Helper()
	ctx := context.Background()
	s, acct := apptest.BareStore(t, db)
	ada, err := s.AddMember(ctx, acct.ID, "ada", "Ada", core.RoleOwner)
	if err != nil {
		t.Fatal(err)
	}
	if err := apptest.SeedDeviceKey(ctx, s, ada.ID, people.DeviceKey{ID: "ada-key", Name: "phone", Credential: "{}", PublicKey: "AQ"}); err != nil {
		t.Fatal(err)
	}
	w := &windowWorld{t: t, s: s, account: acct.ID, ada: ada}
	for _, name := range []string{"bot", "other"} {
		a, _, err := s.CreateAgent(ctx, acct.ID, name, apptest.AllScopes)
		if err != nil {
			t.Fatal(err)
		}
		if name == "bot" {
			w.bot = a
		} else {
			w.other = a
		}
	}
	return w
}

// file has agent file an ask of kind with payload.
func (w *windowWorld) file(agent *people.Agent, kind, title, payload string) *asks.Approval {
	w.t.Helper()
	a, err := w.s.CreateApproval(context.Background(), models.NewAsk{
		Requester: agent, Kind: kind, Title: title, Summary: "A test ask.", ApproveMeans: "It goes ahead", DenyMeans: "Nothing happens",
		Payload: json.RawMessage(payload), Context: json.RawMessage(`{"no_context_reason":"a test"}`),
	})
	if err != nil {
		w.t.Fatalf("file %s: %v", title, err)
	}
	return a
}

// call has agent file a tool_call of tool on server, each with new arguments.
func (w *windowWorld) call(agent *people.Agent, server, tool string) *asks.Approval {
	w.t.Helper()
	w.calls++
	return w.file(agent, ask.KindToolCall, "Call "+tool+" on "+server,
		fmt.Sprintf(`{"tool_call":{"server":%q,"tool":%q,"arguments":{"path":"/tmp/notes-%d.txt","content":"hello"}}}`, server, tool, w.calls))
}

// review has agent ask for a review of url.
func (w *windowWorld) review(agent *people.Agent, url string) *asks.Approval {
	w.t.Helper()
	return w.file(agent, ask.KindReview, "Review the notes", fmt.Sprintf(`{"review":{"url":%q}}`, url))
}

// request has agent file an advisory request of kind about a board.
func (w *windowWorld) request(agent *people.Agent, kind, key string) *asks.Approval {
	w.t.Helper()
	a, _, _, err := w.s.FileRequest(context.Background(), agent, json.RawMessage(fmt.Sprintf(
		`{"kind":%q,"title":"Tidy the backlog","targetType":"board","targetId":"b_1","proposal":{"mode":"advisory"},"idempotencyKey":%q}`, kind, key)), nil)
	if err != nil {
		w.t.Fatalf("file a %s request: %v", kind, err)
	}
	return a
}

// sign has ada decide a with her passkey: the nonce of the signed decision
// issued and spent, as the decision service does once it has checked the
// signature (which this test does not make: the proof package tests it).
func (w *windowWorld) sign(a *asks.Approval, d asks.Decision) (*asks.Approval, error) {
	w.t.Helper()
	ctx := context.Background()
	d.Nonce = make([]byte, proof.NonceSize)
	if _, err := rand.Read(d.Nonce); err != nil {
		w.t.Fatal(err)
	}
	if err := w.s.IssueChallenge(ctx, w.ada, a, d.Signed(), d.Nonce); err != nil {
		return nil, err
	}
	d.CredentialID, d.Proof = "ada-key", []byte(`{}`)
	return w.s.Decide(ctx, w.account, a.ID, w.ada, d)
}

// approveFor has ada approve a and the same for minutes.
func (w *windowWorld) approveFor(a *asks.Approval, minutes int) *asks.Approval {
	w.t.Helper()
	win, err := asks.WindowOf(a, minutes)
	if err != nil {
		w.t.Fatalf("the window of %s: %v", a.ID, err)
	}
	d, err := w.sign(a, asks.Decision{Verdict: asks.Verdict(proof.WindowDecision(win.JSON())), Window: win.JSON()})
	if err != nil {
		w.t.Fatalf("ada approves %s for %d minutes: %v", a.ID, minutes, err)
	}
	return d
}

// window is the window opened from the ask id.
func (w *windowWorld) window(id string) policy.Policy {
	w.t.Helper()
	var p policy.Policy
	if err := w.s.DB().Table("policies").Where("approval_id = ?", id).Take(&p).Error; err != nil {
		w.t.Fatalf("the window opened from %s: %v", id, err)
	}
	return p
}

// approvedBy checks that a was approved at filing by the policy id.
func (w *windowWorld) approvedBy(a *asks.Approval, id, why string) {
	w.t.Helper()
	if a.Status != asks.StatusApproved || a.Decision != "approve" || a.DecidedBy != "ada" {
		w.t.Fatalf("%s: %s is %s (decision %q by %q), want approved by ada's window", why, a.Title, a.Status, a.Decision, a.DecidedBy)
	}
	events, err := w.s.Timeline(context.Background(), w.account, a.ID)
	if err != nil {
		w.t.Fatal(err)
	}
	last := events[len(events)-1]
	if last.Step != string(asks.EventAutoApprove) || last.ActorKind != asks.ActorPolicy || last.Actor != id {
		w.t.Fatalf("%s: the last event is %s by %s %s, want an auto-approve by policy %s", why, last.Step, last.ActorKind, last.Actor, id)
	}
}

// pending checks that a still waits for a person.
func (w *windowWorld) pending(a *asks.Approval, why string) {
	w.t.Helper()
	if a.Status != asks.StatusPending || a.Decision != "" {
		w.t.Fatalf("%s: %s is %s (decision %q), want pending", why, a.Title, a.Status, a.Decision)
	}
}

// "Approve, and the same for 30 minutes" approves the ask and opens a
// window: the same agent's next ask of the same kind and target is
// approved as it is filed, and any other still asks.
func TestAWindowApprovesTheSameAgentKindAndTargetAndNothingElse(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		w := newWindowWorld(t, db)
		first := w.call(w.bot, "filesystem", "write_file")
		w.pending(first, "before any window")
		opened := w.approveFor(first, 30)
		if opened.Status != asks.StatusApproved || opened.Decision != "approve" || opened.DecidedBy != "ada" || opened.Note != "" {
			t.Fatalf("the ask approved for a while is %s (decision %q by %q, note %q), want approved by ada", opened.Status, opened.Decision, opened.DecidedBy, opened.Note)
		}
		win := w.window(first.ID)
		if !win.IsWindow() || win.TargetOf() != (ask.Target{Server: "filesystem", Tool: "write_file"}) || win.Requester != "agent:bot" ||
			win.SignerSubject != "ada" || win.CredentialID != "ada-key" || !win.ExpiresAt.Equal(win.SignedAt.Add(30*time.Minute)) {
			t.Fatalf("the window is %+v, want bot's write_file on filesystem, signed by ada with ada-key, for 30 minutes", win)
		}

		w.approvedBy(w.call(w.bot, "filesystem", "write_file"), win.ID, "the same tool on the same server, other arguments")
		w.pending(w.call(w.bot, "filesystem", "read_text_file"), "another tool on the same server")
		w.pending(w.call(w.bot, "notes", "write_file"), "the same tool on another server")
		w.pending(w.call(w.other, "filesystem", "write_file"), "another agent's call of the same tool")
		w.pending(w.review(w.bot, "https://docs.example.com/filesystem/write_file"), "another kind")
		words := w.file(w.bot, ask.KindToolCall, "Call write_file on filesystem", `{"tool_call":{"server":"filesystem","tool":"write_file","arguments":{"path":"/srv/app/.env","content":"the new password"}}}`)
		w.pending(words, "the same target, with words that always ask")

		if p, err := w.s.CurrentPolicy(context.Background(), w.account); err != nil || p != nil {
			t.Errorf("the account's auto-approve policy = %+v (%v), want none: a window is not it", p, err)
		}
		rows, _, err := w.s.PolicyList(context.Background(), w.account, policy.PolicyFilter{Covers: policy.CoversWindow, State: policy.PolicyActive})
		if err != nil || len(rows) != 1 || rows[0].ID != win.ID || rows[0].ApprovedCount != 1 || rows[0].SkippedCount != 1 {
			t.Errorf("the active windows = %+v (%v), want %s, which approved one ask and left one to a person", rows, err, win.ID)
		}
	})
}

// A window of a review covers its URL, and one of a request its kind: a
// request of another kind about the same target still asks.
func TestAWindowOfAReviewOrARequestCoversItsURLOrItsKind(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		w := newWindowWorld(t, db)
		first := w.review(w.bot, "https://docs.example.com/a")
		w.approveFor(first, 15)
		win := w.window(first.ID)
		w.approvedBy(w.review(w.bot, "https://docs.example.com/a"), win.ID, "the same URL")
		w.pending(w.review(w.bot, "https://docs.example.com/b"), "another URL")

		change := w.request(w.bot, ask.KindWorkChange, "k1")
		w.approveFor(change, 60)
		reqWin := w.window(change.ID)
		w.approvedBy(w.request(w.bot, ask.KindWorkChange, "k2"), reqWin.ID, "a work_change about the same board")
		w.pending(w.request(w.bot, ask.KindMemoryChange, "k3"), "a memory_change about the same board")
	})
}

// A window ends at its time, and a person may turn it off before; either
// way the next ask asks. Off twice is harmless.
func TestAWindowEndsWhenItExpiresOrIsRevoked(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		w := newWindowWorld(t, db)
		ctx := context.Background()
		start := time.Now().UTC()
		w.s.SetClock(func() time.Time { return start })
		first := w.call(w.bot, "filesystem", "write_file")
		w.approveFor(first, 30)
		win := w.window(first.ID)
		w.s.SetClock(func() time.Time { return start.Add(29 * time.Minute) })
		w.approvedBy(w.call(w.bot, "filesystem", "write_file"), win.ID, "a minute before the window ends")
		w.s.SetClock(func() time.Time { return start.Add(30 * time.Minute) })
		w.pending(w.call(w.bot, "filesystem", "write_file"), "when the window ends")
		if rows, _, err := w.s.PolicyList(ctx, w.account, policy.PolicyFilter{Covers: policy.CoversWindow}); err != nil || len(rows) != 1 || rows[0].State() != policy.PolicyExpired {
			t.Fatalf("the windows = %+v (%v), want one, expired", rows, err)
		}

		second := w.call(w.bot, "filesystem", "write_file")
		w.approveFor(second, 480)
		win2 := w.window(second.ID)
		w.approvedBy(w.call(w.bot, "filesystem", "write_file"), win2.ID, "under the new window")
		st, err := w.s.RevokeWindow(ctx, w.account, win2.ID, "ada", "done for today")
		if err != nil || st.Active || st.RevokedBy != "ada" || st.RevokeNote != "done for today" || st.State() != policy.PolicyRevoked {
			t.Fatalf("RevokeWindow = %+v, %v; want it off, revoked by ada with her note", st, err)
		}
		w.pending(w.call(w.bot, "filesystem", "write_file"), "after the window was turned off")
		again, err := w.s.RevokeWindow(ctx, w.account, win2.ID, "bob", "")
		if err != nil || again.RevokedBy != "ada" || !again.RevokedAt.Equal(*st.RevokedAt) {
			t.Errorf("a second revoke = %+v, %v; want the window as the first left it", again, err)
		}
		events, err := w.s.Timeline(ctx, w.account, second.ID)
		if err != nil {
			t.Fatal(err)
		}
		if last := events[len(events)-1]; last.Step != policy.StepPolicyRevoked || last.Actor != "ada" || !strings.Contains(last.Note, "done for today") {
			t.Errorf("the opening ask's last event is %+v, want ada's revoke with her note", last)
		}
		if _, err := w.s.RevokeWindow(ctx, w.account, "pol_nope", "ada", ""); core.CodeOf(err) != core.NotFound {
			t.Errorf("revoking no window: %v, want NOT_FOUND", err)
		}
	})
}

// The account's auto-approve policy behaves as before beside a window:
// it is the one CurrentPolicy and RevokePolicy read, it approves what its
// scope covers, a new one does not replace a window, and revoking it leaves
// the window on. A window cannot be opened on a kind that always asks, nor
// on an ask whose words always ask, nor without a signature.
func TestTheAccountPolicyAndAWindowStandSideBySide(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		w := newWindowWorld(t, db)
		ctx := context.Background()
		first := w.call(w.bot, "filesystem", "write_file")
		w.approveFor(first, 120)
		win := w.window(first.ID)

		req, err := w.s.RequestAutoApprove(ctx, policy.AutoApproveRequest{Requester: w.other, Scope: policy.PolicyScope{AskKinds: []string{ask.KindReview}},
			Until: w.s.Now().Add(8 * time.Hour).Format(time.RFC3339)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.sign(req, asks.Decision{Verdict: asks.VerdictApprove}); err != nil {
			t.Fatalf("ada turns auto-approve on: %v", err)
		}
		cur, err := w.s.CurrentPolicy(ctx, w.account)
		if err != nil || cur == nil || cur.ApprovalID != req.ID || !cur.Active || cur.IsWindow() {
			t.Fatalf("CurrentPolicy = %+v (%v), want the one turned on by %s", cur, err, req.ID)
		}
		if st := w.window(first.ID); st.RevokedAt != nil {
			t.Fatalf("turning auto-approve on revoked the window: %+v", st)
		}
		w.approvedBy(w.review(w.other, "https://docs.example.com/c"), cur.ID, "a review, under the account's policy")
		w.approvedBy(w.call(w.bot, "filesystem", "write_file"), win.ID, "the window's target, with auto-approve on")
		w.pending(w.call(w.bot, "filesystem", "move_file"), "a call neither covers")

		if st, err := w.s.RevokePolicy(ctx, w.account, "ada", ""); err != nil || st == nil || st.ID != cur.ID || st.Active {
			t.Fatalf("RevokePolicy = %+v, %v; want the account's policy off", st, err)
		}
		w.pending(w.review(w.other, "https://docs.example.com/d"), "a review after auto-approve was turned off")
		w.approvedBy(w.call(w.bot, "filesystem", "write_file"), win.ID, "the window's target, after auto-approve was turned off")
		if _, err := w.s.RevokeWindow(ctx, w.account, cur.ID, "ada", ""); core.CodeOf(err) != core.NotFound {
			t.Errorf("RevokeWindow of the account's policy: %v, want NOT_FOUND", err)
		}

		pr := apptest.FilePullRequest(t, w.s, w.bot, 7)
		if _, err := asks.WindowOf(pr, 30); core.CodeOf(err) != core.InvalidArgument {
			t.Errorf("the window of a pull request: %v, want INVALID_ARGUMENT", err)
		}
		risky := w.call(w.bot, "filesystem", "delete_file")
		if err := policy.CheckWindow(risky); core.CodeOf(err) != core.FailedPrecondition {
			t.Errorf("CheckWindow of a delete: %v, want FAILED_PRECONDITION", err)
		}
		plain := w.call(w.bot, "filesystem", "list_directory")
		win2, err := asks.WindowOf(plain, 30)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.s.Decide(ctx, w.account, plain.ID, w.ada, asks.Decision{Verdict: asks.VerdictApproveFor, Window: win2.JSON()}); core.CodeOf(err) != core.PermissionDenied {
			t.Errorf("a window opened with no signature: %v, want PERMISSION_DENIED", err)
		}
		w.pending(w.call(w.bot, "filesystem", "list_directory"), "after a window refused")
	})
}
