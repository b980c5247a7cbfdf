package people

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/proof"
	"gorm.io/gorm"
)

// CountPersons says how many people exist, to know whether setup is due.
func (s *Directory) CountPersons(ctx context.Context) (int64, error) {
	var n int64
	if err := s.DB().WithContext(ctx).Table("persons").Count(&n).Error; err != nil {
		return 0, fmt.Errorf("count persons: %w", err)
	}
	return n, nil
}

// PersonByID finds a person.
func (s *Directory) PersonByID(ctx context.Context, id string) (*Person, error) {
	var p Person
	err := s.DB().WithContext(ctx).Table("persons").Where("id = ?", id).Take(&p).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, core.Refuse(core.NotFound, "person", "no such person")
	}
	if err != nil {
		return nil, fmt.Errorf("find person: %w", err)
	}
	return &p, nil
}

// MemberByID finds the member of the account with the person id.
func (s *Directory) MemberByID(ctx context.Context, accountID, personID string) (*Member, error) {
	var m Member
	err := s.DB().WithContext(ctx).Raw(`SELECT p.id, p.subject, p.display_name, p.created_at, m.account_id, m.role
		FROM memberships m JOIN persons p ON p.id = m.person_id WHERE m.account_id = ? AND p.id = ?`, accountID, personID).
		Scan(&m).Error
	if err != nil {
		return nil, fmt.Errorf("find member: %w", err)
	}
	if m.ID == "" {
		return nil, core.Refuse(core.NotFound, "person", "not a member of this account")
	}
	return &m, nil
}

// Members lists the account's members, owners first.
func (s *Directory) Members(ctx context.Context, accountID string) ([]Member, error) {
	var out []Member
	err := s.DB().WithContext(ctx).Raw(`SELECT p.id, p.subject, p.display_name, p.created_at, m.account_id, m.role
		FROM memberships m JOIN persons p ON p.id = m.person_id WHERE m.account_id = ?
		ORDER BY CASE m.role WHEN 'owner' THEN 0 WHEN 'admin' THEN 1 ELSE 2 END, p.subject`, accountID).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("list members: %w", err)
	}
	return out, nil
}

// Memberships lists the accounts a person belongs to, oldest membership first.
func (s *Directory) Memberships(ctx context.Context, personID string) ([]Member, error) {
	var out []Member
	err := s.DB().WithContext(ctx).Raw(`SELECT p.id, p.subject, p.display_name, p.created_at, m.account_id, m.role
		FROM memberships m JOIN persons p ON p.id = m.person_id WHERE p.id = ? ORDER BY m.created_at`, personID).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("list memberships: %w", err)
	}
	return out, nil
}

// SetRole changes a member's role at once; the account always keeps an
// owner. A change made on the Members page goes through ChangeRole, which
// asks the people a rule names first.
func (s *Directory) SetRole(ctx context.Context, accountID, personID string, role core.Role) error {
	if _, err := core.ParseRole(string(role)); err != nil {
		return err
	}
	return s.Write(ctx, func(tx *gorm.DB) error { return s.SetRoleTx(tx, accountID, personID, role) })
}

func (s *Directory) SetRoleTx(tx *gorm.DB, accountID, personID string, role core.Role) error {
	if err := s.KeepAnOwner(tx, accountID, personID); err != nil && role != core.RoleOwner {
		return err
	}
	res := tx.Table("memberships").Where("account_id = ? AND person_id = ?", accountID, personID).Update("role", role)
	if res.Error != nil {
		return fmt.Errorf("set role: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return core.Refuse(core.NotFound, "person", "not a member of this account")
	}
	return nil
}

// KeepAnOwner refuses when personID is the account's only owner.
func (s *Directory) KeepAnOwner(tx *gorm.DB, accountID, personID string) error {
	var owners []string
	if err := s.Lock(tx.Table("memberships")).Where("account_id = ? AND role = ?", accountID, core.RoleOwner).Pluck("person_id", &owners).Error; err != nil {
		return err
	}
	if len(owners) == 1 && owners[0] == personID {
		return core.Refuse(core.FailedPrecondition, "person", "the account's last owner stays; make another owner first")
	}
	return nil
}

// DeviceKey is one passkey of a person.
type DeviceKey struct {
	ID             string // the credential id, base64url
	PersonID       string
	Name           string
	Credential     string // the library's credential record, JSON
	PublicKey      string // COSE key, base64url
	SignCount      int64
	BackupEligible bool
	BackedUp       bool
	AddedBy        string // the credential id of the passkey that authorised this one; "" for a first passkey
	CreatedAt      time.Time
	LastUsedAt     *time.Time
	RemovedAt      *time.Time
}

// DeviceKeys lists a person's passkeys, oldest first.
func (s *Directory) DeviceKeys(ctx context.Context, personID string) ([]DeviceKey, error) {
	var out []DeviceKey
	if err := s.DB().WithContext(ctx).Table("device_keys").Where("person_id = ? AND removed_at IS NULL", personID).Order("created_at").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list passkeys: %w", err)
	}
	return out, nil
}

// DeviceKeyByID finds a passkey that has not been removed.
func (s *Directory) DeviceKeyByID(ctx context.Context, id string) (*DeviceKey, error) {
	var k DeviceKey
	err := s.DB().WithContext(ctx).Table("device_keys").Where("id = ? AND removed_at IS NULL", id).Take(&k).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, core.Refuse(core.NotFound, "credential", "no such passkey")
	}
	if err != nil {
		return nil, fmt.Errorf("find passkey: %w", err)
	}
	return &k, nil
}

// ExportKeys is the account's key export (`countersign keys export`, the
// format of proof.Keys): every passkey, removed ones too, of every member of
// the account and of everyone who decided an ask here and has since left,
// whose old proofs must still check out against it. rpID is the relying
// party the passkeys belong to.
func (s *Directory) ExportKeys(ctx context.Context, accountID, rpID string) (*proof.Keys, error) {
	var rows []struct {
		DeviceKey
		Subject string
	}
	err := s.DB().WithContext(ctx).Raw(`SELECT k.*, p.subject FROM device_keys k JOIN persons p ON p.id = k.person_id
		WHERE k.person_id IN (SELECT person_id FROM memberships WHERE account_id = ?)
		   OR p.subject IN (SELECT decided_by FROM approvals WHERE account_id = ? AND proof IS NOT NULL)
		ORDER BY k.created_at`, accountID, accountID).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("list account passkeys: %w", err)
	}
	export := &proof.Keys{Format: proof.KeysFormat, AccountID: accountID, RPID: rpID, Exported: s.Now(),
		Keys: make([]proof.DeviceKey, 0, len(rows))}
	for _, r := range rows {
		id, err := base64.RawURLEncoding.DecodeString(r.ID)
		if err != nil {
			return nil, fmt.Errorf("device key %s: credential id: %w", r.ID, err)
		}
		pub, err := base64.RawURLEncoding.DecodeString(r.PublicKey)
		if err != nil {
			return nil, fmt.Errorf("device key %s: public key: %w", r.ID, err)
		}
		export.Keys = append(export.Keys, proof.DeviceKey{CredentialID: id, PublicKey: pub, Person: r.Subject,
			Name: r.Name, CreatedAt: r.CreatedAt, Removed: r.RemovedAt != nil, RemovedAt: r.RemovedAt})
	}
	return export, nil
}

// RenameDeviceKey names a passkey.
func (s *Directory) RenameDeviceKey(ctx context.Context, personID, id, name string) error {
	name = strings.TrimSpace(name)
	if name == "" || core.RuneCount(name) > 64 || strings.ContainsAny(name, "\r\n") {
		return core.Invalid("name", "a passkey name is one line of 1 to 64 characters")
	}
	var renamed int64
	err := s.Write(ctx, func(tx *gorm.DB) error {
		res := tx.Table("device_keys").Where("id = ? AND person_id = ? AND removed_at IS NULL", id, personID).Update("name", name)
		renamed = res.RowsAffected
		return res.Error
	})
	if err != nil {
		return fmt.Errorf("rename passkey: %w", err)
	}
	if renamed == 0 {
		return core.Refuse(core.NotFound, "credential", "no such passkey")
	}
	return nil
}

// RemoveDeviceKey retires a passkey without a signature, for the
// operator's tools and tests: the devices page removes one only through
// RemoveSignedDeviceKey. A person keeps at least one. The removal goes on
// the audit log of every account of the person, and every device of theirs
// with notifications on is told.
func (s *Directory) RemoveDeviceKey(ctx context.Context, personID, id string) error {
	return s.Write(ctx, func(tx *gorm.DB) error {
		return s.removeDeviceKey(tx, personID, id, nil)
	})
}

// removeDeviceKey retires, inside tx, the person's live passkey id, unless it
// is their last, and records the change; by is the passkey whose assertion
// authorised it (nil when none did).
func (s *Directory) removeDeviceKey(tx *gorm.DB, personID, id string, by *DeviceKey) error {
	var keys []DeviceKey
	if err := s.Lock(tx.Table("device_keys")).Where("person_id = ? AND removed_at IS NULL", personID).Find(&keys).Error; err != nil {
		return err
	}
	gone, err := removable(keys, id)
	if err != nil {
		return err
	}
	if err := tx.Table("device_keys").Where("id = ?", id).Update("removed_at", s.Now()).Error; err != nil {
		return fmt.Errorf("remove passkey: %w", err)
	}
	return s.passkeyChanged(tx, personID, StepPasskeyRemoved, gone, by, "")
}

// removable finds the passkey id among a person's live passkeys keys and
// refuses it if it is not there or is the last.
func removable(keys []DeviceKey, id string) (*DeviceKey, error) {
	for i := range keys {
		if keys[i].ID != id {
			continue
		}
		if len(keys) == 1 {
			return nil, core.Refuse(core.FailedPrecondition, "credential", "this is your last passkey; add another before you remove it")
		}
		return &keys[i], nil
	}
	return nil, core.Refuse(core.NotFound, "credential", "no such passkey")
}

// CheckDeviceKeyRemoval says whether the person could remove their passkey
// id now (it is theirs, live, and not their last), without removing it: a
// remove-device prompt starts only then.
func (s *Directory) CheckDeviceKeyRemoval(ctx context.Context, personID, id string) error {
	keys, err := s.DeviceKeys(ctx, personID)
	if err != nil {
		return err
	}
	_, err = removable(keys, id)
	return err
}

// CounterWentBack is the refusal of a passkey whose signature counter did
// not grow: what happened, why it matters and what to do about it.
func CounterWentBack(passkeyName string) string {
	if passkeyName == "" {
		passkeyName = "this passkey"
	} else {
		passkeyName = "the passkey " + strconv.Quote(passkeyName)
	}
	return "Nothing was signed: " + passkeyName + " counted fewer signatures than it had before, which a copied (cloned) passkey does. " +
		"If you restored or moved it, remove it under Devices with another of your passkeys, then add it again; if you did not, remove it now, " +
		"and tell an admin"
}

// UseDeviceKeyTx records, inside tx, that a passkey signed with counter
// signCount. A counter that does not grow (when either is non-zero) means a
// cloned authenticator and is refused.
func (s *Directory) UseDeviceKeyTx(tx *gorm.DB, personID, id string, signCount uint32, credential string) error {
	var k DeviceKey
	err := s.Lock(tx.Table("device_keys")).Where("id = ? AND person_id = ? AND removed_at IS NULL", id, personID).Take(&k).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return core.Refuse(core.PermissionDenied, "credential", "this passkey is not one of yours")
	}
	if err != nil {
		return err
	}
	if (signCount != 0 || k.SignCount != 0) && int64(signCount) <= k.SignCount {
		return core.Refuse(core.PermissionDenied, "credential", "%s", CounterWentBack(k.Name))
	}
	set := map[string]any{"sign_count": int64(signCount), "last_used_at": s.Now()}
	if credential != "" {
		set["credential"] = credential
	}
	return tx.Table("device_keys").Where("id = ?", id).Updates(set).Error
}

// UseDeviceKey records a sign-in with a passkey.
func (s *Directory) UseDeviceKey(ctx context.Context, personID, id string, signCount uint32, credential string) error {
	return s.Write(ctx, func(tx *gorm.DB) error {
		return s.UseDeviceKeyTx(tx, personID, id, signCount, credential)
	})
}

// WebSession is a signed-in browser.
type WebSession struct {
	IDHash     string
	PersonID   string
	AccountID  string
	CreatedAt  time.Time
	LastSeenAt time.Time
	ExpiresAt  time.Time
}

// Session lifetimes: a session ends SessionAbsolute after sign-in however
// much it is used, and sooner when it is not used for the idle time
// (DefaultSessionIdle unless SetSessionIdle changes it).
const (
	DefaultSessionIdle = 12 * time.Hour
	SessionAbsolute    = 30 * 24 * time.Hour
)

// sessionSeenEvery is how stale a session's last_seen_at may be before a
// request writes it again: the idle timeout is exact to within it.
const sessionSeenEvery = time.Minute

// SetSessionIdle sets how long an unused web session lives. It is called
// once, before the service serves.
func (s *Directory) SetSessionIdle(d time.Duration) { s.sessionIdle = d }

// CreateSession signs a person into an account and returns the cookie secret.
func (s *Directory) CreateSession(ctx context.Context, personID, accountID string) (string, error) {
	token := core.RandomToken("")
	now := s.Now()
	ws := &WebSession{IDHash: core.HashToken(token), PersonID: personID, AccountID: accountID, CreatedAt: now, LastSeenAt: now, ExpiresAt: now.Add(SessionAbsolute)}
	if err := s.Write(ctx, func(tx *gorm.DB) error { return tx.Table("web_sessions").Create(ws).Error }); err != nil {
		return "", fmt.Errorf("create session: %w", err)
	}
	return token, nil
}

// SessionByToken finds a live session and marks it seen; one past its
// absolute life or unused for the idle time is deleted and refused.
func (s *Directory) SessionByToken(ctx context.Context, token string) (*WebSession, error) {
	var ws WebSession
	db := s.DB().WithContext(ctx)
	err := db.Table("web_sessions").Where("id_hash = ?", core.HashToken(token)).Take(&ws).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, core.Refuse(core.NotFound, "session", "not signed in")
	}
	if err != nil {
		return nil, fmt.Errorf("find session: %w", err)
	}
	now := s.Now()
	if !now.Before(ws.ExpiresAt) || now.Sub(ws.LastSeenAt) > s.sessionIdle {
		if err := s.Write(ctx, func(tx *gorm.DB) error { return tx.Exec(`DELETE FROM web_sessions WHERE id_hash = ?`, ws.IDHash).Error }); err != nil {
			return nil, fmt.Errorf("end session: %w", err)
		}
		return nil, core.Refuse(core.NotFound, "session", "the session ended; sign in again")
	}
	if now.Sub(ws.LastSeenAt) > sessionSeenEvery {
		err := s.Write(ctx, func(tx *gorm.DB) error {
			return tx.Table("web_sessions").Where("id_hash = ?", ws.IDHash).Update("last_seen_at", now).Error
		})
		if err != nil {
			return nil, fmt.Errorf("mark session seen: %w", err)
		}
	}
	return &ws, nil
}

// DeleteSession signs a browser out.
func (s *Directory) DeleteSession(ctx context.Context, token string) error {
	return s.Write(ctx, func(tx *gorm.DB) error {
		if err := tx.Exec(`DELETE FROM web_sessions WHERE id_hash = ?`, core.HashToken(token)).Error; err != nil {
			return err
		}
		return s.SessionsEnded(tx, core.Change{SessionHash: core.HashToken(token)})
	})
}

// SaveCeremony keeps a passkey ceremony's state server-side for a few
// minutes and returns the id the browser holds.
func (s *Directory) SaveCeremony(ctx context.Context, kind, subject string, data []byte) (string, error) {
	id := core.RandomToken("")
	err := s.Write(ctx, func(tx *gorm.DB) error {
		return tx.Exec(`INSERT INTO ceremonies (id_hash, kind, subject, data, expires_at) VALUES (?, ?, ?, ?, ?)`,
			core.HashToken(id), kind, subject, string(data), s.Now().Add(5*time.Minute)).Error
	})
	if err != nil {
		return "", fmt.Errorf("save ceremony: %w", err)
	}
	return id, nil
}

// TakeCeremony returns a ceremony's state once: it is deleted as it is read.
func (s *Directory) TakeCeremony(ctx context.Context, id, kind string) (data []byte, subject string, err error) {
	var row struct {
		Kind, Subject, Data string
		ExpiresAt           time.Time
	}
	err = s.Write(ctx, func(tx *gorm.DB) error {
		if err := s.Lock(tx.Table("ceremonies")).Where("id_hash = ?", core.HashToken(id)).Take(&row).Error; err != nil {
			return err
		}
		return tx.Exec(`DELETE FROM ceremonies WHERE id_hash = ?`, core.HashToken(id)).Error
	})
	if errors.Is(err, gorm.ErrRecordNotFound) || (err == nil && (row.Kind != kind || !s.Now().Before(row.ExpiresAt))) {
		return nil, "", core.Refuse(core.FailedPrecondition, "ceremony", "this passkey prompt expired or was used; start again")
	}
	if err != nil {
		return nil, "", fmt.Errorf("take ceremony: %w", err)
	}
	return []byte(row.Data), row.Subject, nil
}

// NewPersonID makes the id, and so the passkey user handle, of a person
// about to register.
func NewPersonID() string { return core.NewID("per") }

// PersonBySubject finds a person by subject.
func (s *Directory) PersonBySubject(ctx context.Context, subject string) (*Person, error) {
	var p Person
	err := s.DB().WithContext(ctx).Table("persons").Where("subject = ?", subject).Take(&p).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, core.Refuse(core.NotFound, "subject", "no person has subject %q", subject)
	}
	if err != nil {
		return nil, fmt.Errorf("find person: %w", err)
	}
	return &p, nil
}

// SetupInviter is the created_by of the owner invite made at first start.
const SetupInviter = "setup"
