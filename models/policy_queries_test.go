package models_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models"
)

func TestThePolicyListPagesAndFiltersByState(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		env := apptest.Start(t, db, nil)
		s, ctx := env.Store, context.Background()
		ada := env.Member(env.Account.ID, "ada", models.RoleOwner)
		if err := apptest.SeedDeviceKey(ctx, s, ada.ID, models.DeviceKey{ID: "ada-key", Name: "phone", Credential: "{}", PublicKey: "AQ"}); err != nil {
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
			{models.PolicyExpired, now.Add(-time.Minute), nil, "ada-key"},
			{models.PolicyRevoked, now.Add(time.Hour), &revoked, "ada-key"},
			{models.PolicyInactive, now.Add(time.Hour), nil, "gone-key"},
			{models.PolicyRevoked, now.Add(2 * time.Hour), &revoked, "ada-key"},
			{models.PolicyActive, now.Add(3 * time.Hour), nil, "ada-key"},
		}
		var ids []string
		for i, r := range rows {
			p := models.Policy{
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
			if err := s.DB().Table("events").Create(&models.TimelineEvent{AccountID: env.Account.ID, ApprovalID: fmt.Sprintf("appr_x%d", i),
				At: now, ActorKind: models.ActorPolicy, Actor: actor, Step: models.StepPolicySkipped}).Error; err != nil {
				t.Fatal(err)
			}
		}

		t.Run("pages run newest first and end", func(t *testing.T) {
			var got []string
			token := ""
			for page := 0; ; page++ {
				list, next, err := s.PolicyList(ctx, env.Account.ID, models.PolicyFilter{PageSize: 2, PageToken: token})
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
			list, _, err := s.PolicyList(ctx, env.Account.ID, models.PolicyFilter{})
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
				models.PolicyActive: {"pol_04"}, models.PolicyRevoked: {"pol_03", "pol_01"},
				models.PolicyExpired: {"pol_00"}, models.PolicyInactive: {"pol_02"},
			} {
				list, next, err := s.PolicyList(ctx, env.Account.ID, models.PolicyFilter{State: state})
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
				filter models.PolicyFilter
				field  string
			}{
				{models.PolicyFilter{State: "on"}, "state"},
				{models.PolicyFilter{PageSize: models.MaxPageSize + 1}, "page_size"},
				{models.PolicyFilter{PageToken: "not-a-token"}, "page_token"},
			} {
				_, _, err := s.PolicyList(ctx, env.Account.ID, f.filter)
				if models.CodeOf(err) != models.InvalidArgument || models.FieldOf(err) != f.field {
					t.Errorf("%+v: %v, want INVALID_ARGUMENT on %s", f.filter, err, f.field)
				}
			}
		})
		t.Run("another account sees none of them", func(t *testing.T) {
			other, err := s.CreateAccount(ctx, "other")
			if err != nil {
				t.Fatal(err)
			}
			list, _, err := s.PolicyList(ctx, other.ID, models.PolicyFilter{})
			if err != nil || len(list) != 0 {
				t.Errorf("another account lists %d policies (%v)", len(list), err)
			}
			if st, err := s.CurrentPolicy(ctx, other.ID); err != nil || st != nil {
				t.Errorf("another account's current policy = %+v (%v)", st, err)
			}
		})
	})
}
