package models

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

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
type change struct {
	event     Event
	actorKind string
	actor     string
	note      string
	set       map[string]any
	data      any
	after     func(tx *gorm.DB, a *Approval) error // more work in the same transaction, once the ask moved
}

// stateError is the FAILED_PRECONDITION that names the current state.
func stateError(a *Approval, want string) *Error {
	return Refuse(FailedPrecondition, "", "approval %s is %s%s; nothing was recorded", a.ID, a.Status, want)
}

// move applies ch to a loaded approval inside tx: it checks the state table,
// updates the row only if nobody changed it since it was read, and appends one
// timeline event.
func (s *Store) move(tx *gorm.DB, a *Approval, ch change) error {
	t, ok := lifecycle[ch.event]
	if !ok {
		return fmt.Errorf("no transition %q", ch.event)
	}
	if !slices.Contains(t.from, a.Status) {
		return stateError(a, fmt.Sprintf(", and %s happens only from %s", ch.event, joinStatuses(t.from)))
	}
	now := s.now()
	set := map[string]any{"status": t.to, "version": a.Version + 1, "updated_at": now}
	for k, v := range ch.set {
		set[k] = v
	}
	res := tx.Table("approvals").Where("id = ? AND version = ?", a.ID, a.Version).Updates(set)
	if res.Error != nil {
		return fmt.Errorf("move approval: %w", res.Error)
	}
	if res.RowsAffected != 1 {
		return Refuse(FailedPrecondition, "", "approval %s changed while this call ran; read it again", a.ID)
	}
	ev := &TimelineEvent{
		AccountID: a.AccountID, ApprovalID: a.ID, At: now, ActorKind: ch.actorKind, Actor: ch.actor,
		Step: string(ch.event), FromStatus: a.Status, ToStatus: t.to, Note: ch.note, Data: jsonText(ch.data),
	}
	if err := s.appendEvent(tx, a, ev); err != nil {
		return err
	}
	if err := s.approvalChanged(tx, ev); err != nil {
		return err
	}
	if a.RunnerID != "" {
		if err := s.changed(tx, Change{Kind: RunsChanged, AccountID: a.AccountID, RunnerID: a.RunnerID}); err != nil {
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
	applySet(a, ch.set)
	switch {
	case ch.event == EventAnswered:
		return s.queueAskPushes(tx, a) // back to pending: the person is asked again
	case from.Open() && !t.to.Open():
		return s.queueDecidedPushes(tx, a)
	}
	return nil
}

func joinStatuses(ss []Status) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = string(s)
	}
	return strings.Join(parts, " or ")
}

// update loads the approval of the account under a row lock, honours
// expected as compare-and-set, expires it first when its life ran out, and
// then lets decide pick the change. Everything happens in one transaction;
// a refusal records nothing.
func (s *Store) update(ctx context.Context, accountID, id string, expected Status, decide func(tx *gorm.DB, a *Approval) (*change, error)) (*Approval, error) {
	var (
		a       Approval
		expired bool
	)
	err := s.write(ctx, func(tx *gorm.DB) error {
		if err := s.loadForUpdate(tx, accountID, id, &a); err != nil {
			return err
		}
		if a.Status.Open() && !s.now().Before(a.ExpiresAt) {
			expired = true
			return s.move(tx, &a, change{event: EventExpire, actorKind: ActorSystem, actor: "countersign", note: "its life ran out before an answer"})
		}
		if expected != "" && a.Status != expected {
			return stateError(&a, fmt.Sprintf(", not %s", expected))
		}
		ch, err := decide(tx, &a)
		if err != nil || ch == nil {
			return err
		}
		if a.Status.Open() && !s.now().Before(a.ExpiresAt) {
			// The deadline passed while decide ran: what it decided (and
			// timed) is dropped, and nothing a command would do happens.
			expired = true
			return s.move(tx, &a, change{event: EventExpire, actorKind: ActorSystem, actor: "countersign", note: "its life ran out before an answer"})
		}
		if err := s.move(tx, &a, *ch); err != nil || ch.after == nil {
			return err
		}
		return ch.after(tx, &a)
	})
	if err != nil {
		return nil, err
	}
	if expired {
		return &a, Refuse(FailedPrecondition, "", "approval %s expired at %s; nothing was recorded", a.ID, a.ExpiresAt.Format(time.RFC3339))
	}
	return &a, nil
}

func (s *Store) loadForUpdate(tx *gorm.DB, accountID, id string, a *Approval) error {
	err := s.lock(tx.Table("approvals")).Where("id = ? AND account_id = ?", id, accountID).Take(a).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return Refuse(NotFound, "approval_id", "no approval %q in this account", id)
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

// parseExpectedState reads a report's expected_state, the compare-and-set of
// approvals_add_progress: "" for none, else one of the states the seed names.
// A state other than the approval's own then fails with FAILED_PRECONDITION
// naming it (update).
func parseExpectedState(state string) (Status, error) {
	switch state {
	case "":
		return "", nil
	case "pending", "question", "approved", "in_progress":
		return Status(state), nil
	}
	return "", Invalid("expected_state", "must be pending, question, approved or in_progress (the state you last read), not %q", state)
}

// AddProgress records a step the requesting agent reports on its ask.
func (s *Store) AddProgress(ctx context.Context, agent *Agent, id string, p Progress) (*Approval, error) {
	if !slices.Contains(ProgressSteps, p.Step) {
		return nil, Invalid("step", "must be one of %s, not %q", strings.Join(ProgressSteps, ", "), p.Step)
	}
	expected, err := parseExpectedState(p.ExpectedState)
	if err != nil {
		return nil, err
	}
	if n := runeCount(p.Note); n > NoteLimit {
		return nil, Invalid("note", "at most %d characters (got %d)", NoteLimit, n)
	}
	if p.Step == "answered" && strings.TrimSpace(p.Note) == "" {
		return nil, Invalid("note", "\"answered\" needs a note: your reply to the person's question")
	}
	var observedHash string
	if p.Step == "started" {
		if len(p.Observed) == 0 || string(p.Observed) == "null" {
			return nil, Invalid("observed", "\"started\" needs observed: the payload as you see it now")
		}
		_, h, err := CanonicalHash(p.Observed)
		if err != nil {
			return nil, Invalid("observed", "not JSON that can be canonicalized: %v", err)
		}
		observedHash = h
	} else if len(p.Observed) > 0 && string(p.Observed) != "null" {
		return nil, Invalid("observed", "only \"started\" takes observed")
	}
	return s.update(ctx, agent.AccountID, id, expected, func(_ *gorm.DB, a *Approval) (*change, error) {
		if a.RequesterID != agent.ID {
			return nil, Refuse(PermissionDenied, "approval_id", "only the agent that filed approval %s reports progress on it", a.ID)
		}
		if a.Kind == KindRun && p.Step != "answered" {
			return nil, Refuse(PermissionDenied, "step", "%q on a pinned run is refused for agents: only the enrolled runner's own signature moves it", p.Step)
		}
		ch := &change{actorKind: ActorAgent, actor: agent.Subject, note: p.Note}
		switch p.Step {
		case "started":
			ch.event = EventStarted
			ch.data = map[string]string{"observed_sha256": observedHash}
			if observedHash != a.PayloadSHA256 && a.Status == StatusApproved {
				ch.event = EventObservedChanged
				ch.set = map[string]any{"note": "observed payload differs from the approved one"}
			}
		case "step":
			ch.event = EventStep
		case "answered":
			ch.event = EventAnswered
		case "done":
			ch.event = EventDone
		case "failed":
			ch.event = EventFailed
		case "stale":
			ch.event = EventWithdraw
		}
		return ch, nil
	})
}

// Decide records a person's answer to an ask. The caller has verified the
// person's signature over the decision; Decide checks that the person may
// decide this ask and that the ask is still open and alive.
func (s *Store) Decide(ctx context.Context, accountID, id string, m *Member, d Decision) (*Approval, error) {
	if n := runeCount(d.Note); n > NoteLimit {
		return nil, Invalid("note", "at most %d characters (got %d)", NoteLimit, n)
	}
	a, err := s.update(ctx, accountID, id, "", func(tx *gorm.DB, a *Approval) (*change, error) {
		if !m.MayDecide(a) {
			return nil, Refuse(PermissionDenied, "approval_id", "approval %s is not asked of %s", a.ID, m.Subject)
		}
		if a.Status != StatusPending {
			return nil, stateError(a, "; only a pending ask can be answered")
		}
		if (a.Kind == KindRun || a.Kind == KindAutoApprove || a.Kind == KindRuleChange || a.Kind == KindMemberChange) && d.Nonce == nil {
			return nil, Refuse(PermissionDenied, "proof", "a %s ask is decided only with a device-key signature", a.Kind)
		}
		if d.Verdict == VerdictQuestion && strings.TrimSpace(d.Note) == "" {
			return nil, Invalid("note", "a question needs its text")
		}
		v, err := ParseVerdict(a, d.Verdict, d.Note)
		if err != nil {
			return nil, err
		}
		if d.Nonce != nil {
			if err := s.spendChallenge(tx, a, m.ID, d.Signed(), d.Nonce); err != nil {
				return nil, err
			}
			if err := s.useDeviceKey(tx, m.ID, d.CredentialID, d.SignCount, d.Credential); err != nil {
				return nil, err
			}
		}
		if d.PushLink != "" {
			if err := s.spendPushLink(tx, d.PushLink, a, m.ID); err != nil {
				return nil, err
			}
		}
		now := s.now()
		ch := &change{actorKind: ActorPerson, actor: m.Subject, note: d.Note}
		decided := map[string]any{"decided_by": m.Subject, "decided_at": now, "note": d.Note, "proof": nullableJSON(d.Proof)}
		switch v.Verdict {
		case VerdictApprove:
			ch.event, ch.set = EventApprove, withDecision(decided, string(v.Verdict))
			if a.Kind == KindAutoApprove {
				ch.after = func(tx *gorm.DB, a *Approval) error { return s.enablePolicy(tx, a, m, d.CredentialID) }
			}
			if a.Kind == KindRuleChange {
				ch.after = func(tx *gorm.DB, a *Approval) error { return s.applyRuleChange(tx, a, m.Subject) }
			}
			if a.Kind == KindMemberChange {
				ch.after = func(tx *gorm.DB, a *Approval) error { return s.applyMemberChange(tx, a, m.Subject) }
			}
			if a.IsRequest() {
				// A command executes in the transaction that records the
				// approval, which update opened after checking the stored deadline.
				ch.after = func(tx *gorm.DB, a *Approval) error { return s.executeRequest(tx, a, m.Subject) }
			}
		case VerdictDeny:
			ch.event, ch.set = EventDeny, withDecision(decided, string(v.Verdict))
		case VerdictNotMine:
			ch.event, ch.set = EventNotMine, withDecision(decided, string(v.Verdict))
			ch.after = func(tx *gorm.DB, a *Approval) error {
				return s.disableAgent(tx, a.RequesterID, "not mine: "+m.Subject, m.Subject, "requesting agent blocked by "+m.Subject+" (not mine)")
			}
		case VerdictQuestion:
			ch.event, ch.set = EventQuestion, map[string]any{"note": d.Note}
			if d.Proof != nil {
				ch.data = json.RawMessage(d.Proof)
			}
		default: // an option, checked against the ask's
			decided["note"] = v.Note
			ch.event, ch.set, ch.note = EventApprove, withDecision(decided, string(v.Verdict)), v.Note
		}
		if req := a.RequirementOf(); req != nil {
			return s.countersign(tx, a, req, m, d, v.Verdict, ch)
		}
		return ch, nil
	})
	return a, err
}

func withDecision(m map[string]any, decision string) map[string]any {
	m["decision"] = decision
	return m
}

// Cancel closes an open ask on an admin's word.
func (s *Store) Cancel(ctx context.Context, accountID, id, by, note string) (*Approval, error) {
	return s.update(ctx, accountID, id, "", func(_ *gorm.DB, a *Approval) (*change, error) {
		return &change{event: EventCancel, actorKind: ActorAdmin, actor: by, note: note}, nil
	})
}

// disableAgent stops, inside tx, the agent's token, ends its OAuth grants
// and its open MCP sessions and streams on every instance (endGrants), and
// cancels its open asks.
func (s *Store) disableAgent(tx *gorm.DB, agentID, reason, by, note string) error {
	if err := tx.Table("agents").Where("id = ?", agentID).
		Updates(map[string]any{"disabled": true, "disabled_reason": reason}).Error; err != nil {
		return fmt.Errorf("disable agent: %w", err)
	}
	if err := s.endGrants(tx, []string{agentID}); err != nil {
		return err
	}
	return s.cancelOpenAsksOf(tx, agentID, by, note)
}

// cancelOpenAsksOf cancels, inside tx, every open ask the agent filed.
func (s *Store) cancelOpenAsksOf(tx *gorm.DB, agentID, by, note string) error {
	var open []Approval
	if err := s.lock(tx.Table("approvals")).Where("requester_id = ? AND "+openAsks, agentID).Find(&open).Error; err != nil {
		return fmt.Errorf("find open asks: %w", err)
	}
	for i := range open {
		if err := s.move(tx, &open[i], change{event: EventCancel, actorKind: ActorSystem, actor: by, note: note}); err != nil {
			return err
		}
	}
	return nil
}

// ExpireDue closes every open ask whose life ran out and returns how many it
// closed. Each is its own transaction, so one failure stops none of the others.
func (s *Store) ExpireDue(ctx context.Context) (int, error) {
	var due []struct{ ID, AccountID string }
	if err := s.db.WithContext(ctx).Table("approvals").Select("id, account_id").
		Where(openAsks+" AND expires_at <= ?", s.now()).Order("expires_at").Limit(500).Find(&due).Error; err != nil {
		return 0, fmt.Errorf("find due asks: %w", err)
	}
	n := 0
	for _, d := range due {
		_, err := s.update(ctx, d.AccountID, d.ID, "", func(*gorm.DB, *Approval) (*change, error) { return nil, nil })
		switch {
		case err == nil: // answered or closed in between
		case CodeOf(err) == FailedPrecondition:
			n++
		default:
			return n, err
		}
	}
	return n, nil
}
