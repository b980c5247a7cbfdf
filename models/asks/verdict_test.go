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

// An approve for a while signs the window of the ask's own agent, kind and
// target, for a length from the menu; it is refused on an ask a policy may
// never cover or a rule covers, for another window, and against a signed
// decision of another window.
func TestAnApproveForSignsTheWindowOfItsAsk(t *testing.T) {
	call := &Approval{ID: "appr_call", Kind: ask.KindToolCall, RequesterSubject: "agent:bot",
		Payload: `{"tool_call":{"arguments":{"path":"/tmp/a"},"server":"filesystem","tool":"write_file"}}`}
	w, err := WindowOf(call, 30)
	if err != nil {
		t.Fatal(err)
	}
	want := ask.Window{Agent: "agent:bot", Kind: ask.KindToolCall, Minutes: 30, Target: ask.Target{Server: "filesystem", Tool: "write_file"}}
	if w != want {
		t.Fatalf("WindowOf = %+v, want %+v", w, want)
	}
	d, err := ParseVerdict(call, VerdictApproveFor, w.JSON())
	if err != nil {
		t.Fatal(err)
	}
	if d.Verdict != VerdictApproveFor || d.Window != w.JSON() || d.Note != "" || d.Signed() != proof.WindowDecision(w.JSON()) {
		t.Fatalf("ParseVerdict = %+v signed %q, want the window signed as its hash", d, d.Signed())
	}
	if signed, err := ParseVerdict(call, Verdict(d.Signed()), w.JSON()); err != nil || signed.Verdict != VerdictApproveFor || signed.Window != w.JSON() {
		t.Errorf("the signed form with its own window = %+v, %v; want the window", signed, err)
	}

	other := want
	other.Target.Tool = "delete_file"
	otherAgent := want
	otherAgent.Agent = "agent:other"
	long := want
	long.Minutes = 45
	pr := &Approval{ID: "appr_pr", Kind: ask.KindPullRequest, RequesterSubject: "agent:bot", Payload: `{"pull_request":{"head":"abcdef1","number":1,"repo":"a/b","title":"t"}}`}
	ruled := *call
	requirement := `{"rule_id":"r1","count":2}`
	ruled.Requirement = &requirement
	for name, tc := range map[string]struct {
		a     *Approval
		v     Verdict
		text  string
		field string
	}{
		"another tool":               {call, VerdictApproveFor, other.JSON(), "approve_for"},
		"another agent":              {call, VerdictApproveFor, otherAgent.JSON(), "approve_for"},
		"a length not on the menu":   {call, VerdictApproveFor, long.JSON(), "minutes"},
		"not a window":               {call, VerdictApproveFor, "30", "approve_for"},
		"a pull request":             {pr, VerdictApproveFor, want.JSON(), "decision"},
		"an ask a rule covers":       {&ruled, VerdictApproveFor, want.JSON(), "decision"},
		"signed with another window": {call, Verdict(proof.WindowDecision(other.JSON())), w.JSON(), "approve_for"},
		"signed with another length": {call, Verdict(proof.WindowDecision(w.JSON())), func() string { x := want; x.Minutes = 60; return x.JSON() }(), "approve_for"},
	} {
		if _, err := ParseVerdict(tc.a, tc.v, tc.text); core.CodeOf(err) != core.InvalidArgument || core.FieldOf(err) != tc.field {
			t.Errorf("%s: %v, want INVALID_ARGUMENT naming %s", name, err, tc.field)
		}
	}
}
