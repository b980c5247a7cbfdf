package asks

import (
	"strings"
	"testing"

	"github.com/countersign/countersign/ask"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/proof"
)

// A reply is a deny of a tool_call whose words the signature covers: it
// needs its text, fits the note's limit, and is refused on any other kind and
// against a signed decision of other words.
func TestAReplyIsADenyOfAToolCallWithItsWordsSigned(t *testing.T) {
	call := &Approval{ID: "appr_call", Kind: ask.KindToolCall}
	d, err := ParseVerdict(call, VerdictReply, "  Use the staging bucket instead  ")
	if err != nil {
		t.Fatal(err)
	}
	if d.Verdict != VerdictReply || d.Note != "Use the staging bucket instead" || d.Signed() != proof.ReplyDecision("Use the staging bucket instead") {
		t.Fatalf("ParseVerdict = %+v signed %q, want the reply trimmed and signed as its hash", d, d.Signed())
	}
	if signed, err := ParseVerdict(call, Verdict(d.Signed()), d.Note); err != nil || signed.Verdict != VerdictReply {
		t.Errorf("the signed form with its own words = %+v, %v; want the reply", signed, err)
	}
	for name, tc := range map[string]struct {
		a     *Approval
		v     Verdict
		text  string
		field string
	}{
		"no words":                {call, VerdictReply, "   ", "reply"},
		"too many words":          {call, VerdictReply, strings.Repeat("x", NoteLimit+1), "reply"},
		"another kind":            {&Approval{ID: "appr_pr", Kind: ask.KindPullRequest}, VerdictReply, "no", "decision"},
		"signed with other words": {call, Verdict(proof.ReplyDecision("Use production")), "Use staging", "reply"},
	} {
		if _, err := ParseVerdict(tc.a, tc.v, tc.text); core.CodeOf(err) != core.InvalidArgument || core.FieldOf(err) != tc.field {
			t.Errorf("%s: %v, want INVALID_ARGUMENT naming %s", name, err, tc.field)
		}
	}
}
