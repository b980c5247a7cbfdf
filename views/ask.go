package views

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"

	"github.com/countersign/countersign/ask"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/asks"
)

// Ask is one ask as its page shows it. Every string in it came from an agent
// or a person and is rendered as escaped text.
type Ask struct {
	ID            string
	Kind          string
	Title         string
	Summary       string
	ApproveMeans  string
	DenyMeans     string
	PayloadSHA256 string
	Payload       Payload
	Context       Context
	Links         []string
	AgentLabel    string // the label the requester gave itself: never an identity
	// CheckCodeShownIn is where the requester says it shows the check code
	// ("this chat"), "" when it did not say: its word, never an identity.
	CheckCodeShownIn string
	Requester        string // the subject of the agent whose token filed it
	AskedOf          string // a person's subject, or "" for the owners and admins
	Status           string
	Decision         string // approve, deny, not_mine or option:<index>
	DecidedBy        string
	DecidedAt        *time.Time
	Note             string
	HasProof         bool
	Supersedes       string
	SupersededBy     string
	CreatedAt        time.Time
	ExpiresAt        time.Time
	Timeline         []Event
	CanDecide        bool // pending, alive and the viewer may decide it
	Now              time.Time
	RunnerName       string   // the enrolled name of the runner a pinned run names
	Request          *Request // set on an ask filed with approval_request
	// ViaLink is the path of the ask under a one-time push link, set when
	// the page was opened with one and no session: its answers post there,
	// and it opens no live timeline (that needs a session).
	ViaLink string
	// Quorum is set on an ask an approval rule covers: the rule, who
	// signed, who may still sign.
	Quorum *Quorum
	// RuleName is, on a rule change, the name of the rule it changes as
	// the account has it now; "" for a rule it adds.
	RuleName string
	// OpenAsksOfAgent is how many open asks the requesting agent has, this
	// one among them: what "Not mine" cancels.
	OpenAsksOfAgent int
	// Editable are the members the person may change before they approve;
	// EditsMade, on an ask approved with changes, what they changed.
	Editable  []EditField
	EditsMade []EditMade
	// Window is "Approve, and the same for…", set when the viewer may
	// decide the ask and a window may cover it.
	Window *WindowChoice
}

// Request is what the page says of an ask filed with approval_request: its
// proposal in words, the question it asks, and what its command did.
type Request struct {
	Description string
	TargetType  string
	TargetID    string
	Mode        string        // advisory or command
	Move        *Move         // the work_move command; nil on an advisory proposal
	Question    *ask.Question // nil unless the request asks a question
	Outcome     *Executed     // what the command did, once it was approved
}

// Move is a work_move in the board's words: the item's title and the names
// of the column it is in and of the one it would move to. A name or title
// the board no longer has is shown as its id or key.
type Move struct {
	ItemID   string
	Item     string
	From     string // "" when the item is gone
	To       string
	Executed bool // the item is already in To, moved by this request
}

// Executed is what a request's command did once it was approved.
type Executed struct {
	Done   bool
	Result string
}

// FreeText says whether the request asks a question answered in words.
func (r *Request) FreeText() bool { return r.Question != nil && r.Question.Free() }

// Event is one line of an ask's timeline.
type Event struct {
	Seq   int64
	At    time.Time
	Actor string // who: a subject
	By    string // what kind of actor: agent, person, system, admin, policy or runner
	Step  string
	From  string
	To    string
	Note  string
	// RunnerSigned: a runner's report carrying its signature.
	RunnerSigned bool
}

// ShortHash is the first 12 characters of the payload hash, how people quote it.
func (a Ask) ShortHash() string {
	if len(a.PayloadSHA256) > 12 {
		return a.PayloadSHA256[:12]
	}
	return a.PayloadSHA256
}

// LastSeq is the seq of the newest timeline event shown, where the live view resumes.
func (a Ask) LastSeq() int64 {
	if len(a.Timeline) == 0 {
		return 0
	}
	return a.Timeline[len(a.Timeline)-1].Seq
}

// Open says whether the ask still waits for a person or its agent.
func (a Ask) Open() bool { return asks.Status(a.Status).Open() }

// Closed says whether nothing more happens to the ask.
func (a Ask) Closed() bool { return slices.Contains(asks.ClosedStatuses, asks.Status(a.Status)) }

// Settled says the ask is closed and its timeline already shows the event
// that closed it, so its page needs no live timeline. The page reads the
// timeline before the ask: a closed ask's last events may be yet to come.
func (a Ask) Settled() bool {
	if !a.Closed() {
		return false
	}
	for i := len(a.Timeline) - 1; i >= 0; i-- {
		if to := a.Timeline[i].To; to != "" {
			return to == a.Status
		}
	}
	return false
}

// Choices are the choices of a request's question, in order.
func (a Ask) Choices() []string {
	if a.Request == nil || a.Request.Question == nil {
		return nil
	}
	return a.Request.Question.Choices
}

// Asks says whether the ask is a request's question, answered with a choice or words.
func (a Ask) Asks() bool { return a.Request != nil && a.Request.Question != nil }

// Options are the answers of a decision ask, in order.
func (a Ask) Options() []string {
	if a.Payload.Decision == nil {
		return nil
	}
	return a.Payload.Decision.Options
}

// DecisionText says in words what the person decided.
// MayReply says whether the person may deny the ask with a reply that the
// gate returns in place of the tool's result: a tool_call, with no approval
// rule (a rule's signatures approve or deny).
func (a Ask) MayReply() bool {
	return a.CanDecide && a.Kind == ask.KindToolCall && a.Quorum == nil
}

func (a Ask) DecisionText() string {
	v := asks.Verdict(a.Decision)
	switch {
	case v == asks.VerdictApprove:
		return "Approved"
	case v == asks.VerdictDeny:
		return "Denied"
	case v == asks.VerdictNotMine:
		return "Denied as not mine: the requesting agent was blocked"
	case v == asks.VerdictReply:
		return "Denied with a reply, which the agent gets in place of the tool's result"
	case v == asks.VerdictApproveEdited:
		return "Approved with changes: the signature covers the ask as changed, beside the hash of what was asked"
	case v.IsAnswer():
		return "Answered in words (signed as the SHA-256 of the text)"
	}
	if i, ok := v.Option(); ok {
		if opts := a.Options(); i < len(opts) {
			return fmt.Sprintf("Chose option %d: %s", i+1, opts[i])
		}
		return "Chose " + a.Decision
	}
	if i, ok := v.Choice(); ok {
		if c := a.Choices(); i < len(c) {
			return fmt.Sprintf("Answered with choice %d: %s", i+1, c[i])
		}
		return "Chose " + a.Decision
	}
	return a.Decision
}

// Payload is the frozen payload, read into the struct of its kind. Exactly
// one of the kinds is set, or none when the kind has no view of its own (its
// canonical text is then shown as text).
type Payload struct {
	PullRequest *PullRequest
	Roll        *Roll
	Review      *Review
	Document    *Document
	Decision    *Decision
	Run         *Run
	AutoApprove *AutoApprove
	ToolCall    *ToolCall
	RuleChange  *RuleChange
	// Authorization is a CIBA client's request (authorization.templ shows it).
	Authorization *Authorization
	Canonical     string // the canonical JSON, shown as text when no view fits, and beside a tool call's table
}

// The payload and context shapes are the validator's own (package ask), so
// the page shows exactly the members an ask can be filed with.
type (
	PullRequest     = ask.PullRequestPayload
	Roll            = ask.RollPayload
	RollPR          = ask.RollPR
	RollCommit      = ask.RollCommit
	Review          = ask.ReviewPayload
	Document        = ask.DocumentPayload
	Decision        = ask.DecisionPayload
	Run             = ask.RunPayload
	ToolCall        = ask.ToolCallPayload
	Context         = ask.Context
	ContextDocument = ask.ContextDocument
	ContextCommit   = ask.ContextCommit
	Explanation     = ask.Explanation
	Effect          = ask.Effect
	Risk            = ask.Risk
	Evidence        = ask.Evidence
	RuleChange      = models.RuleChange
	Authorization   = ask.AuthorizationPayload
)

// versionText says which version of a document is meant.
func versionText(d *Document) string {
	if d.Version == "" || d.Version == "0" {
		return "0 (the current version)"
	}
	return d.Version.String()
}

// runExpiry is a run's expires_at as a time, or the zero time when it is not one.
func runExpiry(r *Run) time.Time {
	n, err := r.ExpiresAt.Int64()
	if err != nil {
		return time.Time{}
	}
	return time.Unix(n, 0).UTC()
}

// AutoApprove is an auto_approve payload: the policy a person turns on by
// approving the ask.
type AutoApprove struct {
	Scope     PolicyScope `json:"scope"`
	Until     string      `json:"until"` // RFC 3339
	Requester string      `json:"requester"`
	Device    string      `json:"device"`
}

// PolicyScope is what an auto-approve policy covers.
type PolicyScope struct {
	AskKinds    []string    `json:"ask_kinds"`
	MaxPriority json.Number `json:"max_priority"`
	Requesters  []string    `json:"requesters"`
}

// EveryKind is how a scope with no ask_kinds reads.
const EveryKind = "every kind a policy may cover"

// AnyRequester is how a scope with no requesters reads.
const AnyRequester = "anyone: every agent of this account"

// KindsText says which kinds of ask the policy approves.
func (s PolicyScope) KindsText() string {
	if len(s.AskKinds) == 0 {
		return EveryKind
	}
	return strings.Join(s.AskKinds, ", ")
}

// RequestersText says whose asks the policy approves.
func (s PolicyScope) RequestersText() string {
	if len(s.Requesters) == 0 {
		return AnyRequester
	}
	return strings.Join(s.Requesters, ", ")
}

// PriorityText says how high a priority the policy approves.
func (s PolicyScope) PriorityText() string {
	if s.MaxPriority == "" {
		return "0"
	}
	return s.MaxPriority.String()
}

// UntilTime is the payload's until as a time, or the zero time when it does not read.
func (a *AutoApprove) UntilTime() time.Time {
	t, err := time.Parse(time.RFC3339, a.Until)
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}

// AlwaysAsking is what keeps asking a person even while a policy is on, in
// the words of seed 001: by kind, and by words in the ask's title, summary
// and explanation (when in doubt, it asks).
var AlwaysAsking = []string{
	"merges (pull_request asks)",
	"rolls and releases (roll asks)",
	"runs (run asks)",
	"security",
	"finance",
	"legal",
	"deletes",
	"classified material",
	"permission or policy changes, among them other auto-approve requests",
	"decision asks: a policy cannot pick an option",
}

// DecodePayload reads the canonical payload of an ask of the given kind into
// the view of its kind. A kind with no view, or a payload that does not read,
// keeps only its canonical text, with the error.
func DecodePayload(kind, canonical string) (Payload, error) {
	p := Payload{Canonical: canonical}
	if slices.Contains(ask.RequestKinds, kind) {
		return p, nil // a request's payload is flat; the page reads it through Ask.Request
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal([]byte(canonical), &members); err != nil {
		return p, fmt.Errorf("payload: %w", err)
	}
	raw, ok := members[kind]
	if !ok {
		return p, fmt.Errorf("payload: no member %q", kind)
	}
	var target any
	switch kind {
	case ask.KindPullRequest:
		p.PullRequest = &PullRequest{}
		target = p.PullRequest
	case ask.KindRoll:
		p.Roll = &Roll{}
		target = p.Roll
	case ask.KindReview:
		p.Review = &Review{}
		target = p.Review
	case ask.KindDocument:
		p.Document = &Document{}
		target = p.Document
	case ask.KindDecision:
		p.Decision = &Decision{}
		target = p.Decision
	case ask.KindRun:
		p.Run = &Run{}
		target = p.Run
	case ask.KindAutoApprove:
		p.AutoApprove = &AutoApprove{}
		target = p.AutoApprove
	case ask.KindToolCall:
		p.ToolCall = &ToolCall{}
		target = p.ToolCall
	case ask.KindRuleChange:
		p.RuleChange = &RuleChange{}
		target = p.RuleChange
	case ask.KindAuthorization:
		p.Authorization = &Authorization{}
		target = p.Authorization
	default:
		return p, nil
	}
	// A member this view does not know is an error, so the page falls back to
	// the canonical text: a person never signs a member the page hides.
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	dec.UseNumber() // a tool call's numbers are shown as sent, not as float64
	if err := dec.Decode(target); err != nil {
		return Payload{Canonical: canonical}, fmt.Errorf("payload.%s: %w", kind, err)
	}
	return p, nil
}

// ArgumentRow is one argument of a tool call as its table shows it.
type ArgumentRow struct {
	Name  string
	Value string // a string as it is; any other value as compact JSON
}

// ArgumentRows are a tool call's arguments by name, for the readable table
// beside the canonical JSON.
func ArgumentRows(tc *ToolCall) []ArgumentRow {
	names := make([]string, 0, len(tc.Arguments))
	for name := range tc.Arguments {
		names = append(names, name)
	}
	slices.Sort(names)
	rows := make([]ArgumentRow, 0, len(names))
	for _, name := range names {
		row := ArgumentRow{Name: name}
		if s, ok := tc.Arguments[name].(string); ok {
			row.Value = s
		} else {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(tc.Arguments[name]); err != nil {
				row.Value = fmt.Sprint(tc.Arguments[name])
			} else {
				row.Value = strings.TrimSuffix(buf.String(), "\n")
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// riskClass is the CSS class of a risk level; none for a level it does not know.
func riskClass(r *Risk) string {
	if slices.Contains(ask.RiskLevels, r.Level) {
		return "risk-" + r.Level
	}
	return ""
}

// DecodeContext reads an ask's canonical context; "" is an empty one.
func DecodeContext(canonical string) (Context, error) {
	var c Context
	if strings.TrimSpace(canonical) == "" {
		return c, nil
	}
	if err := json.Unmarshal([]byte(canonical), &c); err != nil {
		return Context{}, fmt.Errorf("context: %w", err)
	}
	return c, nil
}

// DiffLine is one line of a diff and the class its first character gives it.
type DiffLine struct {
	Class string // add, del, hunk or ""
	Text  string
}

// DiffLines splits a diff into lines, classed by their first character.
func DiffLines(text string) []DiffLine {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	out := make([]DiffLine, len(lines))
	for i, l := range lines {
		out[i].Text = strings.TrimSuffix(l, "\r")
		switch {
		case strings.HasPrefix(l, "+"):
			out[i].Class = "add"
		case strings.HasPrefix(l, "-"):
			out[i].Class = "del"
		case strings.HasPrefix(l, "@"):
			out[i].Class = "hunk"
		}
	}
	return out
}

// HTTPSLink returns u as a link target when it is an absolute https URL with
// a host and no user info; anything else is shown as text, never linked.
func HTTPSLink(u string) (templ.SafeURL, bool) {
	p, err := url.Parse(u)
	if err != nil || p.Scheme != "https" || p.Host == "" || p.User != nil || p.Opaque != "" {
		return "", false
	}
	return templ.SafeURL(u), true
}

// localLink is a link to a page of this service: a path and an escaped
// query, never another origin.
func localLink(path string, query url.Values) templ.SafeURL {
	if len(query) > 0 {
		path += "?" + query.Encode()
	}
	return templ.SafeURL(path)
}

// approvalPath is the page of one ask.
func approvalPath(id string) templ.SafeURL {
	return templ.SafeURL("/approvals/" + url.PathEscape(id))
}

// proofPath is where the proof that decided an ask downloads.
func proofPath(id string) templ.SafeURL {
	return templ.SafeURL("/approvals/" + url.PathEscape(id) + "/proof.json")
}

// decidePath is where the page's answers post their challenge and decision:
// under the push link the page was opened with, else the ask's own path.
func decidePath(a Ask) string {
	if a.ViaLink != "" {
		return a.ViaLink
	}
	return "/approvals/" + url.PathEscape(a.ID)
}

// liveURL is the event stream of an ask, from the newest event the page shows.
func liveURL(a Ask) string {
	return "/approvals/" + url.PathEscape(a.ID) + "/events?after=" + strconv.FormatInt(a.LastSeq(), 10)
}

// WhyNoButtons says why the page offers no answer buttons.
func (a Ask) WhyNoButtons() string {
	switch s := asks.Status(a.Status); {
	case s == asks.StatusPending && !a.Now.Before(a.ExpiresAt):
		return "This ask expired: it can no longer be answered."
	case s == asks.StatusPending && a.Quorum != nil && a.Quorum.You != nil:
		return "" // the quorum says "Your approval is in" and whom it waits for
	case s == asks.StatusPending && a.Quorum != nil:
		return "This ask's rule counts other people's signatures, not yours."
	case s == asks.StatusPending && a.AskedOf != "":
		return "This ask is for " + a.AskedOf + "; only they can answer it."
	case s == asks.StatusPending:
		return "This ask is for the owners and admins of the account; they answer it."
	case s == asks.StatusQuestion:
		return "Waiting for the agent to answer the question."
	case slices.Contains(asks.ActiveStatuses, s):
		return "Approved: the agent reports its progress on the timeline."
	}
	return "This ask is " + words(a.Status) + ": nothing more can be answered."
}

// argvText is argv as a person reads a command line: each argument that
// holds anything but plain characters is quoted.
func argvText(r *Run) string {
	parts := make([]string, len(r.Argv))
	for i, arg := range r.Argv {
		parts[i] = shellQuote(arg)
	}
	return strings.Join(parts, " ")
}

func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	for _, c := range s {
		plain := c < 128 && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("_./:=@%+,-", c))
		if !plain {
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	return s
}
