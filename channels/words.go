package channels

import (
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/models/outbox"
)

// The words of a message, the same on every channel.

// subject is a message's one line: the ask's title, or how it ended.
func subject(n outbox.ChannelNote) string {
	switch n.Event {
	case outbox.MessageDecided:
		return outcome(n) + ": " + n.Title
	case outbox.MessageTest:
		return n.Title
	}
	return n.Title
}

// outcome says how an ask ended: "Approved by ada at 14:02 UTC", "Expired".
func outcome(n outbox.ChannelNote) string {
	verb := map[string]string{"approved": "Approved", "denied": "Denied", "expired": "Expired", "stale": "Withdrawn",
		"cancelled": "Cancelled", "in_progress": "Approved", "done": "Approved", "failed": "Approved"}[n.Status]
	if verb == "" {
		verb = "Ended (" + n.Status + ")"
	}
	if n.DecidedBy != "" && verb != "Expired" && verb != "Withdrawn" {
		verb += " by " + n.DecidedBy
		if n.DecidedAt != nil {
			verb += " at " + n.DecidedAt.UTC().Format("15:04 UTC")
		}
	}
	return verb
}

// facts are the lines a message holds besides its title: the kind, the
// verified agent, the badges and the deadline.
func facts(n outbox.ChannelNote) []string {
	if n.Event == outbox.MessageTest {
		return []string{"This is a test. When an agent asks you for an approval, it reaches you here, with a link to answer it."}
	}
	var out []string
	if n.Kind != "" {
		out = append(out, "Kind: "+strings.ReplaceAll(n.Kind, "_", " "))
	}
	if n.Agent != "" {
		out = append(out, "Asked by: "+n.Agent+" (the agent's token, verified)")
	}
	if len(n.Badges) > 0 {
		out = append(out, "Marked: "+strings.Join(n.Badges, " · "))
	}
	if n.Event != outbox.MessageDecided && !n.ExpiresAt.IsZero() {
		out = append(out, "Answer by: "+n.ExpiresAt.UTC().Format("2006-01-02 15:04 UTC"))
	}
	return out
}

// linkWords say what the message's link does.
func linkWords(out Outgoing) string {
	n := out.Note
	switch {
	case n.Event == outbox.MessageTest:
		return "Your devices and channels"
	case n.Event == outbox.MessageDecided:
		return "See the ask"
	case out.Message.Shared():
		return "Open the ask (sign in to answer)"
	}
	return "Answer with your passkey (this link works once, for " + linkLife(n) + ")"
}

// linkLife says how long a person's one-time link lives: PushLinkLife, or
// less when the ask ends sooner ("4 minutes", not Go's "4m0s").
func linkLife(n outbox.ChannelNote) string {
	left := time.Until(n.ExpiresAt)
	if left > outbox.PushLinkLife || left <= 0 {
		left = outbox.PushLinkLife
	}
	if m := int(left.Round(time.Minute) / time.Minute); m > 1 {
		return strconv.Itoa(m) + " minutes"
	}
	return "a minute"
}
