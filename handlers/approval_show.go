package handlers

import (
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/ask"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
	"github.com/countersign/countersign/models/policy"
	"github.com/countersign/countersign/models/work"
	"github.com/countersign/countersign/views"
)

// ApprovalShow is the page of one ask of the viewer's account: the payload
// by kind, the explanation, the answer buttons when the viewer may decide,
// and the timeline. An ask of another account is NOT_FOUND.
func (h *Handlers) ApprovalShow(c echo.Context) error {
	ctx := c.Request().Context()
	v := viewerOf(c)
	a, err := h.store.GetApproval(ctx, v.account.ID, c.Param("id"))
	if err != nil {
		return err
	}
	view, err := h.askPage(ctx, a, v.member)
	if err != nil {
		return err
	}
	return h.render(c, http.StatusOK, views.Approval(h.page(c, a.Title, ""), view))
}

// askPage reads what the page of ask a shows to member m: the ask, its
// timeline, the runner a pinned run names and an approval_request's words;
// on an ask a rule covers, the quorum, and no answer once m's signature is in.
func (h *Handlers) askPage(ctx context.Context, a *asks.Approval, m *people.Member) (views.Ask, error) {
	events, err := h.store.Timeline(ctx, a.AccountID, a.ID)
	if err != nil {
		return views.Ask{}, err
	}
	// The ask again, read after its timeline: what the page shows of it is
	// then never older than the timeline. The live timeline resumes after
	// the last event shown, so a status older than that event would stay
	// on the page (a run that went on to done while the page was read); a
	// status newer than the timeline is caught up by the live timeline,
	// which stays on until the timeline shows the event that closed the
	// ask (views.Ask.Settled).
	if a, err = h.store.GetApproval(ctx, a.AccountID, a.ID); err != nil {
		return views.Ask{}, err
	}
	view := h.askView(a, events, m)
	if a.RunnerID != "" {
		r, err := h.store.RunnerByID(ctx, a.AccountID, a.RunnerID)
		if err != nil {
			return views.Ask{}, err
		}
		view.RunnerName = r.Name
	}
	if view.Request, err = h.requestView(ctx, a); err != nil {
		return views.Ask{}, err
	}
	if view.Quorum, err = h.quorumView(ctx, a, m); err != nil {
		return views.Ask{}, err
	}
	if view.Quorum != nil && view.Quorum.You != nil {
		view.CanDecide = false // their answer is in: the same person signs once
	}
	if rc := view.Payload.RuleChange; rc != nil {
		if r, err := h.store.RuleByID(ctx, a.AccountID, rc.RuleID); err == nil {
			view.RuleName = r.Name
		} else if core.CodeOf(err) != core.NotFound {
			return views.Ask{}, err
		}
	}
	if view.CanDecide && view.MayBlock() {
		if view.OpenAsksOfAgent, err = h.store.CountOpenAsksOf(ctx, a.AccountID, a.RequesterID); err != nil {
			return views.Ask{}, err
		}
	}
	return view, nil
}

// quorumView reads what the page says of the signatures on an ask an
// approval rule covers: the rule by name, who signed, who may still sign
// (the escalation pool too, once it escalated), and m's own signature;
// nil for other asks.
func (h *Handlers) quorumView(ctx context.Context, a *asks.Approval, m *people.Member) (*views.Quorum, error) {
	q, sigs, err := h.store.QuorumOf(ctx, a)
	if err != nil || q == nil {
		return nil, err
	}
	req := q.Requirement
	out := &views.Quorum{RuleID: req.RuleID, Count: req.Count, Approved: q.Approved, DeniedBy: q.DeniedBy, Waiting: q.Waiting(),
		NotCounted: req.NotCounted, Escalation: req.Escalation, EscalateIn: time.Duration(req.EscalateAfter) * time.Second, EscalatedAt: a.EscalatedAt}
	if a.EscalatedAt != nil {
		for _, p := range req.Escalation {
			if !slices.Contains(out.Waiting, p) && !slices.Contains(q.Approved, p) && p != q.DeniedBy {
				out.Waiting = append(out.Waiting, p)
			}
		}
	}
	if m != nil {
		out.Viewer = m.Subject
	}
	for _, g := range sigs {
		if m != nil && g.PersonID == m.ID {
			out.You = &views.Signed{Approved: g.Approves(), At: g.CreatedAt}
		}
	}
	rules, err := h.store.RulesWithRemoved(ctx, a.AccountID)
	if err != nil {
		return nil, err
	}
	for _, r := range rules {
		if r.ID == req.RuleID {
			out.RuleName = r.Name
		}
	}
	return out, nil
}

// requestView reads what the page says of an ask filed with
// approval_request: its proposal with the board's names for the item and
// columns, its question, and what its command did; nil for other asks.
func (h *Handlers) requestView(ctx context.Context, a *asks.Approval) (*views.Request, error) {
	p := a.Request()
	if p == nil {
		return nil, nil
	}
	r := &views.Request{Description: p.Description, TargetType: p.TargetType, TargetID: p.TargetID, Mode: p.Proposal.Mode, Question: p.Question}
	row, err := h.store.RequestOf(ctx, a.ID)
	if err != nil {
		return nil, err
	}
	if row != nil && row.Method != "" && row.Result != "" {
		r.Outcome = &views.Executed{Done: row.Executed, Result: row.Result}
	}
	if m := p.Move(); m != nil {
		board, err := h.store.WorkBoard(ctx, a.AccountID, "")
		if err != nil {
			return nil, err
		}
		r.Move = moveWords(board, m.ItemID, m.ColumnKey)
		r.Move.Executed = r.Outcome != nil && r.Outcome.Done
	}
	return r, nil
}

// moveWords names a work_move in the board's words: the item's title, the
// name of its column now and of the column it moves to; what the board no
// longer has keeps its id or key.
func moveWords(board *work.Board, itemID, columnKey string) *views.Move {
	m := &views.Move{ItemID: itemID, Item: itemID, To: board.ColumnName(columnKey)}
	for _, it := range board.Items {
		if it.ID == itemID {
			m.Item, m.From = it.Title, board.ColumnName(it.ColumnKey)
		}
	}
	return m
}

// askView reads an ask into what its page shows. The payload and context
// were validated when the ask was filed; one that no longer reads is shown
// as its canonical text, and the failure is logged.
func (h *Handlers) askView(a *asks.Approval, events []asks.TimelineEvent, m *people.Member) views.Ask {
	now := h.store.Now()
	payload, err := views.DecodePayload(a.Kind, a.Payload)
	if err != nil {
		h.log.Error("ask payload does not read", "approval", a.ID, "err", err)
	}
	var actx views.Context
	if a.Context != nil {
		if actx, err = views.DecodeContext(*a.Context); err != nil {
			h.log.Error("ask context does not read", "approval", a.ID, "err", err)
		}
	}
	out := views.Ask{
		ID: a.ID, Kind: a.Kind, Title: a.Title, Summary: a.Summary, ApproveMeans: a.ApproveMeans, DenyMeans: a.DenyMeans,
		PayloadSHA256: a.PayloadSHA256, Payload: payload, Context: actx, Links: a.LinkList(),
		AgentLabel: a.AgentLabel, Requester: a.RequesterSubject, AskedOf: a.AskedOf, Status: string(a.Status),
		CheckCodeShownIn: a.CheckCodeShownIn, Decision: a.Decision, DecidedBy: a.DecidedBy, DecidedAt: a.DecidedAt, Note: a.Note, HasProof: a.Proof != nil,
		Supersedes: a.Supersedes, SupersededBy: a.SupersededBy, CreatedAt: a.CreatedAt, ExpiresAt: a.ExpiresAt, Now: now,
		CanDecide: a.Status == asks.StatusPending && now.Before(a.ExpiresAt) && m.MayDecide(a),
		Editable:  views.EditFields(a.EditableMembers(), []byte(a.Payload)),
	}
	if a.EditedPayload != "" {
		out.EditsMade = views.EditsMade([]byte(a.Payload), []byte(a.EditedPayload))
	}
	for _, e := range events {
		out.Timeline = append(out.Timeline, eventView(e))
	}
	if out.CanDecide && policy.CheckWindow(a) == nil {
		target, _ := ask.TargetOf(a.Kind, a.Payload)
		out.Window = &views.WindowChoice{Agent: a.RequesterSubject, Kind: a.Kind, Target: target, Minutes: ask.WindowMinutes, Default: ask.DefaultWindowMinutes}
	}
	return out
}

func eventView(e asks.TimelineEvent) views.Event {
	return views.Event{Seq: e.Seq, At: e.At, Actor: e.Actor, By: e.ActorKind, Step: e.Step,
		From: string(e.FromStatus), To: string(e.ToStatus), Note: e.Note, RunnerSigned: e.RunnerSignature() != nil}
}
