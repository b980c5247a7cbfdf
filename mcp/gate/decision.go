package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/google/jsonschema-go/jsonschema"
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
	// Editable names the arguments the person may change before they
	// approve (the tool's declaration); a yes may then carry the arguments
	// as they edited them (Decision.WithArguments).
	Editable []string
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
	edited   json.RawMessage // the arguments as the approver edited them; nil: as called
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

// WithArguments returns the yes d for the call with args: the arguments as
// the approver edited them. The gate runs the call with them only when they
// differ from the caller's in the tool's editable arguments alone, and
// still meet its input schema; otherwise it refuses the call.
func (d Decision) WithArguments(args json.RawMessage) Decision {
	d.edited = bytes.Clone(args)
	return d
}

// Arguments are the arguments the approver edited, or nil.
func (d Decision) Arguments() json.RawMessage { return d.edited }

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
	ReasonEditRefused       = "edit_refused"
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

// checkEdit refuses a yes whose edited arguments change more than the
// tool's editable arguments, or no longer meet its input schema (when the
// gate knows it): the approver may change what the tool lets them, and
// nothing else, whatever the sink says. A yes with the arguments as called
// passes.
func checkEdit(t *governed, called json.RawMessage, d Decision, input *jsonschema.Resolved) *ApprovalRefusedError {
	if d.edited == nil {
		return nil
	}
	refuse := func(format string, args ...any) *ApprovalRefusedError {
		return &ApprovalRefusedError{Tool: t.name, By: d.by, Reason: ReasonEditRefused, Detail: fmt.Sprintf(format, args...)}
	}
	var before, after map[string]any
	if len(bytes.TrimSpace(called)) > 0 {
		if err := json.Unmarshal(called, &before); err != nil {
			return refuse("the call's arguments are not an object")
		}
	}
	if err := json.Unmarshal(d.edited, &after); err != nil || after == nil {
		return refuse("the edited arguments are not an object")
	}
	for _, name := range unionKeys(before, after) {
		b, inB := before[name]
		a, inA := after[name]
		if inB == inA && reflect.DeepEqual(a, b) {
			continue
		}
		if !slices.Contains(t.editable, name) {
			return refuse("argument %q changed, but %s lets a person edit only %s", name, t.name, editableNames(t.editable))
		}
	}
	if input != nil {
		if err := input.Validate(after); err != nil {
			return refuse("the edited arguments do not meet %s's input schema: %v", t.name, err)
		}
	}
	return nil
}

func unionKeys(a, b map[string]any) []string {
	var out []string
	for k := range a {
		out = append(out, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func editableNames(names []string) string {
	if len(names) == 0 {
		return "none of its arguments"
	}
	return strings.Join(names, ", ")
}
