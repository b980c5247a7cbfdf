package channels

import (
	"testing"
	"time"

	"github.com/countersign/countersign/models/outbox"
)

// A person's message says how long its one-time link lives in words: the
// link's full life, or what is left of the ask's when that is shorter.
func TestALinkSaysHowLongItLivesInWords(t *testing.T) {
	for _, tc := range []struct {
		left time.Duration
		want string
	}{
		{7 * 24 * time.Hour, "15 minutes"},
		{15 * time.Minute, "15 minutes"},
		{4*time.Minute + 10*time.Second, "4 minutes"},
		{100 * time.Second, "2 minutes"},
		{40 * time.Second, "a minute"},
	} {
		out := Outgoing{Message: &outbox.ChannelMessage{PersonID: "per_1"}, Note: outbox.ChannelNote{Event: outbox.MessageAsk, ExpiresAt: time.Now().Add(tc.left)}}
		if got, want := linkWords(out), "Answer with your passkey (this link works once, for "+tc.want+")"; got != want {
			t.Errorf("an ask with %s left: %q, want %q", tc.left, got, want)
		}
	}
}
