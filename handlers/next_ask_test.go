package handlers_test

import (
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
)

// After a decision the page goes on to the next ask the person may answer,
// soonest deadline first, then to the inbox; a question stays on its ask.
func TestADecisionMovesOnToTheNextAskSoonestDeadlineFirst(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := newScene(t, db, nil)
		join(t, s.env, s.env.Account.ID, core.RoleMember, "bob")
		first, later, soon, bobs := s.prAsk(t, ""), s.prAsk(t, ""), s.prAsk(t, ""), s.prAsk(t, "bob")
		now := time.Now().UTC()
		for id, left := range map[string]time.Duration{first: 4 * time.Hour, later: 3 * time.Hour, soon: time.Hour, bobs: time.Minute} {
			if err := s.env.Store.DB().Table("approvals").Where("id = ?", id).Update("expires_at", now.Add(left)).Error; err != nil {
				t.Fatal(err)
			}
		}
		question := s.prAsk(t, "")
		steps := []struct {
			name, id, decision, want string
		}{
			{"a question stays on its ask", question, "question", "/approvals/" + question},
			{"an approval goes to the soonest deadline ada may answer, not bob's nor the question's", first, "approve", "/approvals/" + soon},
			{"a denial goes on to the next", soon, "deny", "/approvals/" + later},
			{"the last ask left goes to the inbox", later, "approve", "/"},
		}
		for _, st := range steps {
			t.Run(st.name, func(t *testing.T) {
				text := ""
				if st.decision == "question" {
					text = "which test covers it?"
				}
				r := s.owner.For(t).Decide(st.id, st.decision, text)
				if r.Body["redirect"] != st.want {
					t.Fatalf("decide %s = %s, want the redirect %s", st.decision, r, st.want)
				}
			})
		}
	})
}
