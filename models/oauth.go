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
)

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
