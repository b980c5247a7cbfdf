package oauth

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/countersign/countersign/models/core"
)

// Introspection is the introspection endpoint's answer (RFC 7662 §2.2):
// active false and nothing else for a token that is unknown, expired,
// revoked, of another account or of a revoked client.
type Introspection struct {
	Active               bool            `json:"active"`
	Scope                string          `json:"scope,omitempty"`
	ClientID             string          `json:"client_id,omitempty"`
	TokenType            string          `json:"token_type,omitempty"`
	Exp                  int64           `json:"exp,omitempty"`
	Iat                  int64           `json:"iat,omitempty"`
	Sub                  string          `json:"sub,omitempty"`
	Iss                  string          `json:"iss,omitempty"`
	AuthorizationDetails json.RawMessage `json:"authorization_details,omitempty"`
	ApprovalID           string          `json:"countersign_approval_id,omitempty"`
}

// Introspect answers a resource server's question about an access token a
// CIBA request ended in (RFC 7662). The caller authenticates as a client
// of the token's account, as a CIBA client does; a token of another account
// is as inactive as an unknown one.
func (s *Server) Introspect(ctx context.Context, header http.Header, form url.Values) (*Introspection, *Error) {
	c, e := s.AuthenticateClient(ctx, header, form, s.issuer+IntrospectPath)
	if e != nil {
		return nil, e
	}
	token := strings.TrimSpace(form.Get("token"))
	if token == "" {
		return nil, oauthError(http.StatusBadRequest, "invalid_request", "token is missing")
	}
	t, err := s.store.AccessTokenByHash(ctx, core.HashToken(token))
	switch {
	case core.CodeOf(err) == core.NotFound:
		return &Introspection{}, nil
	case err != nil:
		return nil, oauthError(http.StatusServiceUnavailable, "server_error", "the token could not be read now; try again")
	}
	now := s.store.Now()
	if t.AccountID != c.AccountID || t.RevokedAt != nil || !now.Before(t.ExpiresAt) {
		return &Introspection{}, nil
	}
	owner, err := s.store.CIBAClient(ctx, t.ClientID)
	if err != nil || owner.RevokedAt != nil {
		return &Introspection{}, nil
	}
	out := &Introspection{Active: true, Scope: t.Scope, ClientID: t.ClientID, TokenType: "Bearer", Exp: t.ExpiresAt.Unix(),
		Iat: t.CreatedAt.Unix(), Sub: t.Subject, Iss: s.issuer, ApprovalID: t.ApprovalID}
	if t.AuthorizationDetails != "" {
		out.AuthorizationDetails = json.RawMessage(t.AuthorizationDetails)
	}
	return out, nil
}
