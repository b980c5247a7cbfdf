package outbox_test

import (
	"context"
	"strings"
	"testing"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/outbox"
)

// A shared channel needs a secret only where it cannot post without one of
// its own: Teams (its Workflows URL) and webhooks (URL and signing secret).
// ntfy may have an access token; Slack has none, the service's bot token
// posts, so a secret given for it is refused rather than kept unused.
func TestASharedChannelNeedsASecretOnlyWhereItsKindPostsWithOne(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		s, acct := apptest.BareStore(t, db)
		secret := func(name string) string {
			t.Helper()
			c, err := s.SharedChannelByName(ctx, acct.ID, name)
			if err != nil {
				t.Fatalf("read %s: %v", name, err)
			}
			return c.Secret
		}

		for _, tc := range []struct {
			name, kind, settings, secret string
			refusal                      string // "" when it is saved
		}{
			{"#oncall", outbox.ChannelSlack, `{"channel":"C0ONCALL"}`, "", ""},
			{"#ops", outbox.ChannelNtfy, `{"server":"https://ntfy.sh","topic":"ops"}`, "", ""},
			{"#ops-private", outbox.ChannelNtfy, `{"server":"https://ntfy.sh","topic":"ops2"}`, `{"token":"tk_1"}`, ""},
			{"#teams", outbox.ChannelTeams, `{}`, `{"url":"https://x.logic.azure.com/w"}`, ""},
			{"#hook", outbox.ChannelWebhook, `{}`, `{"url":"https://hooks.example.com/a","signing_secret":"whsec_AA=="}`, ""},
			{"#teams-bare", outbox.ChannelTeams, `{}`, "", "Workflows webhook URL"},
			{"#hook-bare", outbox.ChannelWebhook, `{}`, "", "URL and signing secret"},
			{"#slack-token", outbox.ChannelSlack, `{"channel":"C0X"}`, `{"token":"xoxb-mine"}`, "bot token"},
		} {
			err := s.SaveSharedChannel(ctx, outbox.SharedChannel{AccountID: acct.ID, Name: tc.name, Kind: tc.kind, Settings: tc.settings, Secret: tc.secret, EveryAsk: true})
			if tc.refusal == "" {
				if err != nil {
					t.Errorf("save %s channel %s with secret %q: %v, want it saved", tc.kind, tc.name, tc.secret, err)
				} else if got := secret(tc.name); got != tc.secret {
					t.Errorf("%s keeps secret %q, want %q", tc.name, got, tc.secret)
				}
				continue
			}
			if core.CodeOf(err) != core.InvalidArgument || core.FieldOf(err) != "secret" || !strings.Contains(err.Error(), tc.refusal) {
				t.Errorf("save %s channel %s with secret %q: %v, want a refusal of the secret saying %q", tc.kind, tc.name, tc.secret, err, tc.refusal)
			}
			if _, err := s.SharedChannelByName(ctx, acct.ID, tc.name); core.CodeOf(err) != core.NotFound {
				t.Errorf("the refused %s was saved anyway (%v)", tc.name, err)
			}
		}

		t.Run("saved again without a secret, a channel keeps its own", func(t *testing.T) {
			if err := s.SaveSharedChannel(ctx, outbox.SharedChannel{AccountID: acct.ID, Name: "#teams", Kind: outbox.ChannelTeams, Settings: `{}`}); err != nil {
				t.Fatal(err)
			}
			if got := secret("#teams"); got != `{"url":"https://x.logic.azure.com/w"}` {
				t.Errorf("#teams secret %q after a save without one, want the one it had", got)
			}
		})
		t.Run("a Slack channel turned into Teams needs the Teams secret", func(t *testing.T) {
			err := s.SaveSharedChannel(ctx, outbox.SharedChannel{AccountID: acct.ID, Name: "#oncall", Kind: outbox.ChannelTeams, Settings: `{}`})
			if core.FieldOf(err) != "secret" {
				t.Fatalf("#oncall to teams without a secret: %v, want a refusal of the secret", err)
			}
			if c, _ := s.SharedChannelByName(ctx, acct.ID, "#oncall"); c == nil || c.Kind != outbox.ChannelSlack {
				t.Errorf("#oncall after the refused change: %+v, want it still Slack", c)
			}
		})
		t.Run("a Teams channel turned into Slack drops the secret it no longer uses", func(t *testing.T) {
			if err := s.SaveSharedChannel(ctx, outbox.SharedChannel{AccountID: acct.ID, Name: "#teams", Kind: outbox.ChannelSlack, Settings: `{"channel":"C0TEAMS"}`}); err != nil {
				t.Fatal(err)
			}
			if got := secret("#teams"); got != "" {
				t.Errorf("#teams, now Slack, keeps secret %q, want none", got)
			}
		})
	})
}
