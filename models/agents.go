package models

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
	"gorm.io/gorm"
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
