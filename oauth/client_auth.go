package oauth

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/oidc"
)

// ClientAssertionType is the client_assertion_type of private_key_jwt
// (RFC 7523 §2.2).
const ClientAssertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

// Bounds on what a CIBA client signs: a client assertion lives at most
// assertionMaxLife, a signed authentication request at most
// requestObjectMaxLife (FAPI-CIBA §5.2.2), and clocks may differ by
// clockSkew.
const (
	assertionMaxLife     = 5 * time.Minute
	requestObjectMaxLife = time.Hour
	clockSkew            = 60 * time.Second
)

// clientRefusal is an invalid_client answer (RFC 6749 §5.2): HTTP 401, with
// a Basic challenge when the client tried HTTP Basic.
func (s *Server) clientRefusal(basic bool, format string, args ...any) *Error {
	e := oauthError(http.StatusUnauthorized, "invalid_client", format, args...)
	if basic {
		e.Challenge = `Basic realm="` + s.issuer + `"`
	}
	return e
}

// AuthenticateClient authenticates a CIBA client at endpoint (the URL of the
// endpoint called, which its assertion's aud may name): client_secret_basic
// (HTTP Basic, RFC 6749 §2.3.1) or private_key_jwt (RFC 7523, OpenID
// Connect Core §9). Only confidential clients are CIBA clients: every
// refusal is invalid_client and says what failed. A revoked client, a
// client using a method it did not register, and a client_id in the form
// that is not the authenticated client are refused.
func (s *Server) AuthenticateClient(ctx context.Context, header http.Header, form url.Values, endpoint string) (*oidc.Client, *Error) {
	id, secret, basic, e := s.basicCredentials(header)
	if e != nil {
		return nil, e
	}
	assertionType, assertion := form.Get("client_assertion_type"), form.Get("client_assertion")
	usesAssertion := assertionType != "" || assertion != ""
	var c *oidc.Client
	switch {
	case basic && usesAssertion:
		return nil, s.clientRefusal(true, "the client authenticated both with HTTP Basic and with a client assertion: use one")
	case form.Get("client_secret") != "":
		return nil, s.clientRefusal(basic, "client_secret in the body (client_secret_post) is not accepted: send the secret with HTTP Basic (client_secret_basic)")
	case basic:
		c, e = s.authenticateSecret(ctx, id, secret)
	case usesAssertion:
		c, e = s.authenticateAssertion(ctx, assertionType, assertion, endpoint)
	default:
		return nil, s.clientRefusal(false, "the client did not authenticate: use HTTP Basic (client_secret_basic) or a client assertion (private_key_jwt)")
	}
	if e != nil {
		return nil, e
	}
	if formID := form.Get("client_id"); formID != "" && formID != c.ID {
		return nil, s.clientRefusal(basic, "client_id %q in the form is not the client that authenticated (%s)", formID, c.ID)
	}
	return c, nil
}

// basicCredentials reads HTTP Basic: the client_id and secret, each
// form-urlencoded (RFC 6749 §2.3.1). basic is false when the request does
// not use Basic.
func (s *Server) basicCredentials(header http.Header) (id, secret string, basic bool, e *Error) {
	auth := header.Get("Authorization")
	if len(auth) < 6 || !strings.EqualFold(auth[:6], "Basic ") {
		return "", "", false, nil
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(auth[6:]))
	if err != nil {
		return "", "", true, s.clientRefusal(true, "the HTTP Basic credentials are not base64")
	}
	rawID, rawSecret, ok := strings.Cut(string(raw), ":")
	if !ok {
		return "", "", true, s.clientRefusal(true, "the HTTP Basic credentials have no ':' between client_id and secret")
	}
	if id, err = url.QueryUnescape(rawID); err != nil {
		return "", "", true, s.clientRefusal(true, "the HTTP Basic client_id is not form-urlencoded")
	}
	if secret, err = url.QueryUnescape(rawSecret); err != nil {
		return "", "", true, s.clientRefusal(true, "the HTTP Basic secret is not form-urlencoded")
	}
	return id, secret, true, nil
}

// registeredClient finds the client id names and checks that it may use
// method now.
func (s *Server) registeredClient(ctx context.Context, id, method string, basic bool) (*oidc.Client, *Error) {
	if id == "" {
		return nil, s.clientRefusal(basic, "client_id is missing")
	}
	c, err := s.store.CIBAClient(ctx, id)
	if core.CodeOf(err) == core.NotFound {
		return nil, s.clientRefusal(basic, "no CIBA client is registered as %q", id)
	}
	if err != nil {
		return nil, oauthError(http.StatusInternalServerError, "server_error", "the client could not be read")
	}
	if c.RevokedAt != nil {
		return nil, s.clientRefusal(basic, "client %s was revoked", c.ID)
	}
	if c.AuthMethod != method {
		return nil, s.clientRefusal(basic, "client %s registered %s: it cannot authenticate with %s", c.ID, c.AuthMethod, method)
	}
	return c, nil
}

func (s *Server) authenticateSecret(ctx context.Context, id, secret string) (*oidc.Client, *Error) {
	c, e := s.registeredClient(ctx, id, oidc.AuthClientSecretBasic, true)
	if e != nil {
		return nil, e
	}
	if subtle.ConstantTimeCompare([]byte(core.HashToken(secret)), []byte(c.SecretSHA256)) != 1 {
		return nil, s.clientRefusal(true, "the client secret of %s is wrong", c.ID)
	}
	return c, nil
}

func (s *Server) authenticateAssertion(ctx context.Context, assertionType, assertion, endpoint string) (*oidc.Client, *Error) {
	if assertionType != ClientAssertionType {
		return nil, s.clientRefusal(false, "client_assertion_type must be %s", ClientAssertionType)
	}
	if assertion == "" {
		return nil, s.clientRefusal(false, "client_assertion is missing")
	}
	tok, err := jwt.ParseSigned(assertion, clientAssertionAlgs)
	if err != nil {
		return nil, s.clientRefusal(false, "client_assertion is not a compact JWS signed with one of %s", strings.Join(algNames(clientAssertionAlgs), ", "))
	}
	var unverified jwt.Claims
	if err := tok.UnsafeClaimsWithoutVerification(&unverified); err != nil {
		return nil, s.clientRefusal(false, "the claims of client_assertion are not a JSON object of JWT claims")
	}
	if unverified.Subject == "" {
		return nil, s.clientRefusal(false, "client_assertion has no sub: it must be the client_id")
	}
	c, e := s.registeredClient(ctx, unverified.Subject, oidc.AuthPrivateKeyJWT, false)
	if e != nil {
		return nil, e
	}
	var claims jwt.Claims
	if err := verifyWithClientKeys(tok, c, &claims); err != nil {
		return nil, s.clientRefusal(false, "client_assertion: %v", err)
	}
	now := s.store.Now()
	switch {
	case claims.Issuer != c.ID || claims.Subject != c.ID:
		return nil, s.clientRefusal(false, "client_assertion: iss and sub must both be the client_id %s (iss %q, sub %q)", c.ID, claims.Issuer, claims.Subject)
	case !claims.Audience.Contains(s.issuer) && !claims.Audience.Contains(s.issuer+TokenPath) && (endpoint == "" || !claims.Audience.Contains(endpoint)):
		return nil, s.clientRefusal(false, "client_assertion: aud %q names neither the issuer %s nor this endpoint", []string(claims.Audience), s.issuer)
	case claims.Expiry == nil:
		return nil, s.clientRefusal(false, "client_assertion has no exp")
	case now.After(claims.Expiry.Time().Add(clockSkew)):
		return nil, s.clientRefusal(false, "client_assertion expired at %s", claims.Expiry.Time().UTC().Format(time.RFC3339))
	case claims.Expiry.Time().After(now.Add(assertionMaxLife + clockSkew)):
		return nil, s.clientRefusal(false, "client_assertion: exp is more than %s ahead", assertionMaxLife)
	case claims.NotBefore != nil && claims.NotBefore.Time().After(now.Add(clockSkew)):
		return nil, s.clientRefusal(false, "client_assertion is not valid before %s", claims.NotBefore.Time().UTC().Format(time.RFC3339))
	case claims.IssuedAt != nil && claims.IssuedAt.Time().After(now.Add(clockSkew)):
		return nil, s.clientRefusal(false, "client_assertion: iat is in the future")
	case claims.ID == "":
		return nil, s.clientRefusal(false, "client_assertion has no jti: each assertion needs a unique one")
	}
	if e := s.spend(ctx, c.ID, "assertion:"+claims.ID, claims.Expiry.Time().Add(clockSkew), false); e != nil {
		return nil, e
	}
	return c, nil
}

// spend spends a jti of the client: a jti used before is refused,
// invalid_client for a client assertion, invalid_request for a signed request.
func (s *Server) spend(ctx context.Context, clientID, jti string, until time.Time, request bool) *Error {
	err := s.store.SpendAssertion(ctx, clientID, jti, until)
	if err == nil {
		return nil
	}
	if core.CodeOf(err) == core.FailedPrecondition {
		if request {
			return oauthError(http.StatusBadRequest, "invalid_request", "the signed request was used before (its jti): each is used once")
		}
		return s.clientRefusal(false, "the client_assertion was used before (its jti): each is used once")
	}
	return oauthError(http.StatusInternalServerError, "server_error", "the assertion could not be recorded")
}

// errNoClientKey: no key the client registered verifies the signature.
var errNoClientKey = errors.New("its signature verifies with no key registered for the client")

// verifyWithClientKeys verifies tok with the client's registered keys (the
// one its kid names, or each when it names none) and reads its claims into
// out. A key registered for another use or algorithm is not tried.
func verifyWithClientKeys(tok *jwt.JSONWebToken, c *oidc.Client, out ...any) error {
	var set jose.JSONWebKeySet
	if c.JWKS == "" || json.Unmarshal([]byte(c.JWKS), &set) != nil {
		return errors.New("the client has no registered keys to verify it with")
	}
	if len(tok.Headers) != 1 {
		return errors.New("it must carry exactly one signature")
	}
	h := tok.Headers[0]
	keys := set.Keys
	if h.KeyID != "" {
		keys = set.Key(h.KeyID)
	}
	for _, k := range keys {
		if (k.Use != "" && k.Use != "sig") || (k.Algorithm != "" && k.Algorithm != h.Algorithm) || !k.IsPublic() {
			continue
		}
		if err := tok.Claims(k.Key, out...); err == nil {
			return nil
		}
	}
	return errNoClientKey
}

// VerifyRequestObject verifies a signed authentication request (CIBA Core
// §7.1.1): a JWS by one of the client's registered keys, iss the client,
// aud the issuer, with exp, iat, nbf and jti, alive now and for at most an
// hour, and never sent before. It returns the request's claims, where the
// backchannel endpoint reads login_hint and the rest. Each refusal is
// invalid_request and says what failed.
func (s *Server) VerifyRequestObject(ctx context.Context, c *oidc.Client, request string) (map[string]any, *Error) {
	refuse := func(format string, args ...any) (map[string]any, *Error) {
		return nil, oauthError(http.StatusBadRequest, "invalid_request", format, args...)
	}
	if c.JWKS == "" {
		return refuse("client %s registered no keys (%s): it cannot sign a request; send the parameters in the form", c.ID, c.AuthMethod)
	}
	tok, err := jwt.ParseSigned(request, clientAssertionAlgs)
	if err != nil {
		return refuse("request is not a compact JWS signed with one of %s", strings.Join(algNames(clientAssertionAlgs), ", "))
	}
	var claims jwt.Claims
	var all map[string]any
	if err := verifyWithClientKeys(tok, c, &claims, &all); err != nil {
		return refuse("request: %v", err)
	}
	now := s.store.Now()
	switch {
	case claims.Issuer != c.ID:
		return refuse("request: iss must be the client_id %s, not %q", c.ID, claims.Issuer)
	case !claims.Audience.Contains(s.issuer):
		return refuse("request: aud %q does not name the issuer %s", []string(claims.Audience), s.issuer)
	case claims.Expiry == nil || claims.IssuedAt == nil || claims.NotBefore == nil || claims.ID == "":
		return refuse("request: exp, iat, nbf and jti are all required")
	case now.After(claims.Expiry.Time().Add(clockSkew)):
		return refuse("request expired at %s", claims.Expiry.Time().UTC().Format(time.RFC3339))
	case claims.NotBefore.Time().After(now.Add(clockSkew)):
		return refuse("request is not valid before %s", claims.NotBefore.Time().UTC().Format(time.RFC3339))
	case claims.IssuedAt.Time().After(now.Add(clockSkew)):
		return refuse("request: iat is in the future")
	case claims.Expiry.Time().Sub(claims.NotBefore.Time()) > requestObjectMaxLife || claims.NotBefore.Time().Before(now.Add(-requestObjectMaxLife)):
		return refuse("request may live at most %s from its nbf, which may be at most %s ago", requestObjectMaxLife, requestObjectMaxLife)
	}
	if e := s.spend(ctx, c.ID, "request:"+claims.ID, claims.Expiry.Time().Add(clockSkew), true); e != nil {
		return nil, e
	}
	return all, nil
}
