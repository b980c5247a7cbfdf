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
