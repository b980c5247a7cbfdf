package mcp

import (
	"context"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/models"
)

type (
	agentKey  struct{}
	runnerKey struct{}
)

// authenticate answers 401 with WWW-Authenticate: Bearer unless the request
// carries the bearer token of an enabled agent or an enabled runner. Every HTTP request is checked
// again, so a token disabled mid-session stops at once. The agent rides to the
// tools in the SDK's token info; its id binds the MCP session, so one agent's
// session cannot be used with another's token.
func (s *Server) authenticate(next http.Handler) http.Handler {
	verified := auth.RequireBearerToken(func(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
		if runner, ok := ctx.Value(runnerKey{}).(*models.Runner); ok {
			return &auth.TokenInfo{UserID: runner.ID, Extra: map[string]any{"runner": runner}}, nil
		}
		agent := ctx.Value(agentKey{}).(*models.Agent)
		return &auth.TokenInfo{Scopes: agent.ScopeList(), UserID: agent.ID, Extra: map[string]any{"agent": agent}}, nil
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := bearerToken(r)
		if !ok {
			// RFC 6750 §3.1: a request without credentials gets no error code.
			w.Header().Set("WWW-Authenticate", `Bearer realm="countersign"`)
			http.Error(w, "send Authorization: Bearer <agent token>", http.StatusUnauthorized)
			return
		}
		if models.IsRunnerToken(token) {
			runner, err := s.store.RunnerByToken(r.Context(), token)
			switch {
			case models.CodeOf(err) == models.NotFound:
				unauthorized(w, "invalid_token", "the token is not a runner token of this service")
				return
			case err != nil:
				s.log.Error("authenticate runner", "err", err)
				http.Error(w, "the service cannot check tokens right now", http.StatusServiceUnavailable)
				return
			case runner.Disabled:
				unauthorized(w, "invalid_token", "this runner is disabled; an admin must enroll it again")
				return
			}
			verified.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), runnerKey{}, runner)))
			return
		}
		agent, err := s.store.AgentByToken(r.Context(), token)
		switch {
		case models.CodeOf(err) == models.NotFound:
			unauthorized(w, "invalid_token", "the token is not an agent token of this service")
			return
		case err != nil:
			s.log.Error("authenticate agent", "err", err)
			http.Error(w, "the service cannot check tokens right now", http.StatusServiceUnavailable)
			return
		case agent.Disabled:
			unauthorized(w, "invalid_token", "this agent is disabled; an admin must look at it")
			return
		}
		verified.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), agentKey{}, agent)))
	})
}

func bearerToken(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	token = strings.TrimSpace(token)
	return token, ok && strings.EqualFold(scheme, "Bearer") && token != ""
}

func unauthorized(w http.ResponseWriter, code, desc string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="countersign", error="`+code+`", error_description="`+desc+`"`)
	http.Error(w, desc, http.StatusUnauthorized)
}

// runnerFrom returns the runner a request was authenticated as, or nil. A
// runner is a principal of its own, never an agent: it can read the runs that
// name it and report on them, nothing else.
func runnerFrom(req sdk.Request) *models.Runner {
	extra := req.GetExtra()
	if extra == nil || extra.TokenInfo == nil {
		return nil
	}
	runner, _ := extra.TokenInfo.Extra["runner"].(*models.Runner)
	return runner
}

// agentFrom returns the agent a request was authenticated as, or nil.
func agentFrom(req sdk.Request) *models.Agent {
	extra := req.GetExtra()
	if extra == nil || extra.TokenInfo == nil {
		return nil
	}
	agent, _ := extra.TokenInfo.Extra["agent"].(*models.Agent)
	return agent
}
