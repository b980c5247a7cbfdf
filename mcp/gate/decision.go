package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"
	"unicode"
)

// ApprovalRequest is what a sink is asked: who is calling, which tool, its
// audit label and arguments, and the moment after which an answer changes
// nothing.
type ApprovalRequest struct {
	Server    string          // the server's name, as the gate was told it
	Caller    string          // who is calling
	Tool      string          // the tool called
	Label     string          // the tool's audit label for these arguments
	Arguments json.RawMessage // the arguments exactly as the caller sent them
	Deadline  time.Time       // an answer after it is a refusal
	// ShownIn is where the gate shows the caller the ask's check code: the
	// caller's host by its name, or "this chat"; the sink tells the person
	// (check_code_shown_in). "" says nothing.
	ShownIn string
	// Filed, when set, is told the ask once the sink has filed it, so that
	// the gate shows the caller its check code and page while the call
	// waits. A sink that files no ask does not call it.
	Filed func(Ticket)
}

// ApprovalFunc is a sink: it asks somebody whether one call should happen
// and returns their decision. An error, a context that ends or a return after
// the request's Deadline is a refusal.
type ApprovalFunc func(ctx context.Context, req ApprovalRequest) (Decision, error)

// Decision is a sink's answer. Its fields are unexported so that a yes can
// only be made with Approve, which takes the approver's name: an approval
// nobody's name is on does not compile. The zero Decision is a refusal.
type Decision struct {
	approved bool
	by       string
	reason   string
	reply    string // a no that answers in place of the tool (Reply)
	proof    json.RawMessage
	tracker  Tracker
}

// Approve is a yes from the person named by, who is the approver on the
// audit event. An empty or blank by is still refused when the gate reads it.
func Approve(by string) Decision { return Decision{approved: true, by: by} }

// Deny is a no, with the person who declined (empty when nobody did, say a
// ticket was filed instead) and why.
func Deny(by, reason string) Decision { return Decision{by: by, reason: reason} }

// Reply is a no from the person named by, who answers the caller in place
// of the tool: the gate returns text as the call's result, not as an error
// ("use the staging bucket instead").
func Reply(by, text string) Decision { return Decision{by: by, reason: text, reply: text} }

// WithProof returns d carrying proof of the answer (Countersign's signed
// assertion, say), for the caller's and the auditor's records.
func (d Decision) WithProof(proof json.RawMessage) Decision {
	d.proof = bytes.Clone(proof)
	return d
}

// WithTracker returns d with a tracker the gate tells, after an approval,
// that the call starts and how it ended.
func (d Decision) WithTracker(t Tracker) Decision {
	d.tracker = t
	return d
}

// Approved says whether d is a yes (which the gate still refuses without a name).
func (d Decision) Approved() bool { return d.approved }

// By is the person who approved or declined, or "".
func (d Decision) By() string { return d.by }

// Reason is why a person declined, or "".
func (d Decision) Reason() string { return d.reason }

// Proof is the proof the sink attached, or nil.
func (d Decision) Proof() json.RawMessage { return d.proof }

// decisionJSON is how a decision reads as JSON: the shape a chat tool's
// reply or an untyped adapter hands back.
type decisionJSON struct {
	Approved bool            `json:"approved"`
	By       string          `json:"by,omitempty"`
	Reason   string          `json:"reason,omitempty"`
	Proof    json.RawMessage `json:"proof,omitempty"`
}

// UnmarshalJSON reads {"approved": …, "by": …, "reason": …, "proof": …}.
// A yes without "by" decodes, and is refused by the gate at run time.
func (d *Decision) UnmarshalJSON(b []byte) error {
	var v decisionJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("decode approval decision: %w", err)
	}
	*d = Decision{approved: v.Approved, by: v.By, reason: v.Reason, proof: v.Proof}
	return nil
}

// MarshalJSON writes the decision in the shape UnmarshalJSON reads.
func (d Decision) MarshalJSON() ([]byte, error) {
	return json.Marshal(decisionJSON{Approved: d.approved, By: d.by, Reason: d.reason, Proof: d.proof})
}

// named says whether the approval names somebody: by holds a character one
// can see, not only white space or invisible ones (a zero-width space).
func (d Decision) named() bool {
	for _, r := range d.by {
		if unicode.IsGraphic(r) && !unicode.IsSpace(r) {
			return true
		}
	}
	return false
}

// Tracker is told, after an approval, that the approved call starts and how
// it ended, so the approver can see whether it ran. Started returning an
// error stops the call: it is refused and never runs.
type Tracker interface {
	Started(ctx context.Context) error
	Finished(ctx context.Context, callErr error)
}

// The refusal reasons the audit log and an ApprovalRefusedError carry.
const (
	ReasonDenied            = "denied"
	ReasonTimeout           = "timeout"
	ReasonSinkError         = "sink_error"
	ReasonAnonymous         = "anonymous_approval"
	ReasonLate              = "late_answer"
	ReasonCancelled         = "cancelled"
	ReasonStartRefused      = "start_refused"
	ReasonPermissionDenied  = "permission_denied"
	ReasonInvalidArguments  = "invalid_arguments"
	ReasonToolError         = "tool_error"
	refusalReasonForCallers = "approval_refused"
)

// ApprovalRefusedError is the refusal of a call that needed approval: the
// tool, the person who declined when there was one, and why. The refusal
// result a caller reads carries it (CallToolResult.GetError), so server
// middleware can find it with errors.As.
type ApprovalRefusedError struct {
	Tool   string // the tool refused
	By     string // the person who declined, or "" (silence, an error, no name)
	Reason string // one of the Reason constants
	Detail string // the person's reason or the error text, or ""
	// Reply is the person's answer in place of the tool's result, on a no
	// given with one: the call's caller gets it as the result's text.
	Reply string
}

func (e *ApprovalRefusedError) Error() string {
	msg := "approval refused for " + e.Tool + ": " + e.Reason
	if e.By != "" {
		msg += " by " + e.By
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// auditReason is the reason member of the audit event of this refusal.
func (e *ApprovalRefusedError) auditReason() string {
	if e.Detail == "" {
		return e.Reason
	}
	return e.Reason + ": " + e.Detail
}
