package work

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
	"gorm.io/gorm"
)

// heartbeats are the heartbeat times noted and not yet written, by session.
type heartbeats struct {
	mu      sync.Mutex
	pending map[string]time.Time
}

func newHeartbeats() *heartbeats { return &heartbeats{pending: map[string]time.Time{}} }

// note keeps t as the session's newest heartbeat.
func (h *heartbeats) note(id string, t time.Time) {
	h.mu.Lock()
	if t.After(h.pending[id]) {
		h.pending[id] = t
	}
	h.mu.Unlock()
}

// latest is the newer of recorded and the time noted for the session.
func (h *heartbeats) latest(id string, recorded time.Time) time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	if t, ok := h.pending[id]; ok && t.After(recorded) {
		return t
	}
	return recorded
}

// take empties the pending times and returns them.
func (h *heartbeats) take() map[string]time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.pending
	h.pending = map[string]time.Time{}
	return out
}

// putBack returns times a failed flush could not write.
func (h *heartbeats) putBack(times map[string]time.Time) {
	for id, t := range times {
		h.note(id, t)
	}
}

// HeartbeatFlushEvery is how often noted heartbeat times must be written:
// a second, or a tenth of the idle time when that is shorter.
func (s *Tracker) HeartbeatFlushEvery() time.Duration {
	return min(time.Second, s.agentIdle/10)
}

// idleAfter is how long a session lives after its newest heartbeat time.
func (s *Tracker) idleAfter() time.Duration { return s.agentIdle + s.HeartbeatFlushEvery() }

// idleAt is when a session whose newest heartbeat was at last ends as idle:
// from then on it is no longer alive.
func (s *Tracker) idleAt(last time.Time) time.Time { return last.Add(s.idleAfter()) }

// flushChunk bounds the session ids one UPDATE of a flush names.
const flushChunk = 1000

// FlushHeartbeats writes the heartbeat times noted since the last flush, in
// one transaction of one UPDATE per thousand sessions: each session noted
// gets the newest time noted, which is at most one flush period after its
// own, so a session may live up to that much longer, never shorter. A flush
// never moves a session's heartbeat back, nor touches an ended session. It
// returns how many sessions it wrote.
func (s *Tracker) FlushHeartbeats(ctx context.Context) (int, error) {
	times := s.beats.take()
	if len(times) == 0 {
		return 0, nil
	}
	ids := make([]string, 0, len(times))
	var newest time.Time
	for id, t := range times {
		ids = append(ids, id)
		if t.After(newest) {
			newest = t
		}
	}
	slices.Sort(ids) // the same lock order in every flush, on PostgreSQL
	err := s.Write(ctx, func(tx *gorm.DB) error {
		for chunk := range slices.Chunk(ids, flushChunk) {
			if err := tx.Table("agent_sessions").Where("id IN ? AND ended_at IS NULL AND heartbeat_at < ?", chunk, newest).
				Update("heartbeat_at", newest).Error; err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		s.beats.putBack(times)
		return 0, fmt.Errorf("write heartbeats: %w", err)
	}
	return len(times), nil
}

// pendingRequest is an undelivered request of a session and where its ask stands.
type pendingRequest struct {
	ApprovalID string
	Status     asks.Status
	ExpiresAt  time.Time
}

// errDeliver sends a heartbeat to the transaction that delivers: the session
// has an outcome to deliver, a request past its deadline, or is idle.
var errDeliver = errors.New("heartbeat has something to write")

// quietHeartbeat answers a heartbeat by reads alone when its session is open
// and alive and none of its undelivered requests is resolved or past its
// deadline; it notes the heartbeat's time. errDeliver means the heartbeat
// must run in a transaction.
func (s *Tracker) quietHeartbeat(ctx context.Context, agent *people.Agent, id string) (*Beat, error) {
	db := s.DB().WithContext(ctx)
	var ss AgentSession
	err := db.Table("agent_sessions").Where("id = ? AND account_id = ? AND agent_id = ?", id, agent.AccountID, agent.ID).Take(&ss).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, core.Refuse(core.NotFound, "sessionId", "no session %q of yours: start one with session_start", id)
	}
	if err != nil {
		return nil, fmt.Errorf("load session: %w", err)
	}
	if ss.EndedAt != nil {
		return nil, EndedError(&ss, "sessionId")
	}
	now := s.Now()
	if !now.Before(s.idleAt(s.beats.latest(ss.ID, ss.HeartbeatAt))) {
		return nil, errDeliver
	}
	var open []pendingRequest
	if err := db.Table("agent_requests").Joins("JOIN approvals ON approvals.id = agent_requests.approval_id").
		Select("agent_requests.approval_id, approvals.status, approvals.expires_at").
		Where("agent_requests.session_id = ? AND agent_requests.delivered_at IS NULL", ss.ID).
		Order("agent_requests.created_at, agent_requests.approval_id").Find(&open).Error; err != nil {
		return nil, fmt.Errorf("session requests: %w", err)
	}
	beat := &Beat{Session: &ss, State: SessionActive, WaitingOn: []string{}, Instructions: []Outcome{}}
	for _, r := range open {
		if !r.Status.Open() || !now.Before(r.ExpiresAt) {
			return nil, errDeliver
		}
		beat.WaitingOn = append(beat.WaitingOn, r.ApprovalID)
	}
	if len(beat.WaitingOn) > 0 {
		beat.State = SessionWaiting
	}
	s.beats.note(ss.ID, now)
	ss.HeartbeatAt = now
	return beat, nil
}
