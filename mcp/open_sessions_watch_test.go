package mcp

import (
	"fmt"
	"strings"
	"testing"
)

// A session subscribes to at most maxSubscriptions resources, subscribing
// twice to one counts once, and a session that ends leaves nothing behind
// in the table of who watches what.
func TestASessionsSubscriptionsAreBoundedAndLeaveWithIt(t *testing.T) {
	r := newOpenSessions(SessionLimits{})
	s, refused := r.admit("agent_1")
	if refused != nil {
		t.Fatal(refused)
	}
	other, _ := r.admit("agent_2")
	if err := r.watch(other, "countersign://approvals/shared"); err != nil {
		t.Fatal(err)
	}
	for i := range maxSubscriptions {
		if err := r.watch(s, fmt.Sprintf("countersign://approvals/a%d", i)); err != nil {
			t.Fatalf("subscription %d: %v", i+1, err)
		}
	}
	if err := r.watch(s, "countersign://approvals/a0"); err != nil {
		t.Errorf("subscribing again to one it holds: %v, want it harmless", err)
	}
	err := r.watch(s, "countersign://approvals/one-more")
	if err == nil || !strings.HasPrefix(err.Error(), "RESOURCE_EXHAUSTED") || !strings.Contains(err.Error(), fmt.Sprint(maxSubscriptions)) {
		t.Fatalf("subscription %d: %v, want RESOURCE_EXHAUSTED naming the cap", maxSubscriptions+1, err)
	}
	r.unwatch(s, "countersign://approvals/a0")
	if err := r.watch(s, "countersign://approvals/one-more"); err != nil {
		t.Errorf("a subscription after one was dropped: %v", err)
	}

	r.drop(s)
	if n := len(r.watchers); n != 1 {
		t.Errorf("%d resources watched after the session ended, want only the other session's", n)
	}
	if err := r.watch(s, "countersign://approvals/late"); err != errSessionGone {
		t.Errorf("a subscription of an ended session: %v, want errSessionGone", err)
	}
	r.drop(other)
	if n := len(r.watchers); n != 0 || r.Len() != 0 {
		t.Errorf("after both ended: %d resources watched, %d sessions; want none", n, r.Len())
	}
}
