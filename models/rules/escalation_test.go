package rules

import (
	"testing"
	"time"
)

func TestTheReminderIntervalIsTheRulesElseTenMinutesInTheLastHourElseAnHour(t *testing.T) {
	for _, c := range []struct {
		name string
		spec *RuleSpec
		left time.Duration
		want time.Duration
	}{
		{"a rule's interval wins", &RuleSpec{RemindEvery: Duration(3 * time.Minute)}, 5 * time.Hour, 3 * time.Minute},
		{"with under an hour left, ten minutes", &RuleSpec{}, 59 * time.Minute, RemindSoon},
		{"with an hour or more left, an hour", &RuleSpec{}, time.Hour, RemindLater},
		{"a removed rule's ask, by the time left", nil, 10 * time.Minute, RemindSoon},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := remindEvery(c.spec, c.left); got != c.want {
				t.Fatalf("remindEvery = %s, want %s", got, c.want)
			}
		})
	}
	if RemindSoon != 10*time.Minute || RemindLater != time.Hour {
		t.Fatalf("the documented defaults are 10m and 1h, not %s and %s", RemindSoon, RemindLater)
	}
}
