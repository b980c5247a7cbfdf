package mcp

import (
	"context"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
	"github.com/countersign/countersign/models/runners"
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
func (s *Server) findApproval(ctx context.Context, agent *people.Agent, runner *runners.Runner, uri string) (*asks.Approval, error) {
	id, ok := approvalIDOf(uri)
	if (agent == nil && runner == nil) || !ok {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	var (
		a   *asks.Approval
		err error
	)
	if runner != nil {
		a, err = s.runOf(ctx, runner, id)
	} else {
		a, err = s.store.GetApproval(ctx, agent.AccountID, id)
	}
	if core.CodeOf(err) == core.NotFound {
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
func runnerOfURI(runner *runners.Runner, uri string) (*runners.Runner, error) {
	if runner == nil || uri != RunsURI(runner.ID) {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	return runner, nil
}

func (s *Server) readRuns(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	runner, err := runnerOfURI(runnerFrom(req), req.Params.URI)
	if err != nil {
		return nil, err
	}
	list, _, err := s.store.ListApprovals(ctx, runner.AccountID, asks.ListFilter{RunnerID: runner.ID, Status: "active", PageSize: runsListPageLimit})
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
func (s *Server) RunsChanged(runnerID string) { s.tell(RunsURI(runnerID)) }

func (s *Server) readApproval(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	a, err := s.findApproval(ctx, agentFrom(req), runnerFrom(req), req.Params.URI)
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

// subscriptions serves resources/subscribe and resources/unsubscribe
// itself: a subscription belongs to the session (openSessions), not to the
// go-sdk, whose session lasts one request. (Left to the SDK, each would
// also leave an empty entry in its table of subscriptions for ever, and
// every request's end walks that whole table.)
func (s *Server) subscriptions(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		switch r := req.(type) {
		case *sdk.SubscribeRequest:
			if err := s.subscribe(ctx, r); err != nil {
				return nil, err
			}
			return emptyResult, nil
		case *sdk.UnsubscribeRequest:
			s.unsubscribe(ctx, r)
			return emptyResult, nil
		}
		return next(ctx, method, req)
	}
}

// emptyResult answers a subscribe or an unsubscribe with an empty result:
// the SDK exports none, and this one has only _meta, which must be an
// object ({"_meta":{}}): a nil one is sent as null, which the TypeScript
// SDK's schema refuses.
var emptyResult = &sdk.SubscriptionsListenResult{Meta: sdk.Meta{}}

// subscribe lets a session subscribe only to a resource it may read.
func (s *Server) subscribe(ctx context.Context, req *sdk.SubscribeRequest) error {
	if err := s.mayWatch(ctx, agentFrom(req), runnerFrom(req), req.Params.URI); err != nil {
		return err
	}
	sess := sessionFrom(ctx)
	if sess == nil {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "resources/subscribe needs an MCP session (initialize first); on 2026-07-28 use subscriptions/listen"}
	}
	if err := s.sessions.watch(sess, req.Params.URI); err != nil {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	return nil
}

func (s *Server) unsubscribe(ctx context.Context, req *sdk.UnsubscribeRequest) {
	if sess := sessionFrom(ctx); sess != nil {
		s.sessions.unwatch(sess, req.Params.URI)
	}
}

// mayWatch says whether the caller may subscribe to uri: an approval it may
// read, or, for a runner, its own runs.
func (s *Server) mayWatch(ctx context.Context, agent *people.Agent, runner *runners.Runner, uri string) error {
	if strings.HasPrefix(uri, runnerURIPrefix) {
		_, err := runnerOfURI(runner, uri)
		return err
	}
	_, err := s.findApproval(ctx, agent, runner, uri)
	return err
}

// ApprovalChanged tells the sessions subscribed to this approval that it
// changed, and wakes the calls that wait for its answer (wait.go).
func (s *Server) ApprovalChanged(id string) {
	s.tell(approvalURI(id))
	s.waiters.wake(id)
	if s.elicited.account(id) != "" {
		go s.completeElicitations(id)
	}
}

// resourceMethods are the MCP methods on resources; they need readScopes.
// subscriptions/listen is the 2026-07-28 revision's resources/subscribe.
var resourceMethods = []string{"resources/list", "resources/templates/list", "resources/read", "resources/subscribe", "resources/unsubscribe", methodListen}

// methodListen opens a 2026-07-28 subscription stream: the resources it
// names are subscribed for as long as the request is open (waiting.go).
const methodListen = "subscriptions/listen"

// resourcesDenied refuses a resource method to a token without readScopes.
func resourcesDenied(agent *people.Agent) error {
	if agent != nil && agent.HasScopes(readScopes...) {
		return nil
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
		Message: "PERMISSION_DENIED: resources need the scopes " + strings.Join(readScopes, " and ") + "; this token does not hold them all"}
}
