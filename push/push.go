// Package push delivers Web Push notifications from the durable outbox in
// models: VAPID keys made once and kept in the database, encryption by
// webpush-go, bounded concurrency, retries with backoff, and the removal of
// subscriptions the push service says are gone.
package push

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	webpush "github.com/SherClockHolmes/webpush-go"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/outbox"
	"github.com/countersign/countersign/sendloop"
)

// Keys are the VAPID key pair, base64url as webpush-go writes them.
type Keys struct {
	Public  string `json:"public"`
	Private string `json:"private"`
}

const keysSetting = "vapid_keys"

// LoadKeys returns the service's VAPID keys, making and storing them on the
// first start. Instances starting together keep the same pair.
func LoadKeys(ctx context.Context, store *models.Store) (Keys, error) {
	var k Keys
	raw, err := store.Setting(ctx, keysSetting)
	if err != nil {
		return k, err
	}
	if raw == "" {
		priv, pub, err := webpush.GenerateVAPIDKeys()
		if err != nil {
			return k, fmt.Errorf("make VAPID keys: %w", err)
		}
		fresh, _ := json.Marshal(Keys{Public: pub, Private: priv})
		if raw, err = store.SettingOnce(ctx, keysSetting, string(fresh)); err != nil {
			return k, err
		}
	}
	return readKeys(raw)
}

// StoredKeys returns the VAPID keys the service keeps, making none: found
// is false when no start has made them yet (countersign doctor reads them).
func StoredKeys(ctx context.Context, store *models.Store) (k Keys, found bool, err error) {
	raw, err := store.Setting(ctx, keysSetting)
	if err != nil || raw == "" {
		return k, false, err
	}
	k, err = readKeys(raw)
	return k, true, err
}

// readKeys reads the stored pair; both halves must be there.
func readKeys(raw string) (Keys, error) {
	var k Keys
	if err := json.Unmarshal([]byte(raw), &k); err != nil || k.Public == "" || k.Private == "" {
		return k, errors.New("the stored VAPID keys cannot be read")
	}
	return k, nil
}

// KnownServices are the push services browsers use; a subscription's
// endpoint must be on one of them (or on a host the configuration adds), so
// the server never posts to an address a client chose.
var KnownServices = []string{
	"fcm.googleapis.com",                // Chrome, Edge, Android
	"updates.push.services.mozilla.com", // Firefox
	"push.services.mozilla.com",
	"web.push.apple.com", // Safari on iOS and macOS
	"push.apple.com",
	"notify.windows.com", // legacy Edge
}

// Allowed says whether endpoint is an https URL on a known push service, or
// on one of extra (host or host:port, http allowed there for local tests).
func Allowed(endpoint string, extra []string) bool {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return false
	}
	for _, h := range extra {
		if strings.EqualFold(u.Host, h) || strings.EqualFold(u.Hostname(), h) {
			return u.Scheme == "https" || u.Scheme == "http"
		}
	}
	if u.Scheme != "https" {
		return false
	}
	host := strings.ToLower(u.Hostname())
	for _, s := range KnownServices {
		if host == s || strings.HasSuffix(host, "."+s) {
			return true
		}
	}
	return false
}

// Options configure a Sender.
type Options struct {
	BaseURL      string   // the service as people open it: a declarative push's navigate URL is on it
	Contact      string   // the VAPID subject: an email address or an https URL
	AllowedHosts []string // push service hosts beyond KnownServices
	Workers      int      // pushes in flight at once
	Timeout      time.Duration
	RetryBase    time.Duration // the first retry's wait; it doubles, to at most ten minutes
	Lease        time.Duration // how long a claimed push is held before another sender may take it
	Logger       *slog.Logger
	// Outcome, when set, hears each attempt's outcome (delivered, gone,
	// retry, failed), for metrics.
	Outcome func(outcome string)
}

// Sender drains the push outbox.
type Sender struct {
	store  *models.Store
	keys   Keys
	opts   Options
	client *http.Client
	wake   chan struct{}
	log    *slog.Logger
}

// NewSender makes a sender; call Run to start it and Wake after queueing.
func NewSender(store *models.Store, keys Keys, opts Options) *Sender {
	if opts.Workers < 1 {
		opts.Workers = 8
	}
	if opts.Timeout == 0 {
		opts.Timeout = 10 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.RetryBase <= 0 {
		opts.RetryBase = time.Second
	}
	if opts.Lease <= 0 {
		opts.Lease = time.Minute
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = opts.Workers
	return &Sender{
		store: store, keys: keys, opts: opts, log: opts.Logger,
		client: &http.Client{Transport: transport, Timeout: opts.Timeout},
		wake:   make(chan struct{}, 1),
	}
}

// Wake makes Run look for due pushes now.
func (s *Sender) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Run sends due pushes until ctx ends. Jobs are leased, so several
// instances share the outbox and a crash mid-send only delays a push.
func (s *Sender) Run(ctx context.Context) {
	sendloop.Loop[outbox.PushTarget]{
		Name: "pushes", Workers: s.opts.Workers, Wake: s.wake, Log: s.log,
		Claim: func(ctx context.Context, n int) ([]outbox.PushTarget, error) {
			return s.store.ClaimPushJobs(ctx, n, s.opts.Lease)
		},
		NextDue: s.store.NextPushDue,
		Send:    s.send,
	}.Run(ctx)
}

// send delivers one push and records the outcome.
func (s *Sender) send(ctx context.Context, j *outbox.PushTarget) {
	outcome, err := s.deliver(ctx, j)
	if err != nil && ctx.Err() == nil {
		s.log.Error("record push outcome", "job", j.Seq, "err", err)
	}
	if err == nil && outcome != "" && s.opts.Outcome != nil {
		s.opts.Outcome(outcome)
	}
}

// deliver sends one push and records its outcome, which it returns: "" when
// it recorded none (shutting down, or a read failed).
func (s *Sender) deliver(ctx context.Context, j *outbox.PushTarget) (string, error) {
	now := s.store.Now()
	ttl := int(j.ExpiresAt.Sub(now).Seconds())
	if ttl <= 0 {
		return "retry", s.store.PushRetry(ctx, j, j.ExpiresAt, "expired before it was sent")
	}
	if !Allowed(j.Endpoint, s.opts.AllowedHosts) {
		return "failed", s.store.PushFailed(ctx, j, "the endpoint is not on a known push service")
	}
	waiting := 0
	if j.Event == outbox.PushCollapsed {
		n, err := s.store.WaitingFor(ctx, j.PersonID)
		if err != nil {
			return "", err
		}
		if n == 0 {
			return "delivered", s.store.PushDelivered(ctx, j) // nothing waits any more
		}
		waiting = n
	}
	body, err := s.body(ctx, j, waiting)
	if err != nil {
		return "", err
	}
	sendCtx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	res, err := webpush.SendNotificationWithContext(sendCtx, body, &webpush.Subscription{
		Endpoint: j.Endpoint, Keys: webpush.Keys{P256dh: j.P256dh, Auth: j.Auth},
	}, &webpush.Options{
		HTTPClient:      s.client,
		Subscriber:      strings.TrimPrefix(s.opts.Contact, "mailto:"), // webpush-go adds mailto: itself
		VAPIDPublicKey:  s.keys.Public,
		VAPIDPrivateKey: s.keys.Private,
		TTL:             min(ttl, 28*24*3600),
		Urgency:         webpush.Urgency(j.Urgency),
		Topic:           j.Topic,
	})
	if err != nil {
		if ctx.Err() != nil {
			return "", nil // shutting down: the lease runs out and another try follows
		}
		var netErr net.Error
		if errors.As(err, &netErr) || errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "connection") {
			return "retry", s.store.PushRetry(ctx, j, now.Add(sendloop.Backoff(s.opts.RetryBase, j.Attempts)), err.Error())
		}
		return "failed", s.store.PushFailed(ctx, j, err.Error()) // a bad subscription key: no retry mends it
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	res.Body.Close()
	switch code := res.StatusCode; {
	case code >= 200 && code < 300:
		return "delivered", s.store.PushDelivered(ctx, j)
	case code == http.StatusNotFound || code == http.StatusGone:
		s.log.Info("push subscription gone", "status", code, "subscription", j.SubscriptionID)
		return "gone", s.store.PushGone(ctx, j)
	case code == http.StatusTooManyRequests || code >= 500:
		wait := sendloop.Backoff(s.opts.RetryBase, j.Attempts)
		if ra := sendloop.RetryAfter(res.Header.Get("Retry-After"), now); ra > wait {
			wait = ra
		}
		return "retry", s.store.PushRetry(ctx, j, now.Add(wait), res.Status)
	default:
		s.log.Warn("push refused", "status", code, "subscription", j.SubscriptionID)
		return "failed", s.store.PushFailed(ctx, j, res.Status)
	}
}

func waitingTitle(n int) string {
	if n == 1 {
		return "1 ask waits for you"
	}
	return strconv.Itoa(n) + " asks wait for you"
}
