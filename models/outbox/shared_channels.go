package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/countersign/countersign/models/core"
	"gorm.io/gorm"
)

// An account's shared channels: where messages are posted for everyone in
// them (a Slack or Teams channel, an ntfy topic, a webhook).

// SharedChannelByName reads the account's shared channel name, with its secret.
func (s *Queue) SharedChannelByName(ctx context.Context, accountID, name string) (*SharedChannel, error) {
	var c SharedChannel
	if err := s.DB().WithContext(ctx).Table("shared_channels").Where("account_id = ? AND name = ?", accountID, name).Take(&c).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, core.Refuse(core.NotFound, "name", "no shared channel %q", name)
		}
		return nil, err
	}
	return &c, nil
}

// SharedChannels are the account's shared channels, by name.
func (s *Queue) SharedChannels(ctx context.Context, accountID string) ([]SharedChannel, error) {
	var out []SharedChannel
	err := s.DB().WithContext(ctx).Table("shared_channels").Where("account_id = ?", accountID).Order("name").Find(&out).Error
	return out, err
}

var sharedName = regexp.MustCompile(`^[#a-z0-9][a-z0-9._-]{0,79}$`)

// SaveSharedChannel adds the account's shared channel c, or changes the one
// of its name. An empty secret keeps the one it has: a secret is written
// once and never shown again. Teams and webhook channels need one, ntfy may
// have one, and a Slack channel has none.
func (s *Queue) SaveSharedChannel(ctx context.Context, c SharedChannel) error {
	c.Name = strings.TrimSpace(c.Name)
	if !sharedName.MatchString(c.Name) {
		return core.Invalid("name", "%q is not a channel name: lower-case letters, digits, . _ - (a # first is kept), at most 80", c.Name)
	}
	if !slices.Contains(SharedKinds, c.Kind) {
		return core.Invalid("kind", "%q is not a shared channel: one of %s", c.Kind, strings.Join(SharedKinds, ", "))
	}
	if c.Settings == "" {
		c.Settings = "{}"
	}
	if !json.Valid([]byte(c.Settings)) {
		return core.Invalid("settings", "not JSON")
	}
	if c.Kind == ChannelSlack && c.Secret != "" {
		return core.Invalid("secret", "a Slack channel takes no secret: the service's bot token (COUNTERSIGN_SLACK_BOT_TOKEN) posts to it")
	}
	now := s.Now()
	c.CreatedAt, c.UpdatedAt = now, now
	return s.Write(ctx, func(tx *gorm.DB) error {
		var old SharedChannel
		err := tx.Table("shared_channels").Where("account_id = ? AND name = ?", c.AccountID, c.Name).Take(&old).Error
		switch {
		case err == nil:
			if c.Secret == "" && c.Kind != ChannelSlack {
				c.Secret = old.Secret
			}
			if why, needed := secretNeeded[c.Kind]; needed && c.Secret == "" {
				return core.Invalid("secret", "required: %s", why)
			}
			return tx.Table("shared_channels").Where("account_id = ? AND name = ?", c.AccountID, c.Name).
				Updates(map[string]any{"kind": c.Kind, "settings": c.Settings, "secret": c.Secret, "every_ask": c.EveryAsk, "updated_at": now}).Error
		case errors.Is(err, gorm.ErrRecordNotFound):
			if why, needed := secretNeeded[c.Kind]; needed && c.Secret == "" {
				return core.Invalid("secret", "required: %s", why)
			}
			return tx.Table("shared_channels").Create(&c).Error
		}
		return err
	})
}

// RemoveSharedChannel removes the account's shared channel name; its
// queued messages go.
func (s *Queue) RemoveSharedChannel(ctx context.Context, accountID, name string) error {
	return s.Write(ctx, func(tx *gorm.DB) error {
		var rules []string
		if err := tx.Table("approval_rules").Where("account_id = ? AND NOT removed AND spec LIKE ?", accountID, `%"escalate_channel":`+jsonString(name)+`%`).
			Pluck("id", &rules).Error; err != nil {
			return err
		}
		if len(rules) > 0 {
			return core.Refuse(core.FailedPrecondition, "name", "rule %s escalates to %s: change the rule first", strings.Join(rules, ", "), name)
		}
		res := tx.Exec(`DELETE FROM shared_channels WHERE account_id = ? AND name = ?`, accountID, name)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return core.Refuse(core.NotFound, "name", "no shared channel %q", name)
		}
		return tx.Table("channel_messages").Where("account_id = ? AND channel = ? AND done_at IS NULL", accountID, name).
			Updates(map[string]any{"done_at": s.Now(), "outcome": "cancelled", "leased_until": nil}).Error
	})
}

func jsonString(s string) string {
	raw, _ := json.Marshal(s)
	return string(raw)
}

// QueueSharedTest queues a test message to the account's shared channel name.
func (s *Queue) QueueSharedTest(ctx context.Context, accountID, name string) error {
	now := s.Now()
	return s.Write(ctx, func(tx *gorm.DB) error {
		var c SharedChannel
		if err := tx.Table("shared_channels").Where("account_id = ? AND name = ?", accountID, name).Take(&c).Error; err != nil {
			return core.Refuse(core.NotFound, "name", "no shared channel %q", name)
		}
		if err := testedLately(tx, "account_id = ? AND channel = ?", now, accountID, name); err != nil {
			return err
		}
		body, _ := json.Marshal(ChannelNote{Event: MessageTest, Title: "A test from Countersign", ExpiresAt: now.Add(time.Hour)})
		return s.insertMessages(tx, []ChannelMessage{{Key: messageKey("", "channel:"+name, c.Kind, MessageTest, core.NewID("t")), AccountID: accountID,
			Channel: name, Kind: c.Kind, Event: MessageTest, Body: string(body), CreatedAt: now, NotBefore: now, ExpiresAt: now.Add(time.Hour)}})
	})
}
