package people

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Account is a tenant: every other row belongs to one.
type Account struct {
	ID                   string
	Name                 string
	AllowPrivateEvidence bool
	CreatedAt            time.Time
}

// DefaultAccountName is the account made on first start.
const DefaultAccountName = "default"

var accountName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// CreateAccount makes a new account.
func (s *Directory) CreateAccount(ctx context.Context, name string) (*Account, error) {
	if !accountName.MatchString(name) {
		return nil, core.Invalid("name", "an account name is 1 to 63 lower-case letters, digits, '.', '_' or '-', starting with a letter or digit")
	}
	a := &Account{ID: core.NewID("acct"), Name: name, CreatedAt: s.Now()}
	err := s.Write(ctx, func(tx *gorm.DB) error {
		// One statement, so that two instances making the default account at
		// the same moment cannot both pass a check and then collide.
		res := tx.Table("accounts").Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "name"}}, DoNothing: true}).Create(a)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return core.Refuse(core.FailedPrecondition, "name", "account %q exists", name)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("create account: %w", err)
	}
	return a, nil
}

// EnsureDefaultAccount makes the default account when there is no account yet.
func (s *Directory) EnsureDefaultAccount(ctx context.Context) error {
	var n int64
	if err := s.DB().WithContext(ctx).Table("accounts").Count(&n).Error; err != nil {
		return fmt.Errorf("count accounts: %w", err)
	}
	if n > 0 {
		return nil
	}
	_, err := s.CreateAccount(ctx, DefaultAccountName)
	if core.CodeOf(err) == core.FailedPrecondition {
		return nil // another instance made it first
	}
	return err
}

// AccountByName finds an account by its name.
func (s *Directory) AccountByName(ctx context.Context, name string) (*Account, error) {
	var a Account
	err := s.DB().WithContext(ctx).Table("accounts").Where("name = ?", name).Take(&a).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, core.Refuse(core.NotFound, "account", "no account is named %q", name)
	}
	if err != nil {
		return nil, fmt.Errorf("find account: %w", err)
	}
	return &a, nil
}

// AccountByID finds an account by its id.
func (s *Directory) AccountByID(ctx context.Context, id string) (*Account, error) {
	var a Account
	err := s.DB().WithContext(ctx).Table("accounts").Where("id = ?", id).Take(&a).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, core.Refuse(core.NotFound, "account_id", "no such account")
	}
	if err != nil {
		return nil, fmt.Errorf("find account: %w", err)
	}
	return &a, nil
}

// ListAccounts returns every account, oldest first.
func (s *Directory) ListAccounts(ctx context.Context) ([]Account, error) {
	var out []Account
	if err := s.DB().WithContext(ctx).Table("accounts").Order("created_at, id").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list accounts: %w", err)
	}
	return out, nil
}

// SetAllowPrivateEvidence turns on or off whether asks of the account may
// carry code, diff and log evidence.
func (s *Directory) SetAllowPrivateEvidence(ctx context.Context, accountID string, allow bool) error {
	var updated int64
	err := s.Write(ctx, func(tx *gorm.DB) error {
		res := tx.Table("accounts").Where("id = ?", accountID).Update("allow_private_evidence", allow)
		updated = res.RowsAffected
		return res.Error
	})
	if err != nil {
		return fmt.Errorf("set allow_private_evidence: %w", err)
	}
	if updated == 0 {
		return core.Refuse(core.NotFound, "account", "no such account")
	}
	return nil
}

// Person is somebody who can decide asks, in one or more accounts.
type Person struct {
	ID          string
	Subject     string
	DisplayName string
	CreatedAt   time.Time
}

// Member is a person as seen from one account.
type Member struct {
	Person
	AccountID string
	Role      core.Role
}

var subjectPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9@._:+-]{0,127}$`)

// AddMember makes the person with subject (or finds them) and gives them role
// in the account.
func (s *Directory) AddMember(ctx context.Context, accountID, subject, displayName string, role core.Role) (*Member, error) {
	if err := CheckSubject(subject); err != nil {
		return nil, err
	}
	if _, err := core.ParseRole(string(role)); err != nil {
		return nil, err
	}
	m := &Member{AccountID: accountID, Role: role}
	err := s.Write(ctx, func(tx *gorm.DB) error {
		err := tx.Table("persons").Select("id, subject, display_name, created_at").Where("subject = ?", subject).Take(&m.Person).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			m.Person = Person{ID: core.NewID("per"), Subject: subject, DisplayName: displayName, CreatedAt: s.Now()}
			err = s.createPerson(tx, &m.Person)
		}
		if err != nil {
			return err
		}
		return tx.Exec(`INSERT INTO memberships (account_id, person_id, role, created_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (account_id, person_id) DO UPDATE SET role = excluded.role`, accountID, m.ID, role, s.Now()).Error
	})
	if err != nil {
		return nil, fmt.Errorf("add member: %w", err)
	}
	return m, nil
}

// MemberBySubject finds the member of the account with subject.
func (s *Directory) MemberBySubject(ctx context.Context, accountID, subject string) (*Member, error) {
	var m Member
	err := s.DB().WithContext(ctx).Raw(`SELECT p.id, p.subject, p.display_name, p.created_at, m.account_id, m.role
		FROM memberships m JOIN persons p ON p.id = m.person_id WHERE m.account_id = ? AND p.subject = ?`, accountID, subject).
		Scan(&m).Error
	if err != nil {
		return nil, fmt.Errorf("find member: %w", err)
	}
	if m.ID == "" {
		return nil, core.Refuse(core.NotFound, "subject", "no member of this account has subject %q", subject)
	}
	return &m, nil
}

// MayDecide says whether the member may answer the ask: on an ask an
// approval rule covers, they are one of the people its frozen requirement
// counts (or of its escalation pool, once it escalated); otherwise it is
// asked of them, or of nobody in particular and they are an owner or admin.
func (m *Member) MayDecide(a *asks.Approval) bool {
	if m.AccountID != a.AccountID {
		return false
	}
	if a.Requirement != nil {
		r := a.RequirementOf()
		return r != nil && r.MaySign(m.Subject, a.EscalatedAt != nil)
	}
	if a.AskedOf == "" {
		return m.Role == core.RoleOwner || m.Role == core.RoleAdmin
	}
	return a.AskedOf == m.Subject
}

// Scopes an agent token can hold.
const (
	ScopeMCPRead        = "mcp:read"
	ScopeMCPWrite       = "mcp:write"
	ScopeApprovalsRead  = "approvals:read"
	ScopeApprovalsWrite = "approvals:write"
)

// AllScopes lists every scope, in the order they are shown.
var AllScopes = []string{ScopeMCPRead, ScopeMCPWrite, ScopeApprovalsRead, ScopeApprovalsWrite}

// The scopes the MCP endpoint's tools need: a read tool both read scopes, a
// write tool both write scopes.
var (
	ReadToolScopes  = []string{ScopeMCPRead, ScopeApprovalsRead}
	WriteToolScopes = []string{ScopeMCPWrite, ScopeApprovalsWrite}
)

// ToolScopeRule says, to the person choosing scopes for an OAuth client,
// why a grant must open at least one tool.
const ToolScopeRule = "Keep approvals:read with mcp:read, or approvals:write with mcp:write: " +
	"the client's tools need one of these pairs, and without one it connects but can do nothing."

// OpensATool says whether scopes hold every scope of the read tools or of
// the write tools: a grant without either connects a client with no tools.
func OpensATool(scopes []string) bool {
	holds := func(need []string) bool {
		for _, sc := range need {
			if !slices.Contains(scopes, sc) {
				return false
			}
		}
		return true
	}
	return holds(ReadToolScopes) || holds(WriteToolScopes)
}

// Agent is a requester: software that files asks with a bearer token.
type Agent struct {
	ID             string
	AccountID      string
	Name           string
	Subject        string
	TokenHash      string
	Scopes         string // space separated
	Disabled       bool
	DisabledReason string
	// ForPersonID is the person the agent acts for, if any: an agent made
	// with --for or a client that person connected. That person's approval
	// does not count towards a rule's quorum on the agent's asks.
	ForPersonID *string
	// Service marks the service's own agent of the account, which files the
	// changes proposed in the browser (rule and member changes): made by the
	// service alone, found by this mark and never by its name, and no token
	// matches it.
	Service   bool
	CreatedAt time.Time
}

// ScopeList returns the agent's scopes.
func (a *Agent) ScopeList() []string { return strings.Fields(a.Scopes) }

// HasScopes says whether the agent holds every one of scopes.
func (a *Agent) HasScopes(scopes ...string) bool {
	have := a.ScopeList()
	for _, s := range scopes {
		if !slices.Contains(have, s) {
			return false
		}
	}
	return true
}

// TokenPrefix starts every agent token, so a leaked one is easy to spot.
const TokenPrefix = "cs_agent_"

var agentName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// ReservedAgentName says whether name is one the service keeps for its own
// agents: "countersign", or "countersign" then '-', '.' or '_' and more, in
// any case. Nobody else may take one (agent create, an OAuth client's
// registration or consent), so no agent of a person passes for the service's.
func ReservedAgentName(name string) bool {
	n := strings.ToLower(name)
	if !strings.HasPrefix(n, "countersign") {
		return false
	}
	rest := n[len("countersign"):]
	return rest == "" || strings.ContainsAny(rest[:1], "-._")
}

// ReservedNameRefusal refuses a name the service keeps for its own agents.
func ReservedNameRefusal(field, name string) error {
	return core.Refuse(core.InvalidArgument, field, "%q is reserved for the service's own agents (names starting with countersign): choose another", name)
}

// CreateAgent makes an agent with the given scopes and returns it with its
// bearer token, which is shown this once: only its hash is kept.
func (s *Directory) CreateAgent(ctx context.Context, accountID, name string, scopes []string) (*Agent, string, error) {
	return s.CreateAgentFor(ctx, accountID, name, scopes, "")
}

// CreateAgentFor is CreateAgent for an agent that acts for a person of the
// account, named by subject ("" for none): the four-eyes principle keeps
// that person's approval from counting towards a rule's quorum on its asks.
func (s *Directory) CreateAgentFor(ctx context.Context, accountID, name string, scopes []string, forSubject string) (*Agent, string, error) {
	if !agentName.MatchString(name) {
		return nil, "", core.Invalid("name", "an agent name is 1 to 64 letters, digits, '.', '_' or '-'")
	}
	if ReservedAgentName(name) {
		return nil, "", ReservedNameRefusal("name", name)
	}
	if len(scopes) == 0 {
		return nil, "", core.Invalid("scopes", "name at least one of %s", strings.Join(AllScopes, ", "))
	}
	var clean []string
	for _, sc := range scopes {
		sc = strings.TrimSpace(sc)
		if !slices.Contains(AllScopes, sc) {
			return nil, "", core.Invalid("scopes", "unknown scope %q: the scopes are %s", sc, strings.Join(AllScopes, ", "))
		}
		if !slices.Contains(clean, sc) {
			clean = append(clean, sc)
		}
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return nil, "", err
	}
	token := TokenPrefix + core.IDEncoding.EncodeToString(raw)
	a := &Agent{
		ID: core.NewID("agt"), AccountID: accountID, Name: name, Subject: "agent:" + name,
		TokenHash: core.HashToken(token), Scopes: strings.Join(clean, " "), CreatedAt: s.Now(),
	}
	err := s.Write(ctx, func(tx *gorm.DB) error { return s.InsertAgent(tx, a, forSubject) })
	if err != nil {
		return nil, "", fmt.Errorf("create agent: %w", err)
	}
	return a, token, nil
}

// InsertAgent adds a, inside tx, acting for the member forSubject ("" for
// none): refused when the name is taken in the account.
func (s *Directory) InsertAgent(tx *gorm.DB, a *Agent, forSubject string) error {
	if forSubject != "" {
		var ids []string
		err := tx.Table("memberships").
			Joins("JOIN persons ON persons.id = memberships.person_id").
			Where("memberships.account_id = ? AND persons.subject = ?", a.AccountID, forSubject).
			Pluck("memberships.person_id", &ids).Error
		if err != nil {
			return err
		}
		if len(ids) == 0 {
			return core.Refuse(core.NotFound, "for", "no person %q is a member of this account", forSubject)
		}
		a.ForPersonID = &ids[0]
	}
	var n int64
	if err := tx.Table("agents").Where("account_id = ? AND name = ?", a.AccountID, a.Name).Count(&n).Error; err != nil {
		return err
	}
	if n > 0 {
		return core.Refuse(core.FailedPrecondition, "name", "an agent named %q exists in this account", a.Name)
	}
	return tx.Table("agents").Create(a).Error
}

// AgentByToken finds the agent a bearer token belongs to, disabled or not.
// On PostgreSQL it is remembered for a few seconds, until any agent changes
// (see agentTokens).
func (s *Directory) AgentByToken(ctx context.Context, token string) (*Agent, error) {
	return s.AgentByTokenHash(ctx, core.HashToken(token))
}

// AgentByTokenHash is AgentByToken for the token's hash (HashToken), as
// another instance names it when it forwards a call.
func (s *Directory) AgentByTokenHash(ctx context.Context, hash string) (*Agent, error) {
	if a, ok := s.agentTokens.get(hash, s.Changes().Listening(), time.Now()); ok {
		return a, nil
	}
	gen := s.agentTokens.generation()
	var a Agent
	err := s.DB().WithContext(ctx).Table("agents").Where("token_hash = ?", hash).Take(&a).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, core.Refuse(core.NotFound, "token", "no agent has this token")
	}
	if err != nil {
		return nil, fmt.Errorf("find agent: %w", err)
	}
	s.agentTokens.put(hash, a, gen, s.Changes().Listening(), time.Now())
	return &a, nil
}

// AgentByName finds an agent of the account by name.
func (s *Directory) AgentByName(ctx context.Context, accountID, name string) (*Agent, error) {
	var a Agent
	err := s.DB().WithContext(ctx).Table("agents").Where("account_id = ? AND name = ?", accountID, name).Take(&a).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, core.Refuse(core.NotFound, "name", "no agent is named %q in this account", name)
	}
	if err != nil {
		return nil, fmt.Errorf("find agent: %w", err)
	}
	return &a, nil
}

// ListAgents returns the account's agents, oldest first; deleted ones are left out.
func (s *Directory) ListAgents(ctx context.Context, accountID string) ([]Agent, error) {
	var out []Agent
	if err := s.DB().WithContext(ctx).Table("agents").Where("account_id = ? AND deleted_at IS NULL", accountID).Order("created_at, id").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list agents: %w", err)
	}
	return out, nil
}
