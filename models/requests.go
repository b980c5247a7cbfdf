package models

// Requests (seed 000, approval_request): an agent asks a person about a change
// to its work, its memory or a person's life, or asks them something. A
// request is an ask like the others, with its frozen payload, hash, inbox,
// pushes, timeline and expiry; beside it an agent_requests row keeps what the
// tool needs: the idempotency key and the hash of the call's arguments, the
// session it is tied to, the command it carries, whether that executed, and
// whether its outcome was delivered on a heartbeat.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"

	"github.com/countersign/countersign/ask"
)

// Kinds of request, under the names the store uses.
const (
	KindWorkChange   = ask.KindWorkChange
	KindMemoryChange = ask.KindMemoryChange
	KindLifeChange   = ask.KindLifeChange
	KindAgentRequest = ask.KindAgentRequest
)

// RequestKinds are the kinds approval_request files.
var RequestKinds = ask.RequestKinds

// IsRequest says whether an ask was filed with approval_request.
func (a *Approval) IsRequest() bool { return slices.Contains(RequestKinds, a.Kind) }

// Request returns the frozen payload of a request, or nil for other asks.
func (a *Approval) Request() *ask.RequestProposal {
	if !a.IsRequest() {
		return nil
	}
	p, ok := ask.ReadRequestPayload([]byte(a.Payload))
	if !ok {
		return nil
	}
	return p
}

// AgentRequest is what approval_request keeps beside the ask it filed.
type AgentRequest struct {
	ApprovalID      string
	AccountID       string
	AgentID         string
	IdempotencyKey  string
	ArgumentsSHA256 string `gorm:"column:arguments_sha256"`
	SessionID       string
	Method          string // work_move, or "" for an advisory proposal
	ItemID          string
	ColumnKey       string
	Executed        bool
	Result          string // what the command did, or why it could not
	DeliveredAt     *time.Time
	CreatedAt       time.Time
}

// FileRequest validates approval_request's arguments and files the request
// for the agent, or returns the request an earlier call with the same
// idempotency key and the same arguments filed (repeat is then true). The
// same key with other arguments is FAILED_PRECONDITION naming idempotencyKey;
// a refused call stores nothing, so it reserves no key. admit, when not nil,
// is asked just before a new request is filed, never for a repeat, and its
// error refuses the call: a retry is answered even when the agent may file
// no new request now.
func (s *Store) FileRequest(ctx context.Context, agent *Agent, raw json.RawMessage, admit func() error) (a *Approval, r *AgentRequest, repeat bool, err error) {
	req, err := ask.ParseRequest(raw)
	if err != nil {
		return nil, nil, false, err
	}
	if a, r, err := s.earlierRequest(ctx, agent, req); a != nil || err != nil {
		return a, r, true, err
	}
	if admit != nil {
		if err := admit(); err != nil {
			return nil, nil, false, err
		}
	}
	a, r, err = s.fileRequest(ctx, agent, req)
	if err != nil && CodeOf(err) == "" {
		// Another call with this key may have won the race to the unique index.
		if a, r, err2 := s.earlierRequest(ctx, agent, req); a != nil || err2 != nil {
			return a, r, true, err2
		}
	}
	return a, r, false, err
}

// earlierRequest finds the request filed with req's idempotency key: nil when
// there is none, a refusal when it was filed with other arguments.
func (s *Store) earlierRequest(ctx context.Context, agent *Agent, req *ask.Request) (*Approval, *AgentRequest, error) {
	var r AgentRequest
	err := s.db.WithContext(ctx).Table("agent_requests").Where("agent_id = ? AND idempotency_key = ?", agent.ID, req.Key).Take(&r).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("find idempotency key: %w", err)
	}
	if r.ArgumentsSHA256 != req.ArgsSHA256 {
		return nil, nil, Refuse(FailedPrecondition, "idempotencyKey", "this key already filed request %s with other arguments; retry with the same arguments, or use a new key for a new request", r.ApprovalID)
	}
	a, err := s.GetApproval(ctx, agent.AccountID, r.ApprovalID)
	if err != nil {
		return nil, nil, err
	}
	return a, &r, nil
}

func (s *Store) fileRequest(ctx context.Context, agent *Agent, req *ask.Request) (*Approval, *AgentRequest, error) {
	now := s.now()
	expires := now.Add(s.askTTL)
	if req.Minutes > 0 {
		expires = now.Add(time.Duration(req.Minutes) * time.Minute)
	}
	a := &Approval{
		ID: newID("appr"), AccountID: agent.AccountID, Kind: req.Kind, Title: req.Title, Summary: req.Description,
		Payload: string(req.Canonical), PayloadSHA256: req.SHA256,
		RequesterID: agent.ID, RequesterSubject: agent.Subject,
		Status: StatusPending, Version: 1, ExpiresAt: expires, CreatedAt: now, UpdatedAt: now,
	}
	r := &AgentRequest{ApprovalID: a.ID, AccountID: agent.AccountID, AgentID: agent.ID, IdempotencyKey: req.Key,
		ArgumentsSHA256: req.ArgsSHA256, SessionID: req.SessionID, CreatedAt: now}
	switch {
	case req.Move != nil:
		a.ApproveMeans = "The item moves at once; nothing moves if it is denied or expires."
	case req.Question != nil:
		a.ApproveMeans = "Your answer goes back to the agent."
	default:
		a.ApproveMeans = "Your decision is recorded; nothing executes."
	}
	var idle *AgentSession // the session, ended here as idle
	err := s.write(ctx, func(tx *gorm.DB) error {
		if req.SessionID != "" {
			ss, err := s.openSession(tx, agent, req.SessionID, "sessionId")
			if errors.Is(err, errSessionIdle) {
				idle = ss
				return nil // the session's end commits; the request is refused below
			}
			if err != nil {
				return err
			}
			a.AgentLabel = ss.Label
		}
		if m := req.Move; m != nil {
			it, err := s.item(tx, agent.AccountID, m.ItemID, "proposal.command.input.itemId")
			if err != nil {
				return err
			}
			to, err := s.column(tx, agent.AccountID, m.ColumnKey, "proposal.command.input.columnKey")
			if err != nil {
				return err
			}
			if it.ColumnKey == m.ColumnKey {
				return Refuse(FailedPrecondition, "proposal.command.input.columnKey", "item %s is already in column %q", it.ID, m.ColumnKey)
			}
			r.Method, r.ItemID, r.ColumnKey = ask.MethodWorkMove, it.ID, to.Key
		}
		if err := tx.Table("agent_requests").Create(r).Error; err != nil {
			return fmt.Errorf("store request: %w", err)
		}
		return s.fileTx(tx, a)
	})
	if err != nil {
		return nil, nil, err
	}
	if idle != nil {
		return nil, nil, endedError(idle, "sessionId")
	}
	return a, r, nil
}

// RequestOf reads the agent_requests row of an ask; nil for an ask filed otherwise.
func (s *Store) RequestOf(ctx context.Context, approvalID string) (*AgentRequest, error) {
	var r AgentRequest
	err := s.db.WithContext(ctx).Table("agent_requests").Where("approval_id = ?", approvalID).Take(&r).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read request: %w", err)
	}
	return &r, nil
}

// Outcome is what became of a request: its status, the person's answer, and
// what its command did. It is both approval_status's answer and a heartbeat's
// instruction.
type Outcome struct {
	ApprovalID string
	Kind       string
	Status     string
	Answer     *Answer
	DecidedBy  string
	DecidedAt  *time.Time
	Command    *CommandOutcome
	ExpiresAt  time.Time
	Proof      *string
}

// Answer is the person's answer to a question: free text, or a choice and its index.
type Answer struct {
	Text   string
	Choice string
	Index  int
	Chosen bool // Choice and Index hold the answer
}

// CommandOutcome is a request's command and what came of it.
type CommandOutcome struct {
	Method   string
	ItemID   string
	Column   string
	Executed bool
	Reason   string
}

// OutcomeOf reads the outcome of ask a and its request row r (nil for an
// ask filed otherwise).
func OutcomeOf(a *Approval, r *AgentRequest) Outcome {
	o := Outcome{ApprovalID: a.ID, Kind: a.Kind, Status: string(a.Status), DecidedBy: a.DecidedBy, DecidedAt: a.DecidedAt,
		ExpiresAt: a.ExpiresAt, Proof: a.Proof}
	if idx, ok := Verdict(a.Decision).Choice(); ok {
		o.Answer = &Answer{Choice: a.Note, Index: idx, Chosen: true}
	} else if Verdict(a.Decision).IsAnswer() {
		o.Answer = &Answer{Text: a.Note}
	}
	if r != nil && r.Method != "" {
		o.Command = &CommandOutcome{Method: r.Method, ItemID: r.ItemID, Column: r.ColumnKey, Executed: r.Executed, Reason: r.Result}
	}
	return o
}

// executeRequest runs, inside the transaction that approved request a, its
// command: a work_move moves the item and the request ends done. When it
// cannot (the item or the column is gone, or the item is already there), the
// approval is kept, the request ends failed with the reason, and the board is
// unchanged.
func (s *Store) executeRequest(tx *gorm.DB, a *Approval, by string) error {
	var r AgentRequest
	if err := tx.Table("agent_requests").Where("approval_id = ?", a.ID).Take(&r).Error; err != nil {
		return fmt.Errorf("read request: %w", err)
	}
	if r.Method != ask.MethodWorkMove {
		return nil // advisory: recorded, nothing executes
	}
	reason, err := s.workMove(tx, a, &r, by)
	if err != nil {
		return err
	}
	ch := change{event: EventExecuted, actorKind: ActorSystem, actor: "countersign", note: reason}
	if !r.Executed {
		ch.event = EventNotExecuted
	}
	if err := tx.Table("agent_requests").Where("approval_id = ?", a.ID).
		Updates(map[string]any{"executed": r.Executed, "result": reason}).Error; err != nil {
		return fmt.Errorf("record execution: %w", err)
	}
	return s.move(tx, a, ch)
}

// workMove moves the request's item inside tx and says what it did, or why
// it could not (then r.Executed stays false and nothing moved).
func (s *Store) workMove(tx *gorm.DB, a *Approval, r *AgentRequest, by string) (string, error) {
	it, err := s.item(tx, a.AccountID, r.ItemID, "itemId")
	if CodeOf(err) == NotFound {
		return fmt.Sprintf("work item %s no longer exists; nothing moved", r.ItemID), nil
	}
	if err != nil {
		return "", err
	}
	to, err := s.column(tx, a.AccountID, r.ColumnKey, "columnKey")
	if CodeOf(err) == NotFound {
		return fmt.Sprintf("column %q no longer exists; nothing moved", r.ColumnKey), nil
	}
	if err != nil {
		return "", err
	}
	if it.ColumnKey == to.Key {
		return fmt.Sprintf("work item %s was already in column %q; nothing moved", it.ID, to.Key), nil
	}
	from := it.ColumnKey
	if err := s.moveItem(tx, it, to.Key, ActorPerson, by, a.ID); err != nil {
		return "", err
	}
	r.Executed = true
	return fmt.Sprintf("moved %q from %s to %s", it.Title, from, to.Key), nil
}

// RequestAutoApprovable says whether an auto-approve policy may approve
// request a at all: never a question and never a command proposal.
func RequestAutoApprovable(a *Approval) bool {
	p := a.Request()
	return p != nil && p.Question == nil && p.Proposal.Mode == ask.ModeAdvisory
}
