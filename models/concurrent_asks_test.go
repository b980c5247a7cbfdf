package models_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/countersign/countersign/ask"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/outbox"
	"github.com/countersign/countersign/models/people"
)

// Asks filed at once by one agent of one account (no foreign-key lock
// orders them any more, and on PostgreSQL each is one statement) all land:
// each with its created event, as Written reports it, and one push per
// device of the owner, and each wakes the push sender once.
func TestConcurrentAsksOfOneAgentAllLandWithTheirEventsAndPushes(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		s, acct := apptest.BareStore(t, db)
		s.SetPushCap(outbox.PushCap{}) // every ask pushes: the cap's counting is another test's
		ada, err := s.AddMember(ctx, acct.ID, "ada", "Ada", core.RoleOwner)
		if err != nil {
			t.Fatal(err)
		}
		bob, err := s.AddMember(ctx, acct.ID, "bob", "Bob", core.RoleMember)
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range []*people.Member{ada, ada, bob} {
			sub := outbox.PushSubscription{Endpoint: fmt.Sprintf("https://push.example/%d", i), P256dh: "key", Auth: "auth"}
			if _, err := s.SavePushSubscription(ctx, p.ID, sub); err != nil {
				t.Fatal(err)
			}
		}
		agent, _, err := s.CreateAgent(ctx, acct.ID, "bot", people.AllScopes)
		if err != nil {
			t.Fatal(err)
		}
		var wakes atomic.Int32
		s.Changes().Subscribe(func(c core.Change) {
			if c.Kind == core.OutboxQueued {
				wakes.Add(1)
			}
		})

		const n = 24
		filed := make([]*asks.Approval, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				filed[i], errs[i] = s.CreateApproval(ctx, models.NewAsk{
					Requester: agent, Kind: ask.KindPullRequest, Title: fmt.Sprintf("Merge acme/web#%d", i+1),
					Summary: "Fixes the login redirect.", ApproveMeans: "I merge it", DenyMeans: "It stays open",
					Payload: json.RawMessage(fmt.Sprintf(`{"pull_request":{"repo":"acme/web","number":%d,"head":"%040x","title":"Fix"}}`, i+1, i+1)),
					Context: json.RawMessage(`{"no_context_reason":"a test"}`),
				})
			})
		}
		wg.Wait()

		seqs := map[int64]bool{}
		for i, a := range filed {
			if errs[i] != nil {
				t.Fatalf("ask %d: %v", i+1, errs[i])
			}
			w := a.Written()
			if len(w) != 1 || w[0].Step != "created" || w[0].ApprovalID != a.ID || w[0].Seq == 0 || seqs[w[0].Seq] {
				t.Fatalf("ask %d wrote %+v, want its one created event with a seq of its own", i+1, w)
			}
			seqs[w[0].Seq] = true
			timeline, err := s.Timeline(ctx, acct.ID, a.ID)
			if err != nil {
				t.Fatal(err)
			}
			if len(timeline) != 1 || timeline[0].Seq != w[0].Seq || timeline[0].Step != "created" || timeline[0].Actor != "agent:bot" {
				t.Errorf("ask %d's timeline is %+v, want the created event %d by agent:bot", i+1, timeline, w[0].Seq)
			}
			got, err := s.GetApproval(ctx, acct.ID, a.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Seq != a.Seq || got.Status != asks.StatusPending || got.RequesterID != agent.ID || got.RepoKey != "acme/web" || got.PRNumber != int64(i+1) {
				t.Errorf("ask %d reads back as seq %d %s by %s, %s#%d; want seq %d pending by %s, acme/web#%d",
					i+1, got.Seq, got.Status, got.RequesterID, got.RepoKey, got.PRNumber, a.Seq, agent.ID, i+1)
			}
			var jobs []outbox.PushJob
			if err := s.DB().Table("push_jobs").Where("approval_id = ?", a.ID).Order("seq").Find(&jobs).Error; err != nil {
				t.Fatal(err)
			}
			if len(jobs) != 2 || jobs[0].PersonID != ada.ID || jobs[1].PersonID != ada.ID || jobs[0].SubscriptionID == jobs[1].SubscriptionID ||
				jobs[0].Event != outbox.PushAsk || jobs[0].Urgency != "high" || !jobs[0].ExpiresAt.Equal(a.ExpiresAt) {
				t.Errorf("ask %d queued %+v, want one high-urgency ask push to each of ada's two devices, expiring with the ask", i+1, jobs)
			}
			var msg outbox.PushMessage
			if len(jobs) > 0 {
				if err := json.Unmarshal([]byte(jobs[0].Body), &msg); err != nil || msg.ApprovalID != a.ID || msg.Title != a.Title || msg.URL != "/approvals/"+a.ID {
					t.Errorf("ask %d's push says %s (%v), want its id, title and URL", i+1, jobs[0].Body, err)
				}
			}
		}
		var total int64
		if err := s.DB().Table("push_jobs").Count(&total).Error; err != nil {
			t.Fatal(err)
		}
		if total != 2*n {
			t.Errorf("%d pushes queued in all, want %d (none for bob, a member nothing was asked of)", total, 2*n)
		}
		if got := wakes.Load(); got != n {
			t.Errorf("the sender was woken %d times, want %d: once per ask that queued pushes", got, n)
		}
	})
}
