package models

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/countersign/countersign/ask"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
	"github.com/countersign/countersign/models/work"
	"gorm.io/gorm"
)

// FileRequest validates approval_request's arguments and files the request
// for the agent, or returns the request an earlier call with the same
// idempotency key and the same arguments filed (repeat is then true). The
// same key with other arguments is FAILED_PRECONDITION naming idempotencyKey;
// a refused call stores nothing, so it reserves no key. admit, when not nil,
// is asked just before a new request is filed, never for a repeat, and its
// error refuses the call: a retry is answered even when the agent may file
// no new request now.
func (s *Store) FileRequest(ctx context.Context, agent *people.Agent, raw json.RawMessage, admit func() error) (a *asks.Approval, r *work.AgentRequest, repeat bool, err error) {
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
	if err != nil && core.CodeOf(err) == "" {
		// Another call with this key may have won the race to the unique index.
		if a, r, err2 := s.earlierRequest(ctx, agent, req); a != nil || err2 != nil {
			return a, r, true, err2
		}
	}
	return a, r, false, err
}

// earlierRequest finds the request filed with req's idempotency key: nil when
// there is none, a refusal when it was filed with other arguments.
func (s *Store) earlierRequest(ctx context.Context, agent *people.Agent, req *ask.Request) (*asks.Approval, *work.AgentRequest, error) {
	var r work.AgentRequest
	err := s.DB().WithContext(ctx).Table("agent_requests").Where("agent_id = ? AND idempotency_key = ?", agent.ID, req.Key).Take(&r).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("find idempotency key: %w", err)
	}
	if r.ArgumentsSHA256 != req.ArgsSHA256 {
		return nil, nil, core.Refuse(core.FailedPrecondition, "idempotencyKey", "this key already filed request %s with other arguments; retry with the same arguments, or use a new key for a new request", r.ApprovalID)
	}
	a, err := s.GetApproval(ctx, agent.AccountID, r.ApprovalID)
	if err != nil {
		return nil, nil, err
	}
	return a, &r, nil
}

func (s *Store) fileRequest(ctx context.Context, agent *people.Agent, req *ask.Request) (*asks.Approval, *work.AgentRequest, error) {
	now := s.Now()
	expires := now.Add(s.askTTL)
	if req.Minutes > 0 {
		expires = now.Add(time.Duration(req.Minutes) * time.Minute)
	}
	a := &asks.Approval{
		ID: core.NewID("appr"), AccountID: agent.AccountID, Kind: req.Kind, Title: req.Title, Summary: req.Description,
		Payload: string(req.Canonical), PayloadSHA256: req.SHA256,
		RequesterID: agent.ID, RequesterSubject: agent.Subject,
		Status: asks.StatusPending, Version: 1, ExpiresAt: expires, CreatedAt: now, UpdatedAt: now,
	}
	r := &work.AgentRequest{ApprovalID: a.ID, AccountID: agent.AccountID, AgentID: agent.ID, IdempotencyKey: req.Key,
		ArgumentsSHA256: req.ArgsSHA256, SessionID: req.SessionID, CreatedAt: now}
	switch {
	case req.Move != nil:
		a.ApproveMeans = "The item moves at once; nothing moves if it is denied or expires."
	case req.Question != nil:
		a.ApproveMeans = "Your answer goes back to the agent."
	default:
		a.ApproveMeans = "Your decision is recorded; nothing executes."
	}
	var idle *work.AgentSession // the session, ended here as idle
	err := s.Write(ctx, func(tx *gorm.DB) error {
		if req.SessionID != "" {
			ss, err := s.OpenSession(tx, agent, req.SessionID, "sessionId")
			if errors.Is(err, work.ErrSessionIdle) {
				idle = ss
				return nil // the session's end commits; the request is refused below
			}
			if err != nil {
				return err
			}
			a.AgentLabel = ss.Label
		}
		if m := req.Move; m != nil {
			it, err := s.Item(tx, agent.AccountID, m.ItemID, "proposal.command.input.itemId")
			if err != nil {
				return err
			}
			to, err := s.Column(tx, agent.AccountID, m.ColumnKey, "proposal.command.input.columnKey")
			if err != nil {
				return err
			}
			if it.ColumnKey == m.ColumnKey {
				return core.Refuse(core.FailedPrecondition, "proposal.command.input.columnKey", "item %s is already in column %q", it.ID, m.ColumnKey)
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
		return nil, nil, work.EndedError(idle, "sessionId")
	}
	return a, r, nil
}
