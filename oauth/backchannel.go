package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/ask"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/oidc"
	"github.com/countersign/countersign/models/people"
)

// The CIBA endpoints (OpenID CIBA Core 1.0) and introspection (RFC 7662).
const (
	BackchannelPath = "/oauth/backchannel"
	IntrospectPath  = "/oauth/introspect"
)

// CIBALimits bound what a CIBA client may ask for.
type CIBALimits struct {
	// MaxExpiry caps requested_expiry, and is a request's life when it
	// names none: 10 minutes unless configured, at most 24 hours.
	MaxExpiry time.Duration
	// Interval is the least wait between polls, in seconds.
	Interval int
	// PerPerson is the most requests a minute for one person, from every
	// client together; PerClient the most from one client.
	PerPerson, PerClient int
}

// DefaultCIBALimits are the limits unless configured: a request lives 10
// minutes at most, polls come 5 s apart, and a person is asked at most 5
// times a minute (as Auth0 does), by one client at most 60.
var DefaultCIBALimits = CIBALimits{MaxExpiry: 10 * time.Minute, Interval: 5, PerPerson: 5, PerClient: 60}

// MaxCIBAExpiry is the most MaxExpiry may be configured to.
const MaxCIBAExpiry = 24 * time.Hour

// BackchannelAnswer is the successful authentication request's answer
// (CIBA §7.3).
type BackchannelAnswer struct {
	AuthReqID string `json:"auth_req_id"`
	ExpiresIn int    `json:"expires_in"`
	Interval  int    `json:"interval"`
}

// Backchannel takes a CIBA authentication request (CIBA §7.1): the client
// authenticates, names a person it may ask, and says what it asks for; the
// person is asked with an ask of kind authorization, and the client gets
// the auth_req_id to poll with (or to be pinged about).
func (s *Server) Backchannel(ctx context.Context, header http.Header, form url.Values) (*BackchannelAnswer, *Error) {
	c, e := s.AuthenticateClient(ctx, header, form, s.issuer+BackchannelPath)
	if e != nil {
		return nil, e
	}
	params := form
	if raw := form.Get("request"); raw != "" {
		claims, e := s.VerifyRequestObject(ctx, c, raw)
		if e != nil {
			return nil, e
		}
		if params, e = requestParams(claims); e != nil {
			return nil, e
		}
	}
	in, e := s.readBackchannel(ctx, c, params)
	if e != nil {
		return nil, e
	}
	authReqID, req, err := s.store.StartCIBA(ctx, *in)
	var many *models.TooManyRequests
	switch {
	case errors.As(err, &many):
		return nil, &Error{Code: "slow_down", Status: http.StatusTooManyRequests, Description: many.Error(), RetryAfter: many.Wait}
	case core.CodeOf(err) != "":
		var r *core.Error
		errors.As(err, &r)
		return nil, oauthError(http.StatusBadRequest, "invalid_request", "%s", r.Msg)
	case err != nil:
		return nil, oauthError(http.StatusInternalServerError, "server_error", "the request could not be kept; try again")
	}
	return &BackchannelAnswer{AuthReqID: authReqID, ExpiresIn: int(math.Ceil(req.ExpiresAt.Sub(req.CreatedAt).Seconds())), Interval: req.PollInterval}, nil
}

// readBackchannel checks an authentication request's parameters and finds
// the person it names.
func (s *Server) readBackchannel(ctx context.Context, c *oidc.Client, p url.Values) (*models.CIBAStart, *Error) {
	limits := s.CIBA
	scope := strings.TrimSpace(p.Get("scope"))
	if r := ask.CheckScope(scope); r != nil {
		return nil, oauthError(http.StatusBadRequest, "invalid_scope", "%s", r.Msg)
	}
	if p.Get("login_hint_token") != "" {
		return nil, oauthError(http.StatusBadRequest, "invalid_request", "login_hint_token is not supported: name the person with login_hint or id_token_hint")
	}
	if p.Get("user_code") != "" {
		return nil, oauthError(http.StatusBadRequest, "invalid_request", "user_code is not supported (backchannel_user_code_parameter_supported is false)")
	}
	loginHint, idTokenHint := strings.TrimSpace(p.Get("login_hint")), strings.TrimSpace(p.Get("id_token_hint"))
	switch {
	case loginHint == "" && idTokenHint == "":
		return nil, oauthError(http.StatusBadRequest, "invalid_request", "name the person with login_hint (their subject or name) or id_token_hint")
	case loginHint != "" && idTokenHint != "":
		return nil, oauthError(http.StatusBadRequest, "invalid_request", "send one hint: login_hint or id_token_hint, not both")
	}
	binding := p.Get("binding_message")
	if r := ask.CheckBindingMessage(binding); r != nil {
		return nil, oauthError(http.StatusBadRequest, "invalid_binding_message", "%s", r.Msg)
	}
	var details json.RawMessage
	if raw := p.Get("authorization_details"); raw != "" {
		d, r := ask.ParseAuthorizationDetails([]byte(raw))
		if r != nil {
			return nil, oauthError(http.StatusBadRequest, "invalid_authorization_details", "%s", r.Msg)
		}
		details = d
	}
	life := limits.MaxExpiry
	if raw := p.Get("requested_expiry"); raw != "" {
		secs, err := strconv.Atoi(raw)
		if err != nil || secs <= 0 {
			return nil, oauthError(http.StatusBadRequest, "invalid_request", "requested_expiry must be a positive number of seconds")
		}
		life = min(time.Duration(secs)*time.Second, limits.MaxExpiry)
	}
	token := p.Get("client_notification_token")
	if c.DeliveryMode == oidc.DeliveryPing {
		switch {
		case token == "":
			return nil, oauthError(http.StatusBadRequest, "invalid_request", "client_notification_token is required of a client in ping mode")
		case len(token) > 1024 || !printableASCII(token):
			return nil, oauthError(http.StatusBadRequest, "invalid_request", "client_notification_token must be at most 1024 printable ASCII characters")
		}
	}
	m, e := s.hintedMember(ctx, c, loginHint, idTokenHint)
	if e != nil {
		return nil, e
	}
	return &models.CIBAStart{
		Client: c, PersonID: m.ID, Subject: m.Subject,
		Payload: ask.AuthorizationPayload{Client: ask.AuthorizationClient{ID: c.ID, Name: c.Name}, Scope: scope,
			AuthorizationDetails: details, BindingMessage: binding},
		ExpiresAt: s.store.Now().Add(life), Interval: limits.Interval, NotificationToken: token,
		PerPerson: limits.PerPerson, PerClient: limits.PerClient,
	}, nil
}

// hintedMember is the person a hint names, a member of the client's account
// the client may ask. Whether nobody has that name or the client may not ask
// them, the answer is the same unknown_user_id: a client learns nothing of
// the people it may not ask.
func (s *Server) hintedMember(ctx context.Context, c *oidc.Client, loginHint, idTokenHint string) (*people.Member, *Error) {
	subject := loginHint
	if idTokenHint != "" {
		sub, e := s.idTokenHintSubject(ctx, c, idTokenHint)
		if e != nil {
			return nil, e
		}
		subject = sub
	}
	unknown := oauthError(http.StatusBadRequest, "unknown_user_id", "no person this client may ask is named %q", clipHint(subject))
	m, err := s.store.MemberBySubject(ctx, c.AccountID, subject)
	if core.CodeOf(err) == core.NotFound && idTokenHint == "" {
		m, err = s.memberByName(ctx, c.AccountID, loginHint)
	}
	switch {
	case core.CodeOf(err) == core.NotFound:
		return nil, unknown
	case err != nil:
		return nil, oauthError(http.StatusInternalServerError, "server_error", "the person could not be looked up; try again")
	}
	ok, err := s.store.ClientMayAsk(ctx, c.ID, m.ID)
	if err != nil {
		return nil, oauthError(http.StatusInternalServerError, "server_error", "the person could not be looked up; try again")
	}
	if !ok {
		return nil, unknown
	}
	return m, nil
}

// memberByName finds the one member of the account with that display name
// (case aside); a name two members share names nobody.
func (s *Server) memberByName(ctx context.Context, accountID, name string) (*people.Member, error) {
	ms, err := s.store.Members(ctx, accountID)
	if err != nil {
		return nil, err
	}
	var found *people.Member
	for i := range ms {
		if strings.EqualFold(strings.TrimSpace(ms[i].DisplayName), name) {
			if found != nil {
				return nil, core.Refuse(core.NotFound, "login_hint", "more than one person is named %q", name)
			}
			found = &ms[i]
		}
	}
	if found == nil {
		return nil, core.Refuse(core.NotFound, "login_hint", "nobody is named %q", name)
	}
	return found, nil
}

// requestParams reads a signed request object's claims as the form's
// parameters (CIBA §7.1.1): strings as they are, numbers in decimal, and
// authorization_details, a JSON array in the object, as its JSON text.
func requestParams(claims map[string]any) (url.Values, *Error) {
	out := url.Values{}
	for k, v := range claims {
		switch k {
		case "iss", "aud", "exp", "iat", "nbf", "jti":
			continue
		}
		switch v := v.(type) {
		case string:
			out.Set(k, v)
		case float64:
			out.Set(k, strconv.FormatFloat(v, 'f', -1, 64))
		case json.Number:
			out.Set(k, v.String())
		default:
			raw, err := json.Marshal(v)
			if err != nil {
				return nil, oauthError(http.StatusBadRequest, "invalid_request", "the request object's %s does not read", k)
			}
			out.Set(k, string(raw))
		}
	}
	return out, nil
}

func printableASCII(s string) bool {
	for _, r := range s {
		if r < 0x20 || r > 0x7e {
			return false
		}
	}
	return true
}

func clipHint(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
