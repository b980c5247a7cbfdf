package work

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/countersign/countersign/ask"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
	"gorm.io/gorm"
)

// DefaultAgentIdle is how long an agent session lives without a heartbeat
// unless SetAgentSessionIdle changes it.
const DefaultAgentIdle = 30 * time.Minute

// SetAgentSessionIdle sets how long an agent session lives without a
// heartbeat. It is called once, at start, before the store serves.
func (s *Tracker) SetAgentSessionIdle(d time.Duration) { s.agentIdle = d }

// AgentSession is an agent's working session.
type AgentSession struct {
	ID           string
	AccountID    string
	AgentID      string
	AgentSubject string
	Label        string
	StartedAt    time.Time
	HeartbeatAt  time.Time
	EndedAt      *time.Time
	EndReason    string
}

// States of a session.
const (
	SessionActive  = "active"
	SessionWaiting = "waiting"
	SessionEnded   = "ended"
)

// Why a session ended.
const (
	EndedByAgent = "ended by its agent"
	EndedIdle    = "no heartbeat for the idle time"
)

// Beat is what a heartbeat returns: the session's state, the requests it
// waits on and the instructions delivered with this heartbeat.
type Beat struct {
	Session      *AgentSession
	State        string
	WaitingOn    []string
	Instructions []Outcome
}

// StartSession opens a session for the agent.
func (s *Tracker) StartSession(ctx context.Context, agent *people.Agent, label string) (*AgentSession, error) {
	if err := ask.CheckOneLineOptional("label", label, 120); err != nil {
		return nil, err
	}
	now := s.Now()
	ss := &AgentSession{ID: core.NewID("sess"), AccountID: agent.AccountID, AgentID: agent.ID, AgentSubject: agent.Subject,
		Label: label, StartedAt: now, HeartbeatAt: now}
	err := s.Write(ctx, func(tx *gorm.DB) error {
		if err := tx.Table("agent_sessions").Create(ss).Error; err != nil {
			return fmt.Errorf("start session: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ss, nil
}

// ErrSessionIdle marks, inside a write, a session found idle: the write ends
// it and commits, and the caller is refused afterwards.
var ErrSessionIdle = errors.New("session idle")

// OpenSession loads and locks, inside tx, one of the agent's sessions. A
// session of another agent or account is NOT_FOUND, an ended one
// FAILED_PRECONDITION; one idle too long is ended here and ErrSessionIdle
// returned with it.
func (s *Tracker) OpenSession(tx *gorm.DB, agent *people.Agent, id, field string) (*AgentSession, error) {
	var ss AgentSession
	err := s.Lock(tx.Table("agent_sessions")).Where("id = ? AND account_id = ? AND agent_id = ?", id, agent.AccountID, agent.ID).Take(&ss).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, core.Refuse(core.NotFound, field, "no session %q of yours: start one with session_start", id)
	}
	if err != nil {
		return nil, fmt.Errorf("load session: %w", err)
	}
	if ss.EndedAt != nil {
		return &ss, EndedError(&ss, field)
	}
	now := s.Now()
	if !now.Before(s.idleAt(s.beats.latest(ss.ID, ss.HeartbeatAt))) {
		if err := s.endSession(tx, &ss, EndedIdle); err != nil {
			return nil, err
		}
		return &ss, ErrSessionIdle
	}
	return &ss, nil
}

func EndedError(ss *AgentSession, field string) error {
	return core.Refuse(core.FailedPrecondition, field, "session %s ended at %s (%s): start a new one with session_start",
		ss.ID, ss.EndedAt.Format(time.RFC3339), ss.EndReason)
}

func (s *Tracker) endSession(tx *gorm.DB, ss *AgentSession, reason string) error {
	now := s.Now()
	if err := tx.Table("agent_sessions").Where("id = ? AND ended_at IS NULL", ss.ID).
		Updates(map[string]any{"ended_at": now, "end_reason": reason}).Error; err != nil {
		return fmt.Errorf("end session: %w", err)
	}
	ss.EndedAt, ss.EndReason = &now, reason
	return nil
}

// withSession runs fn on one of the agent's open sessions inside a write. A
// session found idle is ended (that commits) and the call refused.
func (s *Tracker) withSession(ctx context.Context, agent *people.Agent, id, field string, fn func(tx *gorm.DB, ss *AgentSession) error) (*AgentSession, error) {
	var (
		ss   *AgentSession
		idle bool
	)
	err := s.Write(ctx, func(tx *gorm.DB) error {
		var err error
		if ss, err = s.OpenSession(tx, agent, id, field); err != nil {
			if errors.Is(err, ErrSessionIdle) {
				idle = true
				return nil // its end commits
			}
			return err
		}
		return fn(tx, ss)
	})
	if err != nil {
		return nil, err
	}
	if idle {
		return nil, EndedError(ss, field)
	}
	return ss, nil
}

// EndSession ends one of the agent's sessions. Its requests stay; their
// outcomes are read with approval_status.
func (s *Tracker) EndSession(ctx context.Context, agent *people.Agent, id string) (*AgentSession, error) {
	return s.withSession(ctx, agent, id, "sessionId", func(tx *gorm.DB, ss *AgentSession) error {
		return s.endSession(tx, ss, EndedByAgent)
	})
}

// Heartbeat keeps one of the agent's sessions alive and returns its state
// and the outcomes of its requests resolved since the last heartbeat, each
// marked delivered in this transaction so no other heartbeat carries it. A
// heartbeat with nothing to deliver is answered from reads (see quietHeartbeat).
func (s *Tracker) Heartbeat(ctx context.Context, agent *people.Agent, id string) (*Beat, error) {
	beat, err := s.quietHeartbeat(ctx, agent, id)
	if !errors.Is(err, errDeliver) {
		return beat, err
	}
	return s.deliveringHeartbeat(ctx, agent, id)
}

// deliveringHeartbeat is a heartbeat in one transaction: it writes the
// heartbeat time, expires the requests past their deadline, and marks the
// outcomes it returns delivered.
func (s *Tracker) deliveringHeartbeat(ctx context.Context, agent *people.Agent, id string) (*Beat, error) {
	beat := &Beat{WaitingOn: []string{}, Instructions: []Outcome{}}
	ss, err := s.withSession(ctx, agent, id, "sessionId", func(tx *gorm.DB, ss *AgentSession) error {
		now := s.Now()
		beat.WaitingOn, beat.Instructions = beat.WaitingOn[:0], beat.Instructions[:0]
		if err := tx.Table("agent_sessions").Where("id = ?", ss.ID).Update("heartbeat_at", now).Error; err != nil {
			return fmt.Errorf("heartbeat: %w", err)
		}
		ss.HeartbeatAt = now
		var undelivered []AgentRequest
		if err := tx.Table("agent_requests").Where("session_id = ? AND delivered_at IS NULL", ss.ID).
			Order("created_at, approval_id").Find(&undelivered).Error; err != nil {
			return fmt.Errorf("session requests: %w", err)
		}
		var deliver []string
		for i := range undelivered {
			r := &undelivered[i]
			var a asks.Approval
			if err := s.LoadForUpdate(tx, ss.AccountID, r.ApprovalID, &a); err != nil {
				return err
			}
			if a.Status.Open() && !now.Before(a.ExpiresAt) {
				if err := s.Move(tx, &a, asks.StatusChange{Event: asks.EventExpire, ActorKind: asks.ActorSystem, Actor: "countersign", Note: "its life ran out before an answer"}); err != nil {
					return err
				}
			}
			if a.Status.Open() {
				beat.WaitingOn = append(beat.WaitingOn, a.ID)
				continue
			}
			deliver = append(deliver, a.ID)
			beat.Instructions = append(beat.Instructions, OutcomeOf(&a, r))
		}
		if len(deliver) > 0 {
			res := tx.Table("agent_requests").Where("approval_id IN ? AND delivered_at IS NULL", deliver).Update("delivered_at", now)
			if res.Error != nil {
				return fmt.Errorf("deliver instructions: %w", res.Error)
			}
			if res.RowsAffected != int64(len(deliver)) {
				return core.Refuse(core.FailedPrecondition, "sessionId", "another heartbeat of session %s delivered these instructions meanwhile; heartbeat again", ss.ID)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	beat.Session, beat.State = ss, SessionActive
	if len(beat.WaitingOn) > 0 {
		beat.State = SessionWaiting
	}
	return beat, nil
}

// EndIdleSessions ends every session that has not heartbeated for the idle
// time and returns how many it ended.
func (s *Tracker) EndIdleSessions(ctx context.Context) (int64, error) {
	if _, err := s.FlushHeartbeats(ctx); err != nil {
		return 0, err
	}
	var n int64
	err := s.Write(ctx, func(tx *gorm.DB) error {
		now := s.Now() // idleAt(heartbeat_at) <= now, said as a bound on heartbeat_at
		res := tx.Table("agent_sessions").Where("ended_at IS NULL AND heartbeat_at <= ?", now.Add(-s.idleAfter())).
			Updates(map[string]any{"ended_at": now, "end_reason": EndedIdle})
		n = res.RowsAffected
		return res.Error
	})
	if err != nil {
		return 0, fmt.Errorf("end idle sessions: %w", err)
	}
	return n, nil
}

// SessionView is a session as the sessions page shows it.
type SessionView struct {
	AgentSession
	State     string
	WaitingOn []asks.Approval
}

// ListSessions returns the account's sessions started in the last week or
// still open, waiting ones first, then by last heartbeat, newest first.
func (s *Tracker) ListSessions(ctx context.Context, accountID string, limit int) ([]SessionView, error) {
	now := s.Now()
	var list []AgentSession
	if err := s.DB().WithContext(ctx).Table("agent_sessions").Where("account_id = ? AND (ended_at IS NULL OR ended_at > ?)", accountID, now.Add(-7*24*time.Hour)).
		Order("heartbeat_at DESC").Limit(limit).Find(&list).Error; err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	out := make([]SessionView, 0, len(list))
	var waiting, rest []SessionView
	for _, ss := range list {
		v := SessionView{AgentSession: ss, State: SessionActive}
		v.HeartbeatAt = s.beats.latest(ss.ID, ss.HeartbeatAt)
		if idle := s.idleAt(v.HeartbeatAt); ss.EndedAt == nil && !now.Before(idle) {
			v.EndedAt, v.EndReason = &idle, EndedIdle
		}
		if v.EndedAt != nil {
			v.State = SessionEnded
			rest = append(rest, v)
			continue
		}
		if err := s.DB().WithContext(ctx).Table("approvals").
			Joins("JOIN agent_requests ON agent_requests.approval_id = approvals.id").
			Select("approvals.*").Where("agent_requests.session_id = ? AND approvals.status IN ? AND approvals.expires_at > ?", ss.ID, asks.OpenStatuses, now).
			Order("approvals.created_at").Find(&v.WaitingOn).Error; err != nil {
			return nil, fmt.Errorf("session requests: %w", err)
		}
		if len(v.WaitingOn) > 0 {
			v.State = SessionWaiting
			waiting = append(waiting, v)
			continue
		}
		rest = append(rest, v)
	}
	out = append(out, waiting...)
	return append(out, rest...), nil
}
