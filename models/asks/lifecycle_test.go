package asks

import (
	"slices"
	"testing"
)

// The state table holds what the seeds say of an ask's life: every status is
// open, active or closed, and only one of them; nothing leaves a closed
// status; only a person's answer or a policy approves, and only from pending;
// and every move goes to a status the table knows.
func TestTheStateTableKeepsAnAsksLife(t *testing.T) {
	for _, s := range AllStatuses {
		groups := 0
		for _, g := range [][]Status{OpenStatuses, ActiveStatuses, ClosedStatuses} {
			if slices.Contains(g, s) {
				groups++
			}
		}
		if groups != 1 {
			t.Errorf("status %s is in %d of the open, active and closed groups, want 1", s, groups)
		}
		if s.Open() != slices.Contains(OpenStatuses, s) {
			t.Errorf("%s.Open() = %v, but OpenStatuses says otherwise", s, s.Open())
		}
	}
	for event, tr := range lifecycle {
		if !slices.Contains(AllStatuses, tr.to) {
			t.Errorf("%s moves to %q, which is no status", event, tr.to)
		}
		for _, from := range tr.from {
			if !slices.Contains(AllStatuses, from) {
				t.Errorf("%s moves from %q, which is no status", event, from)
			}
			if slices.Contains(ClosedStatuses, from) {
				t.Errorf("%s moves an ask out of the closed status %s", event, from)
			}
		}
		if tr.to == StatusApproved && (event != EventApprove && event != EventAutoApprove || !slices.Equal(tr.from, []Status{StatusPending})) {
			t.Errorf("%s approves an ask from %v: only an answer or a policy approves, and only a pending ask", event, tr.from)
		}
	}
	if len(Events()) != len(lifecycle) {
		t.Errorf("Events() lists %d events, the table holds %d", len(Events()), len(lifecycle))
	}
}
