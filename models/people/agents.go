package people

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"gorm.io/gorm"
)

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
func (s *Directory) ReenableAgent(ctx context.Context, m *Member, agentID string, a DeviceAssertion) (*Agent, error) {
	if m.Role != core.RoleOwner && m.Role != core.RoleAdmin {
		return nil, core.Refuse(core.PermissionDenied, "", "only an owner or admin re-enables an agent")
	}
	var agent struct {
		Agent
		DeletedAt *time.Time
	}
	err := s.Write(ctx, func(tx *gorm.DB) error {
		err := s.Lock(tx.Table("agents")).Where("account_id = ? AND id = ?", m.AccountID, agentID).Take(&agent).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return core.Refuse(core.NotFound, "name", "no such agent in this account")
		}
		if err != nil {
			return err
		}
		if agent.DeletedAt != nil {
			return core.Refuse(core.FailedPrecondition, "name", "agent %s was deleted: make a new one", agent.Name)
		}
		if !agent.Disabled {
			return core.Refuse(core.FailedPrecondition, "name", "agent %s is not disabled", agent.Name)
		}
		if err := s.UseDeviceKeyTx(tx, a.PersonID, a.CredentialID, a.SignCount, a.Credential); err != nil {
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
		if err := s.Changed(tx, core.Change{Kind: core.AgentsChanged}); err != nil {
			return err
		}
		note := fmt.Sprintf("agent %s re-enabled with passkey %q; it had been disabled: %s", agent.Name, by.Name, agent.DisabledReason)
		return s.AccountEvent(tx, s.Now(), m.AccountID, asks.ActorAdmin, m.Subject, StepAgentReenabled, note,
			map[string]string{"agent": agent.Subject, "confirmed_by": by.ID, "confirmed_by_name": by.Name, "was_disabled": agent.DisabledReason})
	})
	if err != nil {
		return nil, fmt.Errorf("re-enable agent: %w", err)
	}
	agent.Disabled, agent.DisabledReason = false, ""
	return &agent.Agent, nil
}
