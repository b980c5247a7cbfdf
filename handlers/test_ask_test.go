package handlers_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/countersign/countersign/ask"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
)

// testAsks are the open test asks of the account, by id.
func testAsks(t *testing.T, env *apptest.Env) map[string]asks.Approval {
	t.Helper()
	var list []asks.Approval
	if err := env.Store.DB().Where("account_id = ? AND title = ?", env.Account.ID, models.TestAskTitle).Find(&list).Error; err != nil {
		t.Fatal(err)
	}
	out := map[string]asks.Approval{}
	for _, a := range list {
		out[a.ID] = a
	}
	return out
}

func TestSendMeATestAskFilesOneHarmlessAskFromTheServiceAndItsReceiptFollowsTheAnswer(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := newScene(t, db, nil)
		ada := s.owner
		bob := join(t, s.env, s.env.Account.ID, core.RoleMember, "bob")

		t.Run("without the CSRF token nothing is filed", func(t *testing.T) {
			b := ada.For(t)
			token := b.CSRF
			b.CSRF = "wrong"
			if r := b.PostForm("/test-ask", nil); r.Status != http.StatusForbidden {
				t.Errorf("POST /test-ask with a wrong CSRF token: %s, want 403", r)
			}
			b.CSRF = token
			if got := testAsks(t, s.env); len(got) != 0 {
				t.Errorf("a refused POST filed %d test asks", len(got))
			}
		})

		r := ada.PostForm("/test-ask", nil)
		id := strings.TrimPrefix(r.Header.Get("Location"), "/approvals/")
		if r.Status != http.StatusSeeOther || id == "" {
			t.Fatalf("POST /test-ask: %s to %q, want 303 to the ask", r, r.Header.Get("Location"))
		}
		a, err := s.env.Store.GetApproval(context.Background(), s.env.Account.ID, id)
		if err != nil {
			t.Fatal(err)
		}
		if a.Kind != ask.KindDecision || a.Title != models.TestAskTitle || a.RequesterSubject != "agent:"+models.ServiceAgentName ||
			a.AskedOf != "ada" || a.Status != asks.StatusPending {
			t.Fatalf("the test ask is kind %q title %q from %q asked of %q, %s; want a pending decision titled as a test, from the test agent, asked of ada",
				a.Kind, a.Title, a.RequesterSubject, a.AskedOf, a.Status)
		}
		if again := ada.PostForm("/test-ask", nil); again.Header.Get("Location") != "/approvals/"+id {
			t.Errorf("a second tap goes to %q, want the open test ask %s again", again.Header.Get("Location"), id)
		}
		if n := len(testAsks(t, s.env)); n != 1 {
			t.Errorf("two taps filed %d test asks, want 1", n)
		}
		theirs := strings.TrimPrefix(bob.PostForm("/test-ask", nil).Header.Get("Location"), "/approvals/")
		if got := testAsks(t, s.env)[theirs]; theirs == id || got.AskedOf != "bob" {
			t.Errorf("bob's test ask is %q asked of %q, want another ask, asked of bob", theirs, got.AskedOf)
		}

		t.Run("the receipt of an unanswered ask is the ask", func(t *testing.T) {
			if r := ada.For(t).Page("/approvals/" + id + "/receipt"); r.Status != http.StatusSeeOther || r.Header.Get("Location") != "/approvals/"+id {
				t.Errorf("the receipt before an answer: %s to %q, want 303 to the ask", r, r.Header.Get("Location"))
			}
		})

		d := ada.Decide(id, "option:0", "")
		if d.Status != http.StatusOK || d.Body["receipt"] != "/approvals/"+id+"/receipt" || d.Body["redirect"] != "/" {
			t.Fatalf("deciding the test ask: %s, want its receipt first, then the inbox (bob's test ask is not ada's)", d)
		}
		page := ada.Page("/approvals/" + id + "/receipt")
		body := string(page.Raw)
		for _, want := range []string{`data-testid="receipt"`, "Approved: Yes, it reached me", models.TestAskTitle, "/approvals/" + id + "/proof.json", "Back to the inbox →"} {
			if page.Status != http.StatusOK || !strings.Contains(body, want) {
				t.Errorf("the receipt (HTTP %d) does not show %q:\n%s", page.Status, want, body)
			}
		}

		t.Run("nobody else sees a receipt of ada's answer", func(t *testing.T) {
			other := join(t, s.env, s.env.Account.ID, core.RoleAdmin, "ali")
			if r := other.Page("/approvals/" + id + "/receipt"); r.Status != http.StatusSeeOther || r.Header.Get("Location") != "/approvals/"+url.PathEscape(id) {
				t.Errorf("ali opens ada's receipt: %s, want 303 to the ask", r)
			}
		})
	})
}
