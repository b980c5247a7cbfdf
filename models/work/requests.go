package work

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/countersign/countersign/ask"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"gorm.io/gorm"
)

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

// RequestOf reads the agent_requests row of an ask; nil for an ask filed otherwise.
func (s *Tracker) RequestOf(ctx context.Context, approvalID string) (*AgentRequest, error) {
	var r AgentRequest
	err := s.DB().WithContext(ctx).Table("agent_requests").Where("approval_id = ?", approvalID).Take(&r).Error
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
func OutcomeOf(a *asks.Approval, r *AgentRequest) Outcome {
	o := Outcome{ApprovalID: a.ID, Kind: a.Kind, Status: string(a.Status), DecidedBy: a.DecidedBy, DecidedAt: a.DecidedAt,
		ExpiresAt: a.ExpiresAt, Proof: a.Proof}
	if idx, ok := asks.Verdict(a.Decision).Choice(); ok {
		o.Answer = &Answer{Choice: a.Note, Index: idx, Chosen: true}
	} else if asks.Verdict(a.Decision).IsAnswer() {
		o.Answer = &Answer{Text: a.Note}
	}
	if r != nil && r.Method != "" {
		o.Command = &CommandOutcome{Method: r.Method, ItemID: r.ItemID, Column: r.ColumnKey, Executed: r.Executed, Reason: r.Result}
	}
	return o
}

// ExecuteRequest runs, inside the transaction that approved request a, its
// command: a work_move moves the item and the request ends done. When it
// cannot (the item or the column is gone, or the item is already there), the
// approval is kept, the request ends failed with the reason, and the board is
// unchanged.
func (s *Tracker) ExecuteRequest(tx *gorm.DB, a *asks.Approval, by string) error {
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
	ch := asks.StatusChange{Event: asks.EventExecuted, ActorKind: asks.ActorSystem, Actor: "countersign", Note: reason}
	if !r.Executed {
		ch.Event = asks.EventNotExecuted
	}
	if err := tx.Table("agent_requests").Where("approval_id = ?", a.ID).
		Updates(map[string]any{"executed": r.Executed, "result": reason}).Error; err != nil {
		return fmt.Errorf("record execution: %w", err)
	}
	return s.Move(tx, a, ch)
}

// workMove moves the request's item inside tx and says what it did, or why
// it could not (then r.Executed stays false and nothing moved).
func (s *Tracker) workMove(tx *gorm.DB, a *asks.Approval, r *AgentRequest, by string) (string, error) {
	it, err := s.Item(tx, a.AccountID, r.ItemID, "itemId")
	if core.CodeOf(err) == core.NotFound {
		return fmt.Sprintf("work item %s no longer exists; nothing moved", r.ItemID), nil
	}
	if err != nil {
		return "", err
	}
	to, err := s.Column(tx, a.AccountID, r.ColumnKey, "columnKey")
	if core.CodeOf(err) == core.NotFound {
		return fmt.Sprintf("column %q no longer exists; nothing moved", r.ColumnKey), nil
	}
	if err != nil {
		return "", err
	}
	if it.ColumnKey == to.Key {
		return fmt.Sprintf("work item %s was already in column %q; nothing moved", it.ID, to.Key), nil
	}
	from := it.ColumnKey
	if err := s.moveItem(tx, it, to.Key, asks.ActorPerson, by, a.ID); err != nil {
		return "", err
	}
	r.Executed = true
	return fmt.Sprintf("moved %q from %s to %s", it.Title, from, to.Key), nil
}

// RequestAutoApprovable says whether an auto-approve policy may approve
// request a at all: never a question and never a command proposal.
func RequestAutoApprovable(a *asks.Approval) bool {
	return a.IsRequest() && a.PolicyMayCover()
}
