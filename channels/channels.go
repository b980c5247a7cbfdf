// Package channels tells people of asks beyond Web Push: by email, by a
// Slack direct message or channel post, in a Microsoft Teams channel, on an
// ntfy topic, and by a signed webhook (PagerDuty, Opsgenie, anything).
//
// A message tells and links; it never decides. It holds the ask's title,
// kind, verified agent, badges and deadline, and nothing else of the
// payload. A message to a person carries a one-time link to the ask (as a
// push does), a message to a shared channel the plain ask link, which needs
// a sign-in. No channel carries an approve or a deny button: an answer is
// always one passkey signature over the exact payload, on the service.
//
// Messages wait in the durable outbox (models/outbox, channel_messages),
// each once per ask, person or channel, and event; a Sender leases them,
// sends, and records the outcome: sent, retried with backoff (a channel's
// Retry-After honoured), or dead after MaxMessageAttempts.
package channels

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/outbox"
	"github.com/countersign/countersign/sendloop"
)

// Outgoing is one message as a channel sends it.
type Outgoing struct {
	Message *outbox.ChannelMessage
	Note    outbox.ChannelNote
	// Link is the absolute URL the message opens: a one-time link to the
	// ask for a person, the ask's page for a shared channel, the service for
	// a test.
	Link string
	// Address is the person's address on the channel (an email address, a
	// Slack member id or ""), or nothing for a shared channel.
	Address string
	// Email is the person's email address, to find them on Slack when they
	// gave no member id.
	Email string
	// Shared is the shared channel a message goes to, nil for a person's.
	Shared *outbox.SharedChannel
	// Update is where the channel keeps the message a decided event
	// updates (Slack: the channel and ts).
	Update string
}

// Channel sends messages of one kind.
type Channel interface {
	// Send delivers out and returns where the channel keeps the message,
	// for a later update ("" when it cannot be updated).
	Send(ctx context.Context, out Outgoing) (ref string, err error)
}

// Updater is a channel that can change a message it sent: the message that
// told of an ask then says how it ended.
type Updater interface {
	Update(ctx context.Context, out Outgoing) error
}

// RetryAfter is a refusal for now: try again after Wait (a 429's
// Retry-After), or after the usual backoff when Wait is 0.
type RetryAfter struct {
	Wait time.Duration
	Err  error
}

func (e *RetryAfter) Error() string { return e.Err.Error() }
func (e *RetryAfter) Unwrap() error { return e.Err }

// Permanent is a refusal no retry mends (a bad address, a token refused):
// the message is dead at once.
type Permanent struct{ Err error }

func (e *Permanent) Error() string { return e.Err.Error() }
func (e *Permanent) Unwrap() error { return e.Err }

// Options configure a Sender.
type Options struct {
	BaseURL   string             // the service as people open it: links are on it
	Channels  map[string]Channel // by kind (outbox.ChannelEmail, …); a kind with none is dead on arrival
	Workers   int
	RetryBase time.Duration // the first retry's wait; it doubles, to at most ten minutes
	Lease     time.Duration
	Logger    *slog.Logger
	// Outcome, when set, hears each attempt's outcome (sent, retry, dead,
	// skipped) by channel kind, for metrics.
	Outcome func(kind, outcome string)
}

// Sender drains the channel outbox.
type Sender struct {
	store *models.Store
	opts  Options
	wake  chan struct{}
	log   *slog.Logger
}

// NewSender makes a sender; call Run to start it and Wake after queueing.
func NewSender(store *models.Store, opts Options) *Sender {
	if opts.Workers < 1 {
		opts.Workers = 4
	}
	if opts.RetryBase <= 0 {
		opts.RetryBase = time.Second
	}
	if opts.Lease <= 0 {
		opts.Lease = time.Minute
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Sender{store: store, opts: opts, wake: make(chan struct{}, 1), log: opts.Logger}
}

// Wake makes Run look for due messages now.
func (s *Sender) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Run sends due messages until ctx ends. Messages are leased, so several
// instances share the outbox and a crash mid-send only delays one.
func (s *Sender) Run(ctx context.Context) {
	sendloop.Loop[outbox.ChannelMessage]{
		Name: "channel messages", Workers: s.opts.Workers, Wake: s.wake, Log: s.log,
		Claim: func(ctx context.Context, n int) ([]outbox.ChannelMessage, error) {
			return s.store.ClaimChannelMessages(ctx, n, s.opts.Lease)
		},
		NextDue: s.store.NextMessageDue,
		Send:    s.send,
	}.Run(ctx)
}

// send delivers one message and records the outcome.
func (s *Sender) send(ctx context.Context, m *outbox.ChannelMessage) {
	outcome, err := s.deliver(ctx, m)
	if err != nil && ctx.Err() == nil {
		s.log.Error("record channel message outcome", "message", m.Seq, "err", err)
	}
	if err == nil && outcome != "" && s.opts.Outcome != nil {
		s.opts.Outcome(m.Kind, outcome)
	}
}

// deliver sends one message and records its outcome, which it returns: ""
// when it recorded none (shutting down).
func (s *Sender) deliver(ctx context.Context, m *outbox.ChannelMessage) (string, error) {
	now := s.store.Now()
	if !now.Before(m.ExpiresAt) {
		return "skipped", s.store.MessageSkipped(ctx, m, "expired before it was sent")
	}
	ch := s.opts.Channels[m.Kind]
	if ch == nil {
		return "dead", s.store.MessageDead(ctx, m, "the "+m.Kind+" channel is not configured on this service")
	}
	out, skip, err := s.outgoing(ctx, m)
	if err != nil {
		return "", err
	}
	if skip != "" {
		return "skipped", s.store.MessageSkipped(ctx, m, skip)
	}
	ref := ""
	if m.Event == outbox.MessageDecided {
		up, ok := ch.(Updater)
		if !ok {
			return "skipped", s.store.MessageSkipped(ctx, m, "the channel cannot change a message it sent")
		}
		updating, sent, gone, err := s.store.MessageUpdated(ctx, m)
		switch {
		case err != nil || gone:
			return "skipped", s.store.MessageSkipped(ctx, m, "the message it would update was never sent")
		case !sent: // the message is still on its way: update it once it is there, a wait that is no try
			return "", s.store.MessageLater(ctx, m, now.Add(s.opts.RetryBase))
		}
		out.Update = updating
		err = up.Update(ctx, out)
		ref = updating
		return s.record(ctx, m, ref, err)
	}
	ref, err = ch.Send(ctx, out)
	return s.record(ctx, m, ref, err)
}

// record writes the outcome of one try.
func (s *Sender) record(ctx context.Context, m *outbox.ChannelMessage, ref string, err error) (string, error) {
	if err == nil {
		return "sent", s.store.MessageSent(ctx, m, ref)
	}
	if ctx.Err() != nil {
		return "", nil // shutting down: the lease runs out and another try follows
	}
	var permanent *Permanent
	if errors.As(err, &permanent) {
		s.log.Warn("channel message refused", "kind", m.Kind, "message", m.Seq, "err", err)
		return "dead", s.store.MessageDead(ctx, m, err.Error())
	}
	wait := sendloop.Backoff(s.opts.RetryBase, m.Attempts)
	var later *RetryAfter
	if errors.As(err, &later) && later.Wait > wait {
		wait = later.Wait
	}
	outcome := "retry"
	if m.Attempts >= outbox.MaxMessageAttempts {
		outcome = "dead"
	}
	return outcome, s.store.MessageRetry(ctx, m, s.store.Now().Add(wait), err.Error())
}

// outgoing is the message as its channel sends it: for an ask to a person,
// with a fresh one-time link. skip says why there is no point sending it.
func (s *Sender) outgoing(ctx context.Context, m *outbox.ChannelMessage) (Outgoing, string, error) {
	out := Outgoing{Message: m, Address: m.Address}
	if err := json.Unmarshal([]byte(m.Body), &out.Note); err != nil {
		return out, "", fmt.Errorf("message %d body: %w", m.Seq, err)
	}
	base := strings.TrimRight(s.opts.BaseURL, "/")
	switch {
	case m.Event == outbox.MessageTest:
		out.Link = base + "/devices"
	case m.Shared() || m.Event == outbox.MessageDecided:
		out.Link = base + "/approvals/" + url.PathEscape(m.ApprovalID)
	default:
		token, err := s.store.IssueChannelLink(ctx, m)
		if err != nil {
			return out, "", err
		}
		if token == "" {
			return out, "the ask is no longer open", nil
		}
		out.Link = base + "/link/" + url.PathEscape(m.ApprovalID) + "/" + url.PathEscape(token)
	}
	if m.Shared() {
		c, err := s.store.SharedChannelByName(ctx, m.AccountID, m.Channel)
		if err != nil {
			return out, "the shared channel " + m.Channel + " was removed", nil
		}
		out.Shared = c
	} else if m.Kind == outbox.ChannelSlack && m.Address == "" {
		email, err := s.store.EmailOf(ctx, m.AccountID, m.PersonID)
		if err != nil {
			return out, "", err
		}
		out.Email = email
	}
	return out, "", nil
}

// httpRefusal is the error of an HTTP answer that is not a success: a 429
// or a 5xx is for now (honouring Retry-After), any other refusal permanent.
func httpRefusal(res *http.Response, what string) error {
	err := fmt.Errorf("%s answered %s", what, res.Status)
	switch code := res.StatusCode; {
	case code == http.StatusTooManyRequests || code >= 500:
		return &RetryAfter{Wait: sendloop.RetryAfter(res.Header.Get("Retry-After"), time.Now()), Err: err}
	case code == http.StatusRequestTimeout:
		return &RetryAfter{Err: err}
	}
	return &Permanent{Err: err}
}
