package oidc

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/countersign/countersign/ask"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
)

// A Request is one CIBA authentication request: the ask it filed for one
// person, the client's polls, and in ping mode the notification owed to the
// client when the ask ends. It is found by the SHA-256 of its auth_req_id;
// the plain auth_req_id is kept only where a ping must name it.
type Request struct {
	ID                   string `gorm:"primaryKey"` // SHA-256 of the auth_req_id
	AccountID            string
	ClientID             string
	ApprovalID           string
	PersonID             string
	Subject              string
	Scope                string
	AuthorizationDetails string // RFC 8785 JSON of the details as sent; "" for none
	DeliveryMode         string
	NotificationToken    string // ping: the bearer token the notification carries
	AuthReqID            string // ping: the auth_req_id the notification names
	PollInterval         int    // seconds between polls; slow_down adds 5
	CreatedAt            time.Time
	ExpiresAt            time.Time
	PolledAt             *time.Time
	RedeemedAt           *time.Time
	NotifyDueAt          *time.Time
	NotifyLeasedUntil    *time.Time
	NotifyAttempts       int
	NotifiedAt           *time.Time
	NotifyError          string
}

// TableName keeps gorm on the migrated table.
func (Request) TableName() string { return "ciba_requests" }

// An AccessToken is what a redeemed request gave its client, kept by the
// SHA-256 of the token: bound to the client, with the authorization
// details the person approved.
type AccessToken struct {
	TokenSHA256          string `gorm:"primaryKey;column:token_sha256"`
	AccountID            string
	ClientID             string
	RequestID            string
	ApprovalID           string
	PersonID             string
	Subject              string
	Scope                string
	AuthorizationDetails string
	CreatedAt            time.Time
	ExpiresAt            time.Time
	RevokedAt            *time.Time
}

// TableName keeps gorm on the migrated table.
func (AccessToken) TableName() string { return "oidc_access_tokens" }

// InsertRequest writes a request in the transaction that filed its ask.
func (s *Provider) InsertRequest(tx *gorm.DB, r *Request) error {
	return tx.Create(r).Error
}

// RecentRequests counts the requests made for a person (column person_id)
// or by a client (client_id) since a time, and says when the oldest of them
// was made (zero when none was), in the transaction about to add one: the
// rate limits read it, and the oldest says when the next is let in.
func (s *Provider) RecentRequests(tx *gorm.DB, column, value string, since time.Time) (int64, time.Time, error) {
	if column != "person_id" && column != "client_id" {
		return 0, time.Time{}, fmt.Errorf("recent requests: no column %q", column)
	}
	// The limits keep these few (at most a limit's worth a minute): the
	// times themselves give both answers, and read the same on SQLite and
	// PostgreSQL, where an aggregate's time does not.
	var at []time.Time
	err := tx.Model(&Request{}).Where(column+" = ? AND created_at > ?", value, since).Order("created_at").Pluck("created_at", &at).Error
	if err != nil || len(at) == 0 {
		return 0, time.Time{}, err
	}
	return int64(len(at)), at[0], nil
}

// PollOutcome is what a poll of the token endpoint finds.
type PollOutcome string

// The outcomes of a poll: CIBA's error codes, or tokens.
const (
	Pending  PollOutcome = "authorization_pending"
	SlowDown PollOutcome = "slow_down"
	Denied   PollOutcome = "access_denied"
	Expired  PollOutcome = "expired_token"
	Redeemed PollOutcome = "redeemed"
)

// ErrNotRedeemable is a poll for a request that is not the client's, not
// known, or already redeemed: invalid_grant.
var ErrNotRedeemable = errors.New("the auth_req_id is unknown, was issued to another client, or was redeemed")

// A Poll is one poll's result: the outcome, the request and its ask, and on
// Redeemed the access token made (its plain value, returned once).
type Poll struct {
	Outcome  PollOutcome
	Request  *Request
	Approval *asks.Approval
	Token    string
	Access   *AccessToken
}

// Poll answers a client's poll for the request with that SHA-256 id, in one
// transaction: too soon after the last poll is slow_down (and the interval
// grows by 5 s), an open ask is authorization_pending, a denied or ended
// ask access_denied, an expired one expired_token, and an approved one is
// redeemed once: the request is spent and an access token of accessLife
// made, bound to the client. issue is called inside the redemption's
// transaction with what was redeemed: its error undoes the redemption, so a
// client never loses tokens it was not given.
func (s *Provider) Poll(ctx context.Context, clientID, requestID string, accessLife time.Duration, issue func(*Poll) error) (*Poll, error) {
	out := &Poll{}
	err := s.Write(ctx, func(tx *gorm.DB) error {
		var r Request
		err := s.Lock(tx).Where("id = ?", requestID).Take(&r).Error
		if errors.Is(err, gorm.ErrRecordNotFound) || (err == nil && (r.ClientID != clientID || r.RedeemedAt != nil)) {
			return ErrNotRedeemable
		}
		if err != nil {
			return err
		}
		var a asks.Approval
		if err := tx.Where("account_id = ? AND id = ?", r.AccountID, r.ApprovalID).Take(&a).Error; err != nil {
			return err
		}
		out.Request, out.Approval = &r, &a
		now := s.Now()
		switch {
		case a.Status == asks.StatusApproved:
			token := core.RandomToken("cat_")
			at := &AccessToken{TokenSHA256: core.HashToken(token), AccountID: r.AccountID, ClientID: r.ClientID, RequestID: r.ID,
				ApprovalID: r.ApprovalID, PersonID: r.PersonID, Subject: r.Subject, Scope: r.Scope,
				AuthorizationDetails: r.AuthorizationDetails, CreatedAt: now, ExpiresAt: now.Add(accessLife)}
			if err := tx.Create(at).Error; err != nil {
				return err
			}
			r.RedeemedAt = &now
			out.Outcome, out.Token, out.Access = Redeemed, token, at
			if err := tx.Model(&Request{}).Where("id = ?", r.ID).Update("redeemed_at", now).Error; err != nil {
				return err
			}
			return issue(out)
		case a.Status == asks.StatusExpired || (a.Status.Open() && !now.Before(r.ExpiresAt)):
			out.Outcome = Expired
			return nil
		case !a.Status.Open():
			out.Outcome = Denied
			return nil
		case r.PolledAt != nil && now.Before(r.PolledAt.Add(time.Duration(r.PollInterval)*time.Second)):
			out.Outcome = SlowDown
			r.PollInterval += 5
		default:
			out.Outcome = Pending
		}
		r.PolledAt = &now
		return tx.Model(&Request{}).Where("id = ?", r.ID).Updates(map[string]any{"polled_at": now, "poll_interval": r.PollInterval}).Error
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// AccessTokenByHash finds an access token by its SHA-256, whatever its
// state: introspection says whether it is active.
func (s *Provider) AccessTokenByHash(ctx context.Context, hash string) (*AccessToken, error) {
	var t AccessToken
	err := s.DB().WithContext(ctx).Where("token_sha256 = ?", hash).Take(&t).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, core.Refuse(core.NotFound, "token", "no such access token")
	}
	return &t, err
}

// CIBARequest is the request with that SHA-256 id.
func (s *Provider) CIBARequest(ctx context.Context, requestID string) (*Request, error) {
	var r Request
	err := s.DB().WithContext(ctx).Where("id = ?", requestID).Take(&r).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, core.Refuse(core.NotFound, "auth_req_id", "no such CIBA request")
	}
	return &r, err
}

// RequestsOnMove makes a ping owed when an authorization ask ends: its
// request, in ping mode, notifies the client from now on. It runs inside
// the move's transaction, so an ended ask always owes its ping.
func (s *Provider) RequestsOnMove(tx *gorm.DB, a *asks.Approval, from asks.Status, _ asks.Event) error {
	if a.Kind != ask.KindAuthorization || a.Status.Open() || !from.Open() {
		return nil
	}
	return tx.Model(&Request{}).Where("approval_id = ? AND delivery_mode = ? AND notify_due_at IS NULL", a.ID, DeliveryPing).
		Update("notify_due_at", s.Now()).Error
}
