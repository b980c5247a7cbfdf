package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/countersign/countersign/ask"

	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
	"gorm.io/gorm"
)

// PolicyScope is what an auto-approve policy covers.
type PolicyScope struct {
	AskKinds    []string `json:"ask_kinds"`    // empty: every kind it may cover
	MaxPriority int      `json:"max_priority"` // 0: every ask has priority 0 until a priority argument exists
	Requesters  []string `json:"requesters"`   // agent subjects; empty: anyone
}

// MaxPolicyLife is the longest an auto-approve policy may run.
const MaxPolicyLife = 24 * time.Hour

// Policy is an auto-approve policy, bounded in time and scope, revocable:
// the account's, turned on by a person's signature on an auto_approve ask
// (one at a time), or a window, made by a person who approved an ask "and
// the same for a while" (any number, each of one agent, kind and target).
type Policy struct {
	ID         string
	AccountID  string
	ApprovalID string // the auto_approve ask that turned it on, or the ask a window was opened from
	Scope      string // PolicyScope, JSON
	Requester  string // the agent that asked for it; a window's agent
	// Target is a window's: the RFC 8785 JSON of what the asks it approves
	// are about (ask.Target); "" on the account's auto-approve policy.
	Target         string
	Device         string
	SignerID       string
	SignerSubject  string
	CredentialID   string
	SignedAt       time.Time
	ExpiresAt      time.Time
	RevokedAt      *time.Time
	RevokedBy      string
	RevokeNote     string
	Replaces       string
	ReplacedBy     string
	ApprovedCount  int
	LastApprovedAt *time.Time
	CreatedAt      time.Time
}

// IsWindow says whether the policy is a window, not the account's auto-approve policy.
func (p *Policy) IsWindow() bool { return p.Target != "" }

// TargetOf reads a window's target; the zero Target for the account's policy.
func (p *Policy) TargetOf() ask.Target {
	var t ask.Target
	_ = json.Unmarshal([]byte(p.Target), &t)
	return t
}

// ScopeOf reads the policy's scope.
func (p *Policy) ScopeOf() PolicyScope {
	var sc PolicyScope
	_ = json.Unmarshal([]byte(p.Scope), &sc)
	return sc
}

// AutoApproveRequest is what approvals_request_auto_approve sends.
type AutoApproveRequest struct {
	Requester *people.Agent
	Device    string
	Scope     PolicyScope
	Until     string // RFC 3339
}

// AutoApprovePayload is the frozen payload of an auto_approve ask: what the
// person signs to turn the policy on.
type AutoApprovePayload struct {
	AutoApprove struct {
		Scope     PolicyScope `json:"scope"`
		Until     string      `json:"until"`
		Requester string      `json:"requester"`
		Device    string      `json:"device,omitempty"`
	} `json:"auto_approve"`
}

// CheckScope validates a requested scope and returns it in its normal form.
func (s *Policies) CheckScope(ctx context.Context, accountID string, sc PolicyScope) (PolicyScope, error) {
	out := PolicyScope{AskKinds: []string{}, Requesters: []string{}}
	for i, k := range sc.AskKinds {
		field := fmt.Sprintf("scope.ask_kinds[%d]", i)
		switch {
		case k == ask.KindPullRequest || k == ask.KindRoll || k == ask.KindRun || k == ask.KindAutoApprove:
			return out, core.Invalid(field, "%s asks always ask a person: a policy cannot cover them", k)
		case k == ask.KindDecision:
			return out, core.Invalid(field, "decision asks always ask a person: a person must choose one of the options, which a policy cannot, so a policy cannot cover them")
		case !slices.Contains(ask.Kinds, k) && !slices.Contains(ask.RequestKinds, k):
			return out, core.Invalid(field, "unknown kind %q: one of review, document, tool_call, %s", k, strings.Join(ask.RequestKinds, ", "))
		case slices.Contains(out.AskKinds, k):
			return out, core.Invalid(field, "%q is named twice", k)
		}
		out.AskKinds = append(out.AskKinds, k)
	}
	if sc.MaxPriority != 0 {
		return out, core.Invalid("scope.max_priority", "must be 0: every ask has priority 0 until asks carry a priority")
	}
	for i, r := range sc.Requesters {
		field := fmt.Sprintf("scope.requesters[%d]", i)
		var n int64
		if err := s.DB().WithContext(ctx).Table("agents").Where("account_id = ? AND subject = ? AND deleted_at IS NULL", accountID, r).Count(&n).Error; err != nil {
			return out, err
		}
		if n == 0 {
			return out, core.Invalid(field, "no agent of this account has subject %q (subjects look like agent:<name>)", r)
		}
		if slices.Contains(out.Requesters, r) {
			return out, core.Invalid(field, "%q is named twice", r)
		}
		out.Requesters = append(out.Requesters, r)
	}
	return out, nil
}

// EnablePolicy turns on, inside the signed approval's transaction, the
// policy an approved auto_approve ask describes; it replaces the account's
// policy that was still on, recorded on both. Windows stay as they are.
func (s *Policies) EnablePolicy(tx *gorm.DB, a *asks.Approval, m *people.Member, credentialID string) error {
	var p AutoApprovePayload
	if err := json.Unmarshal([]byte(a.Payload), &p); err != nil {
		return fmt.Errorf("read auto_approve payload: %w", err)
	}
	until, err := time.Parse(time.RFC3339, p.AutoApprove.Until)
	if err != nil {
		return fmt.Errorf("read auto_approve until: %w", err)
	}
	now := s.Now()
	scope, _ := json.Marshal(p.AutoApprove.Scope)
	pol := &Policy{
		ID: core.NewID("pol"), AccountID: a.AccountID, ApprovalID: a.ID, Scope: string(scope), Requester: p.AutoApprove.Requester,
		Device: p.AutoApprove.Device, SignerID: m.ID, SignerSubject: m.Subject, CredentialID: credentialID,
		SignedAt: now, ExpiresAt: until, CreatedAt: now,
	}
	var older []Policy
	if err := s.Lock(tx.Table("policies")).Where("account_id = ? AND target = '' AND revoked_at IS NULL AND expires_at > ?", a.AccountID, now).Find(&older).Error; err != nil {
		return err
	}
	for _, o := range older {
		pol.Replaces = o.ID
		if err := tx.Table("policies").Where("id = ?", o.ID).Updates(map[string]any{
			"revoked_at": now, "revoked_by": m.Subject, "revoke_note": "replaced by " + pol.ID, "replaced_by": pol.ID,
		}).Error; err != nil {
			return err
		}
		if err := s.Note(tx, o.AccountID, o.ApprovalID, asks.ActorPerson, m.Subject, StepPolicyReplaced, "replaced by "+pol.ID+" (signed on "+a.ID+")"); err != nil {
			return err
		}
	}
	if err := tx.Table("policies").Create(pol).Error; err != nil {
		return fmt.Errorf("store policy: %w", err)
	}
	note := "policy " + pol.ID + " on until " + until.UTC().Format(time.RFC3339)
	if pol.Replaces != "" {
		note += ", replacing " + pol.Replaces
	}
	return s.NoteOn(tx, a, asks.ActorPerson, m.Subject, StepPolicyEnabled, note)
}

// PolicyState is a policy with whether it is on now.
type PolicyState struct {
	Policy
	Active bool
	Why    string // why it is not active: revoked, expired, key removed, signer left
}

// activeState says whether p is on now: unrevoked, unexpired, its signing
// key still registered and its signer still a member.
func (s *Policies) activeState(db *gorm.DB, p *Policy) (PolicyState, error) {
	st := PolicyState{Policy: *p}
	switch {
	case p.RevokedAt != nil:
		st.Why = "revoked"
		return st, nil
	case !s.Now().Before(p.ExpiresAt):
		st.Why = "expired"
		return st, nil
	}
	var keys int64
	if err := db.Table("device_keys").Where("id = ? AND person_id = ? AND removed_at IS NULL", p.CredentialID, p.SignerID).Count(&keys).Error; err != nil {
		return st, err
	}
	if keys == 0 {
		st.Why = "the signing passkey was removed"
		return st, nil
	}
	var members int64
	if err := db.Table("memberships").Where("account_id = ? AND person_id = ?", p.AccountID, p.SignerID).Count(&members).Error; err != nil {
		return st, err
	}
	if members == 0 {
		st.Why = "the signer left the account"
		return st, nil
	}
	st.Active = true
	return st, nil
}

// CurrentPolicy returns the account's newest auto-approve policy, active or
// not, or nil; windows are not it.
func (s *Policies) CurrentPolicy(ctx context.Context, accountID string) (*PolicyState, error) {
	db := s.DB().WithContext(ctx)
	var p Policy
	err := db.Table("policies").Where("account_id = ? AND target = ''", accountID).Order("created_at DESC, id DESC").Take(&p).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read policy: %w", err)
	}
	st, err := s.activeState(db, &p)
	return &st, err
}

// Policies lists the account's policies, newest first, with their state.
func (s *Policies) Policies(ctx context.Context, accountID string, limit int) ([]PolicyState, error) {
	db := s.DB().WithContext(ctx)
	var ps []Policy
	if err := db.Table("policies").Where("account_id = ?", accountID).Order("created_at DESC, id DESC").Limit(limit).Find(&ps).Error; err != nil {
		return nil, fmt.Errorf("list policies: %w", err)
	}
	out := make([]PolicyState, 0, len(ps))
	for i := range ps {
		st, err := s.activeState(db, &ps[i])
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

// RevokePolicy turns the account's newest auto-approve policy off now; off
// twice is harmless. The note goes on the enabling ask's timeline. It
// returns the policy as it now stands, or nil when there is none.
func (s *Policies) RevokePolicy(ctx context.Context, accountID, by, note string) (*PolicyState, error) {
	st, err := s.revoke(ctx, by, note, "auto-approve turned off", func(q *gorm.DB) *gorm.DB {
		return q.Where("account_id = ? AND target = ''", accountID).Order("created_at DESC, id DESC")
	})
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil
	}
	return st, err
}

// revoke turns off now the policy pick finds (gorm.ErrRecordNotFound when
// none), locked; off twice is harmless. The note goes, after what, on the
// timeline of the ask that made the policy.
func (s *Policies) revoke(ctx context.Context, by, note, what string, pick func(q *gorm.DB) *gorm.DB) (*PolicyState, error) {
	if n := core.RuneCount(note); n > asks.NoteLimit {
		return nil, core.Invalid("note", "at most %d characters (got %d)", asks.NoteLimit, n)
	}
	var p Policy
	err := s.Write(ctx, func(tx *gorm.DB) error {
		if err := pick(s.Lock(tx.Table("policies"))).Take(&p).Error; err != nil {
			return err
		}
		now := s.Now()
		if p.RevokedAt != nil || !now.Before(p.ExpiresAt) {
			return nil // already off: revoked, or expired for good
		}
		if err := tx.Table("policies").Where("id = ?", p.ID).Updates(map[string]any{"revoked_at": now, "revoked_by": by, "revoke_note": note}).Error; err != nil {
			return err
		}
		text := what
		if note != "" {
			text += ": " + note
		}
		return s.Note(tx, p.AccountID, p.ApprovalID, actorKindOf(by), by, StepPolicyRevoked, text)
	})
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("revoke policy: %w", err)
	}
	// Read it back as stored, so a second revoke answers exactly the same.
	db := s.DB().WithContext(ctx)
	if err := db.Table("policies").Where("id = ?", p.ID).Take(&p).Error; err != nil {
		return nil, fmt.Errorf("revoke policy: %w", err)
	}
	st, err := s.activeState(db, &p)
	return &st, err
}

func actorKindOf(subject string) string {
	if strings.HasPrefix(subject, "agent:") {
		return asks.ActorAgent
	}
	return asks.ActorPerson
}

// AutoApprove approves, inside the new ask's transaction, an ask that an
// active policy covers: a window of the ask's agent, kind and target, or the
// account's auto-approve policy, tried in that order. A policy's row is
// locked before it is used, so a revoke that commits first is seen, and one
// that comes later waits for this ask.
func (s *Policies) AutoApprove(tx *gorm.DB, a *asks.Approval) (bool, error) {
	if a.Kind == ask.KindAutoApprove {
		return false, s.noteRequest(tx, a)
	}
	if !a.PolicyMayCover() {
		return false, nil // a question is answered, and a command approved, only by a person
	}
	// The policies that look on (the index policies_on): policies off for
	// good are not read, so that asks filed after one ended do not queue
	// behind one another on its row. A window is read only by its own
	// agent's asks about its own target.
	q := tx.Table("policies").Where("account_id = ? AND revoked_at IS NULL AND expires_at > ?", a.AccountID, s.Now())
	target := ""
	if t, ok := ask.TargetOf(a.Kind, a.Payload); ok {
		target = t.JSON()
		q = q.Where("target = '' OR (requester = ? AND target = ?)", a.RequesterSubject, target)
	} else {
		q = q.Where("target = ''")
	}
	var on []Policy
	if err := q.Order("created_at DESC, id DESC").Find(&on).Error; err != nil {
		return false, err
	}
	slices.SortStableFunc(on, func(x, y Policy) int { // windows first
		switch {
		case x.IsWindow() == y.IsWindow():
			return 0
		case x.IsWindow():
			return -1
		}
		return 1
	})
	for i := range on {
		approved, done, err := s.approveWith(tx, a, &on[i], target)
		if err != nil || done {
			return approved, err
		}
	}
	return false, nil
}

// approveWith approves a by the policy p, when p is still on and covers it.
// done says that no other policy is to be tried: a was approved, or left to
// a person with a note on its timeline (a rule covers it, or its words
// always ask).
func (s *Policies) approveWith(tx *gorm.DB, a *asks.Approval, p *Policy, target string) (approved, done bool, err error) {
	// Lock the row and read it again, so a revoke that committed meanwhile
	// is seen and one that comes later waits for this ask.
	if err := s.Lock(tx.Table("policies")).Where("id = ?", p.ID).Take(p).Error; err != nil {
		return false, true, err
	}
	st, err := s.activeState(tx, p)
	if err != nil || !st.Active {
		return false, err != nil, err
	}
	scope := p.ScopeOf()
	if a.IsRequest() && !slices.Contains(scope.AskKinds, a.Kind) {
		return false, false, nil // an advisory request is covered only when the policy names its kind
	}
	if len(scope.AskKinds) > 0 && !slices.Contains(scope.AskKinds, a.Kind) ||
		a.Priority > scope.MaxPriority ||
		len(scope.Requesters) > 0 && !slices.Contains(scope.Requesters, a.RequesterSubject) ||
		p.IsWindow() && (p.Target != target || p.Requester != a.RequesterSubject) {
		return false, false, nil
	}
	var role core.Role
	if err := tx.Table("memberships").Select("role").Where("account_id = ? AND person_id = ?", a.AccountID, p.SignerID).Scan(&role).Error; err != nil {
		return false, true, err
	}
	if req := a.RequirementOf(); req != nil {
		// A policy never counts as one of a rule's people: the ask stays
		// pending for them, and its timeline says why.
		return false, true, s.NoteOn(tx, a, asks.ActorPolicy, p.ID, StepPolicySkipped, fmt.Sprintf(
			"%srule %s needs %d of its people to sign, and a policy is none of them", policySkipNote, req.RuleID, req.Count))
	}
	signer := people.Member{Person: people.Person{ID: p.SignerID, Subject: p.SignerSubject}, AccountID: a.AccountID, Role: role}
	if !signer.MayDecide(a) {
		return false, false, nil
	}
	if reason := AlwaysAsks(AskText(a)); reason != "" {
		return false, true, s.NoteOn(tx, a, asks.ActorPolicy, p.ID, StepPolicySkipped, policySkipNote+reason)
	}
	now := s.Now()
	what := "auto-approve policy"
	if p.IsWindow() {
		what = "window"
	}
	if err := s.Move(tx, a, asks.StatusChange{
		Event: asks.EventAutoApprove, ActorKind: asks.ActorPolicy, Actor: p.ID,
		Note: "approved by " + what + " " + p.ID + " signed by " + p.SignerSubject,
		Set:  map[string]any{"decision": string(asks.VerdictApprove), "decided_by": p.SignerSubject, "decided_at": now, "note": "auto-approved by policy " + p.ID},
		Data: map[string]string{"policy_id": p.ID, "signer": p.SignerSubject, "credential_id": p.CredentialID, "enabled_by": p.ApprovalID},
	}); err != nil {
		return false, true, err
	}
	return true, true, tx.Table("policies").Where("id = ?", p.ID).
		Updates(map[string]any{"approved_count": gorm.Expr("approved_count + 1"), "last_approved_at": now}).Error
}

// noteRequest puts on a new auto_approve ask's timeline the device it was
// asked from, inside the ask's transaction.
func (s *Policies) noteRequest(tx *gorm.DB, a *asks.Approval) error {
	if a.AgentLabel == "" {
		return nil
	}
	return s.NoteOn(tx, a, asks.ActorAgent, a.RequesterSubject, StepAutoApproveRequested, "asked from "+a.AgentLabel)
}

// AskText is the text of an ask the always-ask classifier reads: what the
// agent wrote, never the service's own words. That is its title, summary,
// what approving and denying mean, and the explanation's words; for a
// tool_call, also the whole call (server, tool and arguments), so a delete_*
// tool keeps asking whatever its ask's title says. A request's approve_means
// is the service's (fileRequest writes it: "nothing executes" would read as a
// run), so a request gives its target instead.
func AskText(a *asks.Approval) string {
	parts := []string{a.Title, a.Summary}
	switch {
	case a.IsRequest():
		if p := a.Request(); p != nil {
			parts = append(parts, p.TargetType, p.TargetID)
		}
	default:
		parts = append(parts, a.ApproveMeans, a.DenyMeans)
	}
	if a.Kind == ask.KindToolCall {
		parts = append(parts, a.Payload)
	}
	if a.Context != nil {
		var c struct {
			Explanation struct {
				What, Why, Approve, Deny string
				Effect                   struct {
					Kind, Ships, Summary string
					Touches              []string
				}
				Risk struct{ Level, Text string }
			} `json:"explanation"`
		}
		if json.Unmarshal([]byte(*a.Context), &c) == nil {
			e := c.Explanation
			parts = append(parts, e.What, e.Why, e.Approve, e.Deny, e.Effect.Ships, e.Effect.Summary, e.Risk.Text)
			parts = append(parts, e.Effect.Touches...)
			if e.Effect.Kind == "production" {
				parts = append(parts, "[effect: production]")
			}
			if e.Risk.Level == "high" {
				parts = append(parts, "[risk: high]")
			}
		}
	}
	return strings.Join(parts, "\n")
}

// alwaysAsk are the categories that keep asking a person even while a policy
// is on, each with the words that put an ask in it. The match is on whole
// words (with common endings), in any case; when in doubt, it asks.
var alwaysAsk = []struct {
	category string
	words    *regexp.Regexp
}{
	{"a merge", words(`merg(e|es|ed|ing)`, `squash`, `rebase`, `cherry-pick`)},
	{"a roll or release", words(`roll(s|ed|ing|out|outs|back|backs)?`, `release[sd]?`, `releasing`, `deploy(s|ed|ing|ment|ments)?`, `ship(s|ped|ping)?`, `publish(es|ed|ing)?`, `promot(e|es|ed|ing|ion)`, `launch(es|ed|ing)?`, `go[- ]live`, `\[effect: production\]`, `production`, `prod`)},
	{"a run", words(`run(s|ning)?`, `execut(e|es|ed|ing|ion)`, `exec`, `script(s)?`, `shell`, `sudo`, `command(s)?`, `cron`, `migrat(e|es|ed|ing|ion|ions)`)},
	{"security", words(`secur(e|ity)`, `vulnerab(le|ility|ilities)`, `cve(-[0-9-]+)?`, `exploit(s)?`, `secret(s)?`, `credential(s)?`, `password(s)?`, `passkey(s)?`, `token(s)?`, `api[- ]?key(s)?`, `private[- ]key(s)?`, `certificate(s)?`, `tls`, `ssh`, `firewall`, `encrypt(ion)?`, `2fa`, `mfa`, `auth(n|z|entication|orization)?`, `\[risk: high\]`)},
	{"finance", words(`financ(e|es|ial)`, `payment(s)?`, `pay(s|ing|out|outs|roll)?`, `invoice(s|d)?`, `refund(s|ed|ing)?`, `billing`, `bill(s|ed)?`, `charg(e|es|ed|ing)`, `wire`, `transfer(s|red)?`, `bank(ing)?`, `budget(s)?`, `price(s|d)?`, `pricing`, `purchase(s|d)?`, `subscription(s)?`, `tax(es)?`, `salary`, `salaries`, `\$[0-9][0-9,.]*`, `usd`, `eur`)},
	{"legal", words(`legal`, `contract(s)?`, `licen[cs]e(s|d)?`, `compliance`, `gdpr`, `hipaa`, `lawsuit`, `lawyer(s)?`, `counsel`, `terms of service`, `privacy policy`, `nda(s)?`, `regulat(ory|ion|ions)`, `subpoena`)},
	{"a delete", words(`delet(e|es|ed|ing|ion)`, `remov(e|es|ed|al|ing)`, `drop(s|ped|ping)?`, `destroy(s|ed|ing)?`, `purg(e|es|ed|ing)`, `wip(e|es|ed|ing)`, `truncat(e|es|ed|ing)`, `eras(e|es|ed|ing|ure)`, `rm`, `teardown`, `tear down`, `decommission(ed|ing)?`, `overwrit(e|es|ing|ten)`, `force[- ]push`)},
	{"classified material", words(`classified`, `confidential`, `restricted`, `internal only`, `top secret`, `embargo(ed)?`, `pii`, `personal data`, `customer data`)},
	{"a permission or policy change", words(`permission(s)?`, `access`, `role(s)?`, `grant(s|ed|ing)?`, `revok(e|es|ed|ing)`, `privilege(s|d)?`, `admin(s|istrator)?`, `owner(s|ship)?`, `polic(y|ies)`, `acl(s)?`, `iam`, `sharing`, `invite(s|d)?`, `member(s|ship)?`, `auto[- ]approv(e|al)`)},
}

func words(alternatives ...string) *regexp.Regexp {
	return regexp.MustCompile(`(?i)(^|[^\pL\pN])(` + strings.Join(alternatives, "|") + `)($|[^\pL\pN])`)
}

// AlwaysAsks returns the always-ask category an ask's text falls in, or ""
// when a policy may approve it.
func AlwaysAsks(text string) string {
	for _, c := range alwaysAsk {
		if c.words.MatchString(text) {
			return c.category
		}
	}
	return ""
}
