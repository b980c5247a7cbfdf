package models

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// DeleteAgent retires an agent for good: it is disabled (its open asks are
// cancelled), its token hash is replaced so no token matches it again, and it
// leaves the agent lists. Its asks keep it as their requester, and its name
// stays taken so the history never mixes two agents. Deleting a deleted agent
// changes nothing.
func (s *Store) DeleteAgent(ctx context.Context, accountID, name, by string) error {
	return s.write(ctx, func(tx *gorm.DB) error {
		var agent struct {
			Agent
			DeletedAt *time.Time
		}
		err := s.lock(tx.Table("agents")).Where("account_id = ? AND name = ?", accountID, name).Take(&agent).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return Refuse(NotFound, "name", "no agent is named %q in this account", name)
		}
		if err != nil {
			return fmt.Errorf("delete agent: %w", err)
		}
		if agent.DeletedAt != nil {
			return nil
		}
		if err := tx.Table("agents").Where("id = ?", agent.ID).
			Updates(map[string]any{"token_hash": "deleted:" + agent.ID, "deleted_at": s.now()}).Error; err != nil {
			return fmt.Errorf("delete agent: %w", err)
		}
		if err := s.changed(tx, Change{Kind: AgentsChanged, AgentID: agent.ID}); err != nil {
			return err
		}
		if agent.Disabled {
			return s.cancelOpenAsksOf(tx, agent.ID, by, "requesting agent deleted by "+by)
		}
		return s.disableAgent(tx, agent.ID, "deleted by "+by, by, "requesting agent deleted by "+by)
	})
}

// StepAgentReenabled is the audit log's step for a blocked or disabled
// agent an owner or admin re-enabled with a passkey.
const StepAgentReenabled = "agent_reenabled"

// ReenableAgent turns a disabled agent of m's account back on, on an
// assertion by one of m's passkeys over a re-enable challenge that names the
// agent (passkey.AgentReenableChallenge, checked by the caller): its token
// works again. Its cancelled asks stay cancelled. The audit log records who
// re-enabled it, with which passkey, and why it had been disabled. Only an
// owner or admin may; a deleted agent stays deleted; an enabled one is
// refused, so a second prompt for the same agent changes nothing.
func (s *Store) ReenableAgent(ctx context.Context, m *Member, agentID string, a DeviceAssertion) (*Agent, error) {
	if m.Role != RoleOwner && m.Role != RoleAdmin {
		return nil, Refuse(PermissionDenied, "", "only an owner or admin re-enables an agent")
	}
	var agent struct {
		Agent
		DeletedAt *time.Time
	}
	err := s.write(ctx, func(tx *gorm.DB) error {
		err := s.lock(tx.Table("agents")).Where("account_id = ? AND id = ?", m.AccountID, agentID).Take(&agent).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return Refuse(NotFound, "name", "no such agent in this account")
		}
		if err != nil {
			return err
		}
		if agent.DeletedAt != nil {
			return Refuse(FailedPrecondition, "name", "agent %s was deleted: make a new one", agent.Name)
		}
		if !agent.Disabled {
			return Refuse(FailedPrecondition, "name", "agent %s is not disabled", agent.Name)
		}
		if err := s.useDeviceKey(tx, a.PersonID, a.CredentialID, a.SignCount, a.Credential); err != nil {
			return err
		}
		var by DeviceKey
		if err := tx.Table("device_keys").Where("id = ?", a.CredentialID).Take(&by).Error; err != nil {
			return fmt.Errorf("find the confirming passkey: %w", err)
		}
		if err := tx.Table("agents").Where("id = ?", agent.ID).
			Updates(map[string]any{"disabled": false, "disabled_reason": ""}).Error; err != nil {
			return err
		}
		if err := s.changed(tx, Change{Kind: AgentsChanged}); err != nil {
			return err
		}
		note := fmt.Sprintf("agent %s re-enabled with passkey %q; it had been disabled: %s", agent.Name, by.Name, agent.DisabledReason)
		return s.accountEvent(tx, s.now(), m.AccountID, ActorAdmin, m.Subject, StepAgentReenabled, note,
			map[string]string{"agent": agent.Subject, "confirmed_by": by.ID, "confirmed_by_name": by.Name, "was_disabled": agent.DisabledReason})
	})
	if err != nil {
		return nil, fmt.Errorf("re-enable agent: %w", err)
	}
	agent.Disabled, agent.DisabledReason = false, ""
	return &agent.Agent, nil
}
