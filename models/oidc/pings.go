package oidc

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/countersign/countersign/models/core"
)

// MaxPingAttempts is how often a ping is tried before it is given up: the
// client can still poll.
const MaxPingAttempts = 8

// dueRequests are the requests whose ping is due and held by no sender.
func dueRequests(tx *gorm.DB, now time.Time) *gorm.DB {
	return tx.Model(&Request{}).Where("notify_due_at <= ? AND notified_at IS NULL AND (notify_leased_until IS NULL OR notify_leased_until < ?)", now, now)
}

// ClaimPings leases up to n requests whose ping is due. A lease that runs
// out (the sender died) makes the ping due again; the client's endpoint
// may then hear of the request twice, which CIBA allows (it polls once).
func (s *Provider) ClaimPings(ctx context.Context, n int, lease time.Duration) ([]Request, error) {
	now := s.Now()
	var first []string
	if err := dueRequests(s.DB().WithContext(ctx), now).Limit(1).Pluck("id", &first).Error; err != nil || len(first) == 0 {
		return nil, err
	}
	var out []Request
	err := s.Write(ctx, func(tx *gorm.DB) error {
		q := dueRequests(tx, now).Order("notify_due_at").Limit(n)
		if s.Dialect() == core.Postgres {
			q = q.Clauses(clause.Locking{Strength: "UPDATE", Options: "SKIP LOCKED"})
		}
		var ids []string
		if err := q.Pluck("id", &ids).Error; err != nil || len(ids) == 0 {
			return err
		}
		if err := tx.Model(&Request{}).Where("id IN ?", ids).
			Updates(map[string]any{"notify_leased_until": now.Add(lease), "notify_attempts": gorm.Expr("notify_attempts + 1")}).Error; err != nil {
			return err
		}
		return tx.Where("id IN ?", ids).Find(&out).Error
	})
	if err != nil {
		return nil, fmt.Errorf("claim CIBA pings: %w", err)
	}
	return out, nil
}

// PingSent records that the client's endpoint took the ping; the plain
// auth_req_id and the client's token, kept only for it, are forgotten.
func (s *Provider) PingSent(ctx context.Context, r *Request) error {
	return s.finishPing(ctx, r, map[string]any{"notified_at": s.Now(), "notify_leased_until": nil, "notify_error": "", "auth_req_id": "", "notification_token": ""})
}

// PingRetry schedules another try at notBefore; after MaxPingAttempts, or
// past the request's life, the ping is given up.
func (s *Provider) PingRetry(ctx context.Context, r *Request, notBefore time.Time, reason string) error {
	set := map[string]any{"notify_due_at": notBefore, "notify_leased_until": nil, "notify_error": clip(reason)}
	if r.NotifyAttempts >= MaxPingAttempts || !notBefore.Before(r.ExpiresAt.Add(time.Hour)) {
		return s.PingDead(ctx, r, reason)
	}
	return s.finishPing(ctx, r, set)
}

// PingDead gives a ping up for good; the client can still poll.
func (s *Provider) PingDead(ctx context.Context, r *Request, reason string) error {
	return s.finishPing(ctx, r, map[string]any{"notified_at": s.Now(), "notify_leased_until": nil, "notify_error": "gave up: " + clip(reason),
		"auth_req_id": "", "notification_token": ""})
}

// finishPing writes set while this sender still holds the ping: its
// attempts are still the claim's.
func (s *Provider) finishPing(ctx context.Context, r *Request, set map[string]any) error {
	return s.Write(ctx, func(tx *gorm.DB) error {
		return tx.Model(&Request{}).Where("id = ? AND notified_at IS NULL AND notify_attempts = ?", r.ID, r.NotifyAttempts).Updates(set).Error
	})
}

// NextPingDue says when the earliest owed ping is due, or zero.
func (s *Provider) NextPingDue(ctx context.Context) (time.Time, error) {
	var next []time.Time
	err := s.DB().WithContext(ctx).Model(&Request{}).Where("notify_due_at IS NOT NULL AND notified_at IS NULL").
		Order("notify_due_at").Limit(1).Pluck("notify_due_at", &next).Error
	if err != nil || len(next) == 0 {
		return time.Time{}, err
	}
	return next[0], nil
}

func clip(s string) string {
	if len(s) > 500 {
		return s[:500]
	}
	return s
}
