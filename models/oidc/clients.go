package oidc

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/countersign/countersign/models/core"
)

// How a CIBA client proves itself at the provider's endpoints.
const (
	AuthPrivateKeyJWT     = "private_key_jwt"
	AuthClientSecretBasic = "client_secret_basic"
)

// How a CIBA client hears that its request was answered: it polls the
// token endpoint, or is pinged at its notification endpoint and then asks.
const (
	DeliveryPoll = "poll"
	DeliveryPing = "ping"
)

// Audit steps of CIBA clients: an admin registers one, or revokes it.
const (
	StepCIBAClientRegistered = "ciba_client_registered"
	StepCIBAClientRevoked    = "ciba_client_revoked"
)

// Client is a CIBA client an admin registered: a confidential client that
// asks the listed people of its account through its own agent.
type Client struct {
	ID           string `gorm:"primaryKey"`
	AccountID    string
	Name         string
	AuthMethod   string
	SecretSHA256 string `gorm:"column:secret_sha256"` // client_secret_basic: the hex SHA-256 of the secret
	JWKS         string `gorm:"column:jwks"`          // private_key_jwt: the client's public keys, a JWK Set
	DeliveryMode string
	// NotificationEndpoint is where a ping goes (ping mode only).
	NotificationEndpoint string
	// AgentID is the agent made for the client: the asks it files are this
	// agent's, and revoking the client disables it.
	AgentID   string
	CreatedBy string
	CreatedAt time.Time
	RevokedAt *time.Time
}

// TableName is the table of CIBA clients.
func (Client) TableName() string { return "oidc_clients" }

// ClientPerson is one person a CIBA client may ask.
type ClientPerson struct {
	ClientID string `gorm:"primaryKey"`
	PersonID string `gorm:"primaryKey"`
}

// TableName is the table of the people CIBA clients may ask.
func (ClientPerson) TableName() string { return "oidc_client_people" }

// CIBAClient finds a CIBA client by id. A revoked one is returned with
// RevokedAt set: the caller refuses it.
func (s *Provider) CIBAClient(ctx context.Context, id string) (*Client, error) {
	var c Client
	err := s.DB().WithContext(ctx).Where("id = ?", id).Take(&c).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, core.Refuse(core.NotFound, "client_id", "no CIBA client is registered as %q", id)
	}
	if err != nil {
		return nil, fmt.Errorf("find ciba client: %w", err)
	}
	return &c, nil
}

// CIBAClients lists the account's CIBA clients, revoked ones too, newest first.
func (s *Provider) CIBAClients(ctx context.Context, accountID string) ([]Client, error) {
	var out []Client
	err := s.DB().WithContext(ctx).Where("account_id = ?", accountID).Order("created_at DESC, id").Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("list ciba clients: %w", err)
	}
	return out, nil
}

// CIBAClientPeople are the ids of the people the client may ask.
func (s *Provider) CIBAClientPeople(ctx context.Context, clientID string) ([]string, error) {
	var ids []string
	err := s.DB().WithContext(ctx).Model(&ClientPerson{}).Where("client_id = ?", clientID).Order("person_id").Pluck("person_id", &ids).Error
	if err != nil {
		return nil, fmt.Errorf("ciba client people: %w", err)
	}
	return ids, nil
}

// ClientMayAsk says whether the client may ask the person: the person is
// listed for the client and still a member of the client's account, and the
// client is not revoked.
func (s *Provider) ClientMayAsk(ctx context.Context, clientID, personID string) (bool, error) {
	var n int64
	err := s.DB().WithContext(ctx).Table("oidc_client_people cp").
		Joins("JOIN oidc_clients c ON c.id = cp.client_id").
		Joins("JOIN memberships m ON m.account_id = c.account_id AND m.person_id = cp.person_id").
		Where("cp.client_id = ? AND cp.person_id = ? AND c.revoked_at IS NULL", clientID, personID).Count(&n).Error
	if err != nil {
		return false, fmt.Errorf("client may ask: %w", err)
	}
	return n > 0, nil
}

// InsertClient adds, inside tx, the client and the people it may ask.
func InsertClient(tx *gorm.DB, c *Client, personIDs []string) error {
	if err := tx.Create(c).Error; err != nil {
		return fmt.Errorf("insert ciba client: %w", err)
	}
	for _, p := range personIDs {
		if err := tx.Create(&ClientPerson{ClientID: c.ID, PersonID: p}).Error; err != nil {
			return fmt.Errorf("insert ciba client person: %w", err)
		}
	}
	return nil
}
