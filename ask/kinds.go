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
)

// Kinds are the kinds approvals_create files, in the order the seed names
// them, then tool_call (seed 002: a gated MCP tool call). An auto_approve ask is filed by approvals_request_auto_approve only.
var Kinds = []string{KindPullRequest, KindRoll, KindReview, KindDocument, KindDecision, KindRun, KindToolCall}

// NeverAutoApproved are the kinds no policy approves: merges, rolls, runs,
// policies and approval rules themselves keep asking, and a decision needs a
// person to pick.
var NeverAutoApproved = []string{KindPullRequest, KindRoll, KindRun, KindAutoApprove, KindDecision, KindRuleChange, KindMemberChange}

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
