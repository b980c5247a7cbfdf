package audit

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/grants"
	"github.com/countersign/countersign/models/oidc"
	"github.com/countersign/countersign/models/people"
	"github.com/countersign/countersign/models/policy"
	"github.com/countersign/countersign/models/rules"
	"github.com/countersign/countersign/models/runners"
)

// ActorKinds are the kinds of actor a timeline event names.
var ActorKinds = []string{asks.ActorAgent, asks.ActorPerson, asks.ActorSystem, asks.ActorAdmin, asks.ActorPolicy, asks.ActorRunner}

// AuditSteps are the steps a timeline event can record: "created", every
// event of the state machine, the notes auto-approve policies write, and the
// account's own events, with no approval id: a member joining, a person's
// passkey added or removed.
var AuditSteps = []string{"created", string(asks.EventApprove), string(asks.EventAutoApprove), string(asks.EventDeny), string(asks.EventNotMine),
	string(asks.EventQuestion), string(asks.EventAnswered), string(asks.EventWithdraw), string(asks.EventExpire), string(asks.EventSupersede),
	string(asks.EventCancel), string(asks.EventStarted), string(asks.EventObservedChanged), string(asks.EventStep), string(asks.EventDone), string(asks.EventFailed),
	string(asks.EventExecuted), string(asks.EventNotExecuted), string(asks.EventCountersigned), string(asks.EventEscalated), rules.StepRuleSet, rules.StepRuleRemoved, rules.StepAway, rules.StepBack,
	policy.StepAutoApproveRequested, policy.StepPolicyEnabled, policy.StepPolicyReplaced, policy.StepPolicyRevoked, policy.StepPolicySkipped,
	people.StepMemberJoined, people.StepInviteRevoked, people.StepPasskeyAdded, people.StepPasskeyRemoved, people.StepPersonRenamed,
	string(asks.EventRunnerDisabled), runners.StepRunnerEnrolled, runners.StepRunnerDisabled,
	grants.StepClientConnected, grants.StepClientDisconnected, people.StepAgentReenabled,
	oidc.StepCIBAClientRegistered, oidc.StepCIBAClientRevoked}

// AuditFilter narrows the audit log. Empty and zero fields are no filter.
type AuditFilter struct {
	ApprovalID string
	ActorKind  string
	Step       string
	Actor      string
	Before     int64 // only events older than this seq: the cursor of the next page
	PageSize   int   // 0 means DefaultPageSize, at most MaxPageSize
}

// Audit returns the account's timeline events that match f, newest first,
// and the Before of the next page (0 on the last). The primary key (seq),
// events_account_step (account_id, step, seq, for every step but created)
// and events_approval_account (approval_id, account_id, seq) serve it.
func (s *Trail) Audit(ctx context.Context, accountID string, f AuditFilter) ([]asks.TimelineEvent, int64, error) {
	size, err := core.PageSize(f.PageSize)
	if err != nil {
		return nil, 0, err
	}
	q := s.DB().WithContext(ctx).Table("events").Where("account_id = ?", accountID)
	if id := strings.TrimSpace(f.ApprovalID); id != "" {
		q = q.Where("approval_id = ?", id)
	}
	if f.ActorKind != "" {
		if !slices.Contains(ActorKinds, f.ActorKind) {
			return nil, 0, core.Invalid("actor_kind", "must be one of %s, not %q", strings.Join(ActorKinds, ", "), f.ActorKind)
		}
		q = q.Where("actor_kind = ?", f.ActorKind)
	}
	if f.Step != "" {
		if !slices.Contains(AuditSteps, f.Step) {
			return nil, 0, core.Invalid("step", "must be one of %s, not %q", strings.Join(AuditSteps, ", "), f.Step)
		}
		if f.Step != "created" {
			q = q.Where(asks.NotCreated) // events_account_step has no created events
		}
		q = q.Where("step = ?", f.Step)
	}
	if a := strings.TrimSpace(f.Actor); a != "" {
		if core.RuneCount(a) > 200 {
			return nil, 0, core.Invalid("actor", "at most 200 characters")
		}
		q = q.Where("actor = ?", a)
	}
	if f.Before < 0 {
		return nil, 0, core.Invalid("before", "must be the cursor of a page this log gave")
	}
	if f.Before > 0 {
		q = q.Where("seq < ?", f.Before)
	}
	var out []asks.TimelineEvent
	if err := q.Order("seq DESC").Limit(size + 1).Find(&out).Error; err != nil {
		return nil, 0, fmt.Errorf("read audit log: %w", err)
	}
	var next int64
	if len(out) > size {
		out = out[:size]
		next = out[size-1].Seq
	}
	return out, next, nil
}

// TimelineAfter returns an approval's events with a seq greater than after,
// oldest first: what a live view has not shown yet.
func (s *Trail) TimelineAfter(ctx context.Context, accountID, approvalID string, after int64) ([]asks.TimelineEvent, error) {
	var out []asks.TimelineEvent
	err := s.DB().WithContext(ctx).Table("events").Where("approval_id = ? AND account_id = ? AND seq > ?", approvalID, accountID, after).
		Order("seq").Limit(core.MaxPageSize).Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("read timeline: %w", err)
	}
	return out, nil
}
