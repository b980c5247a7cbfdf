package asks

import (
	"slices"

	"github.com/countersign/countersign/ask"
)

// IsRequest says whether an ask was filed with approval_request.
func (a *Approval) IsRequest() bool { return slices.Contains(ask.RequestKinds, a.Kind) }

// Request returns the frozen payload of a request, or nil for other asks.
func (a *Approval) Request() *ask.RequestProposal {
	if !a.IsRequest() {
		return nil
	}
	p, ok := ask.ReadRequestPayload([]byte(a.Payload))
	if !ok {
		return nil
	}
	return p
}

// PolicyMayCover says whether a policy may ever approve an ask like a: not
// one of the kinds that always ask a person (ask.NeverAutoApproved), and a
// request only when it proposes without asking: a question is answered, and
// a command approved, only by a person.
func (a *Approval) PolicyMayCover() bool {
	if slices.Contains(ask.NeverAutoApproved, a.Kind) || a.OffersEdits() {
		return false // an ask the person may edit is answered by that person
	}
	if !a.IsRequest() {
		return true
	}
	p := a.Request()
	return p != nil && p.Question == nil && p.Proposal.Mode == ask.ModeAdvisory
}
