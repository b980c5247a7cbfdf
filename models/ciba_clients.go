package models

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gorm.io/gorm"

	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/grants"
	"github.com/countersign/countersign/models/oidc"
	"github.com/countersign/countersign/models/people"
)

// RegisterCIBAClient is an admin's registration of a CIBA client, checked
// by package oauth (the JWKS, the endpoint, the secret made) before it
// reaches the store.
type RegisterCIBAClient struct {
	AccountID            string
	Name                 string
	AuthMethod           string // oidc.AuthPrivateKeyJWT or oidc.AuthClientSecretBasic
	SecretSHA256         string // client_secret_basic: the hex SHA-256 of the secret
	JWKS                 string // private_key_jwt: the client's public keys
	DeliveryMode         string // oidc.DeliveryPoll or oidc.DeliveryPing
	NotificationEndpoint string // ping only
	PersonIDs            []string
	CreatedBy            string // the admin's subject
}

// cibaAgentScopes are the scopes of a CIBA client's agent: it files asks
// and reads their answers, and holds no token of its own.
var cibaAgentScopes = []string{people.ScopeApprovalsRead, people.ScopeApprovalsWrite}

// RegisterCIBAClient keeps a CIBA client in one transaction: an agent named
// after it (made unique in the account) that files its asks, the client, the
// people it may ask (each a member of the account) and an audit event.
func (s *Store) RegisterCIBAClient(ctx context.Context, in RegisterCIBAClient) (*oidc.Client, error) {
	if strings.TrimSpace(in.Name) == "" {
		return nil, core.Invalid("name", "name the client")
	}
	switch {
	case in.AuthMethod == oidc.AuthPrivateKeyJWT && in.JWKS == "":
		return nil, core.Invalid("jwks", "a private_key_jwt client needs its JWK Set")
	case in.AuthMethod == oidc.AuthClientSecretBasic && in.SecretSHA256 == "":
		return nil, core.Invalid("secret", "a client_secret_basic client needs a secret")
	case in.AuthMethod != oidc.AuthPrivateKeyJWT && in.AuthMethod != oidc.AuthClientSecretBasic:
		return nil, core.Invalid("method", "must be %s or %s, not %q", oidc.AuthPrivateKeyJWT, oidc.AuthClientSecretBasic, in.AuthMethod)
	}
	switch in.DeliveryMode {
	case oidc.DeliveryPoll:
		in.NotificationEndpoint = ""
	case oidc.DeliveryPing:
		if in.NotificationEndpoint == "" {
			return nil, core.Invalid("notification_endpoint", "a ping client needs its notification endpoint")
		}
	default:
		return nil, core.Invalid("mode", "must be %s or %s, not %q", oidc.DeliveryPoll, oidc.DeliveryPing, in.DeliveryMode)
	}
	var personIDs []string
	for _, p := range in.PersonIDs {
		if !slices.Contains(personIDs, p) {
			personIDs = append(personIDs, p)
		}
	}
	if len(personIDs) == 0 {
		return nil, core.Invalid("people", "choose at least one person the client may ask")
	}
	now := s.Now()
	c := &oidc.Client{ID: core.NewID("ciba"), AccountID: in.AccountID, Name: strings.TrimSpace(in.Name), AuthMethod: in.AuthMethod,
		SecretSHA256: in.SecretSHA256, JWKS: in.JWKS, DeliveryMode: in.DeliveryMode, NotificationEndpoint: in.NotificationEndpoint,
		CreatedBy: in.CreatedBy, CreatedAt: now}
	if in.AuthMethod == oidc.AuthPrivateKeyJWT {
		c.SecretSHA256 = ""
	} else {
		c.JWKS = ""
	}
	err := s.Write(ctx, func(tx *gorm.DB) error {
		var members []string
		if err := tx.Table("memberships").Where("account_id = ? AND person_id IN ?", in.AccountID, personIDs).Pluck("person_id", &members).Error; err != nil {
			return err
		}
		for _, p := range personIDs {
			if !slices.Contains(members, p) {
				return core.Refuse(core.NotFound, "people", "person %q is not a member of this account", p)
			}
		}
		agent, err := s.insertCIBAAgent(tx, in.AccountID, c.Name)
		if err != nil {
			return err
		}
		c.AgentID = agent.ID
		if err := oidc.InsertClient(tx, c, personIDs); err != nil {
			return err
		}
		if err := s.Changed(tx, core.Change{Kind: core.AgentsChanged}); err != nil {
			return err
		}
		return s.AccountEvent(tx, now, in.AccountID, asks.ActorPerson, in.CreatedBy, oidc.StepCIBAClientRegistered,
			"registered CIBA client "+c.Name+" ("+c.AuthMethod+", "+c.DeliveryMode+") as agent "+agent.Name,
			map[string]any{"client_id": c.ID, "client_name": c.Name, "agent": agent.Name, "auth_method": c.AuthMethod,
				"delivery_mode": c.DeliveryMode, "people": personIDs})
	})
	if err != nil {
		return nil, fmt.Errorf("register ciba client: %w", err)
	}
	return c, nil
}

// insertCIBAAgent adds, inside tx, the agent of a new CIBA client under the
// first free name made from the client's. Its token is never shown: the
// client proves itself with its own credentials.
func (s *Store) insertCIBAAgent(tx *gorm.DB, accountID, clientName string) (*people.Agent, error) {
	base := grants.OAuthAgentName(clientName)
	if people.ReservedAgentName(base) {
		return nil, people.ReservedNameRefusal("name", clientName)
	}
	var taken []string
	if err := tx.Table("agents").Where("account_id = ? AND (name = ? OR name LIKE ?)", accountID, base, base+"-%").Pluck("name", &taken).Error; err != nil {
		return nil, err
	}
	a := &people.Agent{ID: core.NewID("agt"), AccountID: accountID, Name: base,
		TokenHash: core.HashToken(core.RandomToken(people.TokenPrefix)), Scopes: strings.Join(cibaAgentScopes, " "), CreatedAt: s.Now()}
	for i := 2; slices.Contains(taken, a.Name); i++ {
		a.Name = base + "-" + strconv.Itoa(i)
	}
	a.Subject = "agent:" + a.Name
	if err := s.InsertAgent(tx, a, ""); err != nil {
		return nil, err
	}
	return a, nil
}

// RevokeCIBAClient ends a CIBA client of the account for good, in one
// transaction: it is marked revoked, and its agent disabled with its open
// asks cancelled. Revoking a revoked client changes nothing; another
// account's client is NOT_FOUND.
func (s *Store) RevokeCIBAClient(ctx context.Context, accountID, clientID, by string) error {
	return s.Write(ctx, func(tx *gorm.DB) error {
		var c oidc.Client
		err := s.Lock(tx.Model(&oidc.Client{})).Where("id = ? AND account_id = ?", clientID, accountID).Take(&c).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return core.Refuse(core.NotFound, "client_id", "no CIBA client %q in this account", clientID)
		}
		if err != nil {
			return fmt.Errorf("revoke ciba client: %w", err)
		}
		if c.RevokedAt != nil {
			return nil
		}
		now := s.Now()
		if err := tx.Model(&oidc.Client{}).Where("id = ?", c.ID).Update("revoked_at", now).Error; err != nil {
			return fmt.Errorf("revoke ciba client: %w", err)
		}
		if err := s.AccountEvent(tx, now, accountID, asks.ActorPerson, by, oidc.StepCIBAClientRevoked, "revoked CIBA client "+c.Name,
			map[string]any{"client_id": c.ID, "client_name": c.Name}); err != nil {
			return err
		}
		var agent people.Agent
		if err := s.Lock(tx.Table("agents")).Where("id = ?", c.AgentID).Take(&agent).Error; err != nil {
			return fmt.Errorf("revoke ciba client: %w", err)
		}
		if err := s.Changed(tx, core.Change{Kind: core.AgentsChanged, AgentID: agent.ID}); err != nil {
			return err
		}
		if agent.Disabled {
			return s.cancelOpenAsksOf(tx, agent.ID, by, "requesting CIBA client revoked by "+by)
		}
		return s.disableAgent(tx, agent.ID, "CIBA client revoked by "+by, by, "requesting CIBA client revoked by "+by)
	})
}
