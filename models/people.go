package models

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/countersign/countersign/proof"
)

// randomToken returns a prefixed secret of 256 random bits.
func randomToken(prefix string) string {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		panic(err)
	}
	return prefix + idEncoding.EncodeToString(raw)
}

// CountPersons says how many people exist, to know whether setup is due.
func (s *Store) CountPersons(ctx context.Context) (int64, error) {
	var n int64
	if err := s.db.WithContext(ctx).Table("persons").Count(&n).Error; err != nil {
		return 0, fmt.Errorf("count persons: %w", err)
	}
	return n, nil
}

// PersonByID finds a person.
func (s *Store) PersonByID(ctx context.Context, id string) (*Person, error) {
	var p Person
	err := s.db.WithContext(ctx).Table("persons").Where("id = ?", id).Take(&p).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, Refuse(NotFound, "person", "no such person")
	}
	if err != nil {
		return nil, fmt.Errorf("find person: %w", err)
	}
	return &p, nil
}

// MemberByID finds the member of the account with the person id.
func (s *Store) MemberByID(ctx context.Context, accountID, personID string) (*Member, error) {
	var m Member
	err := s.db.WithContext(ctx).Raw(`SELECT p.id, p.subject, p.display_name, p.created_at, m.account_id, m.role
		FROM memberships m JOIN persons p ON p.id = m.person_id WHERE m.account_id = ? AND p.id = ?`, accountID, personID).
		Scan(&m).Error
	if err != nil {
		return nil, fmt.Errorf("find member: %w", err)
	}
	if m.ID == "" {
		return nil, Refuse(NotFound, "person", "not a member of this account")
	}
	return &m, nil
}

// Members lists the account's members, owners first.
func (s *Store) Members(ctx context.Context, accountID string) ([]Member, error) {
	var out []Member
	err := s.db.WithContext(ctx).Raw(`SELECT p.id, p.subject, p.display_name, p.created_at, m.account_id, m.role
		FROM memberships m JOIN persons p ON p.id = m.person_id WHERE m.account_id = ?
		ORDER BY CASE m.role WHEN 'owner' THEN 0 WHEN 'admin' THEN 1 ELSE 2 END, p.subject`, accountID).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("list members: %w", err)
	}
	return out, nil
}

// Memberships lists the accounts a person belongs to, oldest membership first.
func (s *Store) Memberships(ctx context.Context, personID string) ([]Member, error) {
	var out []Member
	err := s.db.WithContext(ctx).Raw(`SELECT p.id, p.subject, p.display_name, p.created_at, m.account_id, m.role
		FROM memberships m JOIN persons p ON p.id = m.person_id WHERE p.id = ? ORDER BY m.created_at`, personID).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("list memberships: %w", err)
	}
	return out, nil
}

// SetRole changes a member's role at once; the account always keeps an
// owner. A change made on the Members page goes through ChangeRole, which
// asks the people a rule names first.
func (s *Store) SetRole(ctx context.Context, accountID, personID string, role Role) error {
	if _, err := ParseRole(string(role)); err != nil {
		return err
	}
	return s.write(ctx, func(tx *gorm.DB) error { return s.setRole(tx, accountID, personID, role) })
}

func (s *Store) setRole(tx *gorm.DB, accountID, personID string, role Role) error {
	if err := s.keepAnOwner(tx, accountID, personID); err != nil && role != RoleOwner {
		return err
	}
	res := tx.Table("memberships").Where("account_id = ? AND person_id = ?", accountID, personID).Update("role", role)
	if res.Error != nil {
		return fmt.Errorf("set role: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return Refuse(NotFound, "person", "not a member of this account")
	}
	return nil
}

// RemoveMember takes a person out of the account at once and ends their
// sessions in it, in one transaction: the clients they connected there are
// disabled (their OAuth tokens revoked, their open asks cancelled, their MCP
// streams closed on every instance). The last owner cannot be removed. A removal made on the
// Members page goes through RemoveMemberAs, which asks the people a rule
// names first and, approved, applies it here (removeMember): everything a
// removal ends belongs in removeMember, so that both paths end it.
func (s *Store) RemoveMember(ctx context.Context, accountID, personID string) error {
	return s.write(ctx, func(tx *gorm.DB) error { return s.removeMember(tx, accountID, personID) })
}

func (s *Store) removeMember(tx *gorm.DB, accountID, personID string) error {
	if err := s.keepAnOwner(tx, accountID, personID); err != nil {
		return err
	}
	res := tx.Exec(`DELETE FROM memberships WHERE account_id = ? AND person_id = ?`, accountID, personID)
	if res.Error != nil {
		return fmt.Errorf("remove member: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return Refuse(NotFound, "person", "not a member of this account")
	}
	if err := tx.Exec(`DELETE FROM web_sessions WHERE account_id = ? AND person_id = ?`, accountID, personID).Error; err != nil {
		return err
	}
	if err := s.disableClientsOf(tx, accountID, personID); err != nil {
		return err
	}
	return s.sessionsEnded(tx, Change{AccountID: accountID, PersonID: personID})
}

// disableClientsOf disables, inside tx, the agents of the clients personID
// connected in accountID, as their person leaves it; one disabled before
// has its grants ended all the same.
func (s *Store) disableClientsOf(tx *gorm.DB, accountID, personID string) error {
	ids, err := oauthAgentsOf(tx, personID, accountID)
	if err != nil || len(ids) == 0 {
		return err
	}
	var agents []Agent
	if err := s.lock(tx.Table("agents")).Where("id IN ?", ids).Order("id").Find(&agents).Error; err != nil {
		return fmt.Errorf("find connected clients: %w", err)
	}
	for _, a := range agents {
		if a.Disabled {
			err = s.endGrants(tx, []string{a.ID})
		} else {
			err = s.disableAgent(tx, a.ID, "its person left the account", "countersign", "requesting client's person removed from the account")
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// keepAnOwner refuses when personID is the account's only owner.
func (s *Store) keepAnOwner(tx *gorm.DB, accountID, personID string) error {
	var owners []string
	if err := s.lock(tx.Table("memberships")).Where("account_id = ? AND role = ?", accountID, RoleOwner).Pluck("person_id", &owners).Error; err != nil {
		return err
	}
	if len(owners) == 1 && owners[0] == personID {
		return Refuse(FailedPrecondition, "person", "the account's last owner stays; make another owner first")
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
func (s *Store) DeviceKeys(ctx context.Context, personID string) ([]DeviceKey, error) {
	var out []DeviceKey
	if err := s.db.WithContext(ctx).Table("device_keys").Where("person_id = ? AND removed_at IS NULL", personID).Order("created_at").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list passkeys: %w", err)
	}
	return out, nil
}

// DeviceKeyByID finds a passkey that has not been removed.
func (s *Store) DeviceKeyByID(ctx context.Context, id string) (*DeviceKey, error) {
	var k DeviceKey
	err := s.db.WithContext(ctx).Table("device_keys").Where("id = ? AND removed_at IS NULL", id).Take(&k).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, Refuse(NotFound, "credential", "no such passkey")
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
func (s *Store) ExportKeys(ctx context.Context, accountID, rpID string) (*proof.Keys, error) {
	var rows []struct {
		DeviceKey
		Subject string
	}
	err := s.db.WithContext(ctx).Raw(`SELECT k.*, p.subject FROM device_keys k JOIN persons p ON p.id = k.person_id
		WHERE k.person_id IN (SELECT person_id FROM memberships WHERE account_id = ?)
		   OR p.subject IN (SELECT decided_by FROM approvals WHERE account_id = ? AND proof IS NOT NULL)
		ORDER BY k.created_at`, accountID, accountID).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("list account passkeys: %w", err)
	}
	export := &proof.Keys{Format: proof.KeysFormat, AccountID: accountID, RPID: rpID, Exported: s.now(),
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
func (s *Store) RenameDeviceKey(ctx context.Context, personID, id, name string) error {
	name = strings.TrimSpace(name)
	if name == "" || runeCount(name) > 64 || strings.ContainsAny(name, "\r\n") {
		return Invalid("name", "a passkey name is one line of 1 to 64 characters")
	}
	var renamed int64
	err := s.write(ctx, func(tx *gorm.DB) error {
		res := tx.Table("device_keys").Where("id = ? AND person_id = ? AND removed_at IS NULL", id, personID).Update("name", name)
		renamed = res.RowsAffected
		return res.Error
	})
	if err != nil {
		return fmt.Errorf("rename passkey: %w", err)
	}
	if renamed == 0 {
		return Refuse(NotFound, "credential", "no such passkey")
	}
	return nil
}

// RemoveDeviceKey retires a passkey without a signature, for the
// operator's tools and tests: the devices page removes one only through
// RemoveSignedDeviceKey. A person keeps at least one. The removal goes on
// the audit log of every account of the person, and every device of theirs
// with notifications on is told.
func (s *Store) RemoveDeviceKey(ctx context.Context, personID, id string) error {
	return s.write(ctx, func(tx *gorm.DB) error {
		return s.removeDeviceKey(tx, personID, id, nil)
	})
}

// removeDeviceKey retires, inside tx, the person's live passkey id, unless it
// is their last, and records the change; by is the passkey whose assertion
// authorised it (nil when none did).
func (s *Store) removeDeviceKey(tx *gorm.DB, personID, id string, by *DeviceKey) error {
	var keys []DeviceKey
	if err := s.lock(tx.Table("device_keys")).Where("person_id = ? AND removed_at IS NULL", personID).Find(&keys).Error; err != nil {
		return err
	}
	gone, err := removable(keys, id)
	if err != nil {
		return err
	}
	if err := tx.Table("device_keys").Where("id = ?", id).Update("removed_at", s.now()).Error; err != nil {
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
			return nil, Refuse(FailedPrecondition, "credential", "this is your last passkey; add another before you remove it")
		}
		return &keys[i], nil
	}
	return nil, Refuse(NotFound, "credential", "no such passkey")
}

// CheckDeviceKeyRemoval says whether the person could remove their passkey
// id now (it is theirs, live, and not their last), without removing it: a
// remove-device prompt starts only then.
func (s *Store) CheckDeviceKeyRemoval(ctx context.Context, personID, id string) error {
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

// useDeviceKey records, inside tx, that a passkey signed with counter
// signCount. A counter that does not grow (when either is non-zero) means a
// cloned authenticator and is refused.
func (s *Store) useDeviceKey(tx *gorm.DB, personID, id string, signCount uint32, credential string) error {
	var k DeviceKey
	err := s.lock(tx.Table("device_keys")).Where("id = ? AND person_id = ? AND removed_at IS NULL", id, personID).Take(&k).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return Refuse(PermissionDenied, "credential", "this passkey is not one of yours")
	}
	if err != nil {
		return err
	}
	if (signCount != 0 || k.SignCount != 0) && int64(signCount) <= k.SignCount {
		return Refuse(PermissionDenied, "credential", "%s", CounterWentBack(k.Name))
	}
	set := map[string]any{"sign_count": int64(signCount), "last_used_at": s.now()}
	if credential != "" {
		set["credential"] = credential
	}
	return tx.Table("device_keys").Where("id = ?", id).Updates(set).Error
}

// UseDeviceKey records a sign-in with a passkey.
func (s *Store) UseDeviceKey(ctx context.Context, personID, id string, signCount uint32, credential string) error {
	return s.write(ctx, func(tx *gorm.DB) error {
		return s.useDeviceKey(tx, personID, id, signCount, credential)
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
func (s *Store) SetSessionIdle(d time.Duration) { s.sessionIdle = d }

// CreateSession signs a person into an account and returns the cookie secret.
func (s *Store) CreateSession(ctx context.Context, personID, accountID string) (string, error) {
	token := randomToken("")
	now := s.now()
	ws := &WebSession{IDHash: HashToken(token), PersonID: personID, AccountID: accountID, CreatedAt: now, LastSeenAt: now, ExpiresAt: now.Add(SessionAbsolute)}
	if err := s.write(ctx, func(tx *gorm.DB) error { return tx.Table("web_sessions").Create(ws).Error }); err != nil {
		return "", fmt.Errorf("create session: %w", err)
	}
	return token, nil
}

// SessionByToken finds a live session and marks it seen; one past its
// absolute life or unused for the idle time is deleted and refused.
func (s *Store) SessionByToken(ctx context.Context, token string) (*WebSession, error) {
	var ws WebSession
	db := s.db.WithContext(ctx)
	err := db.Table("web_sessions").Where("id_hash = ?", HashToken(token)).Take(&ws).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, Refuse(NotFound, "session", "not signed in")
	}
	if err != nil {
		return nil, fmt.Errorf("find session: %w", err)
	}
	now := s.now()
	if !now.Before(ws.ExpiresAt) || now.Sub(ws.LastSeenAt) > s.sessionIdle {
		if err := s.write(ctx, func(tx *gorm.DB) error { return tx.Exec(`DELETE FROM web_sessions WHERE id_hash = ?`, ws.IDHash).Error }); err != nil {
			return nil, fmt.Errorf("end session: %w", err)
		}
		return nil, Refuse(NotFound, "session", "the session ended; sign in again")
	}
	if now.Sub(ws.LastSeenAt) > sessionSeenEvery {
		err := s.write(ctx, func(tx *gorm.DB) error {
			return tx.Table("web_sessions").Where("id_hash = ?", ws.IDHash).Update("last_seen_at", now).Error
		})
		if err != nil {
			return nil, fmt.Errorf("mark session seen: %w", err)
		}
	}
	return &ws, nil
}

// EndSessionsOf signs a person out of every browser, in every account, and
// ends, in the same transaction, the OAuth grants of every client they
// connected (tokens revoked, open MCP streams closed on every instance).
func (s *Store) EndSessionsOf(ctx context.Context, personID string) error {
	err := s.write(ctx, func(tx *gorm.DB) error {
		if err := tx.Exec(`DELETE FROM web_sessions WHERE person_id = ?`, personID).Error; err != nil {
			return err
		}
		// A push link reads an ask without a session: it ends with them.
		if err := tx.Exec(`DELETE FROM push_links WHERE person_id = ?`, personID).Error; err != nil {
			return err
		}
		// So do the OAuth grants of the clients they connected (a client
		// connects on a session alone): each must be connected again.
		clients, err := oauthAgentsOf(tx, personID, "")
		if err != nil {
			return err
		}
		if err := s.endGrants(tx, clients); err != nil {
			return err
		}
		return s.sessionsEnded(tx, Change{PersonID: personID})
	})
	if err != nil {
		return fmt.Errorf("end sessions: %w", err)
	}
	return nil
}

// SweepExpired deletes what has outlived its use: passkey ceremonies,
// decision challenges and push links past their expiry, web sessions past
// their absolute life or idle for longer than the idle time, and the
// signatures of runner reports too old to be sent again, OAuth tokens and
// codes past their life. It answers how many
// rows went.
func (s *Store) SweepExpired(ctx context.Context) (int64, error) {
	now := s.now()
	var n int64
	err := s.write(ctx, func(tx *gorm.DB) error {
		for _, q := range []struct {
			sql  string
			args []any
		}{
			{`DELETE FROM ceremonies WHERE expires_at <= ?`, []any{now}},
			{`DELETE FROM decision_challenges WHERE expires_at <= ?`, []any{now}},
			{`DELETE FROM push_links WHERE expires_at <= ?`, []any{now}},
			{`DELETE FROM web_sessions WHERE expires_at <= ? OR last_seen_at < ?`, []any{now, now.Add(-s.sessionIdle)}},
			{`DELETE FROM runner_report_signatures WHERE expires_at <= ?`, []any{now}},
			// OAuth tokens past their life, and codes a day past theirs
			// (kept that long so a late second use is still seen as one).
			{`DELETE FROM oauth_tokens WHERE expires_at <= ?`, []any{now}},
			{`DELETE FROM oauth_codes WHERE expires_at <= ?`, []any{now.Add(-24 * time.Hour)}},
			// Registered OAuth clients no person connected, past their life.
			{`DELETE FROM oauth_clients WHERE created_at <= ? AND ` + unconnectedClient, []any{now.Add(-OAuthClientUnusedLife)}},
		} {
			res := tx.Exec(q.sql, q.args...)
			if res.Error != nil {
				return res.Error
			}
			n += res.RowsAffected
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("sweep expired: %w", err)
	}
	return n, nil
}

// DeleteSession signs a browser out.
func (s *Store) DeleteSession(ctx context.Context, token string) error {
	return s.write(ctx, func(tx *gorm.DB) error {
		if err := tx.Exec(`DELETE FROM web_sessions WHERE id_hash = ?`, HashToken(token)).Error; err != nil {
			return err
		}
		return s.sessionsEnded(tx, Change{SessionHash: HashToken(token)})
	})
}

// SaveCeremony keeps a passkey ceremony's state server-side for a few
// minutes and returns the id the browser holds.
func (s *Store) SaveCeremony(ctx context.Context, kind, subject string, data []byte) (string, error) {
	id := randomToken("")
	err := s.write(ctx, func(tx *gorm.DB) error {
		return tx.Exec(`INSERT INTO ceremonies (id_hash, kind, subject, data, expires_at) VALUES (?, ?, ?, ?, ?)`,
			HashToken(id), kind, subject, string(data), s.now().Add(5*time.Minute)).Error
	})
	if err != nil {
		return "", fmt.Errorf("save ceremony: %w", err)
	}
	return id, nil
}

// TakeCeremony returns a ceremony's state once: it is deleted as it is read.
func (s *Store) TakeCeremony(ctx context.Context, id, kind string) (data []byte, subject string, err error) {
	var row struct {
		Kind, Subject, Data string
		ExpiresAt           time.Time
	}
	err = s.write(ctx, func(tx *gorm.DB) error {
		if err := s.lock(tx.Table("ceremonies")).Where("id_hash = ?", HashToken(id)).Take(&row).Error; err != nil {
			return err
		}
		return tx.Exec(`DELETE FROM ceremonies WHERE id_hash = ?`, HashToken(id)).Error
	})
	if errors.Is(err, gorm.ErrRecordNotFound) || (err == nil && (row.Kind != kind || !s.now().Before(row.ExpiresAt))) {
		return nil, "", Refuse(FailedPrecondition, "ceremony", "this passkey prompt expired or was used; start again")
	}
	if err != nil {
		return nil, "", fmt.Errorf("take ceremony: %w", err)
	}
	return []byte(row.Data), row.Subject, nil
}

// ChallengeTTL is how long a decision nonce can be used.
const ChallengeTTL = 5 * time.Minute

// IssueChallenge makes the single-use nonce for one decision by one person
// on one ask, after checking that the ask is open and theirs to decide.
func (s *Store) IssueChallenge(ctx context.Context, m *Member, a *Approval, decision string, nonce []byte) error {
	if !m.MayDecide(a) {
		return Refuse(PermissionDenied, "approval_id", "approval %s is not asked of %s", a.ID, m.Subject)
	}
	if a.Status != StatusPending {
		return stateError(a, "; only a pending ask can be answered")
	}
	if !s.now().Before(a.ExpiresAt) {
		return Refuse(FailedPrecondition, "", "approval %s expired at %s", a.ID, a.ExpiresAt.Format(time.RFC3339))
	}
	if a.Requirement != nil {
		if err := s.notSignedYet(ctx, a, m); err != nil {
			return err
		}
	}
	now := s.now()
	issued := false
	err := s.write(ctx, func(tx *gorm.DB) error {
		if err := tx.Exec(`DELETE FROM decision_challenges WHERE expires_at < ?`, now.Add(-time.Hour)).Error; err != nil {
			return err
		}
		// Only while the ask is still pending as the caller read it: a nonce
		// issued after it moved would outlive the move (killChallenges).
		res := tx.Exec(`INSERT INTO decision_challenges (nonce, approval_id, person_id, decision, payload_sha256, created_at, expires_at)
			SELECT ?, ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM approvals WHERE id = ? AND status = ? AND version = ?)`,
			fmt.Sprintf("%x", nonce), a.ID, m.ID, decision, a.PayloadSHA256, now, now.Add(ChallengeTTL), a.ID, StatusPending, a.Version)
		issued = res.RowsAffected == 1
		return res.Error
	})
	if err != nil {
		return fmt.Errorf("issue challenge: %w", err)
	}
	if !issued {
		return Refuse(FailedPrecondition, "", "approval %s changed while the signature prompt was made; read it again", a.ID)
	}
	return nil
}

// killChallenges deletes, inside tx, the unspent nonces of an ask that is
// leaving pending: a signature made for the ask as it was cannot decide it
// once it is pending again (after a question and its answer).
func (s *Store) killChallenges(tx *gorm.DB, approvalID string) error {
	if err := tx.Exec(`DELETE FROM decision_challenges WHERE approval_id = ? AND used_at IS NULL`, approvalID).Error; err != nil {
		return fmt.Errorf("delete the ask's unspent nonces: %w", err)
	}
	return nil
}

// spendChallenge uses up, inside tx, the nonce issued for exactly this
// decision by this person on this ask and payload.
func (s *Store) spendChallenge(tx *gorm.DB, a *Approval, personID, decision string, nonce []byte) error {
	res := tx.Exec(`UPDATE decision_challenges SET used_at = ? WHERE nonce = ? AND used_at IS NULL AND approval_id = ?
		AND person_id = ? AND decision = ? AND payload_sha256 = ? AND expires_at > ?`,
		s.now(), fmt.Sprintf("%x", nonce), a.ID, personID, decision, a.PayloadSHA256, s.now())
	if res.Error != nil {
		return fmt.Errorf("spend challenge: %w", res.Error)
	}
	if res.RowsAffected != 1 {
		return Refuse(FailedPrecondition, "nonce", "this signature's challenge was used, expired, or was issued for another ask, decision or person; nothing was recorded")
	}
	return nil
}

// NewPersonID makes the id, and so the passkey user handle, of a person
// about to register.
func NewPersonID() string { return newID("per") }

// PersonBySubject finds a person by subject.
func (s *Store) PersonBySubject(ctx context.Context, subject string) (*Person, error) {
	var p Person
	err := s.db.WithContext(ctx).Table("persons").Where("subject = ?", subject).Take(&p).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, Refuse(NotFound, "subject", "no person has subject %q", subject)
	}
	if err != nil {
		return nil, fmt.Errorf("find person: %w", err)
	}
	return &p, nil
}

// SetupInviter is the created_by of the owner invite made at first start.
const SetupInviter = "setup"
