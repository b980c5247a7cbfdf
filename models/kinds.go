package models

// Kinds of ask. Each names the one member of its payload.
const (
	KindPullRequest = "pull_request"
	KindRoll        = "roll"
	KindReview      = "review"
	KindDocument    = "document"
	KindDecision    = "decision"
	KindRun         = "run"
	KindAutoApprove = "auto_approve"
)

// AskKinds are the kinds approvals_create files.
var AskKinds = []string{KindPullRequest, KindRoll, KindReview, KindDocument, KindDecision, KindRun}
