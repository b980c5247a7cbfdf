package models

import (
	"context"
	"errors"
	"fmt"

	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/grants"
	"github.com/countersign/countersign/models/people"
	"gorm.io/gorm"

	"time"
)

// DeleteAgent retires an agent for good: it is disabled (its open asks are
// cancelled), its token hash is replaced so no token matches it again, and it
// leaves the agent lists. Its asks keep it as their requester, and its name
// stays taken so the history never mixes two agents. Deleting a deleted agent
// changes nothing.
func (s *Store) DeleteAgent(ctx context.Context, accountID, name, by string) error {
	return s.Write(ctx, func(tx *gorm.DB) error {
		var agent struct {
			people.Agent
			DeletedAt *time.Time
		}
		err := s.Lock(tx.Table("agents")).Where("account_id = ? AND name = ?", accountID, name).Take(&agent).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return core.Refuse(core.NotFound, "name", "no agent is named %q in this account", name)
		}
		if err != nil {
			return fmt.Errorf("delete agent: %w", err)
		}
		if agent.DeletedAt != nil {
			return nil
		}
		if err := tx.Table("agents").Where("id = ?", agent.ID).
			Updates(map[string]any{"token_hash": "deleted:" + agent.ID, "deleted_at": s.Now()}).Error; err != nil {
			return fmt.Errorf("delete agent: %w", err)
		}
		if err := s.Changed(tx, core.Change{Kind: core.AgentsChanged, AgentID: agent.ID}); err != nil {
			return err
		}
		if agent.Disabled {
			return s.cancelOpenAsksOf(tx, agent.ID, by, "requesting agent deleted by "+by)
		}
		return s.disableAgent(tx, agent.ID, "deleted by "+by, by, "requesting agent deleted by "+by)
	})
}

// disableAgent stops, inside tx, the agent's token, ends its OAuth grants
// and its open MCP sessions and streams on every instance (EndGrants), and
// cancels its open asks.
func (s *Store) disableAgent(tx *gorm.DB, agentID, reason, by, note string) error {
	if err := tx.Table("agents").Where("id = ?", agentID).
		Updates(map[string]any{"disabled": true, "disabled_reason": reason}).Error; err != nil {
		return fmt.Errorf("disable agent: %w", err)
	}
	if err := s.EndGrants(tx, []string{agentID}); err != nil {
		return err
	}
	return s.cancelOpenAsksOf(tx, agentID, by, note)
}

// cancelOpenAsksOf cancels, inside tx, every open ask the agent filed.
func (s *Store) cancelOpenAsksOf(tx *gorm.DB, agentID, by, note string) error {
	var open []asks.Approval
	if err := s.Lock(tx.Table("approvals")).Where("requester_id = ? AND "+asks.OpenAsks, agentID).Find(&open).Error; err != nil {
		return fmt.Errorf("find open asks: %w", err)
	}
	for i := range open {
		if err := s.Move(tx, &open[i], asks.StatusChange{Event: asks.EventCancel, ActorKind: asks.ActorSystem, Actor: by, Note: note}); err != nil {
			return err
		}
	}
	return nil
}

// DisconnectOAuthClient is a person taking back a client they connected:
// every token of its agent is revoked and the agent disabled (its open asks
// cancelled), in one transaction. Another person's client is NOT_FOUND.
func (s *Store) DisconnectOAuthClient(ctx context.Context, accountID, personID, agentID, by string) error {
	return s.Write(ctx, func(tx *gorm.DB) error {
		var conn grants.OAuthConnection
		err := tx.Table("oauth_connections").Where("agent_id = ? AND account_id = ? AND person_id = ?", agentID, accountID, personID).Take(&conn).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return core.Refuse(core.NotFound, "agent", "you connected no such client")
		}
		if err != nil {
			return fmt.Errorf("disconnect: %w", err)
		}
		if err := tx.Table("oauth_tokens").Where("agent_id = ? AND revoked_at IS NULL", agentID).Update("revoked_at", s.Now()).Error; err != nil {
			return fmt.Errorf("disconnect: %w", err)
		}
		var agent people.Agent
		if err := s.Lock(tx.Table("agents")).Where("id = ?", agentID).Take(&agent).Error; err != nil {
			return fmt.Errorf("disconnect: %w", err)
		}
		if agent.Disabled {
			return nil
		}
		if err := s.AccountEvent(tx, s.Now(), accountID, asks.ActorPerson, by, grants.StepClientDisconnected, "disconnected "+conn.ClientName+" (agent "+agent.Name+")",
			map[string]any{"client_id": conn.ClientID, "client_name": conn.ClientName, "agent": agent.Name}); err != nil {
			return err
		}
		return s.disableAgent(tx, agentID, "disconnected by "+by, by, "requesting client disconnected by "+by)
	})
}

// DisableAgent stops the agent's token and cancels its open asks, in one
// transaction. Disabling a disabled agent changes nothing.
func (s *Store) DisableAgent(ctx context.Context, accountID, name, reason, by string) (*people.Agent, error) {
	var agent people.Agent
	err := s.Write(ctx, func(tx *gorm.DB) error {
		err := s.Lock(tx.Table("agents")).Where("account_id = ? AND name = ?", accountID, name).Take(&agent).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return core.Refuse(core.NotFound, "name", "no agent is named %q in this account", name)
		}
		if err != nil || agent.Disabled {
			return err
		}
		agent.Disabled, agent.DisabledReason = true, reason
		return s.disableAgent(tx, agent.ID, reason, by, "requesting agent disabled: "+reason)
	})
	if err != nil {
		return nil, fmt.Errorf("disable agent: %w", err)
	}
	return &agent, nil
}
