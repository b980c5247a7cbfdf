package asks

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/countersign/countersign/ask"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/proof"
)

// Verdict is a person's answer to an ask: the word the state machine records.
type Verdict string

// The verdict vocabulary, declared here once. An option is
// "option:<index>"; a question's signed form is "question:<sha256 of its
// text>" (see Decision.Signed). A request's question is answered with
// "choice:<index>" of its choices, or with free text, signed as
// "answer:<lower-case hex sha256 of the text>". A tool_call ask may be
// denied with a reply the gate returns in place of the tool's result, signed
// as "reply:<sha256 of the reply>". An ask that marks members editable may
// be approved as the person edited it, signed as "approve_edited:<sha256 of
// the edited payload>". An ask a policy may cover may be approved "and the
// same for a while": the window of its agent, kind and target is signed as
// "approve_for:<sha256 of the window's JSON>", and the ask is recorded as
// approved. A new way to answer is added here, and only here: ParseVerdict
// reads it, Decide records it.
const (
	VerdictApprove  Verdict = "approve"
	VerdictDeny     Verdict = "deny"
	VerdictNotMine  Verdict = "not_mine"
	VerdictQuestion Verdict = "question"
	VerdictAnswer   Verdict = "answer" // a free-text answer, before its text is hashed
	VerdictReply    Verdict = "reply"  // a deny with a reply in place of the tool's result
	// VerdictApproveEdited approves the payload as the person edited it,
	// signed as "approve_edited:<sha256 of the edited payload>".
	VerdictApproveEdited Verdict = "approve_edited"
	// VerdictApproveFor is an approve that also opens a window, before the
	// window is hashed; the ask records it as approve.
	VerdictApproveFor Verdict = "approve_for"
	optionPrefix              = "option:"
	choicePrefix              = "choice:"
	answerPrefix              = "answer:"
	replyPrefix               = "reply:"
	editedPrefix              = "approve_edited:"
	approveForPrefix          = "approve_for:"
)

// AnswerVerdict is the signed verdict of a free-text answer.
func AnswerVerdict(text string) Verdict { return Verdict(proof.AnswerDecision(text)) }

// Option reads the index of an "option:<index>" verdict; ok is false for
// any other verdict, or an index that does not read.
func (v Verdict) Option() (index int, ok bool) { return v.index(optionPrefix) }

// Choice reads the index of a "choice:<index>" verdict; ok is false for any
// other verdict, or an index that does not read.
func (v Verdict) Choice() (index int, ok bool) { return v.index(choicePrefix) }

// IsAnswer says whether v is the signed verdict of a free-text answer.
func (v Verdict) IsAnswer() bool { return strings.HasPrefix(string(v), answerPrefix) }

// index reads the index after prefix, when v starts with it.
func (v Verdict) index(prefix string) (int, bool) {
	rest, found := strings.CutPrefix(string(v), prefix)
	if !found {
		return 0, false
	}
	return parseIndex(rest)
}

// Decision is a person's answer, with the proof that they gave it.
type Decision struct {
	Verdict Verdict // approve, deny, not_mine, question, reply, approve_for, option:<index>, choice:<index> or answer:<sha256>
	Note    string  // the question's or reply's text; the chosen option's or choice's text; the answer's text; optional otherwise
	// Window is, for approve_for, the window's JSON (ask.Window) the signed
	// decision hashes: the asks approved ahead, and for how long.
	Window string
	// The signature, already verified by the caller: the nonce it covered is
	// spent and the passkey's counter moves in the decision's transaction.
	Proof        []byte // the proof, kept whole (JSON)
	Nonce        []byte
	CredentialID string
	SignCount    uint32
	Credential   string // the passkey's updated credential record
	// PushLink is the id of the one-time push link the decision was made
	// with, "" for one made in a session: it is spent in the same transaction.
	PushLink string
	// KeyUsed says the passkey's counter already moved in this transaction,
	// for an earlier ask of the same batch: one assertion moves it once.
	KeyUsed bool
	// Edited is the payload as the person edited it (RFC 8785 bytes), on
	// approve_edited: its hash is in the signed decision.
	Edited []byte
}

// WhyNotBatched says why the ask is answered one by one and not in a batch
// (one passkey prompt over a list of asks), or "" when it may be batched.
func WhyNotBatched(a *Approval) string {
	switch {
	case a.Status != StatusPending:
		return "it is not pending"
	case a.Requirement != nil:
		return "it needs more than one person"
	case a.OffersEdits():
		return "you may edit it before you sign"
	case ask.NeedsCheckCode(a.Kind, a.Payload):
		return "it needs the agent's check code"
	case a.Kind == ask.KindDecision || a.IsRequest():
		return "it asks you to pick an answer"
	case a.Kind == ask.KindAutoApprove || a.Kind == ask.KindRuleChange || a.Kind == ask.KindMemberChange:
		return "it changes a policy, a rule or who decides"
	case a.Kind == ask.KindAuthorization:
		return "it authorizes a client to act for you"
	}
	return ""
}

// Signed is the decision string a signature over this decision covers.
func (d Decision) Signed() string {
	switch d.Verdict {
	case VerdictQuestion:
		return proof.QuestionDecision(d.Note)
	case VerdictReply:
		return proof.ReplyDecision(d.Note)
	case VerdictApproveEdited:
		sum := sha256.Sum256(d.Edited)
		return proof.EditedDecision(hex.EncodeToString(sum[:]))
	case VerdictApproveFor:
		return proof.WindowDecision(d.Window)
	}
	return string(d.Verdict)
}

// WindowOf is the window a person opens by approving a "and the same for
// minutes": the asks a's agent files of a's kind about a's target. It is
// refused for a length not on the menu, on an ask no policy may cover, and
// on one an approval rule covers (a policy is none of the rule's people).
func WindowOf(a *Approval, minutes int) (ask.Window, error) {
	if err := ask.CheckWindowMinutes(minutes); err != nil {
		return ask.Window{}, err
	}
	target, ok := ask.TargetOf(a.Kind, a.Payload)
	switch {
	case !ok || !a.PolicyMayCover():
		return ask.Window{}, core.Invalid("decision", "a %s ask like approval %s always asks a person: it is approved alone, not for a while", a.Kind, a.ID)
	case a.Requirement != nil:
		return ask.Window{}, core.Invalid("decision", "an approval rule covers approval %s, and a policy is none of its people: it is approved alone, not for a while", a.ID)
	}
	return ask.Window{Agent: a.RequesterSubject, Kind: a.Kind, Minutes: minutes, Target: target}, nil
}

// ParseVerdict reads what a person chose on ask a into the Decision it
// records: approve (not on a decision ask, which is approved by picking an
// option), deny, not_mine, question with its text, or option:<index> of a
// decision ask, whose Note becomes the option's text, or approve_for with
// the window of this ask (WindowOf) as its JSON. text is the question, the
// answer, the reply or the window's JSON, or an optional note for the
// others. Both the decision service and Decide check a choice here, so that
// the two never disagree.
func ParseVerdict(a *Approval, choice Verdict, text string) (Decision, error) {
	d := Decision{Verdict: choice, Note: text}
	var question *ask.Question
	if r := a.Request(); r != nil {
		question = r.Question
	}
	switch {
	case choice == VerdictApprove:
		if a.Kind == ask.KindDecision {
			return d, core.Invalid("decision", "a decision ask is approved by picking one of its options")
		}
		if question != nil {
			return d, core.Invalid("decision", "a question is answered: pick one of its choices or write an answer")
		}
	case strings.HasPrefix(string(choice), choicePrefix):
		idx, ok := choice.Choice()
		if question == nil || question.Free() || !ok || idx >= len(question.Choices) || !proof.ValidDecision(string(choice)) {
			return d, core.Invalid("decision", "%q is not a choice of approval %s", choice, a.ID)
		}
		d.Note = question.Choices[idx]
	case choice == VerdictAnswer || choice.IsAnswer():
		if question == nil || !question.Free() {
			return d, core.Invalid("decision", "approval %s asks no free-text question", a.ID)
		}
		if strings.TrimSpace(text) == "" {
			return d, core.Invalid("answer", "write your answer")
		}
		d.Verdict = AnswerVerdict(text)
		if choice != VerdictAnswer && choice != d.Verdict {
			return d, core.Invalid("answer", "the answer's text does not hash to the signed decision %q", choice)
		}
	case choice == VerdictApproveEdited || strings.HasPrefix(string(choice), editedPrefix):
		if !a.OffersEdits() {
			return d, core.Invalid("decision", "approval %s marks no member editable: approve or deny it as filed", a.ID)
		}
		if a.Requirement != nil {
			return d, core.Invalid("decision", "approval %s needs more than one person, who each sign the payload as filed: it cannot be edited", a.ID)
		}
		d.Verdict = VerdictApproveEdited
	case choice == VerdictDeny, choice == VerdictNotMine:
	case choice == VerdictReply || strings.HasPrefix(string(choice), replyPrefix):
		if a.Kind != ask.KindToolCall {
			return d, core.Invalid("decision", "only a tool_call ask is denied with a reply in place of the tool's result")
		}
		d.Verdict, d.Note = VerdictReply, strings.TrimSpace(text)
		if d.Note == "" {
			return d, core.Invalid("reply", "write the reply the tool's caller gets in place of its result")
		}
		if choice != VerdictReply && string(choice) != d.Signed() {
			return d, core.Invalid("reply", "the reply's text does not hash to the signed decision %q", choice)
		}
	case choice == VerdictApproveFor || strings.HasPrefix(string(choice), approveForPrefix):
		w, err := ask.ReadWindow(text)
		if err != nil {
			return d, err
		}
		want, err := WindowOf(a, w.Minutes)
		if err != nil {
			return d, err
		}
		if w != want {
			return d, core.Invalid("approve_for", "the window is not approval %s's: it covers the asks of its agent %s, of kind %s, about its target", a.ID, a.RequesterSubject, a.Kind)
		}
		d.Verdict, d.Window, d.Note = VerdictApproveFor, text, ""
		if choice != VerdictApproveFor && string(choice) != d.Signed() {
			return d, core.Invalid("approve_for", "the window does not hash to the signed decision %q", choice)
		}
	case choice == VerdictQuestion:
		d.Note = strings.TrimSpace(text)
		if d.Note == "" {
			return d, core.Invalid("question", "write the question you want the agent to answer")
		}
	case strings.HasPrefix(string(choice), optionPrefix):
		opts := a.DecisionOptions()
		idx, ok := choice.Option()
		if a.Kind != ask.KindDecision || !ok || idx >= len(opts) || !proof.ValidDecision(string(choice)) {
			return d, core.Invalid("decision", "%q is not an option of approval %s", choice, a.ID)
		}
		d.Note = opts[idx]
	default:
		return d, core.Invalid("decision", "must be approve, approve_edited, deny, not_mine, question, reply, approve_for, option:<index>, choice:<index> or answer, not %q", choice)
	}
	if n := core.RuneCount(d.Note); n > NoteLimit {
		field := "note"
		switch {
		case choice == VerdictQuestion:
			field = "question"
		case d.Verdict.IsAnswer():
			field = "answer"
		case d.Verdict == VerdictReply:
			field = "reply"
		}
		return d, core.Invalid(field, "at most %d characters (got %d)", NoteLimit, n)
	}
	return d, nil
}

// parseIndex reads an option index: one or two decimal digits.
func parseIndex(s string) (int, bool) {
	if s == "" || len(s) > 2 {
		return 0, false
	}
	n := 0
	for _, r := range s {
		if r < '0' || r > '9' {
			return 0, false
		}
		n = n*10 + int(r-'0')
	}
	return n, true
}
