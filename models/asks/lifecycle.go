package asks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/countersign/countersign/models/core"
	"gorm.io/gorm"
)

// Status is where an approval is in its life.
type Status string

// The states of an approval.
const (
	StatusPending    Status = "pending"
	StatusQuestion   Status = "question"
	StatusApproved   Status = "approved"
	StatusDenied     Status = "denied"
	StatusInProgress Status = "in_progress"
	StatusDone       Status = "done"
	StatusFailed     Status = "failed"
	StatusStale      Status = "stale"
	StatusCancelled  Status = "cancelled"
	StatusExpired    Status = "expired"
)

// AllStatuses lists every state.
var AllStatuses = []Status{StatusPending, StatusQuestion, StatusApproved, StatusDenied, StatusInProgress,
	StatusDone, StatusFailed, StatusStale, StatusCancelled, StatusExpired}

// Status groups for listing.
var (
	OpenStatuses   = []Status{StatusPending, StatusQuestion}
	ActiveStatuses = []Status{StatusApproved, StatusInProgress}
	ClosedStatuses = []Status{StatusDenied, StatusDone, StatusFailed, StatusStale, StatusCancelled, StatusExpired}
)

// Open says whether the ask still waits for a person or its agent.
func (s Status) Open() bool { return s == StatusPending || s == StatusQuestion }

// Event names a transition; it is also the step written on the timeline.
type Event string

// The events that move an approval.
const (
	EventApprove         Event = "approved"
	EventDeny            Event = "denied"
	EventNotMine         Event = "not_mine"
	EventQuestion        Event = "question"
	EventAutoApprove     Event = "auto_approved"
	EventAnswered        Event = "answered"
	EventWithdraw        Event = "stale"
	EventExpire          Event = "expired"
	EventSupersede       Event = "superseded"
	EventCancel          Event = "cancelled"
	EventStarted         Event = "started"
	EventObservedChanged Event = "observed_changed"
	EventStep            Event = "step"
	EventDone            Event = "done"
	EventFailed          Event = "failed"
	EventExecuted        Event = "executed"         // an approved request's command ran
	EventNotExecuted     Event = "execution_failed" // an approved request's command could not run
	// EventRunnerDisabled fails closed a run whose runner was disabled before it ended.
	EventRunnerDisabled Event = "runner_gone"
	// EventEscalated is an ask passing to its rule's escalation pool: it stays
	// pending, and more people may sign it.
	EventEscalated Event = "escalated"
	// EventCountersigned is a signature that does not complete the quorum: the
	// ask stays pending, one person nearer.
	EventCountersigned Event = "countersigned"
)

// transition is one row of the state table.
type transition struct {
	from []Status
	to   Status
}

// lifecycle is the whole state machine: an event moves an approval from one
// of the from states to the to state, and from nowhere else. Nothing outside
// this file changes an approval's status.
var lifecycle = map[Event]transition{
	EventApprove:         {from: []Status{StatusPending}, to: StatusApproved},
	EventCountersigned:   {from: []Status{StatusPending}, to: StatusPending}, // one signature of a rule's quorum, not the last
	EventEscalated:       {from: []Status{StatusPending}, to: StatusPending}, // unanswered past its rule's delay: the escalation pool may sign too
	EventAutoApprove:     {from: []Status{StatusPending}, to: StatusApproved},
	EventDeny:            {from: []Status{StatusPending}, to: StatusDenied},
	EventNotMine:         {from: []Status{StatusPending}, to: StatusDenied},
	EventQuestion:        {from: []Status{StatusPending}, to: StatusQuestion},
	EventAnswered:        {from: []Status{StatusQuestion}, to: StatusPending},
	EventWithdraw:        {from: []Status{StatusPending, StatusQuestion, StatusApproved, StatusInProgress}, to: StatusStale},
	EventExpire:          {from: []Status{StatusPending, StatusQuestion}, to: StatusExpired},
	EventSupersede:       {from: []Status{StatusPending, StatusQuestion}, to: StatusStale},
	EventCancel:          {from: []Status{StatusPending, StatusQuestion}, to: StatusCancelled},
	EventStarted:         {from: []Status{StatusApproved}, to: StatusInProgress},
	EventObservedChanged: {from: []Status{StatusApproved}, to: StatusStale},
	EventStep:            {from: []Status{StatusInProgress}, to: StatusInProgress},
	EventDone:            {from: []Status{StatusInProgress}, to: StatusDone},
	EventFailed:          {from: []Status{StatusInProgress}, to: StatusFailed},
	EventExecuted:        {from: []Status{StatusApproved}, to: StatusDone},
	EventNotExecuted:     {from: []Status{StatusApproved}, to: StatusFailed},
	EventRunnerDisabled:  {from: []Status{StatusPending, StatusQuestion, StatusApproved, StatusInProgress}, to: StatusFailed},
}

// Events are the events of the state machine, in no set order.
func Events() []Event {
	events := make([]Event, 0, len(lifecycle))
	for e := range lifecycle {
		events = append(events, e)
	}
	return events
}

// Actor kinds on the timeline.
const (
	ActorAgent  = "agent"
	ActorPerson = "person"
	ActorSystem = "system"
	ActorAdmin  = "admin"
	ActorPolicy = "policy"
	ActorRunner = "runner"
)

// change is what a caller asks of the state machine: an event, who does it,
// a note, columns to set beside the status and data for the timeline.
type StatusChange struct {
	Event     Event
	ActorKind string
	Actor     string
	Note      string
	Set       map[string]any
	Data      any
	After     func(tx *gorm.DB, a *Approval) error // more work in the same transaction, once the ask moved
}

// StateError is the FAILED_PRECONDITION that names the current state.
func StateError(a *Approval, want string) *core.Error {
	return core.Refuse(core.FailedPrecondition, "", "approval %s is %s%s; nothing was recorded", a.ID, a.Status, want)
}

// Move applies ch to a loaded approval inside tx: it checks the state table,
// updates the row only if nobody changed it since it was read, and appends one
// timeline event.
func (s *Lifecycle) Move(tx *gorm.DB, a *Approval, ch StatusChange) error {
	t, ok := lifecycle[ch.Event]
	if !ok {
		return fmt.Errorf("no transition %q", ch.Event)
	}
	if !slices.Contains(t.from, a.Status) {
		return StateError(a, fmt.Sprintf(", and %s happens only from %s", ch.Event, joinStatuses(t.from)))
	}
	now := s.Now()
	set := map[string]any{"status": t.to, "version": a.Version + 1, "updated_at": now}
	for k, v := range ch.Set {
		set[k] = v
	}
	res := tx.Table("approvals").Where("id = ? AND version = ?", a.ID, a.Version).Updates(set)
	if res.Error != nil {
		return fmt.Errorf("move approval: %w", res.Error)
	}
	if res.RowsAffected != 1 {
		return core.Refuse(core.FailedPrecondition, "", "approval %s changed while this call ran; read it again", a.ID)
	}
	ev := &TimelineEvent{
		AccountID: a.AccountID, ApprovalID: a.ID, At: now, ActorKind: ch.ActorKind, Actor: ch.Actor,
		Step: string(ch.Event), FromStatus: a.Status, ToStatus: t.to, Note: ch.Note, Data: core.JSONText(ch.Data),
	}
	if err := s.AppendEvent(tx, a, ev); err != nil {
		return err
	}
	if err := s.approvalChanged(tx, ev); err != nil {
		return err
	}
	if a.RunnerID != "" {
		if err := s.Changed(tx, core.Change{Kind: core.RunsChanged, AccountID: a.AccountID, RunnerID: a.RunnerID}); err != nil {
			return err
		}
	}
	if a.Status == StatusPending && t.to != StatusPending {
		if err := s.killChallenges(tx, a.ID); err != nil {
			return err
		}
	}
	from := a.Status
	a.Status, a.Version, a.UpdatedAt = t.to, a.Version+1, now
	applySet(a, ch.Set)
	for _, heard := range s.moved {
		if err := heard(tx, a, from, ch.Event); err != nil {
			return err
		}
	}
	return nil
}

// A MoveListener is told, inside the transaction, of each move of an ask:
// a is the ask after the move, from its status before, ev the event.
type MoveListener func(tx *gorm.DB, a *Approval, from Status, ev Event) error

// OnMove adds a listener to every move; the store is put together with its
// listeners before it serves (NewStore).
func (s *Lifecycle) OnMove(l MoveListener) { s.moved = append(s.moved, l) }

func joinStatuses(ss []Status) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = string(s)
	}
	return strings.Join(parts, " or ")
}

// Update loads the approval of the account under a row lock, honours
// expected as compare-and-set, expires it first when its life ran out, and
// then lets decide pick the change. Everything happens in one transaction;
// a refusal records nothing.
func (s *Lifecycle) Update(ctx context.Context, accountID, id string, expected Status, decide func(tx *gorm.DB, a *Approval) (*StatusChange, error)) (*Approval, error) {
	var (
		a       Approval
		expired bool
	)
	err := s.Write(ctx, func(tx *gorm.DB) error {
		if err := s.LoadForUpdate(tx, accountID, id, &a); err != nil {
			return err
		}
		if a.Status.Open() && !s.Now().Before(a.ExpiresAt) {
			expired = true
			return s.Move(tx, &a, StatusChange{Event: EventExpire, ActorKind: ActorSystem, Actor: "countersign", Note: "its life ran out before an answer"})
		}
		if expected != "" && a.Status != expected {
			return StateError(&a, fmt.Sprintf(", not %s", expected))
		}
		ch, err := decide(tx, &a)
		if err != nil || ch == nil {
			return err
		}
		if a.Status.Open() && !s.Now().Before(a.ExpiresAt) {
			// The deadline passed while decide ran: what it decided (and
			// timed) is dropped, and nothing a command would do happens.
			expired = true
			return s.Move(tx, &a, StatusChange{Event: EventExpire, ActorKind: ActorSystem, Actor: "countersign", Note: "its life ran out before an answer"})
		}
		if err := s.Move(tx, &a, *ch); err != nil || ch.After == nil {
			return err
		}
		return ch.After(tx, &a)
	})
	if err != nil {
		return nil, err
	}
	if expired {
		return &a, core.Refuse(core.FailedPrecondition, "", "approval %s expired at %s; nothing was recorded", a.ID, a.ExpiresAt.Format(time.RFC3339))
	}
	return &a, nil
}

func (s *Lifecycle) LoadForUpdate(tx *gorm.DB, accountID, id string, a *Approval) error {
	err := s.Lock(tx.Table("approvals")).Where("id = ? AND account_id = ?", id, accountID).Take(a).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return core.Refuse(core.NotFound, "approval_id", "no approval %q in this account", id)
	}
	if err != nil {
		return fmt.Errorf("load approval: %w", err)
	}
	return nil
}

// Progress is a step an agent reports on its own ask (approvals_add_progress).
type Progress struct {
	Step          string
	ExpectedState string
	Note          string
	Observed      []byte // JSON, for "started"
}

// Progress steps an agent may report.
var ProgressSteps = []string{"started", "step", "answered", "done", "failed", "stale"}

// NoteLimit is the most characters a progress or decision note may hold.
const NoteLimit = 500

// ParseExpectedState reads a report's expected_state, the compare-and-set of
// approvals_add_progress: "" for none, else one of the states the seed names.
// A state other than the approval's own then fails with FAILED_PRECONDITION
// naming it (update).
func ParseExpectedState(state string) (Status, error) {
	switch state {
	case "":
		return "", nil
	case "pending", "question", "approved", "in_progress":
		return Status(state), nil
	}
	return "", core.Invalid("expected_state", "must be pending, question, approved or in_progress (the state you last read), not %q", state)
}

// Cancel closes an open ask on an admin's word.
func (s *Lifecycle) Cancel(ctx context.Context, accountID, id, by, note string) (*Approval, error) {
	return s.Update(ctx, accountID, id, "", func(_ *gorm.DB, a *Approval) (*StatusChange, error) {
		return &StatusChange{Event: EventCancel, ActorKind: ActorAdmin, Actor: by, Note: note}, nil
	})
}

// ExpireDue closes every open ask whose life ran out and returns how many it
// closed. Each is its own transaction, so one failure stops none of the others.
func (s *Lifecycle) ExpireDue(ctx context.Context) (int, error) {
	var due []struct{ ID, AccountID string }
	if err := s.DB().WithContext(ctx).Table("approvals").Select("id, account_id").
		Where(OpenAsks+" AND expires_at <= ?", s.Now()).Order("expires_at").Limit(500).Find(&due).Error; err != nil {
		return 0, fmt.Errorf("find due asks: %w", err)
	}
	n := 0
	for _, d := range due {
		_, err := s.Update(ctx, d.AccountID, d.ID, "", func(*gorm.DB, *Approval) (*StatusChange, error) { return nil, nil })
		switch {
		case err == nil: // answered or closed in between
		case core.CodeOf(err) == core.FailedPrecondition:
			n++
		default:
			return n, err
		}
	}
	return n, nil
}
