package rules

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/countersign/countersign/ask"

	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
	"gorm.io/gorm"
)

// An approval rule says which of an account's asks need more than one
// person, how many and from whom. When an ask is filed, the strictest rule
// that covers it is frozen into the ask as its Requirement (rule id, count,
// the pool's people at that moment), and every signature on the ask binds
// it. The state machine then keeps the ask pending until Count distinct
// people of the pool have approved (Decide), and a deny by any one of them
// ends it.
//
// Rules live in table approval_rules, one row per (account, rule id). The
// built-in rules (BuiltinRules) need no row: a row with a built-in's id
// replaces it, and a removed row (Removed) switches it off.

// Pool kinds: whom a rule asks.
const (
	PoolRole    = "role"     // every member of a role (Pool.Role)
	PoolGroup   = "group"    // a named group of people (Pool.Group, Pool.People)
	PoolAskedOf = "asked_of" // the ask's asked_of person, plus every member of Pool.Role
)

// Pool roles: owners (role owner), admins (owners and admins), members (everyone).
const (
	PoolOwners  = "owners"
	PoolAdmins  = "admins"
	PoolMembers = "members"
)

// Pool is the people a rule's signatures come from.
type Pool struct {
	Kind   string   `json:"kind"`             // role, group or asked_of
	Role   string   `json:"role,omitempty"`   // owners, admins or members: for role and asked_of
	Group  string   `json:"group,omitempty"`  // the group's name: for group
	People []string `json:"people,omitempty"` // the group's subjects: for group
}

// Empty says whether no pool is set (a rule with no escalation).
func (p Pool) Empty() bool { return p.Kind == "" }

// String is the pool in words, as the frozen requirement says it.
func (p Pool) String() string {
	switch p.Kind {
	case PoolRole:
		return p.Role
	case PoolGroup:
		return "group:" + p.Group
	case PoolAskedOf:
		return "asked_of+" + p.Role
	}
	return ""
}

// Rule is one approval rule of an account.
type Rule struct {
	ID        string
	AccountID string
	RuleSpec
	Builtin   bool   // one of BuiltinRules, as shipped or as edited
	Removed   bool   // switched off: a built-in's id with no rule
	CreatedBy string // who last changed it: a subject, "cli:<user>" or "file:<path>"
	CreatedAt time.Time
	UpdatedAt time.Time
}

// RuleSpec is what a rule says. It is stored as JSON (column spec) and is the
// shape of a rule in COUNTERSIGN_RULES's file.
type RuleSpec struct {
	Name string `json:"name,omitempty" yaml:"name,omitempty"`
	// What it covers. An empty list covers every value; an ask is covered
	// when every non-empty condition holds.
	Kinds       []string `json:"kinds,omitempty" yaml:"kinds,omitempty"`               // ask kinds
	Effects     []string `json:"effects,omitempty" yaml:"effects,omitempty"`           // payload.run.effect of a run
	Servers     []string `json:"servers,omitempty" yaml:"servers,omitempty"`           // tool_call server, path.Match patterns
	Tools       []string `json:"tools,omitempty" yaml:"tools,omitempty"`               // tool_call tool, path.Match patterns
	Requesters  []string `json:"requesters,omitempty" yaml:"requesters,omitempty"`     // requesting agents' subjects (agent:<name>)
	MinPriority int      `json:"min_priority,omitempty" yaml:"min_priority,omitempty"` // priority at least this
	// What it needs.
	Count int  `json:"count" yaml:"count"` // distinct people, 1 to 5
	Pool  Pool `json:"pool" yaml:"pool"`
	// ApplyFrom makes the rule stand aside on an account whose pool (before
	// the requester's own person is taken out) has fewer people than this;
	// 0 means it always applies. The built-ins use 2: "when the account has
	// at least two people who may decide".
	ApplyFrom int `json:"apply_from,omitempty" yaml:"apply_from,omitempty"`
	// Escalation: after EscalateAfter unanswered, EscalateTo may sign too.
	EscalateTo    Pool     `json:"escalate_to,omitzero" yaml:"escalate_to,omitempty"`
	EscalateAfter Duration `json:"escalate_after,omitempty" yaml:"escalate_after,omitempty"`
	// EscalateChannel is a shared channel of the account ("#oncall") the
	// ask is posted to after EscalateAfter unanswered, with its plain link.
	EscalateChannel string `json:"escalate_channel,omitempty" yaml:"escalate_channel,omitempty"`
	// RemindEvery is how long an unanswered ask waits before it is pushed
	// again; 0 means the service's default.
	RemindEvery Duration `json:"remind_every,omitempty" yaml:"remind_every,omitempty"`
}

// Duration is a time.Duration written as Go writes one ("10m", "1h30m").
type Duration time.Duration

// MarshalJSON writes the duration as text.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads "10m" (or a number of seconds).
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var n int64
		if err2 := json.Unmarshal(b, &n); err2 != nil {
			return fmt.Errorf("a duration is text like \"10m\": %w", err)
		}
		*d = Duration(time.Duration(n) * time.Second)
		return nil
	}
	return d.UnmarshalText([]byte(s))
}

// UnmarshalText reads "10m".
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("a duration is text like \"10m\" or \"1h\": %w", err)
	}
	*d = Duration(v)
	return nil
}

// MarshalText writes "10m0s".
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// The built-in rules' ids.
const (
	RuleProductionRun = "builtin-production-run"
	RuleRoll          = "builtin-roll"
	RuleAutoApprove   = "builtin-auto-approve"
	RuleRuleChange    = "builtin-rule-change"
	RuleMemberChange  = "builtin-member-change"
)

// BuiltinRules are every account's rules until it edits or removes them:
// a run with effect production and a roll need two people when the account
// has at least two people who may decide (the asked_of person and the
// owners and admins); enabling an auto-approve policy, and changing a rule,
// need two when the account has at least two owners or admins; and so does
// changing who decides (an owner or admin invite, a role change, a removal),
// so that one person can neither add a second identity of theirs to the
// pool nor shrink the pool to themselves, where a rule stands aside.
func BuiltinRules() []Rule {
	two := func(id, name string, kinds, effects []string, pool Pool) Rule {
		return Rule{ID: id, Builtin: true, RuleSpec: RuleSpec{Name: name, Kinds: kinds, Effects: effects, Count: 2, Pool: pool, ApplyFrom: 2}}
	}
	return []Rule{
		two(RuleProductionRun, "a production run needs two people", []string{ask.KindRun}, []string{"production"}, Pool{Kind: PoolAskedOf, Role: PoolAdmins}),
		two(RuleRoll, "a roll needs two people", []string{ask.KindRoll}, nil, Pool{Kind: PoolAskedOf, Role: PoolAdmins}),
		two(RuleAutoApprove, "enabling auto-approve needs two owners or admins", []string{ask.KindAutoApprove}, nil, Pool{Kind: PoolRole, Role: PoolAdmins}),
		two(RuleRuleChange, "changing a rule needs two owners or admins", []string{ask.KindRuleChange}, nil, Pool{Kind: PoolRole, Role: PoolAdmins}),
		two(RuleMemberChange, "changing who decides needs two owners or admins", []string{ask.KindMemberChange}, nil, Pool{Kind: PoolRole, Role: PoolAdmins}),
	}
}

// MaxRuleCount is the most people a rule can ask for.
const MaxRuleCount = 5

var ruleID = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// CheckRule validates a rule's id and spec: a bad rule is refused with the
// field it got wrong, and nothing changes.
func CheckRule(id string, r *RuleSpec) error {
	if !ruleID.MatchString(id) {
		return core.Invalid("id", "a rule id is 1 to 63 lower-case letters, digits, '-' or '_', starting with a letter or digit, not %q", id)
	}
	if n := core.RuneCount(r.Name); n > 120 {
		return core.Invalid("name", "at most 120 characters (got %d)", n)
	}
	kinds := append(append(slices.Clone(ask.Kinds), ask.KindAutoApprove, ask.KindRuleChange, ask.KindMemberChange, ask.KindAuthorization), ask.RequestKinds...)
	for _, k := range r.Kinds {
		if !slices.Contains(kinds, k) {
			return core.Invalid("kinds", "unknown kind %q: one of %s", k, strings.Join(kinds, ", "))
		}
	}
	for _, e := range r.Effects {
		if !slices.Contains([]string{"local", "remote", "production"}, e) {
			return core.Invalid("effects", "unknown run effect %q: local, remote or production", e)
		}
	}
	for field, pats := range map[string][]string{"servers": r.Servers, "tools": r.Tools} {
		for _, p := range pats {
			if _, err := path.Match(p, ""); err != nil || p == "" {
				return core.Invalid(field, "%q is not a pattern (path.Match: *, ?, [a-z])", p)
			}
		}
	}
	for _, q := range r.Requesters {
		if !strings.HasPrefix(q, "agent:") {
			return core.Invalid("requesters", "a requester is an agent's subject, agent:<name>, not %q", q)
		}
	}
	if r.MinPriority < 0 {
		return core.Invalid("min_priority", "must be 0 or more, not %d", r.MinPriority)
	}
	if r.Count < 1 || r.Count > MaxRuleCount {
		return core.Invalid("count", "must be 1 to %d distinct people, not %d", MaxRuleCount, r.Count)
	}
	if r.Count > 1 && slices.Contains(r.Kinds, ask.KindDecision) {
		return core.Invalid("kinds", "a decision ask is answered by one person picking an option: a rule that covers decision needs count 1")
	}
	if err := checkPool("pool", r.Pool); err != nil {
		return err
	}
	if r.ApplyFrom < 0 || r.ApplyFrom > 100 {
		return core.Invalid("apply_from", "must be 0 to 100, not %d", r.ApplyFrom)
	}
	if !r.EscalateTo.Empty() {
		if err := checkPool("escalate_to", r.EscalateTo); err != nil {
			return err
		}
	}
	switch escalates := !r.EscalateTo.Empty() || r.EscalateChannel != ""; {
	case escalates && r.EscalateAfter <= 0:
		return core.Invalid("escalate_after", "an escalation needs its delay (like \"30m\")")
	case !escalates && r.EscalateAfter != 0:
		return core.Invalid("escalate_after", "a delay with no escalate_to pool and no escalate_channel escalates to nobody")
	}
	if r.EscalateAfter < 0 || r.RemindEvery < 0 || r.RemindEvery != 0 && time.Duration(r.RemindEvery) < time.Minute {
		return core.Invalid("remind_every", "must be a minute or more (or 0 for the default)")
	}
	return nil
}

// CheckEscalationChannel checks that the shared channel a rule escalates
// to is one of the account's.
func CheckEscalationChannel(db *gorm.DB, accountID string, r *RuleSpec) error {
	if r.EscalateChannel == "" {
		return nil
	}
	var n int64
	if err := db.Table("shared_channels").Where("account_id = ? AND name = ?", accountID, r.EscalateChannel).Count(&n).Error; err != nil {
		return err
	}
	if n == 0 {
		return core.Invalid("escalate_channel", "no shared channel %q in this account: add it on Admin → Channels first", r.EscalateChannel)
	}
	return nil
}

func checkPool(field string, p Pool) error {
	roles := []string{PoolOwners, PoolAdmins, PoolMembers}
	switch p.Kind {
	case PoolRole, PoolAskedOf:
		if !slices.Contains(roles, p.Role) {
			return core.Invalid(field+".role", "must be owners, admins or members, not %q", p.Role)
		}
		if p.Group != "" || len(p.People) > 0 {
			return core.Invalid(field, "a %s pool names a role, not people", p.Kind)
		}
	case PoolGroup:
		if !ruleID.MatchString(p.Group) {
			return core.Invalid(field+".group", "a group needs a name (lower-case letters, digits, '-' or '_'), not %q", p.Group)
		}
		if len(p.People) == 0 {
			return core.Invalid(field+".people", "a group needs its people's subjects")
		}
		for _, s := range p.People {
			if err := people.CheckSubject(s); err != nil {
				return core.Invalid(field+".people", "%q is not a subject", s)
			}
		}
		if p.Role != "" {
			return core.Invalid(field+".role", "a group pool names people, not a role")
		}
	default:
		return core.Invalid(field+".kind", "must be role, group or asked_of, not %q", p.Kind)
	}
	return nil
}

// ruleRow is a row of approval_rules.
type ruleRow struct {
	AccountID string
	ID        string
	Spec      string
	Builtin   bool
	Removed   bool
	CreatedBy string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Rules returns the account's rules in force, the built-ins it did not
// remove among them, ordered by id. A removed built-in is left out.
func (s *Book) Rules(ctx context.Context, accountID string) ([]Rule, error) {
	return s.RulesTx(s.DB().WithContext(ctx), accountID, false)
}

// RulesWithRemoved is Rules with the removed built-ins too (Removed set), so
// that a page can offer them back.
func (s *Book) RulesWithRemoved(ctx context.Context, accountID string) ([]Rule, error) {
	return s.RulesTx(s.DB().WithContext(ctx), accountID, true)
}

func (s *Book) RulesTx(db *gorm.DB, accountID string, withRemoved bool) ([]Rule, error) {
	var rows []ruleRow
	if err := db.Table("approval_rules").Where("account_id = ?", accountID).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("read rules: %w", err)
	}
	byID := map[string]Rule{}
	for _, b := range BuiltinRules() {
		b.AccountID = accountID
		byID[b.ID] = b
	}
	for _, row := range rows {
		r := Rule{ID: row.ID, AccountID: row.AccountID, Builtin: row.Builtin, Removed: row.Removed,
			CreatedBy: row.CreatedBy, CreatedAt: row.CreatedAt, UpdatedAt: row.UpdatedAt}
		if err := json.Unmarshal([]byte(row.Spec), &r.RuleSpec); err != nil {
			return nil, fmt.Errorf("rule %s: %w", row.ID, err)
		}
		byID[row.ID] = r
	}
	out := make([]Rule, 0, len(byID))
	for _, r := range byID {
		if r.Removed && !withRemoved {
			continue
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// RuleByID returns one of the account's rules in force (a built-in too).
func (s *Book) RuleByID(ctx context.Context, accountID, id string) (*Rule, error) {
	rules, err := s.Rules(ctx, accountID)
	if err != nil {
		return nil, err
	}
	for i := range rules {
		if rules[i].ID == id {
			return &rules[i], nil
		}
	}
	return nil, core.Refuse(core.NotFound, "id", "no rule %q in this account", id)
}

// Steps the audit log records for rule changes (events with no approval id).
const (
	StepRuleSet     = "rule_set"
	StepRuleRemoved = "rule_removed"
)

// SetRule adds the rule, or replaces the one with its id, on the operator's
// word (the CLI and COUNTERSIGN_RULES: by is "cli:<user>" or
// "file:<path>"). The change goes on the account's audit chain. A rule
// change made in the browser is not this: it is an ask (ProposeRuleChange).
func (s *Book) SetRule(ctx context.Context, accountID, id string, spec RuleSpec, by string) (*Rule, error) {
	var out *Rule
	err := s.Write(ctx, func(tx *gorm.DB) error {
		var err error
		out, err = s.SetRuleTx(tx, accountID, id, spec, by)
		return err
	})
	return out, err
}

// RemoveRule removes the rule on the operator's word: a built-in is switched
// off (a removed row keeps it off), any other rule is deleted. The change
// goes on the account's audit chain.
func (s *Book) RemoveRule(ctx context.Context, accountID, id, by string) error {
	return s.Write(ctx, func(tx *gorm.DB) error { return s.RemoveRuleTx(tx, accountID, id, by) })
}

func isBuiltin(id string) bool {
	return slices.ContainsFunc(BuiltinRules(), func(r Rule) bool { return r.ID == id })
}

func (s *Book) SetRuleTx(tx *gorm.DB, accountID, id string, spec RuleSpec, by string) (*Rule, error) {
	if err := CheckRule(id, &spec); err != nil {
		return nil, err
	}
	if err := CheckEscalationChannel(tx, accountID, &spec); err != nil {
		return nil, err
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("rule spec: %w", err)
	}
	now := s.Now()
	r := &Rule{ID: id, AccountID: accountID, RuleSpec: spec, Builtin: isBuiltin(id), CreatedBy: by, CreatedAt: now, UpdatedAt: now}
	var same int64
	if err := tx.Table("approval_rules").Where("account_id = ? AND id = ? AND spec = ? AND NOT removed", accountID, id, string(raw)).
		Count(&same).Error; err != nil {
		return nil, fmt.Errorf("read rule: %w", err)
	}
	if same > 0 {
		return r, nil // as it is already: nothing changes, nothing to audit
	}
	if err := tx.Exec(`INSERT INTO approval_rules (account_id, id, spec, builtin, removed, created_by, created_at, updated_at)
		VALUES (?, ?, ?, ?, FALSE, ?, ?, ?)
		ON CONFLICT (account_id, id) DO UPDATE SET spec = excluded.spec, removed = FALSE, created_by = excluded.created_by, updated_at = excluded.updated_at`,
		accountID, id, string(raw), r.Builtin, by, now, now).Error; err != nil {
		return nil, fmt.Errorf("store rule: %w", err)
	}
	return r, s.ruleEvent(tx, accountID, by, StepRuleSet, "rule "+id+" set: "+spec.Summary(), map[string]any{"rule_id": id, "spec": spec})
}

func (s *Book) RemoveRuleTx(tx *gorm.DB, accountID, id, by string) error {
	now := s.Now()
	if isBuiltin(id) {
		var off int64
		if err := tx.Table("approval_rules").Where("account_id = ? AND id = ? AND removed", accountID, id).Count(&off).Error; err != nil {
			return fmt.Errorf("read rule: %w", err)
		}
		if off > 0 {
			return nil // already off
		}
		spec := ruleSpecOf(id)
		raw, _ := json.Marshal(spec)
		if err := tx.Exec(`INSERT INTO approval_rules (account_id, id, spec, builtin, removed, created_by, created_at, updated_at)
			VALUES (?, ?, ?, TRUE, TRUE, ?, ?, ?)
			ON CONFLICT (account_id, id) DO UPDATE SET removed = TRUE, created_by = excluded.created_by, updated_at = excluded.updated_at`,
			accountID, id, string(raw), by, now, now).Error; err != nil {
			return fmt.Errorf("remove rule: %w", err)
		}
	} else {
		res := tx.Exec(`DELETE FROM approval_rules WHERE account_id = ? AND id = ?`, accountID, id)
		if res.Error != nil {
			return fmt.Errorf("remove rule: %w", res.Error)
		}
		if res.RowsAffected == 0 {
			return core.Refuse(core.NotFound, "id", "no rule %q in this account", id)
		}
	}
	return s.ruleEvent(tx, accountID, by, StepRuleRemoved, "rule "+id+" removed", map[string]any{"rule_id": id})
}

func ruleSpecOf(id string) RuleSpec {
	for _, r := range BuiltinRules() {
		if r.ID == id {
			return r.RuleSpec
		}
	}
	return RuleSpec{}
}

// ruleEvent puts a rule change on the account's audit chain.
func (s *Book) ruleEvent(tx *gorm.DB, accountID, by, step, note string, data any) error {
	kind := asks.ActorAdmin
	if strings.HasPrefix(by, "cli:") || strings.HasPrefix(by, "file:") {
		kind = asks.ActorSystem
	}
	ev := &asks.TimelineEvent{AccountID: accountID, At: s.Now(), ActorKind: kind, Actor: by, Step: step, Note: note, Data: core.JSONText(data)}
	if err := tx.Table("events").Create(ev).Error; err != nil {
		return fmt.Errorf("append event: %w", err)
	}
	return nil
}

// Summary is the rule in one line of words.
func (r RuleSpec) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %s", r.Count, r.Pool)
	cond := func(name string, v []string) {
		if len(v) > 0 {
			fmt.Fprintf(&b, "; %s %s", name, strings.Join(v, ","))
		}
	}
	cond("kinds", r.Kinds)
	cond("effects", r.Effects)
	cond("servers", r.Servers)
	cond("tools", r.Tools)
	cond("requesters", r.Requesters)
	if r.MinPriority > 0 {
		fmt.Fprintf(&b, "; priority >= %d", r.MinPriority)
	}
	if r.ApplyFrom > 0 {
		fmt.Fprintf(&b, "; when the pool has %d or more", r.ApplyFrom)
	}
	if !r.EscalateTo.Empty() {
		fmt.Fprintf(&b, "; escalates to %s after %s", r.EscalateTo, time.Duration(r.EscalateAfter))
	}
	if r.EscalateChannel != "" {
		fmt.Fprintf(&b, "; posts to %s after %s", r.EscalateChannel, time.Duration(r.EscalateAfter))
	}
	if r.RemindEvery > 0 {
		fmt.Fprintf(&b, "; reminds every %s", time.Duration(r.RemindEvery))
	}
	return b.String()
}

// ParsePool reads a pool as the CLI and COUNTERSIGN_RULES write it:
// "owners", "admins" or "members" (a role); "asked_of+<role>" (the ask's
// asked_of person and that role); or "group:<name>=<subject>,<subject>…"
// (a named group of people).
func ParsePool(s string) (Pool, error) {
	s = strings.TrimSpace(s)
	var p Pool
	switch {
	case s == PoolOwners || s == PoolAdmins || s == PoolMembers:
		p = Pool{Kind: PoolRole, Role: s}
	case strings.HasPrefix(s, "asked_of+"):
		p = Pool{Kind: PoolAskedOf, Role: strings.TrimPrefix(s, "asked_of+")}
	case strings.HasPrefix(s, "group:"):
		name, people, ok := strings.Cut(strings.TrimPrefix(s, "group:"), "=")
		if !ok {
			return Pool{}, core.Invalid("pool", "a group is written group:<name>=<subject>,<subject>, not %q", s)
		}
		p = Pool{Kind: PoolGroup, Group: name}
		for _, person := range strings.Split(people, ",") {
			if person = strings.TrimSpace(person); person != "" {
				p.People = append(p.People, person)
			}
		}
	default:
		return Pool{}, core.Invalid("pool", "must be owners, admins, members, asked_of+<role> or group:<name>=<subject>,…, not %q", s)
	}
	return p, checkPool("pool", p)
}

// Word is the pool as ParsePool reads it back.
func (p Pool) Word() string {
	if p.Kind == PoolGroup {
		return "group:" + p.Group + "=" + strings.Join(p.People, ",")
	}
	return p.String()
}
