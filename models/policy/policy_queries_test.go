package policy_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
	"github.com/countersign/countersign/models/policy"
)

func TestThePolicyListPagesAndFiltersByState(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		env := apptest.Start(t, db, nil)
		s, ctx := env.Store, context.Background()
		ada := env.Member(env.Account.ID, "ada", core.RoleOwner)
		if err := apptest.SeedDeviceKey(ctx, s, ada.ID, people.DeviceKey{ID: "ada-key", Name: "phone", Credential: "{}", PublicKey: "AQ"}); err != nil {
			t.Fatal(err)
		}
		now := s.Now().Truncate(time.Second)
		revoked := now.Add(-time.Hour)
		// Oldest first: expired, revoked, signed with a key that is gone, revoked, active.
		rows := []struct {
			state     string
			expires   time.Time
			revokedAt *time.Time
			key       string
		}{
			{policy.PolicyExpired, now.Add(-time.Minute), nil, "ada-key"},
			{policy.PolicyRevoked, now.Add(time.Hour), &revoked, "ada-key"},
			{policy.PolicyInactive, now.Add(time.Hour), nil, "gone-key"},
			{policy.PolicyRevoked, now.Add(2 * time.Hour), &revoked, "ada-key"},
			{policy.PolicyActive, now.Add(3 * time.Hour), nil, "ada-key"},
		}
		var ids []string
		for i, r := range rows {
			p := policy.Policy{
				ID: fmt.Sprintf("pol_%02d", i), AccountID: env.Account.ID, ApprovalID: fmt.Sprintf("appr_%02d", i), Scope: `{"ask_kinds":[],"max_priority":0,"requesters":[]}`,
				Requester: "agent:bot", SignerID: ada.ID, SignerSubject: "ada", CredentialID: r.key,
				SignedAt: now.Add(time.Duration(i-10) * time.Hour), ExpiresAt: r.expires, RevokedAt: r.revokedAt,
				CreatedAt: now.Add(time.Duration(i-10) * time.Hour),
			}
			if err := s.DB().Table("policies").Create(&p).Error; err != nil {
				t.Fatalf("insert policy: %v", err)
			}
			ids = append([]string{p.ID}, ids...) // newest first
		}
		// Two asks the active policy left to a person, one another policy did.
		for i, actor := range []string{"pol_04", "pol_04", "pol_01"} {
			if err := s.DB().Table("events").Create(&asks.TimelineEvent{AccountID: env.Account.ID, ApprovalID: fmt.Sprintf("appr_x%d", i),
				At: now, ActorKind: asks.ActorPolicy, Actor: actor, Step: policy.StepPolicySkipped}).Error; err != nil {
				t.Fatal(err)
			}
		}

		t.Run("pages run newest first and end", func(t *testing.T) {
			var got []string
			token := ""
			for page := 0; ; page++ {
				list, next, err := s.PolicyList(ctx, env.Account.ID, policy.PolicyFilter{PageSize: 2, PageToken: token})
				if err != nil {
					t.Fatalf("page %d: %v", page, err)
				}
				if len(list) > 2 || page > 3 {
					t.Fatalf("page %d has %d policies", page, len(list))
				}
				for _, p := range list {
					got = append(got, p.ID)
				}
				if next == "" {
					break
				}
				token = next
			}
			if !slices.Equal(got, ids) {
				t.Errorf("paged through %v, want %v", got, ids)
			}
		})
		t.Run("each policy has its state and the asks it left to a person", func(t *testing.T) {
			list, _, err := s.PolicyList(ctx, env.Account.ID, policy.PolicyFilter{})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range list {
				var i int
				fmt.Sscanf(p.ID, "pol_%d", &i)
				if p.State() != rows[i].state {
					t.Errorf("%s is %s (%s), want %s", p.ID, p.State(), p.Why, rows[i].state)
				}
				want := map[string]int{"pol_04": 2, "pol_01": 1}[p.ID]
				if p.SkippedCount != want {
					t.Errorf("%s skipped %d, want %d", p.ID, p.SkippedCount, want)
				}
			}
		})
		t.Run("the state filter keeps only that state", func(t *testing.T) {
			for state, want := range map[string][]string{
				policy.PolicyActive: {"pol_04"}, policy.PolicyRevoked: {"pol_03", "pol_01"},
				policy.PolicyExpired: {"pol_00"}, policy.PolicyInactive: {"pol_02"},
			} {
				list, next, err := s.PolicyList(ctx, env.Account.ID, policy.PolicyFilter{State: state})
				var got []string
				for _, p := range list {
					got = append(got, p.ID)
				}
				if err != nil || next != "" || !slices.Equal(got, want) {
					t.Errorf("state %s: %v (next %q, %v), want %v", state, got, next, err, want)
				}
			}
		})
		t.Run("a bad filter, page size or token is refused", func(t *testing.T) {
			for _, f := range []struct {
				filter policy.PolicyFilter
				field  string
			}{
				{policy.PolicyFilter{State: "on"}, "state"},
				{policy.PolicyFilter{PageSize: core.MaxPageSize + 1}, "page_size"},
				{policy.PolicyFilter{PageToken: "not-a-token"}, "page_token"},
			} {
				_, _, err := s.PolicyList(ctx, env.Account.ID, f.filter)
				if core.CodeOf(err) != core.InvalidArgument || core.FieldOf(err) != f.field {
					t.Errorf("%+v: %v, want INVALID_ARGUMENT on %s", f.filter, err, f.field)
				}
			}
		})
		t.Run("another account sees none of them", func(t *testing.T) {
			other, err := s.CreateAccount(ctx, "other")
			if err != nil {
				t.Fatal(err)
			}
			list, _, err := s.PolicyList(ctx, other.ID, policy.PolicyFilter{})
			if err != nil || len(list) != 0 {
				t.Errorf("another account lists %d policies (%v)", len(list), err)
			}
			if st, err := s.CurrentPolicy(ctx, other.ID); err != nil || st != nil {
				t.Errorf("another account's current policy = %+v (%v)", st, err)
			}
		})
	})
}
