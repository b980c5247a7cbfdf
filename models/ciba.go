package models

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/countersign/countersign/ask"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/oidc"
)

// A CIBAStart is a CIBA authentication request the provider has checked:
// the client, the person it names, what the ask will hold, and the limits.
type CIBAStart struct {
	Client *oidc.Client
	// PersonID and Subject name the person asked, a member of the client's
	// account the client may ask.
	PersonID, Subject string
	Payload           ask.AuthorizationPayload
	ExpiresAt         time.Time
	Interval          int    // seconds between polls
	NotificationToken string // ping mode
	// PerPerson and PerClient are the most requests a minute for one person
	// (from every client) and from one client.
	PerPerson, PerClient int
}

// TooManyRequests is a CIBA request past a rate limit: Wait says when the
// limit lets the next one in.
type TooManyRequests struct {
	What string // "person" or "client"
	Max  int
	Wait time.Duration
}

func (e *TooManyRequests) Error() string {
	return fmt.Sprintf("at most %d requests a minute for one %s; try again in %d s", e.Max, e.What, int(e.Wait.Seconds()+0.999))
}

// StartCIBA files a CIBA request's ask (as FileAuthorization does) and
// keeps the request, in one transaction, after the rate limits (a minute's requests for the person and
// from the client, counted under a lock on the person, so requests made at
// once never pass the limit together). It returns the auth_req_id, the one
// time it is seen in full: the request keeps its SHA-256, and the plain value
// only in ping mode, where the notification must name it.
func (s *Store) StartCIBA(ctx context.Context, in CIBAStart) (string, *oidc.Request, error) {
	authReqID := core.RandomToken("")
	var req *oidc.Request
	err := s.Write(ctx, func(tx *gorm.DB) error {
		var locked []string
		if err := s.Lock(tx.Table("persons").Select("id").Where("id = ?", in.PersonID)).Pluck("id", &locked).Error; err != nil {
			return err
		}
		now := s.Now()
		for _, limit := range []struct {
			what, column, value string
			max                 int
		}{{"person", "person_id", in.PersonID, in.PerPerson}, {"client", "client_id", in.Client.ID, in.PerClient}} {
			if limit.max <= 0 {
				continue
			}
			since := now.Add(-time.Minute)
			n, oldest, err := s.RecentRequests(tx, limit.column, limit.value, since)
			if err != nil {
				return err
			}
			if n >= int64(limit.max) {
				return &TooManyRequests{What: limit.what, Max: limit.max, Wait: max(oldest.Add(time.Minute).Sub(now), time.Second)}
			}
		}
		a, err := s.authorizationAsk(ctx, AuthorizationFiling{
			AccountID: in.Client.AccountID, AgentID: in.Client.AgentID, PersonID: in.PersonID, Payload: in.Payload, ExpiresAt: in.ExpiresAt,
		})
		if err != nil {
			return err
		}
		if err := s.fileTx(tx, a); err != nil {
			return err
		}
		req = &oidc.Request{
			ID: core.HashToken(authReqID), AccountID: in.Client.AccountID, ClientID: in.Client.ID, ApprovalID: a.ID,
			PersonID: in.PersonID, Subject: in.Subject, Scope: in.Payload.Scope, AuthorizationDetails: string(in.Payload.AuthorizationDetails),
			DeliveryMode: in.Client.DeliveryMode, PollInterval: in.Interval, CreatedAt: now, ExpiresAt: in.ExpiresAt,
		}
		if in.Client.DeliveryMode == oidc.DeliveryPing {
			req.NotificationToken, req.AuthReqID = in.NotificationToken, authReqID
		}
		return s.InsertRequest(tx, req)
	})
	if err != nil {
		return "", nil, err
	}
	return authReqID, req, nil
}
