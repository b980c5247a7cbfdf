package views

import (
	"fmt"
	"strings"
	"time"
)

// stamp is a time as people read it on every page: UTC, to the minute.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") }

// machine is a time as <time datetime> and the page script read it.
func machine(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// ago says how long before now t was, roughly.
func ago(now, t time.Time) string {
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd ago", int(d/(24*time.Hour)))
}

// left says how long from now until t, the text a countdown starts from
// (the page script then updates it every second).
func left(now, t time.Time) string {
	d := t.Sub(now)
	switch {
	case d <= 0:
		return "expired"
	case d < time.Minute:
		return fmt.Sprintf("%ds left", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm %02ds left", int(d/time.Minute), int(d%time.Minute/time.Second))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh %dm left", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
	return fmt.Sprintf("%dd %dh left", int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour))
}

// words turns a state or step name into words: in_progress → in progress.
func words(s string) string { return strings.ReplaceAll(s, "_", " ") }

// plural picks the singular or plural form for n.
func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
