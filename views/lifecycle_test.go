package views_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/views"
)

// Every state of an approval falls in exactly one of the page's groups (open,
// approved and working, closed), read from models' groups, so a new state
// cannot fall through a page silently.
func TestEveryStateFallsInOneGroup(t *testing.T) {
	now := time.Unix(1_800_000_000, 0).UTC()
	for _, s := range models.AllStatuses {
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
			if a.Open() != slices.Contains(models.OpenStatuses, s) || active != slices.Contains(models.ActiveStatuses, s) ||
				a.Closed() != slices.Contains(models.ClosedStatuses, s) {
				t.Fatalf("%s: the page's groups differ from models' groups", s)
			}
			if row := (views.AskRow{Status: string(s)}); row.Open() != a.Open() {
				t.Fatalf("%s: the list row says open %v, the page %v", s, row.Open(), a.Open())
			}
		})
	}
}
