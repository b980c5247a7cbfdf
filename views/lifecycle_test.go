package views_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/views"
)

// Every state of an approval falls in exactly one of the page's groups (open,
// approved and working, closed), read from models' groups, so a new state
// cannot fall through a page silently.
func TestEveryStateFallsInOneGroup(t *testing.T) {
	now := time.Unix(1_800_000_000, 0).UTC()
	for _, s := range asks.AllStatuses {
		t.Run(string(s), func(t *testing.T) {
			a := views.Ask{Status: string(s), Now: now, ExpiresAt: now.Add(time.Hour)}
			active := strings.HasPrefix(a.WhyNoButtons(), "Approved:")
			groups := 0
			for _, in := range []bool{a.Open(), active, a.Closed()} {
				if in {
					groups++
				}
			}
			if groups != 1 {
				t.Fatalf("%s is open %v, approved %v, closed %v: want exactly one", s, a.Open(), active, a.Closed())
			}
			if a.Open() != slices.Contains(asks.OpenStatuses, s) || active != slices.Contains(asks.ActiveStatuses, s) ||
				a.Closed() != slices.Contains(asks.ClosedStatuses, s) {
				t.Fatalf("%s: the page's groups differ from models' groups", s)
			}
			if row := (views.AskRow{Status: string(s)}); row.Open() != a.Open() {
				t.Fatalf("%s: the list row says open %v, the page %v", s, row.Open(), a.Open())
			}
		})
	}
}

// A closed ask's page drops its live timeline only once the timeline shows
// the event that closed it: the page reads the timeline first, and the
// events after it arrive through the live timeline.
func TestAClosedAskKeepsItsLiveTimelineUntilTheClosingEventIsShown(t *testing.T) {
	created := views.Event{Seq: 1, Step: "created", To: "pending"}
	approved := views.Event{Seq: 2, Step: "approved", From: "pending", To: "approved"}
	started := views.Event{Seq: 3, Step: "started", From: "approved", To: "in_progress"}
	step := views.Event{Seq: 4, Step: "step", From: "in_progress", To: "in_progress"}
	done := views.Event{Seq: 5, Step: "done", From: "in_progress", To: "done"}
	for _, tc := range []struct {
		name     string
		status   string
		timeline []views.Event
		settled  bool
	}{
		{"an open ask", "pending", []views.Event{created}, false},
		{"a run still going", "in_progress", []views.Event{created, approved, started, step}, false},
		{"a run done whose done event is not read yet", "done", []views.Event{created, approved, started, step}, false},
		{"a run done with its done event shown", "done", []views.Event{created, approved, started, step, done}, true},
		{"a closed ask with no timeline read", "denied", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := views.Ask{Status: tc.status, Timeline: tc.timeline}
			if got := a.Settled(); got != tc.settled {
				t.Errorf("Settled() = %t, want %t", got, tc.settled)
			}
		})
	}
}
