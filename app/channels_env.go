package app

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/countersign/countersign/channels"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/outbox"
	"github.com/countersign/countersign/models/people"
)

// EnvChannel is a shared channel of the default account that the
// environment sets at every start, taking every ask: for a one-team service
// configured the way it is deployed, beside Admin → Channels.
type EnvChannel struct {
	Name     string // teams, ntfy, webhook or slack: the variable's channel
	Kind     string
	Settings any
	Secret   channels.Secret
}

// envChannels reads the shared channels the environment sets, each checked
// as Admin → Channels checks it.
func envChannels(get func(string) string, guard channels.Guard, slackToken string) ([]EnvChannel, map[string]string) {
	var out []EnvChannel
	bad := map[string]string{}
	if raw := get("COUNTERSIGN_TEAMS_WEBHOOK_URL"); raw != "" {
		if err := guard.CheckURL(outbox.ChannelTeams, raw); err != nil {
			bad["COUNTERSIGN_TEAMS_WEBHOOK_URL"] = err.Error()
		} else {
			u, _ := url.Parse(raw)
			out = append(out, EnvChannel{Name: "teams", Kind: outbox.ChannelTeams, Settings: map[string]string{"host": u.Host}, Secret: channels.Secret{URL: raw}})
		}
	}
	if raw := get("COUNTERSIGN_NTFY_URL"); raw != "" {
		u, err := url.Parse(raw)
		topic := ""
		if err == nil {
			topic = strings.Trim(u.Path, "/")
		}
		switch {
		case err != nil || topic == "" || strings.Contains(topic, "/"):
			bad["COUNTERSIGN_NTFY_URL"] = "must be the topic's URL, like https://ntfy.sh/countersign-ops"
		case guard.CheckURL(outbox.ChannelNtfy, raw) != nil:
			bad["COUNTERSIGN_NTFY_URL"] = guard.CheckURL(outbox.ChannelNtfy, raw).Error()
		default:
			out = append(out, EnvChannel{Name: "ntfy", Kind: outbox.ChannelNtfy, Settings: channels.NtfySettings{Server: u.Scheme + "://" + u.Host, Topic: topic},
				Secret: channels.Secret{Token: get("COUNTERSIGN_NTFY_TOKEN")}})
		}
	} else if get("COUNTERSIGN_NTFY_TOKEN") != "" {
		bad["COUNTERSIGN_NTFY_TOKEN"] = "is set but COUNTERSIGN_NTFY_URL is not"
	}
	if raw := get("COUNTERSIGN_WEBHOOK_URL"); raw != "" {
		secret := get("COUNTERSIGN_WEBHOOK_SECRET")
		switch {
		case guard.CheckURL(outbox.ChannelWebhook, raw) != nil:
			bad["COUNTERSIGN_WEBHOOK_URL"] = guard.CheckURL(outbox.ChannelWebhook, raw).Error()
		case !strings.HasPrefix(secret, "whsec_"):
			bad["COUNTERSIGN_WEBHOOK_SECRET"] = "required with COUNTERSIGN_WEBHOOK_URL: the signing secret, whsec_ and at least 24 random bytes in base64 (whsec_$(openssl rand -base64 32))"
		default:
			if _, err := channels.SignWebhook(secret, "check", time.Time{}, nil); err != nil {
				bad["COUNTERSIGN_WEBHOOK_SECRET"] = err.Error()
				break
			}
			u, _ := url.Parse(raw)
			out = append(out, EnvChannel{Name: "webhook", Kind: outbox.ChannelWebhook, Settings: map[string]string{"host": u.Host},
				Secret: channels.Secret{URL: raw, SigningSecret: secret}})
		}
	} else if get("COUNTERSIGN_WEBHOOK_SECRET") != "" {
		bad["COUNTERSIGN_WEBHOOK_SECRET"] = "is set but COUNTERSIGN_WEBHOOK_URL is not"
	}
	if ch := get("COUNTERSIGN_SLACK_CHANNEL"); ch != "" {
		if slackToken == "" {
			bad["COUNTERSIGN_SLACK_CHANNEL"] = "needs COUNTERSIGN_SLACK_BOT_TOKEN: the bot posts there"
		} else {
			out = append(out, EnvChannel{Name: "slack", Kind: outbox.ChannelSlack, Settings: channels.SlackSettings{Channel: ch}})
		}
	}
	return out, bad
}

// ApplyEnvChannels sets the environment's shared channels in the default
// account, each taking every ask; a channel the environment no longer sets
// is left as it is (remove it on Admin → Channels).
func ApplyEnvChannels(ctx context.Context, store *models.Store, list []EnvChannel) error {
	if len(list) == 0 {
		return nil
	}
	acct, err := store.AccountByName(ctx, people.DefaultAccountName)
	if err != nil {
		return err
	}
	for _, c := range list {
		settings, _ := json.Marshal(c.Settings)
		secret := ""
		if c.Secret != (channels.Secret{}) {
			raw, _ := json.Marshal(c.Secret)
			secret = string(raw)
		}
		if err := store.SaveSharedChannel(ctx, outbox.SharedChannel{AccountID: acct.ID, Name: c.Name, Kind: c.Kind, Settings: string(settings),
			Secret: secret, EveryAsk: true}); err != nil {
			return fmt.Errorf("the %s channel: %w", c.Name, err)
		}
	}
	return nil
}
