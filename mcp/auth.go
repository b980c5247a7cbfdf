package mcp

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
	"github.com/countersign/countersign/models/runners"
	"github.com/countersign/countersign/requestlog"
)

type (
	agentKey  struct{}
	runnerKey struct{}
)

// authenticate answers 401 with WWW-Authenticate: Bearer unless the request
// (or, for a call another instance forwarded, the credential it names:
// forward.go) carries the bearer token of an enabled agent or an enabled runner, or an
// unexpired, unrevoked OAuth access token issued for this endpoint (its
// audience, RFC 8707) to an enabled agent, which then holds the token's scopes. Every HTTP request is checked
// again, so a token disabled mid-session stops at once. The agent rides to the
// tools in the SDK's token info; its id binds the MCP session, so one agent's
// session cannot be used with another's token. Every challenge names the
// endpoint's protected-resource metadata (RFC 9728 §5.1). A token without the
// scopes of an HTTP-level operation (see httpScopes) gets 403
// insufficient_scope naming them (RFC 6750 §3.1); scopes of single tools are
// checked per call, in scopeMiddleware.
func (s *Server) authenticate(next http.Handler) http.Handler {
	verified := auth.RequireBearerToken(func(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
		if runner, ok := ctx.Value(runnerKey{}).(*runners.Runner); ok {
			return &auth.TokenInfo{UserID: runner.ID, Extra: map[string]any{"runner": runner}}, nil
		}
		agent := ctx.Value(agentKey{}).(*people.Agent)
		return &auth.TokenInfo{Scopes: agent.ScopeList(), UserID: agent.ID, Extra: map[string]any{"agent": agent}}, nil
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cred, forwarded := forwardedCredential(r)
		if !forwarded {
			if token, ok := bearerToken(r); ok {
				cred = credentialOfToken(token)
			}
		}
		if cred.hash == "" {
			// RFC 6750 §3.1: a request without credentials gets no error code.
			s.challenge(w, http.StatusUnauthorized, "", "", "send Authorization: Bearer <agent token>; an admin of Countersign makes agent tokens")
			return
		}
		if forwarded {
			// The SDK's bearer check below reads an Authorization header,
			// which a forwarded call does not carry (forward.go); its
			// credential is checked here, so it gets a stand-in.
			r.Header.Set("Authorization", "Bearer forwarded")
		}
		if cred.kind == credentialRunner {
			runner, err := s.store.RunnerByTokenHash(r.Context(), cred.hash)
			if s.lookupFailed(w, err, "runner", "the token is not a runner token of this service") {
				return
			}
			if runner.Disabled {
				s.challenge(w, http.StatusUnauthorized, "invalid_token", "", "this runner is disabled; an admin must enroll it again")
				return
			}
			verified.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), runnerKey{}, runner)))
			return
		}
		var (
			agent *people.Agent
			err   error
		)
		if cred.kind == credentialOAuth {
			var audience string
			agent, audience, err = s.store.AgentByOAuthTokenHash(r.Context(), cred.hash)
			if core.CodeOf(err) == core.FailedPrecondition { // revoked or expired
				var refusal *core.Error
				errors.As(err, &refusal)
				s.challenge(w, http.StatusUnauthorized, "invalid_token", "", refusal.Msg)
				return
			}
			if err == nil && audience != s.resource {
				s.challenge(w, http.StatusUnauthorized, "invalid_token", "", "the access token was issued for another resource, not "+s.resource)
				return
			}
		} else {
			agent, err = s.store.AgentByTokenHash(r.Context(), cred.hash)
		}
		if s.lookupFailed(w, err, "agent", "the token is not an agent token of this service") {
			return
		}
		if agent.Disabled {
			s.challenge(w, http.StatusUnauthorized, "invalid_token", "", "this agent is disabled; an admin must look at it")
			return
		}
		requestlog.From(r.Context()).SetAgent(agent.Subject)
		if need, why := httpScopes(r, agent); need != nil {
			s.challenge(w, http.StatusForbidden, "insufficient_scope", strings.Join(need, " "), why)
			return
		}
		verified.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), agentKey{}, agent)))
	})
}

// lookupFailed answers a request whose token's principal (runner or agent)
// could not be found, and says whether it did: 401 with unknown when the
// service has no such token, 503 when it cannot check tokens right now.
func (s *Server) lookupFailed(w http.ResponseWriter, err error, principal, unknown string) bool {
	switch {
	case err == nil:
		return false
	case core.CodeOf(err) == core.NotFound:
		s.challenge(w, http.StatusUnauthorized, "invalid_token", "", unknown)
	default:
		s.log.Error("authenticate "+principal, "err", err)
		w.Header().Set("Retry-After", "5")
		http.Error(w, "the service cannot check tokens right now", http.StatusServiceUnavailable)
	}
	return true
}

// httpScopes returns the scopes an HTTP-level operation on /mcp needs and
// the agent lacks, with why, or nil when it may go on. Any request needs one
// of mcp:read and mcp:write (mcp:read is named, the least that opens a
// session); the GET stream, which carries only the changes of subscribed
// resources, needs the read scopes resources need.
func httpScopes(r *http.Request, agent *people.Agent) ([]string, string) {
	switch {
	case !agent.HasScopes(people.ScopeMCPRead) && !agent.HasScopes(people.ScopeMCPWrite):
		return []string{people.ScopeMCPRead}, "this token holds neither mcp:read nor mcp:write; MCP needs one of them"
	case r.Method == http.MethodGet && !agent.HasScopes(readScopes...):
		return readScopes, "the notification stream carries changes of resources, which need " + strings.Join(readScopes, " and ")
	}
	return nil, ""
}

// challenge answers status with a Bearer challenge: the realm, the metadata
// URL, and the error code, the scope needed and desc when given.
func (s *Server) challenge(w http.ResponseWriter, status int, code, scope, desc string) {
	params := []string{`realm="countersign"`}
	if s.resourceMetadata != "" {
		params = append(params, `resource_metadata="`+s.resourceMetadata+`"`)
	}
	if code != "" {
		params = append(params, `error="`+code+`"`)
	}
	if scope != "" {
		params = append(params, `scope="`+scope+`"`)
	}
	if code != "" {
		params = append(params, `error_description="`+desc+`"`)
	}
	w.Header().Set("WWW-Authenticate", "Bearer "+strings.Join(params, ", "))
	http.Error(w, desc, status)
}

func bearerToken(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	token = strings.TrimSpace(token)
	return token, ok && strings.EqualFold(scheme, "Bearer") && token != ""
}

// runnerFrom returns the runner a request was authenticated as, or nil. A
// runner is a principal of its own, never an agent: it can read the runs that
// name it and report on them, nothing else.
func runnerFrom(req sdk.Request) *runners.Runner {
	extra := req.GetExtra()
	if extra == nil || extra.TokenInfo == nil {
		return nil
	}
	runner, _ := extra.TokenInfo.Extra["runner"].(*runners.Runner)
	return runner
}

// agentFrom returns the agent a request was authenticated as, or nil.
func agentFrom(req sdk.Request) *people.Agent {
	extra := req.GetExtra()
	if extra == nil || extra.TokenInfo == nil {
		return nil
	}
	agent, _ := extra.TokenInfo.Extra["agent"].(*people.Agent)
	return agent
}

// principalOf returns the agent or the runner an HTTP request on /mcp was
// authenticated as, for what is served before the SDK sees it.
func principalOf(ctx context.Context) (*people.Agent, *runners.Runner) {
	agent, _ := ctx.Value(agentKey{}).(*people.Agent)
	runner, _ := ctx.Value(runnerKey{}).(*runners.Runner)
	return agent, runner
}

// AccessEnded closes, on this instance, every MCP session of the agent and
// the streams open on them (GET streams, 2026-07-28 subscriptions/listen):
// its access ended (models.AgentsChanged naming it). A stream is
// authenticated once, when it opens, and would otherwise go on carrying
// notices to a disabled agent or a revoked client.
func (s *Server) AccessEnded(agentID string) { s.sessions.dropOwner(agentID) }

// RecheckAccess closes, in the background, the sessions of every agent
// whose access ended while this instance may not have heard of it
// (models.ChangesMissed: its PostgreSQL listener reconnected).
func (s *Server) RecheckAccess() {
	owners := s.sessions.ownerIDs()
	if len(owners) == 0 {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		ended, err := s.store.AgentsWithoutAccess(ctx, owners)
		if err != nil {
			s.log.Error("check the access of agents with open MCP sessions", "err", err)
			return
		}
		for _, id := range ended {
			s.sessions.dropOwner(id)
		}
	}()
}
