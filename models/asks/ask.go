package asks

import (
	"encoding/json"
	"time"

	"github.com/countersign/countersign/ask"
)

// The kinds of ask are package ask's, under the names the store and its
// callers use.
const (
	KindPullRequest = ask.KindPullRequest
	KindRoll        = ask.KindRoll
	KindReview      = ask.KindReview
	KindDocument    = ask.KindDocument
	KindDecision    = ask.KindDecision
	KindRun         = ask.KindRun
	KindAutoApprove = ask.KindAutoApprove
	KindToolCall    = ask.KindToolCall
	// KindRuleChange: a rule change proposed in the browser (ProposeRuleChange).
	KindRuleChange = ask.KindRuleChange
	// KindMemberChange: an owner or admin invite, a role change or a removal
	// that a rule governs (ChangeRole, RemoveMemberAs, CreateInvite).
	KindMemberChange = ask.KindMemberChange
)

// AskKinds are the kinds approvals_create files: ask.Kinds, the one list.
var AskKinds = ask.Kinds

// Payload is a validated, frozen ask payload (see ask.Payload).
type Payload = ask.Payload

// ParsePayload validates the payload of an ask of the given kind, filed with
// approvals_create, at time now, and returns it frozen (see ask.ParsePayload).
// It is the store's entry point to payload validation.
func ParsePayload(kind string, raw json.RawMessage, now time.Time) (*Payload, error) {
	return ask.ParsePayload(kind, raw, now)
}

// CanonicalHash returns the RFC 8785 canonical bytes of a JSON value and
// their lower-case hex SHA-256 (see ask.CanonicalHash): the hash of a payload,
// of an observed payload and of an auto-approve request.
func CanonicalHash(raw json.RawMessage) (canonical []byte, sha256hex string, err error) {
	return ask.CanonicalHash(raw)
}
