package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/oidc"
)

// Lives of what a CIBA request ends in.
const (
	CIBAAccessLife = 15 * time.Minute
	IDTokenLife    = 15 * time.Minute
)

// CIBATokenAnswer is the token response of a redeemed CIBA request: the
// usual tokens, the authorization details the person approved, and
// countersign_proof, the person's WebAuthn signature over the ask's payload
// hash in the proof format `countersign verify` reads.
type CIBATokenAnswer struct {
	AccessToken          string          `json:"access_token"`
	TokenType            string          `json:"token_type"`
	ExpiresIn            int             `json:"expires_in"`
	IDToken              string          `json:"id_token"`
	Scope                string          `json:"scope,omitempty"`
	AuthorizationDetails json.RawMessage `json:"authorization_details,omitempty"`
	CountersignProof     json.RawMessage `json:"countersign_proof"`
}

// CIBAToken answers the token endpoint's CIBA grant (CIBA §10.1): the client
// authenticates and polls with its auth_req_id. While the person has not
// answered it gets authorization_pending (slow_down when it polls sooner
// than its interval); then, once, the tokens and the proof, or
// access_denied, or expired_token.
func (s *Server) CIBAToken(ctx context.Context, header http.Header, form url.Values) (*CIBATokenAnswer, *Error) {
	c, e := s.AuthenticateClient(ctx, header, form, s.issuer+TokenPath)
	if e != nil {
		return nil, e
	}
	authReqID := form.Get("auth_req_id")
	if authReqID == "" {
		return nil, oauthError(http.StatusBadRequest, "invalid_request", "auth_req_id is missing")
	}
	// The signing key is made before the redemption's transaction, which
	// then only reads it.
	if _, err := s.JWKS(ctx); err != nil {
		return nil, oauthError(http.StatusInternalServerError, "server_error", "the provider's signing key could not be read; try again")
	}
	var out *CIBATokenAnswer
	p, err := s.store.Poll(ctx, c.ID, core.HashToken(authReqID), CIBAAccessLife, func(p *oidc.Poll) error {
		var e *Error
		out, e = s.cibaTokens(ctx, c, p)
		if e != nil {
			return e
		}
		return nil
	})
	var refused *Error
	switch {
	case errors.As(err, &refused):
		return nil, refused
	case errors.Is(err, oidc.ErrNotRedeemable):
		return nil, oauthError(http.StatusBadRequest, "invalid_grant", "%s", oidc.ErrNotRedeemable.Error())
	case err != nil:
		return nil, oauthError(http.StatusInternalServerError, "server_error", "the request could not be read; try again")
	}
	switch p.Outcome {
	case oidc.Redeemed:
		return out, nil
	case oidc.Pending:
		return nil, oauthError(http.StatusBadRequest, "authorization_pending", "the person has not answered yet; poll again in %d s", p.Request.PollInterval)
	case oidc.SlowDown:
		return nil, oauthError(http.StatusBadRequest, "slow_down", "polled sooner than the interval; wait %d s between polls", p.Request.PollInterval)
	case oidc.Expired:
		return nil, oauthError(http.StatusBadRequest, "expired_token", "the request expired before the person answered")
	}
	return nil, oauthError(http.StatusBadRequest, "access_denied", "the person did not approve: the ask ended %s", p.Approval.Status)
}

// cibaTokens are the tokens of a request being redeemed: the ID token
// (signed with the provider's key, naming the person, the client and the
// payload hash the person signed), the access token and the proof. An error
// here undoes the redemption.
func (s *Server) cibaTokens(ctx context.Context, c *oidc.Client, p *oidc.Poll) (*CIBATokenAnswer, *Error) {
	a := p.Approval
	if a.Proof == nil {
		return nil, oauthError(http.StatusInternalServerError, "server_error", "the approved ask has no signed decision")
	}
	now := s.store.Now()
	claims := map[string]any{
		"iss": s.issuer, "sub": p.Request.Subject, "aud": c.ID,
		"iat": now.Unix(), "exp": now.Add(IDTokenLife).Unix(),
		"at_hash":                    atHash(p.Token),
		"countersign_approval_id":    a.ID,
		"countersign_payload_sha256": a.PayloadSHA256,
	}
	if a.DecidedAt != nil {
		claims["auth_time"] = a.DecidedAt.Unix()
	}
	idToken, err := s.SignJWT(ctx, claims)
	if err != nil {
		return nil, oauthError(http.StatusInternalServerError, "server_error", "the ID token could not be signed; try again")
	}
	out := &CIBATokenAnswer{AccessToken: p.Token, TokenType: "Bearer", ExpiresIn: int(CIBAAccessLife.Seconds()), IDToken: idToken,
		Scope: p.Request.Scope, CountersignProof: json.RawMessage(*a.Proof)}
	if p.Request.AuthorizationDetails != "" {
		out.AuthorizationDetails = json.RawMessage(p.Request.AuthorizationDetails)
	}
	return out, nil
}

// atHash is the ID token's at_hash (OIDC Core §3.1.3.6): the left half of
// the access token's SHA-256, ES256's hash, in base64url.
func atHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return base64.RawURLEncoding.EncodeToString(sum[:len(sum)/2])
}

// idTokenHintSubject reads an id_token_hint: an ID token this provider
// signed for this client (CIBA §7.1: it may have expired). Its sub names the
// person.
func (s *Server) idTokenHintSubject(ctx context.Context, c *oidc.Client, raw string) (string, *Error) {
	bad := func(why string) (string, *Error) {
		return "", oauthError(http.StatusBadRequest, "invalid_request", "id_token_hint %s", why)
	}
	jws, err := jose.ParseSigned(raw, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil || len(jws.Signatures) != 1 {
		return bad("is not an ID token this provider signed (ES256 JWS)")
	}
	set, err := s.JWKS(ctx)
	if err != nil {
		return "", oauthError(http.StatusInternalServerError, "server_error", "the provider's keys could not be read; try again")
	}
	keys := set.Key(jws.Signatures[0].Header.KeyID)
	if len(keys) == 0 {
		return bad("is signed with a key this provider does not publish")
	}
	body, err := jws.Verify(keys[0])
	if err != nil {
		return bad("does not verify with this provider's key")
	}
	var claims struct {
		Iss string          `json:"iss"`
		Sub string          `json:"sub"`
		Aud json.RawMessage `json:"aud"`
	}
	if err := json.Unmarshal(body, &claims); err != nil {
		return bad("has claims that do not read")
	}
	var aud []string
	if json.Unmarshal(claims.Aud, &aud) != nil {
		var one string
		_ = json.Unmarshal(claims.Aud, &one)
		aud = []string{one}
	}
	switch {
	case claims.Iss != s.issuer:
		return bad("was issued by another provider")
	case !slices.Contains(aud, c.ID):
		return bad("was issued to another client")
	case claims.Sub == "":
		return bad("names no subject")
	}
	return claims.Sub, nil
}
