package models_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/countersign/countersign/ask"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/audit"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
)

func reviewAsk(t *testing.T, s *models.Store, agent *people.Agent, title, askedOf string) *asks.Approval {
	t.Helper()
	a, err := s.CreateApproval(context.Background(), models.NewAsk{
		Requester: agent, Kind: ask.KindReview, Title: title, ApproveMeans: "I merge", DenyMeans: "It waits", AskedOf: askedOf,
		Payload: json.RawMessage(`{"review":{"url":"https://review.example.com/r/1"}}`),
	})
	if err != nil {
		t.Fatalf("create ask: %v", err)
	}
	return a
}

func ids(list []asks.Approval) []string {
	out := make([]string, len(list))
	for i, a := range list {
		out[i] = a.ID
	}
	return out
}

func TestInboxHoldsTheOpenLiveAsksAMemberMayDecide(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		env := apptest.Start(t, db, nil)
		s, ctx := env.Store, context.Background()
		agent, _ := env.Agent(env.Account.ID, "bot")
		owner := env.Member(env.Account.ID, "ada", core.RoleOwner)
		bob := env.Member(env.Account.ID, "bob", core.RoleMember)

		old := reviewAsk(t, s, agent, "old", "bob")
		asked := reviewAsk(t, s, agent, "asked", "bob")
		if _, err := s.Decide(ctx, env.Account.ID, asked.ID, bob, asks.Decision{Verdict: asks.VerdictQuestion, Note: "why?"}); err != nil {
			t.Fatalf("question: %v", err)
		}
		denied := reviewAsk(t, s, agent, "denied", "bob")
		if _, err := s.Decide(ctx, env.Account.ID, denied.ID, bob, asks.Decision{Verdict: asks.VerdictDeny}); err != nil {
			t.Fatalf("deny: %v", err)
		}
		anyone := reviewAsk(t, s, agent, "anyone", "")
		newest := reviewAsk(t, s, agent, "newest", "bob")
		tied := reviewAsk(t, s, agent, "tied", "bob")
		// Deadlines out of filing order: the asked one ends first, then
		// newest and tied at the same instant, then old.
		now := time.Now().UTC()
		for id, left := range map[string]time.Duration{old.ID: 3 * time.Hour, asked.ID: time.Hour, newest.ID: 2 * time.Hour, tied.ID: 2 * time.Hour} {
			if err := s.DB().Table("approvals").Where("id = ?", id).Update("expires_at", now.Add(left)).Error; err != nil {
				t.Fatal(err)
			}
		}

		cases := []struct {
			name  string
			m     *people.Member
			limit int
			want  []string
		}{
			{"a member gets pending and question asks of their subject, soonest deadline first, then newest", bob, 10, []string{asked.ID, tied.ID, newest.ID, old.ID}},
			{"the limit cuts the latest deadlines", bob, 2, []string{asked.ID, tied.ID}},
			{"an owner gets the asks of nobody in particular", owner, 10, []string{anyone.ID}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				got, err := s.Inbox(ctx, tc.m, tc.limit)
				if err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(ids(got)) != fmt.Sprint(tc.want) {
					t.Fatalf("inbox = %v, want %v", ids(got), tc.want)
				}
			})
		}
		for _, limit := range []int{0, -1, core.MaxPageSize + 1} {
			if _, err := s.Inbox(ctx, bob, limit); core.CodeOf(err) != core.InvalidArgument {
				t.Fatalf("limit %d: %v, want INVALID_ARGUMENT", limit, err)
			}
		}
		t.Run("an ask past its life leaves the inbox before the sweep closes it", func(t *testing.T) {
			if err := s.DB().Table("approvals").Where("id = ?", newest.ID).Update("expires_at", time.Now().UTC().Add(-time.Minute)).Error; err != nil {
				t.Fatal(err)
			}
			got, err := s.Inbox(ctx, bob, 10)
			if err != nil || fmt.Sprint(ids(got)) != fmt.Sprint([]string{asked.ID, tied.ID, old.ID}) {
				t.Fatalf("inbox after expiry = %v %v, want %v", ids(got), err, []string{asked.ID, tied.ID, old.ID})
			}
		})
	})
}

func TestAuditPagesAndFilters(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		env := apptest.Start(t, db, nil)
		s, ctx := env.Store, context.Background()
		agent, _ := env.Agent(env.Account.ID, "bot")
		bob := env.Member(env.Account.ID, "bob", core.RoleMember)
		var filed []*asks.Approval
		for i := 0; i < 4; i++ {
			filed = append(filed, reviewAsk(t, s, agent, fmt.Sprint("ask ", i), "bob"))
		}
		if _, err := s.Decide(ctx, env.Account.ID, filed[1].ID, bob, asks.Decision{Verdict: asks.VerdictApprove}); err != nil {
			t.Fatal(err)
		}
		other, err := s.CreateAccount(ctx, "other")
		if err != nil {
			t.Fatal(err)
		}
		otherAgent, _ := env.Agent(other.ID, "bot")
		reviewAsk(t, s, otherAgent, "elsewhere", "")

		var all []asks.TimelineEvent
		before := int64(0)
		for page := 0; ; page++ {
			events, next, err := s.Audit(ctx, env.Account.ID, audit.AuditFilter{PageSize: 2, Before: before})
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, events...)
			if next == 0 {
				break
			}
			if next != events[len(events)-1].Seq || page > 5 {
				t.Fatalf("page %d: next %d after %d events", page, next, len(events))
			}
			before = next
		}
		if len(all) != 5 {
			t.Fatalf("%d events over the pages, want 5 (4 created, 1 approved)", len(all))
		}
		for i := range all {
			if all[i].AccountID != env.Account.ID {
				t.Fatalf("an event of another account: %+v", all[i])
			}
			if i > 0 && all[i].Seq >= all[i-1].Seq {
				t.Fatalf("events not newest first: %d then %d", all[i-1].Seq, all[i].Seq)
			}
		}
		if all[0].Step != "approved" || all[0].ApprovalID != filed[1].ID || all[0].Actor != "bob" {
			t.Fatalf("newest event = %+v, want bob's approve", all[0])
		}

		cases := []struct {
			name string
			f    audit.AuditFilter
			want int
		}{
			{"by step", audit.AuditFilter{Step: "created"}, 4},
			{"by actor kind", audit.AuditFilter{ActorKind: asks.ActorPerson}, 1},
			{"by actor", audit.AuditFilter{Actor: "agent:bot"}, 4},
			{"by approval", audit.AuditFilter{ApprovalID: filed[1].ID}, 2},
			{"by approval and step", audit.AuditFilter{ApprovalID: filed[1].ID, Step: "approved"}, 1},
			{"by an approval of another account", audit.AuditFilter{ApprovalID: "appr_nope"}, 0},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				events, next, err := s.Audit(ctx, env.Account.ID, tc.f)
				if err != nil || len(events) != tc.want || next != 0 {
					t.Fatalf("%d events, next %d, err %v; want %d", len(events), next, err, tc.want)
				}
				for _, e := range events {
					if (tc.f.Step != "" && e.Step != tc.f.Step) || (tc.f.ActorKind != "" && e.ActorKind != tc.f.ActorKind) ||
						(tc.f.Actor != "" && e.Actor != tc.f.Actor) || (tc.f.ApprovalID != "" && e.ApprovalID != tc.f.ApprovalID) {
						t.Fatalf("event %+v does not match %+v", e, tc.f)
					}
				}
			})
		}
		for _, f := range []audit.AuditFilter{{Step: "bogus"}, {ActorKind: "robot"}, {PageSize: core.MaxPageSize + 1}, {Before: -1}} {
			if _, _, err := s.Audit(ctx, env.Account.ID, f); core.CodeOf(err) != core.InvalidArgument {
				t.Fatalf("filter %+v: %v, want INVALID_ARGUMENT", f, err)
			}
		}

		after, err := s.TimelineAfter(ctx, env.Account.ID, filed[1].ID, 0)
		if err != nil || len(after) != 2 {
			t.Fatalf("timeline after 0 = %v %v", after, err)
		}
		rest, err := s.TimelineAfter(ctx, env.Account.ID, filed[1].ID, after[0].Seq)
		if err != nil || len(rest) != 1 || rest[0].Seq != after[1].Seq {
			t.Fatalf("timeline after %d = %v %v", after[0].Seq, rest, err)
		}
		if none, err := s.TimelineAfter(ctx, other.ID, filed[1].ID, 0); err != nil || len(none) != 0 {
			t.Fatalf("another account reads the timeline: %v %v", none, err)
		}
	})
}

func TestDeleteAgent(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		env := apptest.Start(t, db, nil)
		s, ctx := env.Store, context.Background()
		agent, token := env.Agent(env.Account.ID, "bot")
		keep, _ := env.Agent(env.Account.ID, "keep")
		env.Member(env.Account.ID, "bob", core.RoleMember)
		open := reviewAsk(t, s, agent, "open", "bob")

		if err := s.DeleteAgent(ctx, env.Account.ID, "bot", "ada"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AgentByToken(ctx, token); core.CodeOf(err) != core.NotFound {
			t.Fatalf("the token still finds the agent: %v", err)
		}
		got, err := s.AgentByName(ctx, env.Account.ID, "bot")
		if err != nil || !got.Disabled || got.DisabledReason != "deleted by ada" || got.TokenHash != "deleted:"+agent.ID {
			t.Fatalf("deleted agent = %+v %v", got, err)
		}
		var deletedAt *time.Time
		if err := s.DB().Table("agents").Select("deleted_at").Where("id = ?", agent.ID).Scan(&deletedAt).Error; err != nil || deletedAt == nil {
			t.Fatalf("deleted_at = %v %v", deletedAt, err)
		}
		list, err := s.ListAgents(ctx, env.Account.ID)
		if err != nil || len(list) != 1 || list[0].ID != keep.ID {
			t.Fatalf("agents = %v %v, want only keep", list, err)
		}
		a, err := s.GetApproval(ctx, env.Account.ID, open.ID)
		if err != nil || a.Status != asks.StatusCancelled || a.RequesterID != agent.ID || a.RequesterSubject != "agent:bot" {
			t.Fatalf("its ask = %+v %v", a, err)
		}
		if err := s.DeleteAgent(ctx, env.Account.ID, "bot", "ali"); err != nil {
			t.Fatalf("deleting twice: %v", err)
		}
		if again, _ := s.AgentByName(ctx, env.Account.ID, "bot"); again.DisabledReason != "deleted by ada" {
			t.Fatalf("deleting twice changed the reason to %q", again.DisabledReason)
		}
		if _, _, err := s.CreateAgent(ctx, env.Account.ID, "bot", people.AllScopes); core.CodeOf(err) != core.FailedPrecondition {
			t.Fatalf("a new agent took a deleted agent's name: %v", err)
		}
		if err := s.DeleteAgent(ctx, env.Account.ID, "nobody", "ada"); core.CodeOf(err) != core.NotFound {
			t.Fatalf("deleting an unknown agent: %v", err)
		}
	})
}
