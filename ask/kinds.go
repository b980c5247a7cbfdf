// Package ask reads what an agent asks a person to decide: the kinds of ask,
// the frozen payload of each kind and its canonical hash, the context it is
// about (with the requester's explanation and evidence), and the ask's own
// words and links. It holds no database, no HTTP, MCP or templates, so the
// store, the MCP tools and the pages all read one set of types and rules.
// Every refusal is a *Refusal naming the dotted path of the member at fault.
package ask

// Kinds of ask. Each names the one member of its payload.
const (
	KindPullRequest = "pull_request"
	KindRoll        = "roll"
	KindReview      = "review"
	KindDocument    = "document"
	KindDecision    = "decision"
	KindRun         = "run"
	KindAutoApprove = "auto_approve"
	KindToolCall    = "tool_call"
	// KindRuleChange is a change to an approval rule proposed in the
	// browser: it applies only once the quorum the rules give to rule
	// changes has signed it. Its payload, {"rule_change": {action, rule_id,
	// rule}}, is built by the store, never sent by an agent.
	KindRuleChange = "rule_change"
	// KindMemberChange is a change to who decides, proposed on the Admin →
	// Members page where a rule asks two people for it: an owner or admin
	// invite, a role change or a removal. It applies only once the quorum
	// the rules give to member changes has signed it. Its payload,
	// {"member_change": {action, …}}, is built by the store, never sent by
	// an agent.
	KindMemberChange = "member_change"
	// KindAuthorization is a CIBA client's request that one person
	// authorize it (OpenID CIBA with RFC 9396 authorization_details). The
	// provider files it through the client's own agent, never
	// approvals_create; its payload, {"authorization": {client, scope,
	// authorization_details, binding_message}}, is AuthorizationPayload.
	KindAuthorization = "authorization"
)

// Kinds are the kinds approvals_create files, in the order the seed names
// them, then tool_call (seed 002: a gated MCP tool call). An auto_approve ask is filed by approvals_request_auto_approve only.
var Kinds = []string{KindPullRequest, KindRoll, KindReview, KindDocument, KindDecision, KindRun, KindToolCall}

// PayloadHelp says, for each kind approvals_create files, how its payload is
// written: the tool's description reads it.
var PayloadHelp = map[string]string{
	KindPullRequest: `payload.pull_request: repo "owner/name", number, head commit, title`,
	KindRoll:        `payload.roll: deployments, main_commit, running_commit, prs with number and title, migrations, other_commits with sha and subject, behind; a roll train adds gate_tree, gate, steps and rollback, one line each`,
	KindReview:      `payload.review: an https url`,
	KindDocument:    `payload.document: document_id, space_id, version, 0 for the current one`,
	KindDecision:    `payload.decision: options, 2 to 4 different answers of at most 80 characters; the chosen option comes back as the decision note`,
	KindRun:         `payload.run: pinned with script_sha256, runner_id, argv, effect, runner_public_key, expires_at, asked_of; a run with cmd only is refused: file a decision and run the command yourself after the approve`,
	KindToolCall:    `payload.tool_call: server, one line; tool, an MCP tool name; arguments, the call's arguments object, at most 64 KiB; expires_at, optional unix seconds at most 24 hours ahead, when the gate stops waiting, which ends the ask: the exact call a gate holds until the person answers`,
}

// NeverAutoApproved are the kinds no policy approves: merges, rolls, runs,
// policies and approval rules themselves keep asking, a decision needs a
// person to pick, and an authorization is a person's own consent.
var NeverAutoApproved = []string{KindPullRequest, KindRoll, KindRun, KindAutoApprove, KindDecision, KindRuleChange, KindMemberChange, KindAuthorization}

// Kinds of request an agent files with approval_request (seed 000): a change
// to its work, its memory or a person's life, or a request to the person,
// which may be a question. They are asks like the others, filed by their own tool.
const (
	KindWorkChange   = "work_change"
	KindMemoryChange = "memory_change"
	KindLifeChange   = "life_change"
	KindAgentRequest = "agent_request"
)

// RequestKinds are the kinds approval_request files, in the seed's order.
var RequestKinds = []string{KindWorkChange, KindMemoryChange, KindLifeChange, KindAgentRequest}
