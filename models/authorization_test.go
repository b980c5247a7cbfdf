package models_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/countersign/countersign/ask"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/outbox"
	"github.com/countersign/countersign/models/people"
	"github.com/countersign/countersign/models/policy"
)

func authorizationFiling(acct, agent, person string, expires time.Time) models.AuthorizationFiling {
	return models.AuthorizationFiling{
		AccountID: acct, AgentID: agent, PersonID: person, ExpiresAt: expires,
		Payload: ask.AuthorizationPayload{
			Client:               ask.AuthorizationClient{ID: "cli_shop", Name: "Shop"},
			Scope:                "openid payments",
			AuthorizationDetails: json.RawMessage(`[{"type":"payment_initiation","instructedAmount":{"currency":"EUR","amount":"120.00"},"creditorName":"Merchant A","creditorAccount":{"iban":"DE89370400440532013000"}}]`),
			BindingMessage:       "Code 4711",
		},
	}
}

// The CIBA provider files an authorization ask of one person by the
// client's agent, with the binding message in its signed payload, expiring
// when told, and the person hears of it by push and by their other channels; no policy approves it, no window
// opens on it, no batch takes it, and approvals_create refuses the kind.
func TestFileAuthorizationAsksThePersonByTheClientsAgent(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		s, acct := apptest.BareStore(t, db)
		s.SetPushCap(outbox.PushCap{})
		if _, err := s.AddMember(ctx, acct.ID, "ada", "Ada", core.RoleOwner); err != nil {
			t.Fatal(err)
		}
		bob, err := s.AddMember(ctx, acct.ID, "bob", "Bob", core.RoleMember)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.SavePushSubscription(ctx, bob.ID, outbox.PushSubscription{Endpoint: "https://push.example/bob", P256dh: "key", Auth: "auth"}); err != nil {
			t.Fatal(err)
		}
		if err := s.SetPersonChannel(ctx, acct.ID, bob.ID, outbox.ChannelEmail, "bob@example.com"); err != nil {
			t.Fatal(err)
		}
		if err := apptest.SeedDeviceKey(ctx, s, bob.ID, people.DeviceKey{ID: "bob-key", Name: "phone", Credential: "{}", PublicKey: "AQ"}); err != nil {
			t.Fatal(err)
		}
		agent, _, err := s.CreateAgent(ctx, acct.ID, "ciba-shop", people.AllScopes)
		if err != nil {
			t.Fatal(err)
		}
		// An auto-approve policy bob signed, of every kind, by any agent, is on: it
		// approves the agent's review asks, never an authorization.
		now := s.Now().Truncate(time.Second)
		pol := policy.Policy{ID: "pol_all", AccountID: acct.ID, ApprovalID: "appr_pol", Scope: `{"ask_kinds":[],"max_priority":0,"requesters":[]}`,
			Requester: agent.Subject, SignerID: bob.ID, SignerSubject: "bob", CredentialID: "bob-key",
			SignedAt: now, ExpiresAt: now.Add(3 * time.Hour), CreatedAt: now}
		if err := s.DB().Table("policies").Create(&pol).Error; err != nil {
			t.Fatal(err)
		}
		review, err := s.CreateApproval(ctx, models.NewAsk{Requester: agent, Kind: ask.KindReview, Title: "Review", ApproveMeans: "go", DenyMeans: "stop",
			AskedOf: "bob", Payload: json.RawMessage(`{"review":{"url":"https://example.com/r"}}`), Context: json.RawMessage(`{"no_context_reason":"a test"}`)})
		if err != nil {
			t.Fatal(err)
		}
		if review.Status != asks.StatusApproved {
			t.Fatalf("the policy left a review ask %s: the test's policy is not on", review.Status)
		}

		expires := now.Add(7 * time.Minute)
		a, err := s.FileAuthorization(ctx, authorizationFiling(acct.ID, agent.ID, bob.ID, expires))
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.GetApproval(ctx, acct.ID, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Kind != ask.KindAuthorization || got.AskedOf != "bob" || got.RequesterID != agent.ID || got.RequesterSubject != agent.Subject ||
			got.Status != asks.StatusPending || !got.ExpiresAt.Equal(expires) {
			t.Errorf("filed %s asked of %q by %s (%s), %s, expiring %s; want authorization asked of bob by %s, pending, expiring %s",
				got.Kind, got.AskedOf, got.RequesterID, got.RequesterSubject, got.Status, got.ExpiresAt, agent.ID, expires)
		}
		var p struct {
			Authorization ask.AuthorizationPayload `json:"authorization"`
		}
		if err := json.Unmarshal([]byte(got.Payload), &p); err != nil || p.Authorization.BindingMessage != "Code 4711" || p.Authorization.Client.Name != "Shop" ||
			p.Authorization.Scope != "openid payments" || len(p.Authorization.AuthorizationDetails) == 0 {
			t.Errorf("payload %s (%v), want the client, scope, details and binding message", got.Payload, err)
		}
		if _, sum, _ := ask.CanonicalHash(json.RawMessage(got.Payload)); sum != got.PayloadSHA256 {
			t.Errorf("payload hash %s, want the canonical hash %s", got.PayloadSHA256, sum)
		}
		var jobs []outbox.PushJob
		if err := s.DB().Table("push_jobs").Where("approval_id = ?", a.ID).Find(&jobs).Error; err != nil {
			t.Fatal(err)
		}
		if len(jobs) != 1 || jobs[0].PersonID != bob.ID || jobs[0].Event != outbox.PushAsk {
			t.Errorf("queued %+v, want one ask push to bob", jobs)
		}
		var emails int64
		if err := s.DB().Table("channel_messages").Where("approval_id = ? AND person_id = ? AND kind = ?", a.ID, bob.ID, outbox.ChannelEmail).Count(&emails).Error; err != nil || emails != 1 {
			t.Errorf("%d email messages queued for bob (%v), want one: every channel the person has hears of the ask", emails, err)
		}
		if got.PolicyMayCover() {
			t.Error("a policy may cover an authorization ask")
		}
		if _, err := asks.WindowOf(got, ask.DefaultWindowMinutes); err == nil {
			t.Error("a window opens on an authorization ask")
		}
		if asks.WhyNotBatched(got) == "" {
			t.Error("an authorization ask may be answered in a batch")
		}

		_, err = s.CreateApproval(ctx, models.NewAsk{Requester: agent, Kind: ask.KindAuthorization, Title: "Sneak", ApproveMeans: "go", DenyMeans: "stop",
			Payload: json.RawMessage(`{"authorization":{"client":{"id":"c","name":"n"},"scope":"openid"}}`), Context: json.RawMessage(`{"no_context_reason":"a test"}`)})
		if core.CodeOf(err) != core.InvalidArgument || core.FieldOf(err) != "kind" {
			t.Errorf("approvals_create filed an authorization: %v", err)
		}
	})
}

// What the provider files is checked as every payload is: a bad binding
// message, a scope without openid, a past expiry, another account's agent
// or a person not of the account are refused, and nothing is filed.
func TestFileAuthorizationRefusesWhatDoesNotRead(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		s, acct := apptest.BareStore(t, db)
		bob, err := s.AddMember(ctx, acct.ID, "bob", "Bob", core.RoleMember)
		if err != nil {
			t.Fatal(err)
		}
		agent, _, err := s.CreateAgent(ctx, acct.ID, "ciba-shop", people.AllScopes)
		if err != nil {
			t.Fatal(err)
		}
		other, err := s.CreateAccount(ctx, "other")
		if err != nil {
			t.Fatal(err)
		}
		later := s.Now().Add(5 * time.Minute)
		cases := []struct {
			name  string
			edit  func(*models.AuthorizationFiling)
			code  core.Code
			field string
		}{
			{"a binding message on two lines", func(f *models.AuthorizationFiling) { f.Payload.BindingMessage = "a\nb" }, core.InvalidArgument, "payload.authorization.binding_message"},
			{"a scope without openid", func(f *models.AuthorizationFiling) { f.Payload.Scope = "payments" }, core.InvalidArgument, "payload.authorization.scope"},
			{"details that are no list", func(f *models.AuthorizationFiling) { f.Payload.AuthorizationDetails = json.RawMessage(`{"type":"x"}`) }, core.InvalidArgument, "payload.authorization.authorization_details"},
			{"details that are not JSON", func(f *models.AuthorizationFiling) { f.Payload.AuthorizationDetails = json.RawMessage(`[{"type":`) }, core.InvalidArgument, "payload.authorization.authorization_details"},
			{"a detail of a known type missing a member", func(f *models.AuthorizationFiling) {
				f.Payload.AuthorizationDetails = json.RawMessage(`[{"type":"countersign_action","action":"Restart"}]`)
			}, core.InvalidArgument, "payload.authorization.authorization_details[0].target"},
			{"an expiry past", func(f *models.AuthorizationFiling) { f.ExpiresAt = s.Now().Add(-time.Second) }, core.InvalidArgument, "expires_at"},
			{"an agent of another account", func(f *models.AuthorizationFiling) { f.AccountID = other.ID }, core.NotFound, "agent"},
			{"a person not of the account", func(f *models.AuthorizationFiling) { f.PersonID = "person_nobody" }, core.NotFound, "person"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				f := authorizationFiling(acct.ID, agent.ID, bob.ID, later)
				c.edit(&f)
				a, err := s.FileAuthorization(ctx, f)
				if core.CodeOf(err) != c.code || core.FieldOf(err) != c.field {
					t.Fatalf("filed %v with %v; want %s on %q", a, err, c.code, c.field)
				}
			})
		}
		var n int64
		if err := s.DB().Table("approvals").Where("kind = ?", ask.KindAuthorization).Count(&n).Error; err != nil || n != 0 {
			t.Errorf("%d authorization asks filed (%v), want none", n, err)
		}
	})
}

// The fatigue cap holds for authorization asks as for every ask: past it,
// the person's devices and channels hear of no more of them in the window,
// though each ask is still filed for them to answer.
func TestTheFatigueCapHoldsForAuthorizationAsks(t *testing.T) {
	ctx := context.Background()
	s, acct := apptest.BareStore(t, apptest.SQLite)
	s.SetPushCap(outbox.PushCap{N: 2, Window: time.Hour})
	bob, err := s.AddMember(ctx, acct.ID, "bob", "Bob", core.RoleMember)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SavePushSubscription(ctx, bob.ID, outbox.PushSubscription{Endpoint: "https://push.example/bob", P256dh: "key", Auth: "auth"}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetPersonChannel(ctx, acct.ID, bob.ID, outbox.ChannelEmail, "bob@example.com"); err != nil {
		t.Fatal(err)
	}
	agent, _, err := s.CreateAgent(ctx, acct.ID, "ciba-shop", people.AllScopes)
	if err != nil {
		t.Fatal(err)
	}
	var told []int64
	for range 3 {
		a, err := s.FileAuthorization(ctx, authorizationFiling(acct.ID, agent.ID, bob.ID, s.Now().Add(5*time.Minute)))
		if err != nil {
			t.Fatal(err)
		}
		var pushes, messages int64
		s.DB().Table("push_jobs").Where("approval_id = ?", a.ID).Count(&pushes)
		s.DB().Table("channel_messages").Where("approval_id = ? AND person_id = ?", a.ID, bob.ID).Count(&messages)
		told = append(told, pushes+messages)
	}
	if told[0] == 0 || told[1] == 0 || told[2] != 0 {
		t.Errorf("push and channel messages per authorization ask %v, want some for the first two and none past a cap of 2", told)
	}
}
