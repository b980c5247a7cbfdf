package oauth

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/oidc"
	"github.com/countersign/countersign/sendloop"
)

// Pinger tells ping-mode CIBA clients that a request ended (CIBA §10.2): a
// POST of {"auth_req_id"} to the client's notification endpoint, with the
// request's client_notification_token as its bearer token. The ping is owed
// in the transaction that ended the ask, so a crash delays it and loses
// none; it is retried with backoff, and the client may always poll.
type Pinger struct {
	store     *models.Store
	client    *http.Client
	retryBase time.Duration
	wake      chan struct{}
	log       *slog.Logger
}

// NewPinger makes a pinger that posts with client (one that keeps off
// private addresses unless allowed); Run starts it.
func NewPinger(store *models.Store, client *http.Client, retryBase time.Duration, log *slog.Logger) *Pinger {
	if retryBase <= 0 {
		retryBase = time.Second
	}
	return &Pinger{store: store, client: client, retryBase: retryBase, wake: make(chan struct{}, 1), log: log}
}

// Wake makes Run look for owed pings now.
func (p *Pinger) Wake() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Run sends owed pings until ctx ends.
func (p *Pinger) Run(ctx context.Context) {
	sendloop.Loop[oidc.Request]{
		Name: "CIBA pings", Workers: 2, Wake: p.wake, Log: p.log,
		Claim: func(ctx context.Context, n int) ([]oidc.Request, error) {
			return p.store.ClaimPings(ctx, n, time.Minute)
		},
		NextDue: p.store.NextPingDue,
		Send:    p.send,
	}.Run(ctx)
}

func (p *Pinger) send(ctx context.Context, r *oidc.Request) {
	if err := p.deliver(ctx, r); err != nil && ctx.Err() == nil {
		p.log.Error("record CIBA ping outcome", "client", r.ClientID, "err", err)
	}
}

func (p *Pinger) deliver(ctx context.Context, r *oidc.Request) error {
	c, err := p.store.CIBAClient(ctx, r.ClientID)
	if err != nil {
		return p.store.PingRetry(ctx, r, p.store.Now().Add(sendloop.Backoff(p.retryBase, r.NotifyAttempts)), err.Error())
	}
	if c.RevokedAt != nil || c.NotificationEndpoint == "" {
		return p.store.PingDead(ctx, r, "the client was revoked or has no notification endpoint")
	}
	body, _ := json.Marshal(map[string]string{"auth_req_id": r.AuthReqID})
	sendCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(sendCtx, http.MethodPost, c.NotificationEndpoint, bytes.NewReader(body))
	if err != nil {
		return p.store.PingDead(ctx, r, "the notification endpoint does not read: "+err.Error())
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+r.NotificationToken)
	res, err := p.client.Do(req)
	if ctx.Err() != nil {
		return nil
	}
	if err != nil {
		return p.store.PingRetry(ctx, r, p.store.Now().Add(sendloop.Backoff(p.retryBase, r.NotifyAttempts)), err.Error())
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	_ = res.Body.Close()
	switch {
	case res.StatusCode >= 200 && res.StatusCode < 300:
		return p.store.PingSent(ctx, r)
	case res.StatusCode == http.StatusTooManyRequests || res.StatusCode >= 500 || res.StatusCode == http.StatusRequestTimeout:
		wait := sendloop.RetryAfter(res.Header.Get("Retry-After"), p.store.Now())
		if wait <= 0 {
			wait = sendloop.Backoff(p.retryBase, r.NotifyAttempts)
		}
		return p.store.PingRetry(ctx, r, p.store.Now().Add(wait), fmt.Sprintf("the endpoint answered %d", res.StatusCode))
	}
	return p.store.PingDead(ctx, r, fmt.Sprintf("the endpoint answered %d", res.StatusCode))
}
