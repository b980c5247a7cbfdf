package grants

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
	"gorm.io/gorm"
)

// OAuth storage: Countersign is the authorization server of its own MCP
// endpoint (package oauth holds the protocol's rules). A client a person
// connects becomes an agent made for that person, with the scopes the person
// chose; its access and refresh tokens are kept as hashes, like agent tokens.
// A grant lives only as long as its person's membership and sessions allow:
// disabling the agent, signing the person out everywhere (EndSessionsOf) and
// removing them from the account (RemoveMember) end its tokens and its open
// MCP streams at once, in the transaction that makes the change.

// Token prefixes, so a leaked OAuth token is easy to spot and /mcp knows
// which table to look in.
const (
	OAuthAccessPrefix  = "cs_oat_"
	OAuthRefreshPrefix = "cs_ort_"
	oauthCodePrefix    = "cs_oac_"
)

// The kinds of OAuth token.
const (
	OAuthAccess  = "access"
	OAuthRefresh = "refresh"
)

// OAuthClient is a client registered by dynamic client registration
// (RFC 7591): anyone may register one, so its name is unverified. Until a
// person connects it, it lives OAuthClientUnusedLife from CreatedAt, the
// last time it was registered.
type OAuthClient struct {
	ID           string
	Name         string
	RedirectURIs string // one per line
	CreatedAt    time.Time
}

// OAuthClientUnusedLife is how long a registered client that no person has
// connected is kept: registration is open to anyone, so what nobody uses
// goes.
const OAuthClientUnusedLife = 24 * time.Hour

// UnconnectedClient is the condition of a registered client no person has
// connected, on the oauth_clients table.
const UnconnectedClient = "NOT EXISTS (SELECT 1 FROM oauth_connections c WHERE c.client_id = oauth_clients.id)"

// RedirectList returns the client's redirect URIs.
func (c *OAuthClient) RedirectList() []string { return strings.Split(c.RedirectURIs, "\n") }

// OAuthConnection is a client a person connected: the agent it became.
type OAuthConnection struct {
	AgentID      string
	AccountID    string
	PersonID     string
	ClientID     string
	ClientName   string
	RedirectHost string
	Verified     bool
	CreatedAt    time.Time
}

// ConnectedClient is a connection as the devices page lists it.
type ConnectedClient struct {
	OAuthConnection
	AgentName string
	Scopes    string
	Disabled  bool
}

// OAuthCode is an authorization code, kept as its hash.
type OAuthCode struct {
	ID            string
	CodeHash      string
	AgentID       string
	ClientID      string
	RedirectURI   string
	CodeChallenge string
	Resource      string
	Scopes        string
	CreatedAt     time.Time
	ExpiresAt     time.Time
	UsedAt        *time.Time
}

// OAuthToken is an access or refresh token, kept as its hash. The tokens of
// one grant share a family: the id of the code it began with.
type OAuthToken struct {
	ID        string
	TokenHash string
	Kind      string
	FamilyID  string
	AgentID   string
	ClientID  string
	Resource  string
	Scopes    string
	CreatedAt time.Time
	ExpiresAt time.Time
	UsedAt    *time.Time
	RevokedAt *time.Time
}

// OAuthGrant is what a token request is granted: the agent, the client,
// the audience and the scopes.
type OAuthGrant struct {
	FamilyID string
	AgentID  string
	ClientID string
	Resource string
	Scopes   string
}

func secret(prefix string) (string, error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("random token: %w", err)
	}
	return prefix + core.IDEncoding.EncodeToString(raw), nil
}

// RegisterOAuthClient keeps a client that registered itself (RFC 7591). A
// client registered before with the same name and redirect URIs is that
// client again, its life renewed: a host that registers on every start
// gets one client_id, and so one agent when its person connects it. A new
// client is refused with RESOURCE_EXHAUSTED while maxUnconnected clients
// that nobody connected are live.
func (s *Issuer) RegisterOAuthClient(ctx context.Context, name string, redirectURIs []string, maxUnconnected int) (*OAuthClient, error) {
	now := s.Now()
	c := &OAuthClient{ID: core.NewID("dcr"), Name: name, RedirectURIs: strings.Join(redirectURIs, "\n"), CreatedAt: now}
	err := s.Write(ctx, func(tx *gorm.DB) error {
		var same OAuthClient
		err := tx.Table("oauth_clients").Where("name = ? AND redirect_uris = ?", c.Name, c.RedirectURIs).Order("created_at DESC").Take(&same).Error
		if err == nil {
			*c = same
			c.CreatedAt = now
			return tx.Table("oauth_clients").Where("id = ?", c.ID).Update("created_at", now).Error
		}
		if !errors.Is(err, gorm.ErrRecordNotFound) {
			return err
		}
		var waiting int64
		if err := tx.Table("oauth_clients").Where("created_at > ? AND "+UnconnectedClient, now.Add(-OAuthClientUnusedLife)).Count(&waiting).Error; err != nil {
			return err
		}
		if waiting >= int64(maxUnconnected) {
			return core.Refuse(core.ResourceExhausted, "client", "%d registered clients are waiting for a person to connect them, the most there may be; try again later", waiting)
		}
		return tx.Table("oauth_clients").Create(c).Error
	})
	if err != nil {
		return nil, fmt.Errorf("register oauth client: %w", err)
	}
	return c, nil
}

// OAuthClientByID finds a registered client: one that a person connected,
// or that was registered within OAuthClientUnusedLife.
func (s *Issuer) OAuthClientByID(ctx context.Context, id string) (*OAuthClient, error) {
	var c OAuthClient
	err := s.DB().WithContext(ctx).Table("oauth_clients").Where("id = ?", id).
		Where("created_at > ? OR NOT "+UnconnectedClient, s.Now().Add(-OAuthClientUnusedLife)).Take(&c).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, core.Refuse(core.NotFound, "client_id", "no client is registered as %q (a client nobody connects is kept a day; register again)", id)
	}
	if err != nil {
		return nil, fmt.Errorf("find oauth client: %w", err)
	}
	return &c, nil
}

// NewConnection is a person's consent to a client.
type NewConnection struct {
	AccountID    string
	Subject      string // the person who consents, a member of the account
	ClientID     string
	ClientName   string
	RedirectHost string
	Verified     bool
	Scopes       []string
	// Code is the authorization code's binding.
	RedirectURI, CodeChallenge, Resource string
	CodeLife                             time.Duration
}

var notAgentName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// OAuthAgentName is the agent name a client's name becomes: runs of other
// characters turn into '-', it starts with a letter or digit and fits the
// agent name pattern with room for a "-N" suffix.
func OAuthAgentName(clientName string) string {
	n := strings.Trim(notAgentName.ReplaceAllString(clientName, "-"), "-._")
	if len(n) > 56 {
		n = strings.TrimRight(n[:56], "-._")
	}
	if n == "" {
		n = "oauth-client"
	}
	return n
}

// Audit steps of OAuth clients: a person connects one (or connects it
// again), or disconnects it.
const (
	StepClientConnected    = "client_connected"
	StepClientDisconnected = "client_disconnected"
)

// ConnectOAuthClient records a person's consent in one transaction: an agent
// named after the client (made unique in the account) for that person, with
// the chosen scopes, the connection, an audit event, and an authorization
// code bound to the client, its redirect URI, the PKCE challenge and the
// resource. A client the person has connected before and not disconnected
// keeps its agent, which takes the scopes chosen now. It returns the agent
// and the code, shown once.
func (s *Issuer) ConnectOAuthClient(ctx context.Context, in NewConnection) (*people.Agent, string, error) {
	for _, sc := range in.Scopes {
		if !slices.Contains(people.AllScopes, sc) {
			return nil, "", core.Invalid("scope", "unknown scope %q: the scopes are %s", sc, strings.Join(people.AllScopes, ", "))
		}
	}
	if len(in.Scopes) == 0 {
		return nil, "", core.Invalid("scope", "choose at least one scope")
	}
	agentToken, err := secret(people.TokenPrefix) // never shown: the client holds OAuth tokens instead
	if err != nil {
		return nil, "", err
	}
	code, err := secret(oauthCodePrefix)
	if err != nil {
		return nil, "", err
	}
	now := s.Now()
	a := &people.Agent{ID: core.NewID("agt"), AccountID: in.AccountID, TokenHash: core.HashToken(agentToken), Scopes: strings.Join(in.Scopes, " "), CreatedAt: now}
	err = s.Write(ctx, func(tx *gorm.DB) error {
		var earlier string
		err := tx.Table("oauth_connections c").Select("c.agent_id").
			Joins("JOIN agents a ON a.id = c.agent_id").
			Joins("JOIN persons p ON p.id = c.person_id").
			Where("c.account_id = ? AND p.subject = ? AND c.client_id = ? AND a.disabled = ? AND a.deleted_at IS NULL", in.AccountID, in.Subject, in.ClientID, false).
			Order("c.created_at DESC").Limit(1).Scan(&earlier).Error
		if err != nil {
			return err
		}
		note := "connected " + in.ClientName
		if earlier != "" {
			var kept people.Agent
			if err := s.Lock(tx.Table("agents")).Where("id = ?", earlier).Take(&kept).Error; err != nil {
				return err
			}
			*a = kept
			a.Scopes = strings.Join(in.Scopes, " ")
			if err := tx.Table("agents").Where("id = ?", a.ID).Update("scopes", a.Scopes).Error; err != nil {
				return err
			}
			note = "connected " + in.ClientName + " again"
		} else {
			if err := s.insertOAuthAgent(tx, a, in, now); err != nil {
				return err
			}
		}
		if err := s.Changed(tx, core.Change{Kind: core.AgentsChanged}); err != nil {
			return err
		}
		if err := s.AccountEvent(tx, now, in.AccountID, asks.ActorPerson, in.Subject, StepClientConnected, note+" as agent "+a.Name+" with "+a.Scopes,
			map[string]any{"client_id": in.ClientID, "client_name": in.ClientName, "redirect_host": in.RedirectHost, "verified": in.Verified,
				"agent": a.Name, "scopes": in.Scopes}); err != nil {
			return err
		}
		return tx.Table("oauth_codes").Create(&OAuthCode{ID: core.NewID("oac"), CodeHash: core.HashToken(code), AgentID: a.ID,
			ClientID: in.ClientID, RedirectURI: in.RedirectURI, CodeChallenge: in.CodeChallenge, Resource: in.Resource,
			Scopes: a.Scopes, CreatedAt: now, ExpiresAt: now.Add(in.CodeLife)}).Error
	})
	if err != nil {
		return nil, "", fmt.Errorf("connect oauth client: %w", err)
	}
	return a, code, nil
}

// insertOAuthAgent adds, inside tx, the agent a newly connected client
// becomes, under the first free name made from the client's, and its
// connection.
func (s *Issuer) insertOAuthAgent(tx *gorm.DB, a *people.Agent, in NewConnection, now time.Time) error {
	base := OAuthAgentName(in.ClientName)
	if people.ReservedAgentName(base) { // a client registered before such names were refused
		return people.ReservedNameRefusal("client_name", in.ClientName)
	}
	var taken []string
	if err := tx.Table("agents").Where("account_id = ? AND (name = ? OR name LIKE ?)", in.AccountID, base, base+"-%").Pluck("name", &taken).Error; err != nil {
		return err
	}
	a.Name = base
	for i := 2; slices.Contains(taken, a.Name); i++ {
		a.Name = base + "-" + strconv.Itoa(i)
	}
	a.Subject = "agent:" + a.Name
	if err := s.InsertAgent(tx, a, in.Subject); err != nil {
		return err
	}
	return tx.Table("oauth_connections").Create(&OAuthConnection{AgentID: a.ID, AccountID: in.AccountID, PersonID: *a.ForPersonID,
		ClientID: in.ClientID, ClientName: in.ClientName, RedirectHost: in.RedirectHost, Verified: in.Verified, CreatedAt: now}).Error
}

// ConnectedClients lists the clients a person connected in the account,
// newest first, with their agents.
func (s *Issuer) ConnectedClients(ctx context.Context, accountID, personID string) ([]ConnectedClient, error) {
	var out []ConnectedClient
	err := s.DB().WithContext(ctx).Table("oauth_connections c").
		Select("c.*, a.name AS agent_name, a.scopes, a.disabled").
		Joins("JOIN agents a ON a.id = c.agent_id").
		Where("c.account_id = ? AND c.person_id = ? AND a.deleted_at IS NULL", accountID, personID).
		Order("c.created_at DESC, c.agent_id").Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("list connected clients: %w", err)
	}
	return out, nil
}

// OAuthAgentsOf returns, inside tx, the agents of the clients personID
// connected in accountID, or in every account when accountID is "".
func OAuthAgentsOf(tx *gorm.DB, personID, accountID string) ([]string, error) {
	q := tx.Table("oauth_connections").Where("person_id = ?", personID)
	if accountID != "" {
		q = q.Where("account_id = ?", accountID)
	}
	var ids []string
	if err := q.Order("agent_id").Pluck("agent_id", &ids).Error; err != nil {
		return nil, fmt.Errorf("find connected clients: %w", err)
	}
	return ids, nil
}

// EndGrants ends, inside tx, every OAuth grant of the agents: their access
// and refresh tokens are revoked and their unspent codes deleted. Each
// agent's access is published as ended (AgentsChanged with its AgentID), so
// that every instance closes the MCP sessions and streams it holds for it.
func (s *Issuer) EndGrants(tx *gorm.DB, agentIDs []string) error {
	if len(agentIDs) == 0 {
		return nil
	}
	if err := tx.Table("oauth_tokens").Where("agent_id IN ? AND revoked_at IS NULL", agentIDs).Update("revoked_at", s.Now()).Error; err != nil {
		return fmt.Errorf("revoke oauth tokens: %w", err)
	}
	if err := tx.Exec(`DELETE FROM oauth_codes WHERE agent_id IN ? AND used_at IS NULL`, agentIDs).Error; err != nil {
		return fmt.Errorf("delete oauth codes: %w", err)
	}
	for _, id := range agentIDs {
		if err := s.Changed(tx, core.Change{Kind: core.AgentsChanged, AgentID: id}); err != nil {
			return err
		}
	}
	return nil
}

// AgentsWithoutAccess returns which of ids name an agent whose access has
// ended: disabled or deleted, or a connected client left with no live OAuth
// token (its grants ended). Ids of no agent (a runner's) are left out.
func (s *Issuer) AgentsWithoutAccess(ctx context.Context, ids []string) ([]string, error) {
	var out []string
	for part := range slices.Chunk(ids, 500) {
		var ended []string
		err := s.DB().WithContext(ctx).Table("agents a").Where("a.id IN ?", part).
			Where(`a.disabled = ? OR a.deleted_at IS NOT NULL OR (EXISTS (SELECT 1 FROM oauth_connections c WHERE c.agent_id = a.id)
				AND NOT EXISTS (SELECT 1 FROM oauth_tokens t WHERE t.agent_id = a.id AND t.revoked_at IS NULL AND t.expires_at > ?))`, true, s.Now()).
			Pluck("a.id", &ended).Error
		if err != nil {
			return nil, fmt.Errorf("find agents without access: %w", err)
		}
		out = append(out, ended...)
	}
	return out, nil
}
