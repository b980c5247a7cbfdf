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
