package people

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"gorm.io/gorm"
)

// An invite never hands an existing person a new passkey: that would let
// whoever opens the link become them. It either makes a new person, who
// registers their first passkey as they accept, or adds a role to an existing
// person, who accepts by signing in with a passkey they already have.

// InviteKind says what accepting an invite does.
type InviteKind string

const (
	// InviteNewPerson makes a new person with the passkey they register as they accept.
	InviteNewPerson InviteKind = "new_person"
	// InviteAddRole gives an existing person a role in the account; only that
	// person can accept it, by signing in with a passkey they already have.
	InviteAddRole InviteKind = "add_role"
)

// ParseInviteKind checks an invite kind; empty means a new person.
func ParseInviteKind(s string) (InviteKind, error) {
	switch k := InviteKind(s); k {
	case "":
		return InviteNewPerson, nil
	case InviteNewPerson, InviteAddRole:
		return k, nil
	}
	return "", core.Invalid("kind", "must be %s or %s, not %q", InviteNewPerson, InviteAddRole, s)
}

// StepMemberJoined records on the account's audit chain that a person took a
// role in the account by accepting an invite.
const StepMemberJoined = "member_joined"

// Invite lets one person join an account with a role, once, before it expires.
type Invite struct {
	TokenHash string
	AccountID string
	Kind      InviteKind
	Role      core.Role
	Subject   string
	CreatedBy string
	CreatedAt time.Time
	ExpiresAt time.Time
	UsedAt    *time.Time
	UsedBy    string
	// ApprovalID is the member_change ask that governs an owner or admin
	// invite a rule covers; Held says it waits for that ask's approval, and
	// works only once it is approved.
	ApprovalID string
	Held       bool
}

// InviteTTL is how long an invite works.
const InviteTTL = 24 * time.Hour

// Inviter is who makes an invite; their role is the highest it can grant.
// A member invites as themselves; the operator (the CLI, the first start)
// acts as an owner.
type Inviter struct {
	Name     string // kept as the invite's created_by: the member's subject, or the operator's name
	PersonID string // the inviting member
	Operator bool   // the operator, who needs no membership
}

// OperatorInviter is the operator of the installation, named name ("cli", SetupInviter).
func OperatorInviter(name string) Inviter { return Inviter{Name: name, Operator: true} }

// AsInviter is the member as the maker of an invite.
func (m *Member) AsInviter() Inviter { return Inviter{Name: m.Subject, PersonID: m.ID} }

// NewInvite is an invite to make.
type NewInvite struct {
	AccountID string
	Kind      InviteKind // empty means InviteNewPerson
	Role      core.Role
	// Subject is, for a new person, the subject they must take (empty: they
	// choose); for an add-role invite, the existing person who alone can accept.
	Subject string
	By      Inviter
}

// RoleRank orders the roles: member < admin < owner.
func RoleRank(r core.Role) int {
	switch r {
	case core.RoleOwner:
		return 3
	case core.RoleAdmin:
		return 2
	case core.RoleMember:
		return 1
	}
	return 0
}

// MayGrant refuses, inside tx, an inviter who may not grant role in the
// account: anyone who is not an owner or admin of it, and anyone asking for a
// role above their own. The inviter's role is read here, not taken on trust.
func MayGrant(tx *gorm.DB, accountID string, by Inviter, role core.Role) error {
	own := core.RoleOwner
	if !by.Operator {
		var roles []core.Role
		if err := tx.Table("memberships").Where("account_id = ? AND person_id = ?", accountID, by.PersonID).Pluck("role", &roles).Error; err != nil {
			return fmt.Errorf("inviter's role: %w", err)
		}
		if len(roles) == 0 || RoleRank(roles[0]) < RoleRank(core.RoleAdmin) {
			return core.Refuse(core.PermissionDenied, "", "only an owner or admin of the account makes invites")
		}
		own = roles[0]
	}
	if RoleRank(role) > RoleRank(own) {
		return core.Refuse(core.PermissionDenied, "role", "an invite cannot grant a role above your own (%s); ask an owner to invite an owner", own)
	}
	return nil
}

// InviteeFits refuses, inside tx, a subject the kind of invite cannot name,
// and returns the subject the invite keeps: for an add-role invite, the
// existing person's own, which subject names under SubjectKey ("Bob" names bob).
func InviteeFits(tx *gorm.DB, accountID string, kind InviteKind, subject string) (string, error) {
	if subject == "" {
		return "", nil
	}
	holder, err := subjectHolder(tx, subject, "")
	if err != nil {
		return "", fmt.Errorf("find invitee: %w", err)
	}
	switch {
	case kind == InviteNewPerson && holder != nil && holder.Subject == subject:
		return "", core.Refuse(core.FailedPrecondition, "subject", "%q is an existing person: an invite never gives them a new passkey. "+
			"To give them a role here, make an add-role invite, which they accept by signing in with their own passkey", subject)
	case kind == InviteNewPerson && holder != nil:
		return "", core.Refuse(core.FailedPrecondition, "subject", "%q is the existing person %q in another case or Unicode form: subjects that read alike "+
			"would name two people as one. To give %s a role here, make an add-role invite; for a new person, choose another subject", subject, holder.Subject, holder.Subject)
	case kind == InviteAddRole && holder == nil:
		return "", core.Refuse(core.NotFound, "subject", "no person has subject %q: an add-role invite is for an existing person; make an ordinary invite for a new one", subject)
	case kind == InviteAddRole:
		var n int64
		if err := tx.Table("memberships").Where("account_id = ? AND person_id = ?", accountID, holder.ID).Count(&n).Error; err != nil {
			return "", fmt.Errorf("find invitee's membership: %w", err)
		}
		if n > 0 {
			return "", core.Refuse(core.FailedPrecondition, "subject", "%q is already a member of this account: change their role on the member list", holder.Subject)
		}
		return holder.Subject, nil
	}
	return subject, nil
}

// RevokeOpenInvites ends, now, every unused and unexpired invite of the
// account made by createdBy, and says how many it ended. The first start
// revokes its earlier owner setup link (SetupInviter) before it prints a new
// one, so only one works at a time.
func (s *Directory) RevokeOpenInvites(ctx context.Context, accountID, createdBy string) (int64, error) {
	var n int64
	now := s.Now()
	err := s.Write(ctx, func(tx *gorm.DB) error {
		res := tx.Table("invites").Where("account_id = ? AND created_by = ? AND used_at IS NULL AND expires_at > ?", accountID, createdBy, now).
			Update("expires_at", now)
		n = res.RowsAffected
		return res.Error
	})
	if err != nil {
		return 0, fmt.Errorf("revoke invites: %w", err)
	}
	return n, nil
}

// InviteByToken finds an invite that can still be used.
func (s *Directory) InviteByToken(ctx context.Context, token string) (*Invite, error) {
	var inv Invite
	err := s.DB().WithContext(ctx).Table("invites").Where("token_hash = ?", core.HashToken(token)).Take(&inv).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, core.Refuse(core.NotFound, "invite", "this invite does not exist")
	}
	if err != nil {
		return nil, fmt.Errorf("find invite: %w", err)
	}
	return &inv, inv.usable(s.Now())
}

func (inv *Invite) usable(now time.Time) error {
	if inv.Held {
		return core.Refuse(core.FailedPrecondition, "invite", "this invite waits for the account's people to approve it (ask %s): "+
			"it makes an %s, which the account's rules ask two people for; it works once they have signed", inv.ApprovalID, inv.Role)
	}
	if inv.UsedAt != nil {
		return core.Refuse(core.FailedPrecondition, "invite", "this invite was used already; ask for a new one")
	}
	if !now.Before(inv.ExpiresAt) {
		return core.Refuse(core.FailedPrecondition, "invite", "this invite expired; ask for a new one")
	}
	return nil
}

// Invites lists the account's invites, newest first.
func (s *Directory) Invites(ctx context.Context, accountID string) ([]Invite, error) {
	var out []Invite
	if err := s.DB().WithContext(ctx).Table("invites").Where("account_id = ?", accountID).Order("created_at DESC").Limit(100).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list invites: %w", err)
	}
	return out, nil
}

// takeInvite locks, inside tx, the invite of token and checks that it can be
// used and is of kind.
func (s *Directory) takeInvite(tx *gorm.DB, token string, kind InviteKind) (*Invite, error) {
	var inv Invite
	err := s.Lock(tx.Table("invites")).Where("token_hash = ?", core.HashToken(token)).Take(&inv).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, core.Refuse(core.NotFound, "invite", "this invite does not exist")
	}
	if err != nil {
		return nil, fmt.Errorf("find invite: %w", err)
	}
	if err := inv.usable(s.Now()); err != nil {
		return nil, err
	}
	if inv.Kind != kind {
		if inv.Kind == InviteAddRole {
			return nil, core.Refuse(core.FailedPrecondition, "invite", "this invite adds a role to %s, who accepts it by signing in with their own passkey", inv.Subject)
		}
		return nil, core.Refuse(core.FailedPrecondition, "invite", "this invite is for a new person, who accepts it by making a passkey")
	}
	return &inv, nil
}

// join gives, inside tx, person a membership with the invite's role, spends
// the invite and records it on the account's audit chain. how says how the
// person proved themselves, for the event.
func (s *Directory) join(tx *gorm.DB, inv *Invite, p *Person, credentialID, how string) (*Member, error) {
	var n int64
	if err := tx.Table("memberships").Where("account_id = ? AND person_id = ?", inv.AccountID, p.ID).Count(&n).Error; err != nil {
		return nil, fmt.Errorf("find membership: %w", err)
	}
	if n > 0 {
		return nil, core.Refuse(core.FailedPrecondition, "invite", "%s is already a member of this account", p.Subject)
	}
	now := s.Now()
	if err := tx.Exec(`INSERT INTO memberships (account_id, person_id, role, created_at) VALUES (?, ?, ?, ?)`,
		inv.AccountID, p.ID, inv.Role, now).Error; err != nil {
		return nil, fmt.Errorf("add membership: %w", err)
	}
	res := tx.Exec(`UPDATE invites SET used_at = ?, used_by = ? WHERE token_hash = ? AND used_at IS NULL`, now, p.Subject, inv.TokenHash)
	if res.Error != nil {
		return nil, fmt.Errorf("spend invite: %w", res.Error)
	}
	if res.RowsAffected != 1 {
		return nil, core.Refuse(core.FailedPrecondition, "invite", "this invite was used already; ask for a new one")
	}
	if err := s.AccountEvent(tx, now, inv.AccountID, asks.ActorPerson, p.Subject, StepMemberJoined,
		fmt.Sprintf("joined as %s, %s; invited by %s", inv.Role, how, inv.CreatedBy),
		map[string]string{"invite": string(inv.Kind), "role": string(inv.Role),
			"invited_by": inv.CreatedBy, "person_id": p.ID, "credential_id": credentialID}); err != nil {
		return nil, err
	}
	return &Member{Person: *p, AccountID: inv.AccountID, Role: inv.Role}, nil
}

// AcceptInvite spends a new-person invite: in one transaction it makes the
// person, with id personID (the user handle their passkey was made for),
// their membership and their first passkey, and records it on the audit
// chain. A subject or id that is already a person's is refused: an invite
// never adds a passkey to an existing person.
func (s *Directory) AcceptInvite(ctx context.Context, token, personID, subject, displayName string, key DeviceKey) (*Member, error) {
	subject = strings.TrimSpace(subject)
	if err := CheckSubject(subject); err != nil {
		return nil, err
	}
	var m *Member
	err := s.Write(ctx, func(tx *gorm.DB) error {
		inv, err := s.takeInvite(tx, token, InviteNewPerson)
		if err != nil {
			return err
		}
		if inv.Subject != "" && inv.Subject != subject {
			return core.Invalid("subject", "this invite is for %q", inv.Subject)
		}
		var n int64
		if err := tx.Table("persons").Where("id = ?", personID).Count(&n).Error; err != nil {
			return fmt.Errorf("find person: %w", err)
		}
		if n > 0 {
			return takenRefusal(subject, subject)
		}
		p := &Person{ID: personID, Subject: subject, DisplayName: displayName, CreatedAt: s.Now()}
		if err := s.createPerson(tx, p); err != nil {
			return err
		}
		key.PersonID, key.CreatedAt = p.ID, s.Now()
		if err := s.storeDeviceKey(tx, &key); err != nil {
			return err
		}
		m, err = s.join(tx, inv, p, key.ID, "a new person with a new passkey")
		return err
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// PasskeyUse is a verified passkey assertion: who signed, with which
// passkey, at which signature counter.
type PasskeyUse struct {
	PersonID     string
	CredentialID string
	SignCount    uint32
	Credential   string // the updated credential record, or empty
}

// AcceptRoleInvite spends an add-role invite for the person who signed use:
// in one transaction it checks that they are the person the invite names and
// that the passkey is one of theirs (its counter moving on), gives them the
// membership and records it on the audit chain. No passkey is added.
func (s *Directory) AcceptRoleInvite(ctx context.Context, token string, use PasskeyUse) (*Member, error) {
	var m *Member
	err := s.Write(ctx, func(tx *gorm.DB) error {
		inv, err := s.takeInvite(tx, token, InviteAddRole)
		if err != nil {
			return err
		}
		var p Person
		err = tx.Table("persons").Where("subject = ?", inv.Subject).Take(&p).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return core.Refuse(core.FailedPrecondition, "invite", "the person this invite names, %s, no longer exists", inv.Subject)
		}
		if err != nil {
			return fmt.Errorf("find person: %w", err)
		}
		if p.ID != use.PersonID {
			return core.Refuse(core.PermissionDenied, "credential", "this invite is for %s: only a passkey of theirs accepts it", inv.Subject)
		}
		if err := s.UseDeviceKeyTx(tx, p.ID, use.CredentialID, use.SignCount, use.Credential); err != nil {
			return err
		}
		m, err = s.join(tx, inv, &p, use.CredentialID, "signing in with a passkey they had")
		return err
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// StepInviteRevoked records on the account's audit chain that an owner or
// admin ended an unused invite before anyone used it.
const StepInviteRevoked = "invite_revoked"

// RevokeInvite ends, now, the unused and unexpired invite of the account
// whose token hashes to tokenHash (the invites list names invites by it),
// on the word of by, who must be allowed to grant its role; it is written to
// the audit chain. A used, expired or unknown invite is refused and nothing
// changes.
func (s *Directory) RevokeInvite(ctx context.Context, accountID, tokenHash string, by Inviter) error {
	now := s.Now()
	err := s.Write(ctx, func(tx *gorm.DB) error {
		var inv Invite
		err := tx.Table("invites").Where("account_id = ? AND token_hash = ?", accountID, tokenHash).Take(&inv).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return core.Refuse(core.NotFound, "invite", "no such invite in this account")
		}
		if err != nil {
			return err
		}
		if err := MayGrant(tx, accountID, by, inv.Role); err != nil {
			return err
		}
		if inv.UsedAt != nil {
			return core.Refuse(core.FailedPrecondition, "invite", "this invite was used by %s already: to undo it, remove them from the account", inv.UsedBy)
		}
		if !now.Before(inv.ExpiresAt) {
			return core.Refuse(core.FailedPrecondition, "invite", "this invite has ended already: its link works no more")
		}
		res := tx.Exec(`UPDATE invites SET expires_at = ? WHERE token_hash = ? AND used_at IS NULL AND expires_at > ?`, now, tokenHash, now)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected != 1 {
			return core.Refuse(core.FailedPrecondition, "invite", "this invite was used or ended meanwhile; nothing was changed")
		}
		who := inv.Subject
		if who == "" {
			who = "anyone with the link"
		}
		return s.AccountEvent(tx, now, accountID, asks.ActorPerson, by.Name, StepInviteRevoked,
			fmt.Sprintf("revoked the unused %s invite for %s made by %s", inv.Role, who, inv.CreatedBy),
			map[string]string{"invite": string(inv.Kind), "role": string(inv.Role), "subject": inv.Subject, "invited_by": inv.CreatedBy})
	})
	if err != nil {
		return fmt.Errorf("revoke invite: %w", err)
	}
	return nil
}
