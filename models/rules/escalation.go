package rules

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/outbox"
	"gorm.io/gorm"
)

// An ask an approval rule covers does not wait in silence. The sweeper
// (RemindAndEscalate) pushes it again to the people who have not signed
// after its rule's reminder interval, and, once its frozen escalation delay
// has passed unanswered, escalates it: approvals.escalated_at is set, the
// rule's escalation pool may sign from then on (MayDecide), its people are
// pushed, and the timeline says so. Both steps are conditional updates, so
// two instances sweeping at once never push twice; the pushes go through
// the same fatigue cap as every ask push.

// Default reminder intervals, for a rule that sets no RemindEvery: an ask
// with less than an hour left is pushed again every RemindSoon, one with
// more every RemindLater (an ask that lives a day is not worth a push every
// ten minutes; an hour keeps it in mind without nagging).
const (
	RemindSoon  = 10 * time.Minute
	RemindLater = time.Hour
)

// remindEvery is how long an ask waits between pushes: its rule's
// RemindEvery, else the default by the time it has left.
func remindEvery(spec *RuleSpec, left time.Duration) time.Duration {
	if spec != nil && spec.RemindEvery > 0 {
		return time.Duration(spec.RemindEvery)
	}
	if left < time.Hour {
		return RemindSoon
	}
	return RemindLater
}

// RemindAndEscalate makes one pass over the pending asks that rules cover:
// it escalates each whose escalation delay has passed and pushes again
// each whose reminder interval has. It returns how many it reminded and
// escalated.
func (s *Book) RemindAndEscalate(ctx context.Context) (reminded, escalated int, err error) {
	var due []asks.Approval
	now := s.Now()
	if err := s.DB().WithContext(ctx).Table("approvals").
		Where("status = ? AND requirement IS NOT NULL AND expires_at > ?", asks.StatusPending, now).
		Order("expires_at").Limit(500).Find(&due).Error; err != nil {
		return 0, 0, fmt.Errorf("find asks to remind: %w", err)
	}
	specs := map[string]map[string]*RuleSpec{} // account → rule id → spec
	for i := range due {
		a := &due[i]
		req := a.RequirementOf()
		if req == nil {
			continue
		}
		if specs[a.AccountID] == nil {
			rules, err := s.RulesTx(s.DB().WithContext(ctx), a.AccountID, true)
			if err != nil {
				return reminded, escalated, err
			}
			specs[a.AccountID] = map[string]*RuleSpec{}
			for _, r := range rules {
				specs[a.AccountID][r.ID] = &r.RuleSpec
			}
		}
		if spec := specs[a.AccountID][req.RuleID]; spec != nil && spec.EscalateChannel != "" && spec.EscalateAfter > 0 &&
			!now.Before(a.CreatedAt.Add(time.Duration(spec.EscalateAfter))) {
			if err := s.postEscalation(ctx, a, spec); err != nil {
				return reminded, escalated, err
			}
		}
		if a.EscalatedAt == nil && len(req.Escalation) > 0 && req.EscalateAfter > 0 &&
			!now.Before(a.CreatedAt.Add(time.Duration(req.EscalateAfter)*time.Second)) {
			ok, err := s.escalate(ctx, a)
			if err != nil {
				return reminded, escalated, err
			}
			if ok {
				escalated++
			}
			continue // the escalation pushed everyone: no reminder on the same pass
		}
		last := a.CreatedAt
		if a.RemindedAt != nil && a.RemindedAt.After(last) {
			last = *a.RemindedAt
		}
		if now.Before(last.Add(remindEvery(specs[a.AccountID][req.RuleID], a.ExpiresAt.Sub(now)))) {
			continue
		}
		ok, err := s.remind(ctx, a)
		if err != nil {
			return reminded, escalated, err
		}
		if ok {
			reminded++
		}
	}
	return reminded, escalated, nil
}

// postEscalation posts a, unanswered past its rule's escalation delay, to
// the rule's shared channel, once: the message's key makes a second pass,
// or a second instance, write nothing. A channel removed since is passed
// over.
func (s *Book) postEscalation(ctx context.Context, a *asks.Approval, spec *RuleSpec) error {
	var posted int64
	if err := s.DB().WithContext(ctx).Table("channel_messages").
		Where("approval_id = ? AND channel = ? AND event = ?", a.ID, spec.EscalateChannel, outbox.MessageEscalation).Count(&posted).Error; err != nil || posted > 0 {
		return err
	}
	title := fmt.Sprintf("Unanswered for %s: %s", time.Duration(spec.EscalateAfter), a.Title)
	err := s.Write(ctx, func(tx *gorm.DB) error {
		return s.QueueSharedMessage(tx, a, spec.EscalateChannel, outbox.MessageEscalation, title, "1")
	})
	if core.CodeOf(err) == core.NotFound {
		return nil // removed since (Admin → Channels refuses while a rule names it): nothing to post to
	}
	return err
}

// remind pushes a again to the people who may still sign it. The
// conditional update on reminded_at, from the value this pass read, lets
// one instance remind it and the others find nothing to do.
func (s *Book) remind(ctx context.Context, a *asks.Approval) (bool, error) {
	done := false
	err := s.Write(ctx, func(tx *gorm.DB) error {
		now := s.Now()
		q := tx.Table("approvals").Where("id = ? AND status = ? AND expires_at > ?", a.ID, asks.StatusPending, now)
		if a.RemindedAt == nil {
			q = q.Where("reminded_at IS NULL")
		} else {
			q = q.Where("reminded_at = ?", *a.RemindedAt)
		}
		res := q.Update("reminded_at", now)
		if res.Error != nil {
			return fmt.Errorf("remind: %w", res.Error)
		}
		if res.RowsAffected != 1 {
			return nil // answered, or another instance reminded it
		}
		done = true
		a.RemindedAt = &now
		return s.pushStillWaiting(tx, a, "Reminder: "+a.Title)
	})
	return done, err
}

// pushStillWaiting queues a push titled title to the devices of the people
// who may still sign a (its people who have not signed, and its escalation
// pool once escalated), away ones replaced by their delegates.
func (s *Book) pushStillWaiting(tx *gorm.DB, a *asks.Approval, title string) error {
	req := a.RequirementOf()
	sigs, err := signaturesOf(tx, a.AccountID, a.ID)
	if err != nil {
		return err
	}
	q := quorumOf(req, sigs)
	want := q.Waiting()
	if a.EscalatedAt != nil {
		for _, p := range req.Escalation {
			if !slices.Contains(q.Approved, p) && p != q.DeniedBy && p != req.NotCounted {
				want = append(want, p)
			}
		}
	}
	people, err := s.pushSubjects(tx, a, req, want)
	if err != nil {
		return err
	}
	subs, err := outbox.DevicesOfPeople(tx, a.AccountID, people)
	if err != nil {
		return err
	}
	if err := s.QueueAskPushesTo(tx, a, subs, title); err != nil {
		return err
	}
	// Reminders go to the same channels as the first message, once per reminder.
	return s.QueueAskMessages(tx, a, outbox.MessageReminder, title, a.RemindedAt.UTC().Format(time.RFC3339Nano), nonNil(people))
}

// nonNil is people, or an empty list for none: a nil list means "the ask's
// recipients" to QueueAskMessages.
func nonNil(people []string) []string {
	if people == nil {
		return []string{}
	}
	return people
}

// escalate passes a to its rule's escalation pool, through the state
// machine: the row lock and version check let one instance escalate it.
func (s *Book) escalate(ctx context.Context, a *asks.Approval) (bool, error) {
	done := false
	_, err := s.Update(ctx, a.AccountID, a.ID, asks.StatusPending, func(tx *gorm.DB, cur *asks.Approval) (*asks.StatusChange, error) {
		req := cur.RequirementOf()
		if cur.EscalatedAt != nil || req == nil || len(req.Escalation) == 0 {
			return nil, nil
		}
		now := s.Now()
		done = true
		return &asks.StatusChange{Event: asks.EventEscalated, ActorKind: asks.ActorSystem, Actor: "countersign",
			Note: fmt.Sprintf("unanswered for %s: escalated to %s, who may sign it too", time.Duration(req.EscalateAfter)*time.Second, strings.Join(req.Escalation, ", ")),
			Set:  map[string]any{"escalated_at": now, "reminded_at": now},
			Data: map[string]any{"rule_id": req.RuleID, "escalation": req.Escalation},
			After: func(tx *gorm.DB, cur *asks.Approval) error {
				// The escalation pool hears of it; the people already asked get
				// their reminders as before.
				var fresh []string
				for _, p := range req.Escalation {
					if !slices.Contains(req.People, p) && p != req.NotCounted {
						fresh = append(fresh, p)
					}
				}
				people, err := s.pushSubjects(tx, cur, req, fresh)
				if err != nil {
					return err
				}
				subs, err := outbox.DevicesOfPeople(tx, cur.AccountID, people)
				if err != nil {
					return err
				}
				if err := s.QueueAskPushesTo(tx, cur, subs, "Escalated to you: "+cur.Title); err != nil {
					return err
				}
				return s.QueueAskMessages(tx, cur, outbox.MessageEscalation, "Escalated to you: "+cur.Title, "1", nonNil(people))
			}}, nil
	})
	if err != nil {
		if core.CodeOf(err) == core.FailedPrecondition {
			return false, nil // answered, expired or escalated meanwhile
		}
		return false, err
	}
	return done, nil
}
