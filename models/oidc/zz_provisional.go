package oidc

import (
	"context"
	"time"
)

// Provisional until the provider branch merges (it declares these).
const (
	DeliveryPoll = "poll"
	DeliveryPing = "ping"
)

type Client struct {
	ID, AccountID, Name, AuthMethod, DeliveryMode, NotificationEndpoint, AgentID string
	RevokedAt                                                                    *time.Time
}

func (p *Provider) CIBAClient(ctx context.Context, id string) (*Client, error) { panic("provisional") }
func (p *Provider) ClientMayAsk(ctx context.Context, clientID, personID string) (bool, error) {
	panic("provisional")
}
