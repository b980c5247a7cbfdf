package grants

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
	"gorm.io/gorm"
)

// OAuthTokens are a fresh access token and refresh token, shown once.
type OAuthTokens struct {
	Access, Refresh string
	Scopes          string
	AccessExpiresAt time.Time
}

// ErrOAuthReuse is returned for a code or a refresh token used a second
// time: the grant's whole family has been revoked.
var ErrOAuthReuse = errors.New("used before: every token of this grant is revoked")

// ExchangeOAuthCode spends an authorization code for a grant's first
// tokens, in one transaction on the locked code. check (the caller's
// bindings: client, redirect URI, PKCE, resource, expiry) runs first, and
// its refusal spends nothing, so whoever intercepts a code without its
// verifier cannot deny the real client. A code used before revokes every
// token issued from it (RFC 6749 §4.1.2) and answers ErrOAuthReuse; two
// exchanges at once take turns, so exactly one wins and the other revokes
// what it got.
func (s *Issuer) ExchangeOAuthCode(ctx context.Context, code string, check func(*OAuthCode) error, accessLife, refreshLife time.Duration) (*OAuthTokens, error) {
	var (
		out    *OAuthTokens
		reused bool
	)
	err := s.Write(ctx, func(tx *gorm.DB) error {
		var c OAuthCode
		err := s.Lock(tx.Table("oauth_codes")).Where("code_hash = ?", core.HashToken(code)).Take(&c).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return core.Refuse(core.NotFound, "code", "no such authorization code")
		}
		if err != nil {
			return err
		}
		if err := check(&c); err != nil {
			return err
		}
		now := s.Now()
		res := tx.Table("oauth_codes").Where("id = ? AND used_at IS NULL", c.ID).Update("used_at", now)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			reused = true
			return s.revokeFamily(tx, c.ID, now)
		}
		out, err = s.issueOAuthTokens(tx, OAuthGrant{FamilyID: c.ID, AgentID: c.AgentID, ClientID: c.ClientID, Resource: c.Resource, Scopes: c.Scopes}, accessLife, refreshLife)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("exchange oauth code: %w", err)
	}
	if reused {
		return nil, fmt.Errorf("exchange oauth code: %w", ErrOAuthReuse)
	}
	return out, nil
}

func (s *Issuer) revokeFamily(tx *gorm.DB, familyID string, now time.Time) error {
	if err := tx.Table("oauth_tokens").Where("family_id = ? AND revoked_at IS NULL", familyID).Update("revoked_at", now).Error; err != nil {
		return fmt.Errorf("revoke oauth tokens: %w", err)
	}
	return nil
}

// IssueOAuthTokens makes an access token living accessLife and a refresh
// token living refreshLife for a grant, unless its agent is disabled.
func (s *Issuer) IssueOAuthTokens(ctx context.Context, g OAuthGrant, accessLife, refreshLife time.Duration) (*OAuthTokens, error) {
	var out *OAuthTokens
	err := s.Write(ctx, func(tx *gorm.DB) error {
		var err error
		out, err = s.issueOAuthTokens(tx, g, accessLife, refreshLife)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("issue oauth tokens: %w", err)
	}
	return out, nil
}

func (s *Issuer) issueOAuthTokens(tx *gorm.DB, g OAuthGrant, accessLife, refreshLife time.Duration) (*OAuthTokens, error) {
	var agent people.Agent
	if err := tx.Table("agents").Where("id = ?", g.AgentID).Take(&agent).Error; err != nil {
		return nil, err
	}
	if agent.Disabled {
		return nil, core.Refuse(core.PermissionDenied, "agent", "the agent of this client is disabled")
	}
	access, err := secret(OAuthAccessPrefix)
	if err != nil {
		return nil, err
	}
	refresh, err := secret(OAuthRefreshPrefix)
	if err != nil {
		return nil, err
	}
	now := s.Now()
	for _, t := range []OAuthToken{
		{ID: core.NewID("oat"), TokenHash: core.HashToken(access), Kind: OAuthAccess, ExpiresAt: now.Add(accessLife)},
		{ID: core.NewID("ort"), TokenHash: core.HashToken(refresh), Kind: OAuthRefresh, ExpiresAt: now.Add(refreshLife)},
	} {
		t.FamilyID, t.AgentID, t.ClientID, t.Resource, t.Scopes, t.CreatedAt = g.FamilyID, g.AgentID, g.ClientID, g.Resource, g.Scopes, now
		if err := tx.Table("oauth_tokens").Create(&t).Error; err != nil {
			return nil, err
		}
	}
	return &OAuthTokens{Access: access, Refresh: refresh, Scopes: g.Scopes, AccessExpiresAt: now.Add(accessLife)}, nil
}

// RefreshOAuthTokens spends a refresh token of clientID for a new pair of
// the same grant (rotation). check (the caller's rules of the request, such
// as its scope) runs on the locked token before it is spent: its refusal
// changes nothing. A refresh token used before revokes the whole family (its
// thief and its owner both lose it) and answers ErrOAuthReuse.
func (s *Issuer) RefreshOAuthTokens(ctx context.Context, refresh, clientID string, check func(*OAuthToken) error, accessLife, refreshLife time.Duration) (*OAuthTokens, error) {
	var (
		out    *OAuthTokens
		t      OAuthToken
		reused bool
	)
	err := s.Write(ctx, func(tx *gorm.DB) error {
		err := s.Lock(tx.Table("oauth_tokens")).Where("token_hash = ? AND kind = ?", core.HashToken(refresh), OAuthRefresh).Take(&t).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return core.Refuse(core.NotFound, "refresh_token", "no such refresh token")
		}
		if err != nil {
			return err
		}
		if t.ClientID != clientID {
			return core.Refuse(core.PermissionDenied, "client_id", "the refresh token was issued to another client")
		}
		now := s.Now()
		if t.RevokedAt != nil {
			return core.Refuse(core.FailedPrecondition, "refresh_token", "the refresh token is revoked")
		}
		if err := check(&t); err != nil {
			return err
		}
		res := tx.Table("oauth_tokens").Where("id = ? AND used_at IS NULL", t.ID).Update("used_at", now)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			reused = true
			return s.revokeFamily(tx, t.FamilyID, now)
		}
		if !now.Before(t.ExpiresAt) {
			return core.Refuse(core.FailedPrecondition, "refresh_token", "the refresh token has expired")
		}
		out, err = s.issueOAuthTokens(tx, OAuthGrant{FamilyID: t.FamilyID, AgentID: t.AgentID, ClientID: t.ClientID, Resource: t.Resource, Scopes: t.Scopes}, accessLife, refreshLife)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("refresh oauth tokens: %w", err)
	}
	if reused {
		return nil, fmt.Errorf("refresh oauth tokens: %w", ErrOAuthReuse)
	}
	return out, nil
}

// RevokeOAuthToken revokes a token of clientID (RFC 7009): a refresh token
// takes its whole family with it, an access token only itself. A token that
// does not exist, or is another client's, changes nothing and is no error.
func (s *Issuer) RevokeOAuthToken(ctx context.Context, token, clientID string) error {
	return s.Write(ctx, func(tx *gorm.DB) error {
		var t OAuthToken
		err := tx.Table("oauth_tokens").Where("token_hash = ?", core.HashToken(token)).Take(&t).Error
		if errors.Is(err, gorm.ErrRecordNotFound) || (err == nil && t.ClientID != clientID) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("revoke oauth token: %w", err)
		}
		if t.Kind == OAuthRefresh {
			return s.revokeFamily(tx, t.FamilyID, s.Now())
		}
		return tx.Table("oauth_tokens").Where("id = ? AND revoked_at IS NULL", t.ID).Update("revoked_at", s.Now()).Error
	})
}

// AgentByOAuthToken finds the agent an unrevoked, unexpired access token
// acts as, with the token's scopes in place of the agent's (never more than
// the agent holds) and the audience it was issued for. The agent is read
// with the token, so a disabled agent's token stops at once.
func (s *Issuer) AgentByOAuthToken(ctx context.Context, token string) (*people.Agent, string, error) {
	return s.AgentByOAuthTokenHash(ctx, core.HashToken(token))
}

// AgentByOAuthTokenHash is AgentByOAuthToken for the token's hash
// (HashToken), as another instance names it when it forwards a call.
func (s *Issuer) AgentByOAuthTokenHash(ctx context.Context, hash string) (*people.Agent, string, error) {
	var t OAuthToken
	err := s.DB().WithContext(ctx).Table("oauth_tokens").Where("token_hash = ? AND kind = ?", hash, OAuthAccess).Take(&t).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, "", core.Refuse(core.NotFound, "token", "no such access token")
	}
	if err != nil {
		return nil, "", fmt.Errorf("find oauth token: %w", err)
	}
	if t.RevokedAt != nil {
		return nil, "", core.Refuse(core.FailedPrecondition, "token", "the access token is revoked")
	}
	if !s.Now().Before(t.ExpiresAt) {
		return nil, "", core.Refuse(core.FailedPrecondition, "token", "the access token has expired")
	}
	var a people.Agent
	if err := s.DB().WithContext(ctx).Table("agents").Where("id = ?", t.AgentID).Take(&a).Error; err != nil {
		return nil, "", fmt.Errorf("find oauth agent: %w", err)
	}
	var scopes []string
	for _, sc := range strings.Fields(t.Scopes) {
		if a.HasScopes(sc) {
			scopes = append(scopes, sc)
		}
	}
	a.Scopes = strings.Join(scopes, " ")
	return &a, t.Resource, nil
}
