package audit

import (
	"slices"
	"testing"

	"github.com/countersign/countersign/models/asks"
)

// Every event of the state machine is a step the audit log can be filtered
// by: a new transition cannot be left out of the list.
func TestEveryTransitionIsAnAuditStep(t *testing.T) {
	events := asks.Events()
	if len(events) == 0 {
		t.Fatal("the state machine has no events")
	}
	for _, event := range events {
		if !slices.Contains(AuditSteps, string(event)) {
			t.Errorf("the state machine's event %q is not in AuditSteps", event)
		}
	}
}
