package models

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/countersign/countersign/ask"

	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
	"github.com/countersign/countersign/models/rules"
	"gorm.io/gorm"
)

// A rule change made in the browser is an ask of kind rule_change: the
// proposer files it (ProposeRuleChange), it is covered by the rules like
// any ask (built in: two owners or admins once the account has two), each
// approver signs it with a passkey, and the change is applied in the
// transaction that records the approval completing the quorum. The CLI
// (countersign rule) and COUNTERSIGN_RULES are the operator's paths on the
// host and apply at once (SetRule, RemoveRule); both kinds of change go on
// the audit chain.

// Actions of a rule change.
const (
	RuleChangeSet    = "set"
	RuleChangeRemove = "remove"
)

// RuleChange is what a rule_change ask proposes: its payload's one member.
type RuleChange struct {
	Action string          `json:"action"` // set or remove
	RuleID string          `json:"rule_id"`
	Rule   *rules.RuleSpec `json:"rule,omitempty"` // for set
}

type ruleChangePayload struct {
	RuleChange RuleChange `json:"rule_change"`
}

// ServiceAgentName is the name the service's own agent (Agent.Service) takes
// when it is made: it files the rule and member changes proposed in the
// browser and the test asks people send themselves, one per account, made on
// first use (the name is kept from when it filed rule changes alone). It is found by its mark, never by this name,
// and no token matches it: it files nothing over MCP.
const ServiceAgentName = "countersign-rules"

// ProposeRuleChange files, for the owner or admin m, an ask to set or remove
// a rule. Nothing changes until it is approved: the proposer may sign it as
// one of the people, and the quorum the rules give to rule_change asks
// decides it. The proposal is checked now (a bad rule is refused before it
// is filed) and again when it is applied.
func (s *Store) ProposeRuleChange(ctx context.Context, m *people.Member, rc RuleChange) (*asks.Approval, error) {
	if m.Role != core.RoleOwner && m.Role != core.RoleAdmin {
		return nil, core.Refuse(core.PermissionDenied, "", "only an owner or admin proposes a rule change")
	}
	var title string
	switch rc.Action {
	case RuleChangeSet:
		if rc.Rule == nil {
			return nil, core.Invalid("rule", "a set needs the rule")
		}
		if err := rules.CheckRule(rc.RuleID, rc.Rule); err != nil {
			return nil, err
		}
		if err := rules.CheckEscalationChannel(s.DB().WithContext(ctx), m.AccountID, rc.Rule); err != nil {
			return nil, err
		}
		title = "Set rule " + rc.RuleID + ": " + rc.Rule.Summary()
	case RuleChangeRemove:
		if rc.Rule != nil {
			return nil, core.Invalid("rule", "a remove names the rule by id only")
		}
		if _, err := s.RuleByID(ctx, m.AccountID, rc.RuleID); err != nil {
			return nil, err
		}
		title = "Remove rule " + rc.RuleID
	default:
		return nil, core.Invalid("action", "must be set or remove, not %q", rc.Action)
	}
	agent, err := s.serviceAgent(ctx, m.AccountID)
	if err != nil {
		return nil, err
	}
	a, err := s.serviceAsk(agent, m.AccountID, m.Subject, ask.KindRuleChange, title, ruleChangePayload{RuleChange: rc},
		m.Subject+" proposes this change to the account's approval rules.",
		"The rule changes as shown once the people the rules ask for rule changes have signed.",
		"The rules stay as they are.")
	if err != nil {
		return nil, err
	}
	if err := s.file(ctx, a); err != nil {
		return nil, err
	}
	return a, nil
}

// serviceAsk is an ask the service's agent files for the member proposer:
// a change proposed in the browser, whose payload is payload's JSON.
func (s *Store) serviceAsk(agent *people.Agent, accountID, proposer, kind, title string, payload any, summary, approveMeans, denyMeans string) (*asks.Approval, error) {
	if n := core.RuneCount(title); n > 200 {
		title = string([]rune(title)[:199]) + "…"
	}
	raw, err := json.Marshal(payload)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", kind, err)
	}
	canonical, sum, err := ask.CanonicalHash(raw)
	if err != nil {
		return nil, err
	}
	now := s.Now()
	return &asks.Approval{
		ID: core.NewID("appr"), AccountID: accountID, Kind: kind, Title: title, Summary: summary, ApproveMeans: approveMeans, DenyMeans: denyMeans,
		Payload: string(canonical), PayloadSHA256: sum, AgentLabel: proposer,
		RequesterID: agent.ID, RequesterSubject: agent.Subject,
		Status: asks.StatusPending, Version: 1, ExpiresAt: now.Add(s.askTTL), CreatedAt: now, UpdatedAt: now,
	}, nil
}

// serviceAgent finds or makes the account's service agent (Agent.Service).
// It takes ServiceAgentName, or the first free name after it when an agent
// made before such names were reserved holds it.
func (s *Store) serviceAgent(ctx context.Context, accountID string) (*people.Agent, error) {
	var a people.Agent
	find := func() error {
		return s.DB().WithContext(ctx).Table("agents").Where("account_id = ? AND service", accountID).Take(&a).Error
	}
	err := find()
	if err == nil {
		return &a, nil
	}
	if !errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, fmt.Errorf("find the service's agent: %w", err)
	}
	id := core.NewID("agt")
	a = people.Agent{ID: id, AccountID: accountID, TokenHash: "service:" + id, Scopes: people.ScopeApprovalsRead, Service: true, CreatedAt: s.Now()}
	err = s.Write(ctx, func(tx *gorm.DB) error {
		var taken []string
		if err := tx.Table("agents").Where("account_id = ? AND (name = ? OR name LIKE ?)", accountID, ServiceAgentName, ServiceAgentName+"-%").
			Pluck("name", &taken).Error; err != nil {
			return err
		}
		a.Name = ServiceAgentName
		for i := 2; slices.Contains(taken, a.Name); i++ {
			a.Name = ServiceAgentName + "-" + strconv.Itoa(i)
		}
		a.Subject = "agent:" + a.Name
		return tx.Table("agents").Create(&a).Error
	})
	if err != nil { // made meanwhile by another call (the unique agents_service index)
		if err := find(); err == nil {
			return &a, nil
		}
		return nil, fmt.Errorf("make the service's agent: %w", err)
	}
	return &a, nil
}

// applyRuleChange applies, inside the transaction that approves it, the rule
// change a rule_change ask proposed; by names the approvers.
func (s *Store) applyRuleChange(tx *gorm.DB, a *asks.Approval, by string) error {
	var p ruleChangePayload
	if err := json.Unmarshal([]byte(a.Payload), &p); err != nil {
		return fmt.Errorf("rule change payload: %w", err)
	}
	rc := p.RuleChange
	by = "approval:" + a.ID + " (" + by + ")"
	switch rc.Action {
	case RuleChangeSet:
		if rc.Rule == nil {
			return errors.New("rule change: set without a rule")
		}
		_, err := s.SetRuleTx(tx, a.AccountID, rc.RuleID, *rc.Rule, by)
		return err
	case RuleChangeRemove:
		return s.RemoveRuleTx(tx, a.AccountID, rc.RuleID, by)
	}
	return fmt.Errorf("rule change: unknown action %q", rc.Action)
}
