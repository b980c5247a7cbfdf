package views

import (
	"encoding/hex"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/countersign/countersign/ask"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/asks"
)

// NeedsCheckCode says whether approving the ask asks the person for its
// check code first (ask.NeedsCheckCode): a roll, a tool call, a run with
// effect remote or production.
func (a Ask) NeedsCheckCode() bool {
	return ask.NeedsCheckCode(a.Kind, a.Payload.Canonical)
}

// CheckCodeWhere says who shows the check code and where, for the line
// above the codes: the agent by its verified name (the requester, never its
// label), and the place it named in check_code_shown_in ("in this chat"),
// or "where it runs".
func (a Ask) CheckCodeWhere() (who, where string) {
	place := a.CheckCodeShownIn
	switch lower := strings.ToLower(place); {
	case place == "":
		return a.Requester, "where it runs"
	case strings.HasPrefix(lower, "in ") || strings.HasPrefix(lower, "on ") || strings.HasPrefix(lower, "at "):
		return a.Requester, place
	}
	return a.Requester, "in " + place
}

// CheckCodeChoices are the three codes the page offers to approve one of
// the riskiest asks: its check code and two distinct decoys, taken from
// further bytes of the hash so that a reload shows the same three in the
// same order, the right one at a place the hash picks. Nil when the hash
// does not read.
func CheckCodeChoices(payloadSHA256 string) []string {
	right := ask.CheckCode(payloadSHA256)
	sum, err := hex.DecodeString(payloadSHA256)
	if right == "" || err != nil {
		return nil
	}
	codes := []string{right}
	for i := 2; i+1 < len(sum) && len(codes) < 3; i += 2 {
		c := fmt.Sprintf("%02d", (uint16(sum[i])<<8|uint16(sum[i+1]))%100)
		if c != codes[0] && (len(codes) < 2 || c != codes[1]) {
			codes = append(codes, c)
		}
	}
	for n := 0; len(codes) < 3; n++ { // a hash whose pairs all repeat: count on
		c := fmt.Sprintf("%02d", n)
		if c != codes[0] && (len(codes) < 2 || c != codes[1]) {
			codes = append(codes, c)
		}
	}
	at := int(sum[31]) % 3
	codes[0], codes[at] = codes[at], codes[0]
	return codes
}

// Danger is the badge of an ask whose approval reaches production or is
// high risk, "" for others: a production effect or a roll reads
// "production"; a run with a remote effect or a high risk "high risk".
func (a Ask) Danger() string {
	x := a.Context.Explanation
	switch {
	case a.Payload.Roll != nil,
		a.Payload.Run != nil && (a.Payload.Run.Effect == "production" || a.Payload.Run.Roll != nil),
		x != nil && x.Effect != nil && x.Effect.Kind == "production":
		return "production"
	case a.Payload.Run != nil && a.Payload.Run.Effect == "remote",
		x != nil && x.Risk != nil && x.Risk.Level == "high":
		return "high risk"
	}
	return ""
}

// Who names who asks: the agent, and where it asks from (see whoAsks).
func (a Ask) Who() (agent, from string) { return whoAsks(a.Kind, a.AgentLabel, a.Requester) }

// whoAsks names who asks: the agent, and where it asks from, a session
// ("Session: fixing login") or a device ("Device: ada's laptop"): these are
// labels, never the requester. The identity its token proves comes first;
// an approvals_create label is only what the agent calls itself
// ("agent:deploy-bot · calls itself gate: filesystem"). A rule change is
// the person's own proposal, filed for them by the Rules page.
func whoAsks(kind, label, requester string) (agent, from string) {
	switch {
	case kind == ask.KindRuleChange && label != "":
		return label + ", on the Rules page", ""
	case label == "" || label == requester || "agent:"+label == requester:
		return requester, ""
	case slices.Contains(ask.RequestKinds, kind):
		return requester, "Session: " + label
	case kind == ask.KindAutoApprove:
		return requester, "Device: " + label
	}
	return requester, "calls itself " + label
}

// ApproveVerb is the approve button's words: the verb of the kind and what
// it acts on ("Approve roll", "Allow write_file", "Run migrate.sh"), so
// that the button says what the signature approves.
func (a Ask) ApproveVerb() string {
	p := a.Payload
	switch {
	case p.PullRequest != nil:
		return "Approve merge"
	case p.Roll != nil:
		return "Approve roll"
	case p.ToolCall != nil:
		return "Allow " + p.ToolCall.Tool
	case p.Run != nil && len(p.Run.Argv) > 0:
		return "Run " + path.Base(p.Run.Argv[0])
	case p.Review != nil:
		return "Approve review"
	case p.Document != nil:
		return "Approve document"
	case p.AutoApprove != nil:
		return "Turn on auto-approve"
	case p.RuleChange != nil:
		return "Approve rule change"
	case a.Request != nil && a.Request.Move != nil:
		return "Approve move"
	case a.Request != nil:
		return "Approve proposal"
	}
	return "Approve"
}

// Heading is the ask's title as its page shows it: the agent's own, but a
// rule change reads as words from the rule's name ("Remove the rule 'a
// roll needs two people'"), not as the rule's id.
func (a Ask) Heading() string {
	rc := a.Payload.RuleChange
	if rc == nil {
		return a.Title
	}
	name := a.RuleName
	if name == "" && rc.Rule != nil {
		name = rc.Rule.Name
	}
	if name == "" {
		name = rc.RuleID
	}
	if rc.Action == models.RuleChangeRemove {
		return "Remove the rule '" + name + "'"
	}
	if a.RuleName == "" {
		return "Add the rule '" + name + "'"
	}
	return "Change the rule '" + name + "'"
}

// MayBlock says whether the page offers "Not mine": an agent filed the ask.
// A rule change is a person's own proposal; there is no agent to block.
func (a Ask) MayBlock() bool { return a.Kind != ask.KindRuleChange }

// IfApprove says what approving (or answering) does, in words: the
// agent's own when it gave them, the service's for the asks whose agent
// gives none.
func (a Ask) IfApprove() string {
	if a.ApproveMeans != "" {
		return a.ApproveMeans
	}
	switch {
	case a.Asks():
		return "Your answer goes back to the agent."
	case a.Request != nil && a.Request.Move != nil:
		return "The item moves at once; nothing moves if it is denied or expires."
	case a.Request != nil:
		return "Your decision is recorded; nothing executes."
	}
	return "The agent is told you approved, and goes ahead."
}

// IfDeny says what denying does, in words, as IfApprove does.
func (a Ask) IfDeny() string {
	if a.DenyMeans != "" {
		return a.DenyMeans
	}
	switch {
	case a.Asks():
		return "The agent is told you declined to answer; nothing executes."
	case a.Request != nil && a.Request.Move != nil:
		return "The item stays where it is; nothing executes."
	case a.Request != nil:
		return "Your refusal is recorded; nothing executes."
	}
	return "The agent is told you denied it, and does not go ahead."
}

// ApproveLabel is how the page names the answer that approves: "If you
// answer" on a question, where there is no Approve button.
func (a Ask) ApproveLabel() string {
	if a.Asks() {
		return "If you answer"
	}
	if len(a.Options()) > 0 {
		return "If you pick an option"
	}
	return "If you approve"
}

// Exchange is the person's last question and the agent's answer to it,
// shown above the answer once the ask waits for the person again; both ""
// when there is none.
func (a Ask) Exchange() (question, answer string) {
	if a.Status != string(asks.StatusPending) {
		return "", ""
	}
	for _, e := range a.Timeline {
		switch e.Step {
		case string(asks.EventQuestion):
			question, answer = e.Note, ""
		case string(asks.EventAnswered):
			answer = e.Note
		}
	}
	if question == "" || answer == "" {
		return "", ""
	}
	return question, answer
}

// evidenceLabel names a block of evidence for a screen reader: its kind and title or path.
func evidenceLabel(ev Evidence) string {
	name := ev.Title
	if name == "" {
		name = ev.Path
	}
	if name == "" {
		return ev.Kind
	}
	return ev.Kind + ": " + name
}

// YourApprovalIn says the viewer's approval is in on an ask that still
// waits for others: the page then says so in place of the answers and of
// what approving would do.
func (a Ask) YourApprovalIn() bool {
	return a.Quorum != nil && a.Quorum.You != nil && a.Quorum.You.Approved && a.Status == string(asks.StatusPending)
}

// NotMineText says what "Not mine" does: it denies this ask, blocks the
// agent, and cancels its other open asks, counted.
func (a Ask) NotMineText() string {
	s := "This denies the ask and blocks " + a.Requester + ": its token stops working"
	if others := a.OpenAsksOfAgent - 1; others > 0 {
		s += " and " + plural(others, "other open ask", "other open asks") + " of it are cancelled"
	}
	return s + "."
}

// lowerFirst lowers the first letter: "Approve roll" reads "approve roll"
// inside a sentence.
func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}
