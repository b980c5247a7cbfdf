package policy

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/countersign/countersign/ask"

	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
)

// Policy states, as the policy screens show and filter them.
const (
	PolicyActive   = "active"   // on now
	PolicyRevoked  = "revoked"  // turned off by a person or agent, or replaced by a newer one
	PolicyExpired  = "expired"  // its until passed
	PolicyInactive = "inactive" // unrevoked and unexpired, but its signing passkey was removed or its signer left
)

// PolicyStates are the states a policy list can be filtered by.
var PolicyStates = []string{PolicyActive, PolicyRevoked, PolicyExpired, PolicyInactive}

// State names where the policy is: active, revoked, expired or inactive.
func (st *PolicyState) State() string {
	switch {
	case st.Active:
		return PolicyActive
	case st.RevokedAt != nil:
		return PolicyRevoked
	case st.Why == PolicyExpired:
		return PolicyExpired
	}
	return PolicyInactive
}

// PolicyRow is a policy in the account's list, with what it did.
type PolicyRow struct {
	PolicyState
	SkippedCount int // asks it saw but left to a person: always-ask words
}

// What a policy covers, as a list filters policies.
const (
	CoversAccount = "account" // the account's auto-approve policy, turned on by an auto_approve ask
	CoversWindow  = "window"  // a window: one agent, kind and target, opened from an ask
)

// PolicyFilter narrows the account's policy list. Empty and zero fields are
// no filter.
type PolicyFilter struct {
	State     string // one of PolicyStates
	Covers    string // CoversAccount or CoversWindow
	PageSize  int    // 0 means DefaultPageSize, at most MaxPageSize
	PageToken string // the next page token of the page before
}

// PolicyList returns the account's policies that match f, newest first,
// with their state and counts, and the token of the next page ("" on the
// last). The index policies_account (account_id, created_at) serves it, and
// policies_on the active and inactive filters, which read only the
// policies not revoked and not expired.
func (s *Policies) PolicyList(ctx context.Context, accountID string, f PolicyFilter) ([]PolicyRow, string, error) {
	size, err := core.PageSize(f.PageSize)
	if err != nil {
		return nil, "", err
	}
	db := s.DB().WithContext(ctx)
	now := s.Now()
	q := db.Table("policies").Where("account_id = ?", accountID)
	switch f.State {
	case "":
	case PolicyRevoked:
		q = q.Where("revoked_at IS NOT NULL")
	case PolicyExpired:
		q = q.Where("revoked_at IS NULL AND expires_at <= ?", now)
	case PolicyActive, PolicyInactive:
		q = q.Where("revoked_at IS NULL AND expires_at > ?", now)
	default:
		return nil, "", core.Invalid("state", "must be one of %s, not %q", strings.Join(PolicyStates, ", "), f.State)
	}
	switch f.Covers {
	case "":
	case CoversAccount:
		q = q.Where("target = ''")
	case CoversWindow:
		q = q.Where("target <> ''")
	default:
		return nil, "", core.Invalid("covers", "must be %s or %s, not %q", CoversAccount, CoversWindow, f.Covers)
	}
	if f.PageToken != "" {
		at, id, ok := decodePolicyToken(f.PageToken)
		if !ok {
			return nil, "", core.Invalid("page_token", "not a next page token this list gave")
		}
		q = q.Where("created_at < ? OR (created_at = ? AND id < ?)", at, at, id)
	}
	var ps []Policy
	if err := q.Order("created_at DESC, id DESC").Limit(size + 1).Find(&ps).Error; err != nil {
		return nil, "", fmt.Errorf("list policies: %w", err)
	}
	next := ""
	if len(ps) > size {
		ps = ps[:size]
		next = encodePolicyToken(ps[size-1].CreatedAt, ps[size-1].ID)
	}
	out := make([]PolicyRow, 0, len(ps))
	ids := make([]string, 0, len(ps))
	for i := range ps {
		st, err := s.activeState(db, &ps[i])
		if err != nil {
			return nil, "", fmt.Errorf("list policies: %w", err)
		}
		if f.State != "" && st.State() != f.State {
			continue
		}
		out = append(out, PolicyRow{PolicyState: st})
		ids = append(ids, st.ID)
	}
	if len(ids) == 0 {
		return out, next, nil
	}
	var skipped []struct {
		Actor string
		N     int
	}
	if err := db.Table("events").Select("actor, count(*) AS n").
		Where("account_id = ? AND "+asks.NotCreated+" AND step = ? AND actor_kind = ? AND actor IN ?", accountID, StepPolicySkipped, asks.ActorPolicy, ids).
		Group("actor").Scan(&skipped).Error; err != nil {
		return nil, "", fmt.Errorf("count skipped asks: %w", err)
	}
	for _, sk := range skipped {
		if i := slices.IndexFunc(out, func(r PolicyRow) bool { return r.ID == sk.Actor }); i >= 0 {
			out[i].SkippedCount = sk.N
		}
	}
	return out, next, nil
}

func encodePolicyToken(at time.Time, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte("p1|" + at.UTC().Format(time.RFC3339Nano) + "|" + id))
}

func decodePolicyToken(tok string) (time.Time, string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return time.Time{}, "", false
	}
	parts := strings.SplitN(string(b), "|", 3)
	if len(parts) != 3 || parts[0] != "p1" || parts[2] == "" {
		return time.Time{}, "", false
	}
	at, err := time.Parse(time.RFC3339Nano, parts[1])
	return at, parts[2], err == nil
}

// Timeline steps a policy writes beside the state machine's events.
const (
	StepPolicyEnabled  = "policy_enabled"
	StepPolicyReplaced = "policy_replaced"
	StepPolicyRevoked  = "policy_revoked"
	StepPolicySkipped  = "policy_skipped"
	// StepAutoApproveRequested records on an auto_approve ask the device it was asked from.
	StepAutoApproveRequested = "auto_approve_requested"
)

// PolicyApproval is an ask a policy approved.
type PolicyApproval struct {
	ApprovalID string
	Title      string
	Kind       string
	Requester  string      // the subject of the agent that filed it
	Status     asks.Status // where the ask is now
	At         time.Time
}

// PolicyApprovals returns the asks the policy approved, newest first, at
// most limit (0 means DefaultPageSize). The index events_account_step
// (account_id, step, seq) serves it.
func (s *Policies) PolicyApprovals(ctx context.Context, accountID, policyID string, limit int) ([]PolicyApproval, error) {
	if limit <= 0 || limit > core.MaxPageSize {
		limit = core.DefaultPageSize
	}
	var out []PolicyApproval
	err := s.DB().WithContext(ctx).Raw(`SELECT e.approval_id, e.at, a.title, a.kind, a.requester_subject AS requester, a.status
		FROM events e JOIN approvals a ON a.id = e.approval_id
		WHERE e.account_id = ? AND e.`+asks.NotCreated+` AND e.step = ? AND e.actor_kind = ? AND e.actor = ?
		ORDER BY e.seq DESC LIMIT ?`, accountID, string(asks.EventAutoApprove), asks.ActorPolicy, policyID, limit).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("list asks a policy approved: %w", err)
	}
	return out, nil
}

// PendingPolicyRequests returns the account's auto_approve asks that still
// wait for a person, newest first, at most limit (0 means DefaultPageSize).
func (s *Policies) PendingPolicyRequests(ctx context.Context, accountID string, limit int) ([]asks.Approval, error) {
	if limit <= 0 || limit > core.MaxPageSize {
		limit = core.DefaultPageSize
	}
	var out []asks.Approval
	err := s.DB().WithContext(ctx).Table("approvals").
		Where("account_id = ? AND kind = ? AND "+asks.OpenAsks+" AND status = ? AND expires_at > ?", accountID, ask.KindAutoApprove, asks.StatusPending, s.Now()).
		Order("seq DESC").Limit(limit).Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("list auto-approve requests: %w", err)
	}
	return out, nil
}
