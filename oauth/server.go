// Package oauth makes Countersign the OAuth 2.1 authorization server of its
// own MCP endpoint: authorization code with PKCE (S256 only), RFC 8414
// metadata, Client ID Metadata Documents, dynamic client registration
// (RFC 7591), resource indicators (RFC 8707), rotating refresh tokens whose
// reuse revokes the grant, and revocation (RFC 7009). A client a person
// connects becomes an agent made for that person, with the scopes they chose.
//
// The protocol pieces come from libraries: the metadata and registration
// types from the MCP go-sdk's oauthex, the PKCE S256 transform from
// golang.org/x/oauth2. This package holds the rules; handlers holds the
// HTTP; models keeps the hashes.
package oauth

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/grants"
	"github.com/countersign/countersign/models/people"
)

// Lives of what the server issues.
const (
	AccessLife  = time.Hour
	RefreshLife = 30 * 24 * time.Hour
	CodeLife    = 5 * time.Minute
)

// The paths of the endpoints, under the issuer.
const (
	AuthorizePath = "/oauth/authorize"
	TokenPath     = "/oauth/token"
	RegisterPath  = "/oauth/register"
	RevokePath    = "/oauth/revoke"
	MetadataPath  = "/.well-known/oauth-authorization-server"
)

// MaxUnconnectedClients is how many registered clients nobody has connected
// may live at once (each for models.OAuthClientUnusedLife): registration is
// open to anyone, so this bounds what strangers can make the service keep.
const MaxUnconnectedClients = 500

// Server is the authorization server.
type Server struct {
	store     *models.Store
	issuer    string // the service's base URL
	resource  string // the MCP endpoint's URL: the only audience of its tokens
	Documents *Documents
	// MaxUnconnectedClients caps registration (MaxUnconnectedClients unless
	// a test sets another).
	MaxUnconnectedClients int
	// CIBA bounds CIBA requests (DefaultCIBALimits unless configured).
	CIBA CIBALimits
	// NotificationPrivateHosts are the hosts (or host:port) on private
	// addresses a CIBA client's notification endpoint may name over http
	// or at a private address (COUNTERSIGN_CHANNEL_PRIVATE_HOSTS).
	NotificationPrivateHosts []string
}

// New makes the authorization server of the service at issuer, for the MCP
// endpoint at resource. It is the OpenID provider too: the store makes the
// provider's signing key with this package's maker at first need.
func New(store *models.Store, issuer, resource string) *Server {
	store.SetSigningKeyMaker(makeSigningKey)
	return &Server{store: store, issuer: issuer, resource: resource, Documents: NewDocuments(), MaxUnconnectedClients: MaxUnconnectedClients, CIBA: DefaultCIBALimits}
}

// Issuer is the server's issuer identifier.
func (s *Server) Issuer() string { return s.issuer }

// Resource is the only audience its tokens are for.
func (s *Server) Resource() string { return s.resource }

// Metadata is the RFC 8414 document as the go-sdk types it.
func (s *Server) Metadata() *oauthex.AuthServerMeta {
	return &oauthex.AuthServerMeta{
		Issuer:                                     s.issuer,
		AuthorizationEndpoint:                      s.issuer + AuthorizePath,
		TokenEndpoint:                              s.issuer + TokenPath,
		RegistrationEndpoint:                       s.issuer + RegisterPath,
		RevocationEndpoint:                         s.issuer + RevokePath,
		ScopesSupported:                            people.AllScopes,
		ResponseTypesSupported:                     []string{"code"},
		GrantTypesSupported:                        []string{"authorization_code", "refresh_token"},
		TokenEndpointAuthMethodsSupported:          []string{"none"},
		RevocationEndpointAuthMethodsSupported:     []string{"none"},
		CodeChallengeMethodsSupported:              []string{"S256"},
		ClientIDMetadataDocumentSupported:          true,
		AuthorizationResponseIssParameterSupported: true,
		ServiceDocumentation:                       "https://github.com/countersign/countersign#connect-a-host",
	}
}

// MetadataDocument is the RFC 8414 document as served: Metadata without its
// empty members, for the go-sdk's type writes every member it knows, so a
// client would read `"jwks_uri": ""` as a JWK Set at an empty URL where
// this server publishes none.
func (s *Server) MetadataDocument() (map[string]any, error) {
	raw, err := json.Marshal(s.Metadata())
	if err != nil {
		return nil, fmt.Errorf("authorization server metadata: %w", err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("authorization server metadata: %w", err)
	}
	for k, v := range doc {
		switch v := v.(type) {
		case nil:
			delete(doc, k)
		case string:
			if v == "" {
				delete(doc, k)
			}
		case bool:
			if !v {
				delete(doc, k)
			}
		case []any:
			if len(v) == 0 {
				delete(doc, k)
			}
		case map[string]any:
			if len(v) == 0 {
				delete(doc, k)
			}
		}
	}
	return doc, nil
}

// Error is an OAuth error answer: its code (RFC 6749 §5.2), a description
// and the HTTP status it goes with.
type Error struct {
	Code        string `json:"error"`
	Description string `json:"error_description,omitempty"`
	Status      int    `json:"-"`
	// RetryAfter, when set, is sent as the Retry-After header (a 429).
	RetryAfter time.Duration `json:"-"`
	// Challenge is the WWW-Authenticate header to send with it, if any: a
	// client that tried HTTP Basic and failed (RFC 6749 §5.2).
	Challenge string `json:"-"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Description }

func oauthError(status int, code, format string, args ...any) *Error {
	return &Error{Code: code, Description: fmt.Sprintf(format, args...), Status: status}
}

// Client is an OAuth client as the consent page shows it.
type Client struct {
	ID           string
	Name         string
	RedirectURIs []string
	// Verified: the client_id is a metadata document URL, so its name is
	// vouched for by its host; a registered client named itself.
	Verified bool
	Host     string // the client_id's host, for a metadata document client
}

// ResolveClient finds a client by client_id: a metadata document URL is
// fetched (see Documents), anything else is a registered client.
func (s *Server) ResolveClient(ctx context.Context, clientID string) (*Client, error) {
	if clientID == "" {
		return nil, errors.New("client_id is missing")
	}
	if strings.HasPrefix(clientID, "https://") {
		return s.Documents.Fetch(ctx, clientID)
	}
	c, err := s.store.OAuthClientByID(ctx, clientID)
	if err != nil {
		return nil, err
	}
	return &Client{ID: c.ID, Name: c.Name, RedirectURIs: c.RedirectList()}, nil
}

// redirectHost is a host[:port] of letters, digits, dots and hyphens, or a
// bracketed IPv6 address: nothing that could carry more into the consent
// page's Content-Security-Policy, where the redirect's origin is written.
var redirectHost = regexp.MustCompile(`^([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(:[0-9]{1,5})?$`)

// checkRedirectURI accepts an absolute redirect URI without a fragment:
// https, http on a loopback host only (native apps, RFC 8252), or an app's
// own scheme.
func checkRedirectURI(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Fragment != "" {
		return fmt.Errorf("redirect URI %q must be absolute, without a fragment", raw)
	}
	if u.Host != "" && !redirectHost.MatchString(u.Host) {
		return fmt.Errorf("redirect URI %q: its host must be a name or an address, with an optional port", raw)
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
		if u.Host == "" {
			return fmt.Errorf("redirect URI %q has no host", raw)
		}
	case "http":
		if !loopbackHost(u.Hostname()) {
			return fmt.Errorf("redirect URI %q: http is allowed only on localhost, 127.0.0.1 or [::1]", raw)
		}
	case "javascript", "data", "file", "vbscript", "about", "blob":
		return fmt.Errorf("redirect URI %q has a scheme that is never a redirect", raw)
	}
	return nil
}

// redirectMatches says whether a requested redirect URI is the registered
// one: exactly, or for an http URI on a loopback host (127.0.0.1, [::1],
// localhost) with any port, for a native app listens on whichever port it
// was given (RFC 8252 §7.3). Scheme, host, path and query still match exactly.
func redirectMatches(registered, requested string) bool {
	if registered == requested {
		return true
	}
	reg, err1 := url.Parse(registered)
	req, err2 := url.Parse(requested)
	if err1 != nil || err2 != nil || reg.Scheme != "http" || !loopbackHost(reg.Hostname()) {
		return false
	}
	if p := req.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 || p[0] == '0' {
			return false
		}
	}
	reg.Host, req.Host = reg.Hostname(), req.Hostname()
	if strings.Contains(reg.Host, ":") {
		reg.Host, req.Host = "["+reg.Host+"]", "["+req.Host+"]"
	}
	return req.Scheme == reg.Scheme && req.User == nil && reg.String() == req.String()
}

// withoutLoopbackPort is a redirect URI as kept at registration: a loopback
// one without its port, which any port matches (redirectMatches), so that a
// native host registering again on each start, on a new port, is the same
// client.
func withoutLoopbackPort(redirect string) string {
	u, err := url.Parse(redirect)
	if err != nil || u.Scheme != "http" || !loopbackHost(u.Hostname()) || u.Port() == "" {
		return redirect
	}
	u.Host = strings.TrimSuffix(u.Host, ":"+u.Port())
	return u.String()
}

// loopbackHost says whether a redirect URI's host is this machine.
func loopbackHost(h string) bool { return h == "localhost" || h == "127.0.0.1" || h == "::1" }

// cleanName keeps a client's name printable and short.
func cleanName(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || (r >= 0x202A && r <= 0x202E) || (r >= 0x2066 && r <= 0x2069) {
			return -1
		}
		return r
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 80 {
		s = string(r[:80])
	}
	return s
}

// Request is a checked authorization request.
type Request struct {
	Client        *Client
	RedirectURI   string
	State         string
	CodeChallenge string
	Resource      string
	Scopes        []string // asked for; all scopes when the client named none
}

// RedirectHost is the redirect URI's host (or scheme, for an app's own).
func (r *Request) RedirectHost() string {
	u, _ := url.Parse(r.RedirectURI)
	if u.Host != "" {
		return u.Host
	}
	return u.Scheme + ":"
}

// Redirect is where the browser goes with an answer: the redirect URI with
// params, state and iss (RFC 9207) added.
func (r *Request) Redirect(issuer string, params url.Values) string {
	u, _ := url.Parse(r.RedirectURI)
	q := u.Query()
	for k, v := range params {
		q[k] = v
	}
	if r.State != "" {
		q.Set("state", r.State)
	}
	q.Set("iss", issuer)
	u.RawQuery = q.Encode()
	return u.String()
}

// ErrorRedirect is the redirect carrying an OAuth error.
func (r *Request) ErrorRedirect(issuer string, e *Error) string {
	return r.Redirect(issuer, url.Values{"error": {e.Code}, "error_description": {e.Description}})
}

var codeChallenge = regexp.MustCompile(`^[A-Za-z0-9_-]{43}$`)

// AuthorizeParams are the parameters of an authorization request this
// server reads; any other is ignored, and none may be sent twice.
var AuthorizeParams = []string{"response_type", "client_id", "redirect_uri", "state", "code_challenge", "code_challenge_method", "resource", "scope"}

// Form is the checked request as the consent form carries it: only the
// parameters of AuthorizeParams, each once, in their order, so nothing else
// a link put in the query (a decision, a grant) reaches the person's answer.
func (r *Request) Form() [][2]string {
	out := [][2]string{{"response_type", "code"}, {"client_id", r.Client.ID}, {"redirect_uri", r.RedirectURI}}
	if r.State != "" {
		out = append(out, [2]string{"state", r.State})
	}
	return append(out, [2]string{"code_challenge", r.CodeChallenge}, [2]string{"code_challenge_method", "S256"},
		[2]string{"resource", r.Resource}, [2]string{"scope", strings.Join(r.Scopes, " ")})
}

// ParseAuthorize checks an authorization request. An error with no Request
// must be shown to the person (the client or its redirect URI cannot be
// trusted with it); an error with a Request goes back to the client through
// ErrorRedirect.
func (s *Server) ParseAuthorize(ctx context.Context, q url.Values) (*Request, *Error) {
	for _, name := range AuthorizeParams {
		if len(q[name]) > 1 { // RFC 6749 §3.1: which one would be meant?
			return nil, oauthError(http.StatusBadRequest, "invalid_request", "the parameter %s is sent more than once", name)
		}
	}
	client, err := s.ResolveClient(ctx, q.Get("client_id"))
	if err != nil {
		return nil, oauthError(http.StatusBadRequest, "invalid_client", "the client cannot be used: %v", err)
	}
	redirect := q.Get("redirect_uri")
	if !slices.ContainsFunc(client.RedirectURIs, func(registered string) bool { return redirectMatches(registered, redirect) }) {
		return nil, oauthError(http.StatusBadRequest, "invalid_request", "the redirect_uri %q is not one the client registered; it must match exactly (on a loopback host, all but the port)", redirect)
	}
	r := &Request{Client: client, RedirectURI: redirect, State: q.Get("state")}
	switch {
	case q.Get("response_type") != "code":
		return r, oauthError(http.StatusBadRequest, "unsupported_response_type", "only response_type code is supported")
	case q.Get("code_challenge_method") != "S256":
		return r, oauthError(http.StatusBadRequest, "invalid_request", "PKCE is required with code_challenge_method S256 (plain is not accepted)")
	case !codeChallenge.MatchString(q.Get("code_challenge")):
		return r, oauthError(http.StatusBadRequest, "invalid_request", "code_challenge must be the 43-character base64url S256 challenge")
	case !s.isResource(q.Get("resource")):
		return r, oauthError(http.StatusBadRequest, "invalid_target", "resource must be this service's MCP endpoint, %s", s.resource)
	}
	r.CodeChallenge, r.Resource = q.Get("code_challenge"), s.resource
	scopes, e := checkScopes(q.Get("scope"))
	if e != nil {
		return r, e
	}
	if len(scopes) == 0 {
		scopes = people.AllScopes
	}
	r.Scopes = scopes
	return r, nil
}

// isResource says whether a resource parameter names the MCP endpoint: its
// URL, or the same with a trailing slash, which is the endpoint too (a host
// given /mcp/ asks for a token for it). Tokens are always issued for the one
// URL.
func (s *Server) isResource(resource string) bool {
	return resource == s.resource || resource == s.resource+"/"
}

// checkScopes splits a scope parameter and refuses an unknown scope.
func checkScopes(scope string) ([]string, *Error) {
	var out []string
	for _, sc := range strings.Fields(scope) {
		if !slices.Contains(people.AllScopes, sc) {
			return nil, oauthError(http.StatusBadRequest, "invalid_scope", "unknown scope %q: the scopes are %s", sc, strings.Join(people.AllScopes, " "))
		}
		if !slices.Contains(out, sc) {
			out = append(out, sc)
		}
	}
	return out, nil
}

// Approve records the person's consent to r with the scopes they kept (a
// subset of those asked for) and returns the redirect carrying the code.
func (s *Server) Approve(ctx context.Context, r *Request, accountID, subject string, chosen []string) (string, error) {
	var scopes []string
	for _, sc := range people.AllScopes { // in the one order, only those asked for and kept
		if slices.Contains(r.Scopes, sc) && slices.Contains(chosen, sc) {
			scopes = append(scopes, sc)
		}
	}
	if !people.OpensATool(scopes) {
		return "", core.Invalid("grant", "%s", people.ToolScopeRule)
	}
	_, code, err := s.store.ConnectOAuthClient(ctx, grants.NewConnection{
		AccountID: accountID, Subject: subject, ClientID: r.Client.ID, ClientName: r.Client.Name,
		RedirectHost: r.RedirectHost(), Verified: r.Client.Verified, Scopes: scopes,
		RedirectURI: r.RedirectURI, CodeChallenge: r.CodeChallenge, Resource: r.Resource, CodeLife: CodeLife,
	})
	if err != nil {
		return "", err
	}
	return r.Redirect(s.issuer, url.Values{"code": {code}}), nil
}

// TokenAnswer is a successful token response (RFC 6749 §5.1).
type TokenAnswer struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int    `json:"expires_in"`
	RefreshToken string `json:"refresh_token,omitempty"`
	Scope        string `json:"scope"`
}

func answer(t *grants.OAuthTokens) *TokenAnswer {
	return &TokenAnswer{AccessToken: t.Access, TokenType: "Bearer", ExpiresIn: int(AccessLife.Seconds()), RefreshToken: t.Refresh, Scope: t.Scopes}
}

var codeVerifier = regexp.MustCompile(`^[A-Za-z0-9._~-]{43,128}$`)

// Token answers a token request of a public client (client_id from the form
// or HTTP Basic): the authorization_code and refresh_token grants.
func (s *Server) Token(ctx context.Context, form url.Values, clientID string) (*TokenAnswer, *Error) {
	if clientID == "" {
		return nil, oauthError(http.StatusUnauthorized, "invalid_client", "client_id is missing")
	}
	if res := form.Get("resource"); res != "" && !s.isResource(res) {
		return nil, oauthError(http.StatusBadRequest, "invalid_target", "resource must be this service's MCP endpoint, %s", s.resource)
	}
	switch form.Get("grant_type") {
	case "authorization_code":
		return s.exchange(ctx, form, clientID)
	case "refresh_token":
		asked, e := checkScopes(form.Get("scope"))
		if e != nil {
			return nil, e
		}
		t, err := s.store.RefreshOAuthTokens(ctx, form.Get("refresh_token"), clientID, func(old *grants.OAuthToken) error {
			for _, sc := range asked { // refused before the token is spent (RFC 6749 §6)
				if !slices.Contains(strings.Fields(old.Scopes), sc) {
					return oauthError(http.StatusBadRequest, "invalid_scope", "scope %q was not granted", sc)
				}
			}
			return nil
		}, AccessLife, RefreshLife)
		if err != nil {
			return nil, grantError(err)
		}
		return answer(t), nil
	case "":
		return nil, oauthError(http.StatusBadRequest, "invalid_request", "grant_type is missing")
	}
	return nil, oauthError(http.StatusBadRequest, "unsupported_grant_type", "the grant types are authorization_code and refresh_token")
}

func (s *Server) exchange(ctx context.Context, form url.Values, clientID string) (*TokenAnswer, *Error) {
	verifier := form.Get("code_verifier")
	if !codeVerifier.MatchString(verifier) {
		return nil, oauthError(http.StatusBadRequest, "invalid_request", "code_verifier must be 43 to 128 unreserved characters (PKCE)")
	}
	t, err := s.store.ExchangeOAuthCode(ctx, form.Get("code"), func(code *grants.OAuthCode) error {
		switch { // refused before the code is spent: a wrong guess leaves it to the real client
		case code.ClientID != clientID:
			return oauthError(http.StatusBadRequest, "invalid_grant", "the code was issued to another client")
		case code.RedirectURI != form.Get("redirect_uri"):
			return oauthError(http.StatusBadRequest, "invalid_grant", "redirect_uri differs from the authorization request's")
		case !s.store.Now().Before(code.ExpiresAt):
			return oauthError(http.StatusBadRequest, "invalid_grant", "the code has expired; authorize again")
		case subtle.ConstantTimeCompare([]byte(oauth2.S256ChallengeFromVerifier(verifier)), []byte(code.CodeChallenge)) != 1:
			return oauthError(http.StatusBadRequest, "invalid_grant", "the code_verifier does not match the code_challenge (PKCE S256)")
		case form.Get("resource") != "" && code.Resource != s.resource:
			return oauthError(http.StatusBadRequest, "invalid_target", "resource differs from the authorization request's")
		}
		return nil
	}, AccessLife, RefreshLife)
	if err != nil {
		return nil, grantError(err)
	}
	return answer(t), nil
}

// grantError turns a store refusal about a code or token into invalid_grant,
// passes on a refusal of the checks run inside the store, and makes
// anything else a server error.
func grantError(err error) *Error {
	var refused *Error
	switch {
	case errors.As(err, &refused):
		return refused
	case errors.Is(err, grants.ErrOAuthReuse):
		return oauthError(http.StatusBadRequest, "invalid_grant", "this code or refresh token was used before: every token of the grant is revoked; authorize again")
	case core.CodeOf(err) != "":
		var r *core.Error
		errors.As(err, &r)
		return oauthError(http.StatusBadRequest, "invalid_grant", "%s", r.Msg)
	}
	return oauthError(http.StatusInternalServerError, "server_error", "the token could not be issued; try again")
}

// Revoke revokes a token of clientID (RFC 7009): unknown tokens are no error.
func (s *Server) Revoke(ctx context.Context, token, clientID string) *Error {
	if token == "" {
		return oauthError(http.StatusBadRequest, "invalid_request", "token is missing")
	}
	if err := s.store.RevokeOAuthToken(ctx, token, clientID); err != nil {
		return oauthError(http.StatusServiceUnavailable, "server_error", "the token could not be revoked now; try again")
	}
	return nil
}

// Register registers a client (RFC 7591). Every client is public: it gets
// token_endpoint_auth_method none and no secret. Its name is its own word,
// so the consent page calls it unverified. The same name and redirect URIs
// registered again are the same client (a loopback redirect URI's port does
// not count); a client nobody connects expires (see
// models.RegisterOAuthClient).
func (s *Server) Register(ctx context.Context, m *oauthex.ClientRegistrationMetadata) (*oauthex.ClientRegistrationResponse, *Error) {
	bad := func(format string, args ...any) *Error {
		return oauthError(http.StatusBadRequest, "invalid_client_metadata", format, args...)
	}
	if len(m.RedirectURIs) == 0 || len(m.RedirectURIs) > 10 {
		return nil, oauthError(http.StatusBadRequest, "invalid_redirect_uri", "redirect_uris must list 1 to 10 URIs")
	}
	for _, r := range m.RedirectURIs {
		if err := checkRedirectURI(r); err != nil {
			return nil, oauthError(http.StatusBadRequest, "invalid_redirect_uri", "%v", err)
		}
	}
	for _, g := range m.GrantTypes {
		if g != "authorization_code" && g != "refresh_token" {
			return nil, bad("grant type %q is not supported: authorization_code and refresh_token are", g)
		}
	}
	for _, rt := range m.ResponseTypes {
		if rt != "code" {
			return nil, bad("response type %q is not supported: code is", rt)
		}
	}
	if _, e := checkScopes(m.Scope); e != nil {
		return nil, bad("%s", e.Description)
	}
	name := cleanName(m.ClientName)
	if name == "" {
		return nil, bad("client_name is required: the person is shown it")
	}
	if people.ReservedAgentName(grants.OAuthAgentName(name)) {
		return nil, bad("client_name %q is reserved for the service's own agents (names starting with countersign): choose another", name)
	}
	kept := make([]string, len(m.RedirectURIs))
	for i, r := range m.RedirectURIs {
		kept[i] = withoutLoopbackPort(r)
	}
	c, err := s.store.RegisterOAuthClient(ctx, name, kept, s.MaxUnconnectedClients)
	if core.CodeOf(err) == core.ResourceExhausted {
		var r *core.Error
		errors.As(err, &r)
		return nil, oauthError(http.StatusTooManyRequests, "too_many_requests", "%s", r.Msg)
	}
	if err != nil {
		return nil, oauthError(http.StatusServiceUnavailable, "server_error", "the client could not be registered now; try again")
	}
	out := *m
	out.ClientName, out.TokenEndpointAuthMethod = name, "none"
	if len(out.GrantTypes) == 0 {
		out.GrantTypes = []string{"authorization_code", "refresh_token"}
	}
	out.ResponseTypes = []string{"code"}
	return &oauthex.ClientRegistrationResponse{ClientRegistrationMetadata: out, ClientID: c.ID, ClientIDIssuedAt: c.CreatedAt}, nil
}
