package mcp

import (
	"context"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/models"
)

// Every approval is also an MCP resource. An agent that subscribes to one is
// told the moment it changes (a decision, a question, progress, expiry)
// instead of polling approvals_get; the notification carries only the URI,
// and reading it needs the same scopes and account as approvals_get.
const (
	approvalURIPrefix   = "countersign://approvals/"
	approvalURITemplate = approvalURIPrefix + "{approval_id}"
)

func approvalURI(id string) string { return approvalURIPrefix + id }

// approvalIDOf reads the approval id of an approval's URI.
func approvalIDOf(uri string) (string, bool) {
	id, ok := strings.CutPrefix(uri, approvalURIPrefix)
	return id, ok && id != "" && !strings.ContainsAny(id, "/?#")
}

func (s *Server) addResources() {
	s.mcp.AddResourceTemplate(&sdk.ResourceTemplate{
		Name: "approval", Title: "An approval", URITemplate: approvalURITemplate, MIMEType: "application/json",
		Description: `One approval of your account, as approvals_get returns it. Subscribe (resources/subscribe) to hear the moment it changes, a decision above all, instead of polling; then read it again.`,
	}, s.readApproval)
	s.mcp.AddResourceTemplate(&sdk.ResourceTemplate{
		Name: "runs", Title: "A runner's active runs", URITemplate: runsURITemplate, MIMEType: "application/json",
		Description: `For a runner's token only: its approved and in-progress runs, as approvals_list returns them. Subscribe to hear the moment one moves.`,
	}, s.readRuns)
}

// findApproval resolves an approval URI for the caller: another account's
// approval is not found, exactly like one that does not exist.
func (s *Server) findApproval(ctx context.Context, req sdk.Request, uri string) (*models.Approval, error) {
	agent, runner := principal(ctx, req)
	id, ok := approvalIDOf(uri)
	if (agent == nil && runner == nil) || !ok {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	var (
		a   *models.Approval
		err error
	)
	if runner != nil {
		a, err = s.runOf(ctx, runner, id)
	} else {
		a, err = s.store.GetApproval(ctx, agent.AccountID, id)
	}
	if models.CodeOf(err) == models.NotFound {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	return a, err
}

// A runner subscribes to its runs: the resource changes whenever a run that
// names it moves, above all when a person approves one, so the runner lists
// its runs again at once instead of waiting for its next poll.
const (
	runnerURIPrefix   = "countersign://runners/"
	runsURITemplate   = runnerURIPrefix + "{runner_id}/runs"
	runsURISuffix     = "/runs"
	runsListPageLimit = 50
)

// RunsURI is the resource of the runs that name a runner.
func RunsURI(runnerID string) string { return runnerURIPrefix + runnerID + runsURISuffix }

// runnerOfURI resolves a runs URI for the caller: only the runner itself may
// read or subscribe to it.
func runnerOfURI(ctx context.Context, req sdk.Request, uri string) (*models.Runner, error) {
	_, runner := principal(ctx, req)
	if runner == nil || uri != RunsURI(runner.ID) {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	return runner, nil
}

func (s *Server) readRuns(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	runner, err := runnerOfURI(ctx, req, req.Params.URI)
	if err != nil {
		return nil, err
	}
	list, _, err := s.store.ListApprovals(ctx, runner.AccountID, models.ListFilter{RunnerID: runner.ID, Status: "active", PageSize: runsListPageLimit})
	if err != nil {
		return nil, err
	}
	out := &ListOutput{Approvals: make([]*ApprovalOut, 0, len(list))}
	for i := range list {
		out.Approvals = append(out.Approvals, approvalOut(&list[i]))
	}
	text, err := encodeResult(out)
	if err != nil {
		return nil, err
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, MIMEType: "application/json", Text: string(text)}}}, nil
}

// RunsChanged tells the runner subscribed to its runs that one of them moved.
func (s *Server) RunsChanged(runnerID string) {
	if err := s.mcp.ResourceUpdated(context.Background(), &sdk.ResourceUpdatedNotificationParams{URI: RunsURI(runnerID)}); err != nil {
		s.log.Warn("tell a runner its runs changed", "runner", runnerID, "err", err)
	}
}

func (s *Server) readApproval(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	a, err := s.findApproval(ctx, req, req.Params.URI)
	if err != nil {
		return nil, err
	}
	out, err := s.approvalWithTimeline(ctx, a)
	if err != nil {
		return nil, err
	}
	text, err := encodeResult(out)
	if err != nil {
		return nil, err
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, MIMEType: "application/json", Text: string(text)}}}, nil
}

// subscribe lets a session subscribe only to an approval it may read.
func (s *Server) subscribe(ctx context.Context, req *sdk.SubscribeRequest) error {
	if strings.HasPrefix(req.Params.URI, runnerURIPrefix) {
		_, err := runnerOfURI(ctx, req, req.Params.URI)
		return err
	}
	_, err := s.findApproval(ctx, req, req.Params.URI)
	return err
}

func (s *Server) unsubscribe(context.Context, *sdk.UnsubscribeRequest) error { return nil }

// ApprovalChanged tells the sessions subscribed to this approval that it
// changed.
func (s *Server) ApprovalChanged(id string) {
	if err := s.mcp.ResourceUpdated(context.Background(), &sdk.ResourceUpdatedNotificationParams{URI: approvalURI(id)}); err != nil {
		s.log.Warn("tell subscribers an approval changed", "approval", id, "err", err)
	}
}

// resourceMethods are the MCP methods on resources; they need readScopes.
// subscriptions/listen is the 2026-07-28 revision's resources/subscribe.
var resourceMethods = []string{"resources/list", "resources/templates/list", "resources/read", "resources/subscribe", "resources/unsubscribe", methodListen}

// methodListen opens a 2026-07-28 subscription stream: the resources it
// names are subscribed for as long as the request is open.
const methodListen = "subscriptions/listen"

// listenerKey carries the principal of a subscriptions/listen request to
// the subscribe handler, which the SDK calls with a request of its own
// making that carries no token.
type listenerKey struct{}

type listener struct {
	agent  *models.Agent
	runner *models.Runner
}

// principal is the agent or runner a request was authenticated as: read
// from the request, or for a subscription the SDK opens on behalf of
// subscriptions/listen, from the listen request's context.
func principal(ctx context.Context, req sdk.Request) (*models.Agent, *models.Runner) {
	agent, runner := agentFrom(req), runnerFrom(req)
	if agent == nil && runner == nil {
		if l, ok := ctx.Value(listenerKey{}).(listener); ok {
			return l.agent, l.runner
		}
	}
	return agent, runner
}

// resourcesDenied refuses a resource method to a token without readScopes.
func resourcesDenied(agent *models.Agent) error {
	if agent != nil && agent.HasScopes(readScopes...) {
		return nil
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
		Message: "PERMISSION_DENIED: resources need the scopes " + strings.Join(readScopes, " and ") + "; this token does not hold them all"}
}
