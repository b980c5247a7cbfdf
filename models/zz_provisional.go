package models

import (
	"context"
	"time"

	"github.com/countersign/countersign/ask"
	"github.com/countersign/countersign/models/asks"
)

type AuthorizationFiling struct {
	AccountID, AgentID, PersonID string
	Payload                      ask.AuthorizationPayload
	ExpiresAt                    time.Time
}

func (s *Store) FileAuthorization(ctx context.Context, f AuthorizationFiling) (*asks.Approval, error) {
	panic("provisional")
}
