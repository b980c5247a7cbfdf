package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/mail"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/countersign/countersign/ask"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// The channels besides Web Push. A person may be told by email and by a
// Slack direct message; an account may post to shared channels: a Slack or
// Teams channel, an ntfy topic, or a webhook. A message tells and links; it
// never decides: no channel carries an approve or a deny.
const (
	ChannelEmail   = "email"
	ChannelSlack   = "slack"
	ChannelTeams   = "teams"
	ChannelNtfy    = "ntfy"
	ChannelWebhook = "webhook"
)

// PersonKinds are the channels a person may choose on Devices, besides Web Push.
var PersonKinds = []string{ChannelEmail, ChannelSlack}

// SharedKinds are the kinds of an account's shared channels.
var SharedKinds = []string{ChannelSlack, ChannelTeams, ChannelNtfy, ChannelWebhook}

// The events a channel message tells.
const (
	MessageAsk        = "ask"        // an ask to answer
	MessageReminder   = "reminder"   // the same ask again, still open
	MessageEscalation = "escalation" // an ask escalated to its rule's escalation pool or channel
	MessageDecided    = "decided"    // the ask ended: the message that told of it is updated where the channel allows
	MessageTest       = "test"       // "send me a test"
)

// MaxMessageAttempts is how many times a message is tried before it is
// dead: shown on Admin → Channels, never retried by itself.
const MaxMessageAttempts = 8

// PersonChannel is a channel a person chose: its kind and their address
// there (an email address; a Slack user id, or "" to find them by their
// email address).
type PersonChannel struct {
	AccountID string
	PersonID  string
	Kind      string
	Address   string
	CreatedAt time.Time
}

// SharedChannel is a channel of the account that messages are posted to:
// its name ("#oncall"), its kind, its settings (JSON, shown) and its secret
// (a token, a webhook URL or a signing key: written once, never shown
// again). EveryAsk posts every ask there; otherwise only escalations that
// name it.
type SharedChannel struct {
	AccountID string
	Name      string
	Kind      string
	Settings  string
	Secret    string
	EveryAsk  bool
	CreatedAt time.Time
	UpdatedAt time.Time
}

// ChannelMessage is one message in the channel outbox: to a person's channel
// (PersonID set) or to a shared channel (Channel names it). Key makes it
// once per ask, person or channel, and event, whatever crashes and retries
// happen: queuing it twice writes it once.
type ChannelMessage struct {
	Seq         int64 `gorm:"primaryKey;autoIncrement"`
	Key         string
	AccountID   string
	ApprovalID  string
	PersonID    string
	Channel     string // the shared channel's name; "" for a person's
	Kind        string
	Address     string // the person's address on their channel
	Event       string
	Body        string // ChannelNote, JSON
	CreatedAt   time.Time
	NotBefore   time.Time
	ExpiresAt   time.Time
	Attempts    int
	LeasedUntil *time.Time
	DoneAt      *time.Time
	Outcome     string
	LastError   string
	RemoteRef   string // where the channel keeps the message (Slack: channel and ts), for its update
}

// Shared says whether the message goes to a shared channel, not a person.
func (m *ChannelMessage) Shared() bool { return m.PersonID == "" }

// ChannelNote is what a message says of an ask: its title, kind, the
// verified agent, the badges and the deadline, and nothing else of the
// payload; when the ask ended, how.
type ChannelNote struct {
	Event      string     `json:"event"`
	ApprovalID string     `json:"approval_id,omitempty"`
	Title      string     `json:"title"`
	Kind       string     `json:"kind,omitempty"`
	Agent      string     `json:"agent,omitempty"`
	Badges     []string   `json:"badges,omitempty"`
	ExpiresAt  time.Time  `json:"expires_at"`
	Status     string     `json:"status,omitempty"`
	DecidedBy  string     `json:"decided_by,omitempty"`
	DecidedAt  *time.Time `json:"decided_at,omitempty"`
}

// Badges are the marks a message shows of an ask: PRODUCTION on a run or a
// roll with effect production, "needs code" when the person picks a check
// code, "2 people" (or more) when a rule needs them.
func Badges(a *asks.Approval) []string {
	var out []string
	if strings.Contains(a.Payload, `"effect":"production"`) || a.Kind == ask.KindRoll {
		out = append(out, "PRODUCTION")
	}
	if ask.NeedsCheckCode(a.Kind, a.Payload) {
		out = append(out, "needs code")
	}
	if req := a.RequirementOf(); req != nil && req.Count > 1 {
		out = append(out, fmt.Sprintf("%d people", req.Count))
	}
	return out
}

// NoteOf is the message body of an ask for event.
func NoteOf(a *asks.Approval, event, title string) ChannelNote {
	n := ChannelNote{Event: event, ApprovalID: a.ID, Title: title, Kind: a.Kind, Agent: a.RequesterSubject, Badges: Badges(a), ExpiresAt: a.ExpiresAt}
	if !a.Status.Open() {
		n.Status, n.DecidedBy, n.DecidedAt = string(a.Status), a.DecidedBy, a.DecidedAt
	}
	return n
}

var slackUserID = regexp.MustCompile(`^[UW][A-Z0-9]{2,20}$`)

// CheckPersonChannel checks a person's address on a channel kind.
func CheckPersonChannel(kind, address string) (string, error) {
	address = strings.TrimSpace(address)
	switch kind {
	case ChannelEmail:
		a, err := mail.ParseAddress(address)
		if err != nil || a.Name != "" || a.Address != address || len(address) > 254 {
			return "", core.Invalid("address", "%q is not an email address (name@example.com)", address)
		}
	case ChannelSlack:
		if address != "" && !slackUserID.MatchString(address) {
			return "", core.Invalid("address", "%q is not a Slack member id (U… or W…, from your Slack profile → ⋯ → Copy member ID); leave it empty to be found by your email address", address)
		}
	default:
		return "", core.Invalid("kind", "%q is not a channel a person chooses: one of %s", kind, strings.Join(PersonKinds, ", "))
	}
	return address, nil
}

// SetPersonChannel turns a channel on for a person of the account, with
// their address there; again, it changes the address.
func (s *Queue) SetPersonChannel(ctx context.Context, accountID, personID, kind, address string) error {
	address, err := CheckPersonChannel(kind, address)
	if err != nil {
		return err
	}
	return s.Write(ctx, func(tx *gorm.DB) error {
		return tx.Table("person_channels").Clauses(clause.OnConflict{
			Columns:   []clause.Column{{Name: "account_id"}, {Name: "person_id"}, {Name: "kind"}},
			DoUpdates: clause.AssignmentColumns([]string{"address"}),
		}).Create(&PersonChannel{AccountID: accountID, PersonID: personID, Kind: kind, Address: address, CreatedAt: s.Now()}).Error
	})
}

// RemovePersonChannel turns a person's channel off; its queued messages go.
func (s *Queue) RemovePersonChannel(ctx context.Context, accountID, personID, kind string) error {
	return s.Write(ctx, func(tx *gorm.DB) error {
		if err := tx.Exec(`DELETE FROM person_channels WHERE account_id = ? AND person_id = ? AND kind = ?`, accountID, personID, kind).Error; err != nil {
			return err
		}
		return tx.Table("channel_messages").Where("account_id = ? AND person_id = ? AND kind = ? AND done_at IS NULL", accountID, personID, kind).
			Updates(map[string]any{"done_at": s.Now(), "outcome": "cancelled", "leased_until": nil}).Error
	})
}

// PersonChannels are the channels a person chose in an account, by kind.
func (s *Queue) PersonChannels(ctx context.Context, accountID, personID string) ([]PersonChannel, error) {
	var out []PersonChannel
	err := s.DB().WithContext(ctx).Table("person_channels").Where("account_id = ? AND person_id = ?", accountID, personID).Order("kind").Find(&out).Error
	return out, err
}

// EmailOf is the email address a person gave on their email channel, or "".
func (s *Queue) EmailOf(ctx context.Context, accountID, personID string) (string, error) {
	var out []string
	err := s.DB().WithContext(ctx).Table("person_channels").Where("account_id = ? AND person_id = ? AND kind = ?", accountID, personID, ChannelEmail).
		Limit(1).Pluck("address", &out).Error
	if err != nil || len(out) == 0 {
		return "", err
	}
	return out[0], nil
}

// recipientChannels reads the channels of the people an ask is asked of (as
// recipientDevices reads their devices), or of the account's members with
// subjects when subjects is not nil.
func recipientChannels(tx *gorm.DB, a *asks.Approval, subjects []string) ([]PersonChannel, error) {
	q, args := `SELECT c.* FROM person_channels c JOIN memberships m ON m.person_id = c.person_id AND m.account_id = c.account_id
		JOIN persons p ON p.id = m.person_id WHERE c.account_id = ?`, []any{a.AccountID}
	switch req := a.RequirementOf(); {
	case subjects != nil:
		if len(subjects) == 0 {
			return nil, nil
		}
		q += ` AND p.subject IN ?`
		args = append(args, subjects)
	case req != nil:
		people := req.People
		if a.EscalatedAt != nil {
			people = append(slices.Clone(people), req.Escalation...)
		}
		q += ` AND p.subject IN ?`
		args = append(args, people)
	case a.AskedOf != "":
		q += ` AND p.subject = ?`
		args = append(args, a.AskedOf)
	default:
		q += ` AND m.role IN ?`
		args = append(args, []core.Role{core.RoleOwner, core.RoleAdmin})
	}
	var out []PersonChannel
	err := tx.Raw(q+` ORDER BY c.person_id, c.kind`, args...).Find(&out).Error
	return out, err
}

// QueueAskMessages writes, inside the ask's transaction, a message of event
// titled title to every channel of the people the ask is asked of (or of
// the members with subjects, when not nil), and, for a first ask, to every
// shared channel that takes every ask. round tells one reminder or
// escalation from the next; a message of the same ask, person or channel,
// event and round is written once.
func (s *Queue) QueueAskMessages(tx *gorm.DB, a *asks.Approval, event, title, round string, subjects []string) error {
	people, err := recipientChannels(tx, a, subjects)
	if err != nil {
		return fmt.Errorf("find the recipients' channels: %w", err)
	}
	var shared []SharedChannel
	if event == MessageAsk && subjects == nil {
		if err := tx.Table("shared_channels").Where("account_id = ? AND every_ask", a.AccountID).Order("name").Find(&shared).Error; err != nil {
			return fmt.Errorf("find the shared channels: %w", err)
		}
	}
	if len(people) == 0 && len(shared) == 0 {
		return nil
	}
	body, err := json.Marshal(NoteOf(a, event, title))
	if err != nil {
		return err
	}
	now := s.Now()
	capped, err := s.capped(tx, people, now)
	if err != nil {
		return err
	}
	msgs := make([]ChannelMessage, 0, len(people)+len(shared))
	for _, c := range people {
		if capped[c.PersonID] {
			continue // past the fatigue cap: their inbox holds the ask, and a push says how many wait
		}
		msgs = append(msgs, ChannelMessage{Key: messageKey(a.ID, "person:"+c.PersonID, c.Kind, event, round), AccountID: a.AccountID, ApprovalID: a.ID,
			PersonID: c.PersonID, Kind: c.Kind, Address: c.Address, Event: event, Body: string(body), CreatedAt: now, NotBefore: now, ExpiresAt: a.ExpiresAt})
	}
	for _, c := range shared {
		msgs = append(msgs, ChannelMessage{Key: messageKey(a.ID, "channel:"+c.Name, c.Kind, event, round), AccountID: a.AccountID, ApprovalID: a.ID,
			Channel: c.Name, Kind: c.Kind, Event: event, Body: string(body), CreatedAt: now, NotBefore: now, ExpiresAt: a.ExpiresAt})
	}
	return s.insertMessages(tx, msgs)
}

// QueueSharedMessage writes, inside the ask's transaction, a message of
// event to the account's shared channel name (an escalation that names it).
func (s *Queue) QueueSharedMessage(tx *gorm.DB, a *asks.Approval, name, event, title, round string) error {
	var c SharedChannel
	if err := tx.Table("shared_channels").Where("account_id = ? AND name = ?", a.AccountID, name).Take(&c).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return core.Refuse(core.NotFound, "channel", "no shared channel %q", name)
		}
		return fmt.Errorf("shared channel %q: %w", name, err)
	}
	body, err := json.Marshal(NoteOf(a, event, title))
	if err != nil {
		return err
	}
	now := s.Now()
	return s.insertMessages(tx, []ChannelMessage{{Key: messageKey(a.ID, "channel:"+c.Name, c.Kind, event, round), AccountID: a.AccountID, ApprovalID: a.ID,
		Channel: c.Name, Kind: c.Kind, Event: event, Body: string(body), CreatedAt: now, NotBefore: now, ExpiresAt: a.ExpiresAt}})
}

// capped says which of the people were told of too many asks lately (the
// fatigue cap, every channel counted together).
func (s *Queue) capped(tx *gorm.DB, people []PersonChannel, now time.Time) (map[string]bool, error) {
	if s.PushCap.N <= 0 || len(people) == 0 {
		return nil, nil
	}
	var persons []string
	for _, c := range people {
		if !slices.Contains(persons, c.PersonID) {
			persons = append(persons, c.PersonID)
		}
	}
	over, err := s.overCap(tx, persons, now)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, p := range over {
		out[p] = true
	}
	return out, nil
}

func messageKey(approvalID, to, kind, event, round string) string {
	return strings.Join([]string{approvalID, to, kind, event, round}, "/")
}

// insertMessages writes msgs, each once: a message whose key is already
// there is left as it is.
func (s *Queue) insertMessages(tx *gorm.DB, msgs []ChannelMessage) error {
	if len(msgs) == 0 {
		return nil
	}
	if err := tx.Table("channel_messages").Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "key"}}, DoNothing: true}).Create(&msgs).Error; err != nil {
		return fmt.Errorf("queue channel messages: %w", err)
	}
	return s.OutboxQueued(tx)
}

// queueDecidedMessages, when an ask ends, drops its messages still waiting
// and queues the update of each one that told of it on a channel that can
// change a message it sent (Slack): "Approved by ada at 14:02", "Expired".
// A channel message never shows a stale open ask.
func (s *Queue) queueDecidedMessages(tx *gorm.DB, a *asks.Approval) error {
	now := s.Now()
	if err := tx.Table("channel_messages").Where("approval_id = ? AND done_at IS NULL AND event <> ? AND (leased_until IS NULL OR leased_until < ?)", a.ID, MessageDecided, now).
		Updates(map[string]any{"done_at": now, "outcome": "superseded"}).Error; err != nil {
		return err
	}
	var told []ChannelMessage
	if err := tx.Table("channel_messages").Where("approval_id = ? AND kind = ? AND event <> ? AND outcome <> ?", a.ID, ChannelSlack, MessageDecided, "superseded").
		Order("seq").Find(&told).Error; err != nil {
		return err
	}
	if len(told) == 0 {
		return nil
	}
	body, err := json.Marshal(NoteOf(a, MessageDecided, a.Title))
	if err != nil {
		return err
	}
	msgs := make([]ChannelMessage, 0, len(told))
	for _, m := range told {
		msgs = append(msgs, ChannelMessage{Key: m.Key + "/decided", AccountID: m.AccountID, ApprovalID: a.ID, PersonID: m.PersonID, Channel: m.Channel,
			Kind: m.Kind, Address: m.Address, Event: MessageDecided, Body: string(body), CreatedAt: now, NotBefore: now, ExpiresAt: now.Add(24 * time.Hour),
			RemoteRef: fmt.Sprint(m.Seq)}) // the message to update, by its seq, until it was sent
	}
	return s.insertMessages(tx, msgs)
}

// MessageUpdated is what an update needs of the message it updates: where
// the channel keeps it, once it was sent.
func (s *Queue) MessageUpdated(ctx context.Context, m *ChannelMessage) (ref string, sent, gone bool, err error) {
	var told ChannelMessage
	if err := s.DB().WithContext(ctx).Table("channel_messages").Where("seq = ?", m.RemoteRef).Take(&told).Error; err != nil {
		return "", false, true, err
	}
	switch {
	case told.Outcome == "sent":
		return told.RemoteRef, true, false, nil
	case told.DoneAt != nil:
		return "", false, true, nil // never sent: nothing to update
	}
	return "", false, false, nil
}

// QueueTestMessage queues a test message to a person's channel of kind.
func (s *Queue) QueueTestMessage(ctx context.Context, accountID, personID, kind string) error {
	var c PersonChannel
	now := s.Now()
	return s.Write(ctx, func(tx *gorm.DB) error {
		if err := tx.Table("person_channels").Where("account_id = ? AND person_id = ? AND kind = ?", accountID, personID, kind).Take(&c).Error; err != nil {
			return core.Refuse(core.NotFound, "kind", "you have not turned %s on", kind)
		}
		if err := testedLately(tx, "person_id = ? AND kind = ?", now, personID, kind); err != nil {
			return err
		}
		body, _ := json.Marshal(ChannelNote{Event: MessageTest, Title: "A test from Countersign", ExpiresAt: now.Add(time.Hour)})
		return s.insertMessages(tx, []ChannelMessage{{Key: messageKey("", "person:"+personID, kind, MessageTest, core.NewID("t")), AccountID: accountID,
			PersonID: personID, Kind: kind, Address: c.Address, Event: MessageTest, Body: string(body), CreatedAt: now, NotBefore: now, ExpiresAt: now.Add(time.Hour)}})
	})
}

// TestEvery is how often a test may be sent to one channel: a test goes to
// an address somebody typed, and must not become a way to flood it.
const TestEvery = time.Minute

// testedLately refuses a test when the channel where holds one sent less
// than TestEvery ago.
func testedLately(tx *gorm.DB, where string, now time.Time, args ...any) error {
	var n int64
	if err := tx.Table("channel_messages").Where("event = ? AND created_at > ? AND "+where, append([]any{MessageTest, now.Add(-TestEvery)}, args...)...).
		Count(&n).Error; err != nil {
		return err
	}
	if n > 0 {
		return core.Refuse(core.ResourceExhausted, "", "a test was sent there less than a minute ago: wait for it, or try again in a minute")
	}
	return nil
}

// ClaimChannelMessages leases up to n due messages for sending. A lease that
// runs out (the sender died) makes the message due again.
func (s *Queue) ClaimChannelMessages(ctx context.Context, n int, lease time.Duration) ([]ChannelMessage, error) {
	var out []ChannelMessage
	err := s.claim(ctx, "channel_messages", n, lease, func(tx *gorm.DB, seqs []int64) error {
		return tx.Table("channel_messages").Where("seq IN ?", seqs).Order("seq").Find(&out).Error
	})
	if err != nil {
		return nil, fmt.Errorf("claim channel messages: %w", err)
	}
	return out, nil
}

// MessageSent records that the channel took the message, and where it keeps it.
func (s *Queue) MessageSent(ctx context.Context, m *ChannelMessage, ref string) error {
	return s.finishMessage(ctx, m, map[string]any{"done_at": s.Now(), "outcome": "sent", "leased_until": nil, "remote_ref": ref})
}

// MessageSkipped records a message there was no point sending (the ask
// ended, an update of a message never sent).
func (s *Queue) MessageSkipped(ctx context.Context, m *ChannelMessage, why string) error {
	return s.finishMessage(ctx, m, map[string]any{"done_at": s.Now(), "outcome": "skipped", "leased_until": nil, "last_error": truncate(why, 500)})
}

// MessageRetry schedules another try at notBefore; a message tried
// MaxMessageAttempts times, or whose next try is past its expiry, is dead.
func (s *Queue) MessageRetry(ctx context.Context, m *ChannelMessage, notBefore time.Time, reason string) error {
	set := map[string]any{"not_before": notBefore, "leased_until": nil, "last_error": truncate(reason, 500)}
	if m.Attempts >= MaxMessageAttempts || !notBefore.Before(m.ExpiresAt) {
		set["done_at"], set["outcome"] = s.Now(), "dead"
	}
	return s.finishMessage(ctx, m, set)
}

// MessageLater puts a claimed message back, due at notBefore, without
// counting the claim as a try: an update that waits for the message it
// updates to be sent first.
func (s *Queue) MessageLater(ctx context.Context, m *ChannelMessage, notBefore time.Time) error {
	return s.finishMessage(ctx, m, map[string]any{"not_before": notBefore, "leased_until": nil, "attempts": gorm.Expr("attempts - 1")})
}

// MessageDead gives a message up for good (a refusal no retry mends): it
// shows on Admin → Channels.
func (s *Queue) MessageDead(ctx context.Context, m *ChannelMessage, reason string) error {
	return s.finishMessage(ctx, m, map[string]any{"done_at": s.Now(), "outcome": "dead", "leased_until": nil, "last_error": truncate(reason, 500)})
}

// finishMessage writes set on the message while this sender still holds
// it: its attempts are still the claim's, so a sender whose lease ran out
// and whose message another claimed since writes nothing over the other's.
func (s *Queue) finishMessage(ctx context.Context, m *ChannelMessage, set map[string]any) error {
	return s.Write(ctx, func(tx *gorm.DB) error {
		return tx.Table("channel_messages").Where("seq = ? AND done_at IS NULL AND attempts = ?", m.Seq, m.Attempts).Updates(set).Error
	})
}

// DeadMessages are the account's newest dead messages.
func (s *Queue) DeadMessages(ctx context.Context, accountID string, limit int) ([]ChannelMessage, error) {
	var out []ChannelMessage
	err := s.DB().WithContext(ctx).Table("channel_messages").Where("account_id = ? AND outcome = ?", accountID, "dead").
		Order("seq DESC").Limit(limit).Find(&out).Error
	return out, err
}

// NextMessageDue says when the earliest queued message is due, or zero.
func (s *Queue) NextMessageDue(ctx context.Context) (time.Time, error) {
	var next []time.Time
	err := s.DB().WithContext(ctx).Table("channel_messages").Where("done_at IS NULL").Order("not_before").Limit(1).Pluck("not_before", &next).Error
	if err != nil || len(next) == 0 {
		return time.Time{}, err
	}
	return next[0], nil
}

// secretNeeded says, for the kinds that cannot post without a secret of
// their own, what it is. ntfy's secret (an access token) is optional; Slack
// takes none: the service's bot token posts.
var secretNeeded = map[string]string{
	ChannelTeams:   "a Teams channel posts to its Workflows webhook URL, which is its secret",
	ChannelWebhook: "a webhook channel needs its URL and signing secret",
}
