package ask

// Validation of approval_request's arguments (seed 000). The seed's input
// schema is the contract: every rule in it is checked here, member by member,
// with exact (case-sensitive) names, and each refusal names the member at
// fault by its dotted path (proposal.command.input.itemId). Where the seed
// gives no bound, ours are: title one line of at most 120 characters (the only
// text a push shows; for a question the title is the question), description
// at most 2,000, targetType one line of at most 64, targetId one line of at
// most 200, sessionId one line of at most 200, idempotencyKey 1 to 200
// characters, itemId one line of at most 200 and columnKey one line of at most
// 64. null is refused everywhere, like in approvals_create.
//
// The frozen payload a person signs is the canonical JSON (RFC 8785) of the
// members kind, title, description, targetType, targetId, proposal and
// question, as sent; sessionId, expiresInMinutes and idempotencyKey are about
// the call, not the thing decided, and are left out.

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Proposal modes and the one command method.
const (
	ModeAdvisory   = "advisory"
	ModeCommand    = "command"
	MethodWorkMove = "work_move"
)

// Bounds of approval_request.
const (
	RequestMinMinutes = 5
	RequestMaxMinutes = 10080
	MinChoices        = 2
	MaxChoices        = 6
)

// Request is a validated approval_request.
type Request struct {
	Kind        string
	Title       string
	Description string
	TargetType  string
	TargetID    string
	Mode        string    // advisory or command
	Move        *WorkMove // the work_move command; nil on an advisory proposal
	Question    *Question // nil unless the request asks a question
	SessionID   string    // "" when the request is tied to no session
	Minutes     int       // expiresInMinutes; 0 when not sent
	Key         string    // idempotencyKey
	Canonical   []byte    // the frozen payload's RFC 8785 bytes
	SHA256      string    // lower-case hex SHA-256 of Canonical
	ArgsSHA256  string    // SHA-256 of the canonical arguments, to tell a retry from a different call
}

// WorkMove is the work_move command: move a work item to a column.
type WorkMove struct {
	ItemID    string `json:"itemId"`
	ColumnKey string `json:"columnKey"`
}

// Question is what an agent_request asks: free text when Choices is empty,
// else one of Choices.
type Question struct {
	Choices []string `json:"choices,omitempty"`
}

// Free says whether the question takes a free-text answer.
func (q *Question) Free() bool { return len(q.Choices) == 0 }

// requestMembers are the members approval_request takes, in the seed's order.
var requestMembers = []string{"kind", "title", "description", "targetType", "targetId", "proposal", "sessionId", "expiresInMinutes", "question", "idempotencyKey"}

// payloadMembers are the members the frozen payload holds.
var payloadMembers = []string{"kind", "title", "description", "targetType", "targetId", "proposal", "question"}

// ParseRequest validates approval_request's arguments and returns the request
// with its frozen payload. Every refusal is a *Refusal naming the member.
func ParseRequest(raw json.RawMessage) (*Request, error) {
	_, argsSum, tree, err := readSent("", raw)
	if err != nil {
		return nil, err
	}
	obj, ok := tree.(map[string]any)
	if !ok {
		return nil, Invalid("", "the arguments must be a JSON object, not %s", jsonType(tree))
	}
	if err := onlyMembers(obj, "", requestMembers); err != nil {
		return nil, err
	}
	r := &Request{ArgsSHA256: argsSum}
	if r.Kind, err = stringMember(obj, "kind", true); err != nil {
		return nil, err
	}
	if r.Kind == "" || !slices.Contains(RequestKinds, r.Kind) {
		return nil, Invalid("kind", "must be one of %s, not %q", strings.Join(RequestKinds, ", "), clip(r.Kind))
	}
	texts := []struct {
		name     string
		dst      *string
		max      int
		oneLine  bool
		required bool
	}{
		{"title", &r.Title, 120, true, true},
		{"description", &r.Description, 2000, false, false},
		{"targetType", &r.TargetType, 64, true, false},
		{"targetId", &r.TargetID, 200, true, false},
	}
	for _, t := range texts {
		if *t.dst, err = stringMember(obj, t.name, t.required); err != nil {
			return nil, err
		}
		if err := checkText(t.name, *t.dst, t.max, t.oneLine, t.required); err != nil {
			return nil, err
		}
	}
	if err := r.readProposal(obj); err != nil {
		return nil, err
	}
	if err := r.readQuestion(obj); err != nil {
		return nil, err
	}
	if v, ok := obj["sessionId"]; ok {
		if r.SessionID, err = stringMember(obj, "sessionId", false); err != nil {
			return nil, err
		}
		if err := checkText("sessionId", r.SessionID, 200, true, true); err != nil {
			return nil, Invalid("sessionId", "must be the id of one of your open sessions (from session_start), or left out; got %q", clip(fmt.Sprint(v)))
		}
	}
	if v, ok := obj["expiresInMinutes"]; ok {
		n, isNum := v.(json.Number)
		if !isNum {
			return nil, Invalid("expiresInMinutes", "must be an integer, not %s", jsonType(v))
		}
		m, isInt, big := exactInt(string(n))
		if !isInt {
			return nil, Invalid("expiresInMinutes", "must be a whole number of minutes, got %s", clip(string(n)))
		}
		if big || m < RequestMinMinutes || m > RequestMaxMinutes {
			return nil, Invalid("expiresInMinutes", "must be from %d to %d (7 days), got %s", RequestMinMinutes, RequestMaxMinutes, clip(string(n)))
		}
		r.Minutes = int(m)
	}
	if r.Key, err = stringMember(obj, "idempotencyKey", true); err != nil {
		return nil, err
	}
	if n := len([]rune(r.Key)); n < 1 || n > 200 {
		return nil, Invalid("idempotencyKey", "must be 1 to 200 characters, got %d", n)
	}
	frozen := map[string]any{}
	for _, name := range payloadMembers {
		if v, ok := obj[name]; ok {
			frozen[name] = v
		}
	}
	b, err := json.Marshal(frozen)
	if err != nil {
		return nil, fmt.Errorf("freeze request: %w", err)
	}
	if r.Canonical, r.SHA256, err = CanonicalHash(b); err != nil {
		return nil, fmt.Errorf("freeze request: %w", err)
	}
	return r, nil
}

func (r *Request) readProposal(obj map[string]any) error {
	v, ok := obj["proposal"]
	if !ok {
		return Invalid("proposal", `required: {"mode": "advisory"} or {"mode": "command", "command": {"method": "work_move", "input": {"itemId", "columnKey"}}}`)
	}
	p, err := objectValue("proposal", v)
	if err != nil {
		return err
	}
	if r.Mode, err = stringMember(p, "proposal.mode", true); err != nil {
		return err
	}
	switch r.Mode {
	case ModeAdvisory:
		return onlyMembers(p, "proposal", []string{"mode"})
	case ModeCommand:
	default:
		return Invalid("proposal.mode", "must be advisory or command, not %q", clip(r.Mode))
	}
	if err := onlyMembers(p, "proposal", []string{"mode", "command"}); err != nil {
		return err
	}
	cv, ok := p["command"]
	if !ok {
		return Invalid("proposal.command", `required on a command proposal: {"method": "work_move", "input": {"itemId", "columnKey"}}`)
	}
	c, err := objectValue("proposal.command", cv)
	if err != nil {
		return err
	}
	if err := onlyMembers(c, "proposal.command", []string{"method", "input"}); err != nil {
		return err
	}
	method, err := stringMember(c, "proposal.command.method", true)
	if err != nil {
		return err
	}
	if method != MethodWorkMove {
		return Invalid("proposal.command.method", "must be work_move, the one command that executes; got %q (send an advisory proposal instead)", clip(method))
	}
	iv, ok := c["input"]
	if !ok {
		return Invalid("proposal.command.input", `required: {"itemId", "columnKey"}`)
	}
	in, err := objectValue("proposal.command.input", iv)
	if err != nil {
		return err
	}
	if err := onlyMembers(in, "proposal.command.input", []string{"itemId", "columnKey"}); err != nil {
		return err
	}
	m := &WorkMove{}
	if m.ItemID, err = stringMember(in, "proposal.command.input.itemId", true); err != nil {
		return err
	}
	if err := checkText("proposal.command.input.itemId", m.ItemID, 200, true, true); err != nil {
		return err
	}
	if m.ColumnKey, err = stringMember(in, "proposal.command.input.columnKey", true); err != nil {
		return err
	}
	if err := checkText("proposal.command.input.columnKey", m.ColumnKey, 64, true, true); err != nil {
		return err
	}
	r.Move = m
	return nil
}

func (r *Request) readQuestion(obj map[string]any) error {
	v, ok := obj["question"]
	if !ok {
		return nil
	}
	q, err := objectValue("question", v)
	if err != nil {
		return err
	}
	if r.Kind != KindAgentRequest {
		return Invalid("question", "only an agent_request may ask a question, not a %s", r.Kind)
	}
	if r.Mode != ModeAdvisory {
		return Invalid("question", "a question goes with an advisory proposal only: a command proposal is approved or denied")
	}
	if err := onlyMembers(q, "question", []string{"choices"}); err != nil {
		return err
	}
	r.Question = &Question{}
	cv, ok := q["choices"]
	if !ok {
		return nil
	}
	list, isList := cv.([]any)
	if !isList {
		if cv == nil {
			return Invalid("question.choices", "must not be null: omit choices for a free-text answer")
		}
		return Invalid("question.choices", "must be a list of strings, not %s", jsonType(cv))
	}
	if len(list) < MinChoices || len(list) > MaxChoices {
		return Invalid("question.choices", "must hold %d to %d options, got %d (omit choices for a free-text answer)", MinChoices, MaxChoices, len(list))
	}
	for i, e := range list {
		field := fmt.Sprintf("question.choices[%d]", i)
		s, isString := e.(string)
		if !isString {
			return Invalid(field, "must be a string, not %s", jsonType(e))
		}
		if n := len([]rune(s)); n < 1 || n > 120 {
			return Invalid(field, "must be 1 to 120 characters, got %d", n)
		}
		if err := checkText(field, s, 120, true, false); err != nil {
			return err
		}
		if slices.Contains(r.Question.Choices, s) {
			return Invalid(field, "%q is offered twice: the choices must be distinct", clip(s))
		}
		r.Question.Choices = append(r.Question.Choices, s)
	}
	return nil
}

// onlyMembers refuses a member of obj that is not in names.
func onlyMembers(obj map[string]any, path string, names []string) error {
	for _, k := range sortedKeys(obj) {
		if !slices.Contains(names, k) {
			field := k
			if path != "" {
				field = path + "." + k
			}
			where := "approval_request"
			if path != "" {
				where = path
			}
			return Invalid(clip(field), "unknown member: %s takes only %s", where, strings.Join(names, ", "))
		}
	}
	return nil
}

// stringMember reads the member at the dotted path's last name of obj as a
// string; absent is "" (refused when required), null and other types are refused.
func stringMember(obj map[string]any, path string, required bool) (string, error) {
	name := path[strings.LastIndex(path, ".")+1:]
	v, ok := obj[name]
	if !ok {
		if required {
			return "", Invalid(path, "required")
		}
		return "", nil
	}
	s, isString := v.(string)
	if !isString {
		if v == nil {
			return "", Invalid(path, "must not be null: leave an optional member out instead")
		}
		return "", Invalid(path, "must be a string, not %s", jsonType(v))
	}
	return s, nil
}

func objectValue(path string, v any) (map[string]any, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		if v == nil {
			return nil, Invalid(path, "must not be null: leave an optional member out instead")
		}
		return nil, Invalid(path, "must be an object, not %s", jsonType(v))
	}
	return obj, nil
}

// RequestProposal is the frozen payload of a request, read back for the pages
// and for execution.
type RequestProposal struct {
	Kind        string `json:"kind"`
	Title       string `json:"title"`
	Description string `json:"description"`
	TargetType  string `json:"targetType"`
	TargetID    string `json:"targetId"`
	Proposal    struct {
		Mode    string `json:"mode"`
		Command *struct {
			Method string   `json:"method"`
			Input  WorkMove `json:"input"`
		} `json:"command"`
	} `json:"proposal"`
	Question *Question `json:"question"`
}

// ReadRequestPayload reads a request's frozen payload; ok is false when the
// bytes are not one.
func ReadRequestPayload(canonical []byte) (*RequestProposal, bool) {
	var p RequestProposal
	if json.Unmarshal(canonical, &p) != nil || !slices.Contains(RequestKinds, p.Kind) {
		return nil, false
	}
	return &p, true
}

// Move returns the work_move command of the payload, or nil.
func (p *RequestProposal) Move() *WorkMove {
	if p.Proposal.Mode != ModeCommand || p.Proposal.Command == nil {
		return nil
	}
	m := p.Proposal.Command.Input
	return &m
}
