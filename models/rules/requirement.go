package rules

import (
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"sort"
	"time"

	"github.com/countersign/countersign/ask"

	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/proof"
	"gorm.io/gorm"
)

// askFacts are the parts of a filed ask that rules match on.
type askFacts struct {
	kind, effect, server, tool, requester string
	priority                              int
}

func FactsOf(a *asks.Approval) askFacts {
	f := askFacts{kind: a.Kind, requester: a.RequesterSubject, priority: a.Priority}
	var p struct {
		Run *struct {
			Effect string `json:"effect"`
		} `json:"run"`
		ToolCall *struct {
			Server string `json:"server"`
			Tool   string `json:"tool"`
		} `json:"tool_call"`
	}
	if json.Unmarshal([]byte(a.Payload), &p) == nil {
		if p.Run != nil {
			f.effect = p.Run.Effect
		}
		if p.ToolCall != nil {
			f.server, f.tool = p.ToolCall.Server, p.ToolCall.Tool
		}
	}
	return f
}

// Covers says whether the rule covers an ask with these facts.
func (r RuleSpec) Covers(f askFacts) bool {
	match := func(pats []string, v string) bool {
		if len(pats) == 0 {
			return true
		}
		for _, p := range pats {
			if ok, _ := path.Match(p, v); ok {
				return true
			}
		}
		return false
	}
	return (len(r.Kinds) == 0 || slices.Contains(r.Kinds, f.kind)) &&
		(len(r.Effects) == 0 || slices.Contains(r.Effects, f.effect)) &&
		(len(r.Servers) == 0 || f.kind == ask.KindToolCall && match(r.Servers, f.server)) &&
		(len(r.Tools) == 0 || f.kind == ask.KindToolCall && match(r.Tools, f.tool)) &&
		(len(r.Requesters) == 0 || slices.Contains(r.Requesters, f.requester)) &&
		f.priority >= r.MinPriority
}

// poolPeople reads, inside tx, the subjects of the pool for ask a, sorted.
func poolPeople(tx *gorm.DB, a *asks.Approval, p Pool) ([]string, error) {
	var out []string
	switch p.Kind {
	case PoolGroup:
		// Only the group's people who are members of the account.
		if err := tx.Table("memberships m").Joins("JOIN persons p ON p.id = m.person_id").
			Where("m.account_id = ? AND p.subject IN ?", a.AccountID, p.People).Pluck("p.subject", &out).Error; err != nil {
			return nil, fmt.Errorf("read the rule's group: %w", err)
		}
	case PoolRole, PoolAskedOf:
		roles := map[string][]core.Role{PoolOwners: {core.RoleOwner}, PoolAdmins: {core.RoleOwner, core.RoleAdmin}, PoolMembers: {core.RoleOwner, core.RoleAdmin, core.RoleMember}}[p.Role]
		if err := tx.Table("memberships m").Joins("JOIN persons p ON p.id = m.person_id").
			Where("m.account_id = ? AND m.role IN ?", a.AccountID, roles).Pluck("p.subject", &out).Error; err != nil {
			return nil, fmt.Errorf("read the rule's pool: %w", err)
		}
		if p.Kind == PoolAskedOf && a.AskedOf != "" && !slices.Contains(out, a.AskedOf) {
			out = append(out, a.AskedOf)
		}
	}
	sort.Strings(out)
	return slices.Compact(out), nil
}

// RequirementFor picks, inside the filing transaction, the rule that covers
// a new ask and freezes its requirement: the strictest rule (most people;
// then the lowest id) among those that cover it and do not stand aside.
// The requester's own person (its agent's ForPersonID) is taken out of the
// pool. An ask whose quorum cannot be reached is refused with
// FAILED_PRECONDITION naming the rule. It returns nil when no rule covers a.
func (s *Book) RequirementFor(tx *gorm.DB, a *asks.Approval) (*proof.Requirement, error) {
	rules, err := s.RulesTx(tx, a.AccountID, false)
	if err != nil {
		return nil, err
	}
	f := FactsOf(a)
	var own string
	var owns []string
	if err := tx.Table("agents a").Joins("JOIN persons p ON p.id = a.for_person_id").
		Where("a.id = ?", a.RequesterID).Pluck("p.subject", &owns).Error; err != nil {
		return nil, fmt.Errorf("read the requester's person: %w", err)
	}
	if len(owns) > 0 {
		own = owns[0]
	}
	var (
		best   *proof.Requirement
		bestID string
	)
	for _, r := range rules {
		if !r.Covers(f) {
			continue
		}
		people, err := poolPeople(tx, a, r.Pool)
		if err != nil {
			return nil, err
		}
		if len(people) < r.ApplyFrom {
			continue // stands aside on a small account
		}
		counted := slices.DeleteFunc(slices.Clone(people), func(p string) bool { return p == own })
		if len(counted) < r.Count {
			why := fmt.Sprintf("its pool (%s) has %d people", r.Pool, len(people))
			if len(counted) < len(people) {
				why += fmt.Sprintf(", and %s, whom the requesting agent acts for, does not count", own)
			}
			return nil, core.Refuse(core.FailedPrecondition, "rule",
				"rule %s (%s) needs %d distinct people to approve this ask, but %s: it could never be approved, so it was not filed; "+
					"ask an owner to add people to the rule's pool or to change the rule", r.ID, r.Name, r.Count, why)
		}
		if r.Count > 1 && answeredByOnePerson(a) {
			return nil, core.Refuse(core.FailedPrecondition, "rule",
				"rule %s (%s) needs %d people to approve, but a %s ask is answered by one person picking an option or writing an answer: "+
					"it could never be approved, so it was not filed; ask an owner to narrow the rule's kinds", r.ID, r.Name, r.Count, a.Kind)
		}
		if best != nil && (r.Count < best.Count || r.Count == best.Count && r.ID > bestID) {
			continue
		}
		req := &proof.Requirement{RuleID: r.ID, Count: r.Count, Pool: r.Pool.String(), People: counted}
		if len(counted) < len(people) {
			req.NotCounted = own
		}
		if !r.EscalateTo.Empty() {
			esc, err := poolPeople(tx, a, r.EscalateTo)
			if err != nil {
				return nil, err
			}
			req.Escalation = slices.DeleteFunc(esc, func(p string) bool { return p == own })
			req.EscalateAfter = int(time.Duration(r.EscalateAfter) / time.Second)
		}
		best, bestID = req, r.ID
	}
	return best, nil
}

// answeredByOnePerson says whether the ask is answered by one person's
// pick or text (a decision ask's option, a request's question), which a
// quorum of people cannot share.
func answeredByOnePerson(a *asks.Approval) bool {
	if a.Kind == ask.KindDecision {
		return true
	}
	if a.IsRequest() {
		p := a.Request()
		return p != nil && p.Question != nil
	}
	return false
}
