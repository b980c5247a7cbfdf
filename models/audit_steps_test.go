package models

import (
	"slices"
	"testing"
)

// Every event of the state machine is a step the audit log can be filtered
// by: a new transition cannot be left out of the list.
func TestEveryTransitionIsAnAuditStep(t *testing.T) {
	for event := range lifecycle {
		if !slices.Contains(AuditSteps, string(event)) {
			t.Errorf("the state machine's event %q is not in AuditSteps", event)
		}
	}
}
