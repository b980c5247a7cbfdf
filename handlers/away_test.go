package handlers_test

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/ask"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/rules"
	"github.com/countersign/countersign/proof"
)

// leadsRule asks one of carol and dan (admins both, in a group) for every
// pull request.
func leadsRule() rules.RuleSpec {
	return rules.RuleSpec{Name: "a lead reviews pull requests", Kinds: []string{ask.KindPullRequest}, Count: 1,
		Pool: rules.Pool{Kind: rules.PoolGroup, Group: "leads", People: []string{"carol", "dan"}}}
}

func awayRows(t *testing.T, env *apptest.Env) int64 {
	t.Helper()
	var n int64
	if err := env.Store.DB().Table("aways").Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

func TestTheDevicesPageMarksAPersonAwayWithADelegateAndBringsThemBack(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		w := newEscalationWorld(t, db, leadsRule())
		carol := signIn(t, w.env, w.carol) // an admin
		until := w.clock.now().Add(48 * time.Hour).UTC().Format("2006-01-02T15:04")

		for _, c := range []struct {
			name     string
			form     url.Values
			csrf     bool
			status   int
			contains string
		}{
			{"a delegate below the person's role is refused", url.Values{"until": {until}, "delegate": {"bob"}}, true, http.StatusBadRequest, "below your role"},
			{"the person themself is refused", url.Values{"until": {until}, "delegate": {"carol"}}, true, http.StatusBadRequest, "someone else"},
			{"a stranger is refused", url.Values{"until": {until}, "delegate": {"mallory"}}, true, http.StatusBadRequest, "no member of this account"},
			{"a time past is refused", url.Values{"until": {"2001-01-01T00:00"}, "delegate": {"dan"}}, true, http.StatusBadRequest, "in the future"},
			{"a time that does not read is refused", url.Values{"until": {"soon"}, "delegate": {"dan"}}, true, http.StatusBadRequest, "like 2026-12-24T18:00"},
			{"no CSRF token is refused", url.Values{"until": {until}, "delegate": {"dan"}}, false, http.StatusForbidden, ""},
		} {
			t.Run(c.name, func(t *testing.T) {
				res, body := carol.post("/away", c.form, c.csrf)
				if res.StatusCode != c.status || !strings.Contains(body, c.contains) {
					t.Fatalf("POST /away: %d, want %d saying %q", res.StatusCode, c.status, c.contains)
				}
				if n := awayRows(t, w.env); n != 0 {
					t.Fatalf("%d away rows after a refusal, want 0", n)
				}
			})
		}

		res, _ := carol.post("/away", url.Values{"until": {until}, "delegate": {"ada"}}, true)
		if res.StatusCode != http.StatusSeeOther {
			t.Fatalf("POST /away with ada: %d, want 303", res.StatusCode)
		}
		body := htmlOf(t, carol, "/devices")
		if !strings.Contains(body, `data-testid="away-delegate">ada<`) || !strings.Contains(body, `data-testid="come-back"`) {
			t.Fatalf("the devices page does not say carol is away with ada as delegate")
		}
		away, err := w.env.Store.AwayOf(context.Background(), w.carol)
		if err != nil || away == nil || away.DelegateSubject != "ada" || away.Until.Format("2006-01-02T15:04") != until {
			t.Fatalf("away status %+v (%v), want ada until %s", away, err, until)
		}

		if res, _ := carol.post("/away/end", nil, true); res.StatusCode != http.StatusSeeOther {
			t.Fatalf("POST /away/end: %d", res.StatusCode)
		}
		if away, _ := w.env.Store.AwayOf(context.Background(), w.carol); away != nil {
			t.Fatalf("still away after coming back: %+v", away)
		}
		if body := htmlOf(t, carol, "/devices"); strings.Contains(body, `data-testid="come-back"`) || !strings.Contains(body, `data-testid="go-away"`) {
			t.Fatal("the devices page still says carol is away")
		}
	})
}

func TestAnAwayPersonsAsksGoToTheirDelegateButNeverBelowThePoolNorToTheRequestersOwnPerson(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		w := newEscalationWorld(t, db, leadsRule())
		erin := w.env.Member(w.env.Account.ID, "erin", core.RoleAdmin)
		w.subscribe(t, w.carol, "carol-phone")
		w.subscribe(t, erin, "erin-phone")
		erinB := signIn(t, w.env, erin)
		if _, err := w.env.Store.SetAway(ctx, w.carol, w.clock.now().Add(24*time.Hour), "erin"); err != nil {
			t.Fatalf("carol goes away: %v", err)
		}

		// erin, an admin like carol, takes carol's place among the rule's people.
		id := w.file(t, 1)
		dev, m := w.next(t, "the ask")
		if dev != "erin-phone" || m.ApprovalID != id {
			t.Fatalf("the ask pushed %s %+v, want erin's phone in carol's place", dev, m)
		}
		if n := w.ps.Requests("carol-phone"); n != 0 {
			t.Errorf("carol's phone got %d pushes while she is away", n)
		}
		if req := requirementOf(t, w.env, id); !slices.Equal(req.People, []string{"dan", "erin"}) {
			t.Errorf("the frozen people are %v, want erin in carol's place beside dan", req.People)
		}
		if body := htmlOf(t, erinB, "/approvals/"+id); !strings.Contains(body, `data-testid="answer-bar"`) || !strings.Contains(body, "waiting for dan, erin") {
			t.Errorf("erin, the delegate, may not sign in carol's place, or the page does not say whom it waits for")
		}

		// The requester's own person never stands in: an agent acting for
		// erin files, and carol stays counted.
		_, token, err := w.env.Store.CreateAgentFor(ctx, w.env.Account.ID, "erins-bot", apptest.AllScopes, "erin")
		if err != nil {
			t.Fatal(err)
		}
		own := &escalationWorld{env: w.env, agent: w.env.Connect(token)}
		defer own.agent.Close()
		id2 := own.file(t, 2)
		if req := requirementOf(t, w.env, id2); !slices.Equal(req.People, []string{"carol", "dan"}) {
			t.Errorf("on erin's agent's ask the people are %v, want carol and dan: erin's own agent's ask never goes to erin", req.People)
		}

		// Never below the pool: erin, demoted to member, is outside the
		// rule's pool and below carol's role, so carol stays counted.
		if err := w.env.Store.SetRole(ctx, w.env.Account.ID, erin.ID, core.RoleMember); err != nil {
			t.Fatal(err)
		}
		id3 := w.file(t, 3)
		if req := requirementOf(t, w.env, id3); !slices.Equal(req.People, []string{"carol", "dan"}) {
			t.Errorf("with erin a member the people are %v, want carol and dan: a delegate outside the pool and below the role never stands in", req.People)
		}
	})
}

// requirementOf reads the requirement frozen into an ask.
func requirementOf(t *testing.T, env *apptest.Env, id string) *proof.Requirement {
	t.Helper()
	a, err := env.Store.GetApproval(context.Background(), env.Account.ID, id)
	if err != nil {
		t.Fatal(err)
	}
	r := a.RequirementOf()
	if r == nil {
		t.Fatalf("ask %s has no requirement", id)
	}
	return r
}
