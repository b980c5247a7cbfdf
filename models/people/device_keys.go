package people

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/outbox"
	"gorm.io/gorm"
)

// Adding a passkey to a person is a signed act: a session cookie alone never
// adds one. One of the person's passkeys first signs an add-device challenge
// (see passkey.DeviceAddChallenge); that assertion makes a device grant,
// which lets the session that made it add exactly one passkey within
// DeviceGrantTTL, or turn it into a one-time device link that a new device
// opens without a session, within DeviceLinkTTL. Grants are stored by the
// hash of their token and spent in the transaction that stores the key.
// Removing one is signed too: a passkey of the person signs a remove-device
// challenge that names the passkey to remove (passkey.DeviceRemoveChallenge),
// and the key goes in the transaction that records that assertion.

// Audit steps of a person's passkeys. They are account-level events (their
// approval_id is ""), written in every account the person is a member of.
const (
	StepPasskeyAdded   = "passkey_added"
	StepPasskeyRemoved = "passkey_removed"
)

// Push events of a person's passkeys: their other devices hear of a change.
// They carry no Topic, so that a later change does not replace an earlier
// one at the push service.
const (
	PushPasskeyAdded   = "passkey_added"
	PushPasskeyRemoved = "passkey_removed"
)

// How long a grant to add a passkey lasts.
const (
	DeviceGrantTTL = 5 * time.Minute  // after the assertion that made it
	DeviceLinkTTL  = 10 * time.Minute // after the link was made
)

// Kinds of device grant.
const (
	GrantAssertion = "assertion" // made by a fresh assertion, for the session that made it
	GrantLink      = "link"      // a one-time device link, for whoever opens it
)

// DeviceGrant lets one passkey be added to a person, once, before it expires.
type DeviceGrant struct {
	TokenHash    string
	Kind         string
	PersonID     string
	SessionHash  string // a GrantAssertion works only in this session
	AuthorisedBy string // the credential id of the passkey whose assertion made it
	CreatedAt    time.Time
	ExpiresAt    time.Time
	UsedAt       *time.Time
}

// DeviceAssertion is an add-device assertion the relying party verified: by
// which passkey of which person, and its new counter and credential record.
type DeviceAssertion struct {
	PersonID     string
	CredentialID string
	SignCount    uint32
	Credential   string
}

// AuthoriseDeviceAdd records a verified add-device assertion (the passkey must
// be the person's and live, and its counter must grow) and returns the token
// of a grant that lets the session sessionToken add one passkey for the
// person within DeviceGrantTTL.
func (s *Directory) AuthoriseDeviceAdd(ctx context.Context, sessionToken string, a DeviceAssertion) (string, *DeviceGrant, error) {
	token := core.RandomToken("dga_")
	now := s.Now()
	g := &DeviceGrant{TokenHash: core.HashToken(token), Kind: GrantAssertion, PersonID: a.PersonID, SessionHash: core.HashToken(sessionToken),
		AuthorisedBy: a.CredentialID, CreatedAt: now, ExpiresAt: now.Add(DeviceGrantTTL)}
	err := s.Write(ctx, func(tx *gorm.DB) error {
		if err := s.UseDeviceKeyTx(tx, a.PersonID, a.CredentialID, a.SignCount, a.Credential); err != nil {
			return err
		}
		if err := tx.Exec(`DELETE FROM device_grants WHERE expires_at < ?`, now.Add(-time.Hour)).Error; err != nil {
			return fmt.Errorf("sweep device grants: %w", err)
		}
		return tx.Table("device_grants").Create(g).Error
	})
	if err != nil {
		return "", nil, fmt.Errorf("authorise a new passkey: %w", err)
	}
	return token, g, nil
}

// DeviceGrantUse names a grant and who presents it.
type DeviceGrantUse struct {
	Token        string
	Kind         string // GrantAssertion or GrantLink
	PersonID     string // GrantAssertion: the signed-in person
	SessionToken string // GrantAssertion: the session presenting it
}

// CheckDeviceGrant says whether the grant is live for whoever presents it,
// without spending it: a registration starts only on a live grant.
func (s *Directory) CheckDeviceGrant(ctx context.Context, use DeviceGrantUse) (*DeviceGrant, error) {
	return s.liveGrant(s.DB().WithContext(ctx), use)
}

// liveGrant reads the grant use names and refuses it unless it is of the
// kind, person and session presented, unused, unexpired, and the passkey
// that authorised it is still live.
func (s *Directory) liveGrant(tx *gorm.DB, use DeviceGrantUse) (*DeviceGrant, error) {
	field, again := "grant", "confirm with a passkey you have again"
	if use.Kind == GrantLink {
		field, again = "link", "make a new link from a device you are signed in on"
	}
	var g DeviceGrant
	err := s.Lock(tx.Table("device_grants")).Where("token_hash = ?", core.HashToken(use.Token)).Take(&g).Error
	if errors.Is(err, gorm.ErrRecordNotFound) || err == nil && g.Kind != use.Kind {
		return nil, core.Refuse(core.NotFound, field, "no such permission to add a passkey; %s", again)
	}
	if err != nil {
		return nil, fmt.Errorf("find device grant: %w", err)
	}
	if use.Kind == GrantAssertion && (g.PersonID != use.PersonID || g.SessionHash != core.HashToken(use.SessionToken)) {
		return nil, core.Refuse(core.PermissionDenied, field, "this permission to add a passkey was made for another person or session; %s", again)
	}
	if g.UsedAt != nil {
		return nil, core.Refuse(core.FailedPrecondition, field, "this permission to add a passkey was used already; %s", again)
	}
	if !s.Now().Before(g.ExpiresAt) {
		return nil, core.Refuse(core.FailedPrecondition, field, "this permission to add a passkey expired; %s", again)
	}
	var live int64
	if err := tx.Table("device_keys").Where("id = ? AND person_id = ? AND removed_at IS NULL", g.AuthorisedBy, g.PersonID).Count(&live).Error; err != nil {
		return nil, fmt.Errorf("find the authorising passkey: %w", err)
	}
	if live == 0 {
		return nil, core.Refuse(core.FailedPrecondition, field, "the passkey that gave this permission was removed; %s", again)
	}
	return &g, nil
}

// spendGrant uses up, inside tx, the grant use names.
func (s *Directory) spendGrant(tx *gorm.DB, use DeviceGrantUse) (*DeviceGrant, error) {
	g, err := s.liveGrant(tx, use)
	if err != nil {
		return nil, err
	}
	now := s.Now()
	// Conditional, so that of two spends racing on SQLite only one counts.
	res := tx.Exec(`UPDATE device_grants SET used_at = ? WHERE token_hash = ? AND used_at IS NULL`, now, g.TokenHash)
	if res.Error != nil {
		return nil, fmt.Errorf("spend device grant: %w", res.Error)
	}
	if res.RowsAffected != 1 {
		return nil, core.Refuse(core.FailedPrecondition, "grant", "this permission to add a passkey was used already")
	}
	g.UsedAt = &now
	return g, nil
}

// MakeDeviceLink spends an assertion grant and makes in its place a one-time
// device link for the same person, which works for DeviceLinkTTL. It
// returns the link's token: only its hash is kept, so it can be shown once.
func (s *Directory) MakeDeviceLink(ctx context.Context, use DeviceGrantUse) (string, *DeviceGrant, error) {
	use.Kind = GrantAssertion
	token := core.RandomToken("dln_")
	var link *DeviceGrant
	err := s.Write(ctx, func(tx *gorm.DB) error {
		g, err := s.spendGrant(tx, use)
		if err != nil {
			return err
		}
		now := s.Now()
		link = &DeviceGrant{TokenHash: core.HashToken(token), Kind: GrantLink, PersonID: g.PersonID, AuthorisedBy: g.AuthorisedBy,
			CreatedAt: now, ExpiresAt: now.Add(DeviceLinkTTL)}
		return tx.Table("device_grants").Create(link).Error
	})
	if err != nil {
		return "", nil, fmt.Errorf("make device link: %w", err)
	}
	return token, link, nil
}

// DeviceLink finds a device link that can still be used, and its person.
func (s *Directory) DeviceLink(ctx context.Context, token string) (*DeviceGrant, *Person, error) {
	g, err := s.CheckDeviceGrant(ctx, DeviceGrantUse{Token: token, Kind: GrantLink})
	if err != nil {
		return nil, nil, err
	}
	p, err := s.PersonByID(ctx, g.PersonID)
	if err != nil {
		return nil, nil, err
	}
	return g, p, nil
}

// AddAuthorisedDeviceKey spends the grant and stores key for its person, in
// one transaction with a passkey_added event in each of the person's
// accounts and a push to each of their devices with notifications on, but
// the browser whose push endpoint is here (where the key was added).
func (s *Directory) AddAuthorisedDeviceKey(ctx context.Context, use DeviceGrantUse, key DeviceKey, here string) (*DeviceKey, error) {
	err := s.Write(ctx, func(tx *gorm.DB) error {
		g, err := s.spendGrant(tx, use)
		if err != nil {
			return err
		}
		key.PersonID, key.AddedBy, key.CreatedAt = g.PersonID, g.AuthorisedBy, s.Now()
		if err := s.storeDeviceKey(tx, &key); err != nil {
			return err
		}
		var by DeviceKey
		if err := tx.Table("device_keys").Where("id = ?", g.AuthorisedBy).Take(&by).Error; err != nil {
			return fmt.Errorf("find the authorising passkey: %w", err)
		}
		return s.passkeyChanged(tx, g.PersonID, StepPasskeyAdded, &key, &by, here)
	})
	if err != nil {
		return nil, fmt.Errorf("add passkey: %w", err)
	}
	return &key, nil
}

// storeDeviceKey stores a new passkey inside tx. A credential id is
// registered once: one stored before, live or removed, of this person or
// another, is refused (409) with the reason, and nothing is stored.
func (s *Directory) storeDeviceKey(tx *gorm.DB, key *DeviceKey) error {
	var held []DeviceKey
	if err := tx.Table("device_keys").Where("id = ?", key.ID).Limit(1).Find(&held).Error; err != nil {
		return fmt.Errorf("look for the passkey: %w", err)
	}
	if len(held) > 0 {
		if held[0].RemovedAt != nil {
			return core.Refuse(core.FailedPrecondition, "credential", "this passkey (credential %s) was registered before and removed; a removed passkey is never added again: make a new one on this device", key.ID)
		}
		return core.Refuse(core.FailedPrecondition, "credential", "this passkey (credential %s) is already registered; a passkey is added once: make a new one on this device", key.ID)
	}
	if err := tx.Table("device_keys").Create(key).Error; err != nil {
		return fmt.Errorf("store passkey: %w", err)
	}
	return nil
}

// RemoveSignedDeviceKey retires the passkey id of the person whose passkey
// made the verified remove-device assertion a, in one transaction: the
// signer must be a live passkey of that person and its counter must grow
// (it may be the passkey removed), the person keeps their last passkey, and
// a passkey_removed event naming the signer goes into each of their accounts
// with a push to each of their devices with notifications on.
func (s *Directory) RemoveSignedDeviceKey(ctx context.Context, id string, a DeviceAssertion) error {
	err := s.Write(ctx, func(tx *gorm.DB) error {
		if err := s.UseDeviceKeyTx(tx, a.PersonID, a.CredentialID, a.SignCount, a.Credential); err != nil {
			return err
		}
		var by DeviceKey
		if err := tx.Table("device_keys").Where("id = ?", a.CredentialID).Take(&by).Error; err != nil {
			return fmt.Errorf("find the authorising passkey: %w", err)
		}
		return s.removeDeviceKey(tx, a.PersonID, id, &by)
	})
	if err != nil {
		return fmt.Errorf("remove passkey: %w", err)
	}
	return nil
}

// passkeyChanged records, inside the transaction that added or removed key,
// an account-level event in every account of the person and a push to
// their devices but the one whose endpoint is here. by is the passkey whose
// assertion authorised the change (nil for a removal without one).
func (s *Directory) passkeyChanged(tx *gorm.DB, personID, step string, key, by *DeviceKey, here string) error {
	var p Person
	if err := tx.Table("persons").Where("id = ?", personID).Take(&p).Error; err != nil {
		return fmt.Errorf("find person: %w", err)
	}
	var accounts []string
	if err := tx.Table("memberships").Where("person_id = ?", personID).Order("account_id").Pluck("account_id", &accounts).Error; err != nil {
		return fmt.Errorf("find the person's accounts: %w", err)
	}
	data := map[string]string{"credential_id": key.ID, "name": key.Name}
	note, event, title := fmt.Sprintf("passkey %q removed", key.Name), PushPasskeyRemoved, "A passkey was removed from your account: "+key.Name
	if step == StepPasskeyRemoved && by != nil {
		data["removed_by"], data["removed_by_name"] = by.ID, by.Name
		note = fmt.Sprintf("passkey %q removed, authorised by passkey %q", key.Name, by.Name)
	}
	if step == StepPasskeyAdded {
		data["added_by"], data["added_by_name"] = by.ID, by.Name
		note = fmt.Sprintf("passkey %q added, authorised by passkey %q", key.Name, by.Name)
		event, title = PushPasskeyAdded, "A new passkey was added to your account: "+key.Name
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return err
	}
	body := string(raw)
	now := s.Now()
	for _, acct := range accounts {
		ev := &asks.TimelineEvent{AccountID: acct, At: now, ActorKind: asks.ActorPerson, Actor: p.Subject, Step: step, Note: note, Data: &body}
		if err := tx.Table("events").Create(ev).Error; err != nil {
			return fmt.Errorf("append event: %w", err)
		}
	}
	var subs []outbox.PushSubscription
	if err := tx.Table("push_subscriptions").Where("person_id = ? AND endpoint <> ?", personID, here).Find(&subs).Error; err != nil {
		return fmt.Errorf("find push subscriptions: %w", err)
	}
	if len(subs) == 0 {
		return nil
	}
	msg, err := json.Marshal(outbox.PushMessage{Event: event, Title: title, URL: "/devices"})
	if err != nil {
		return err
	}
	for _, sub := range subs {
		job := outbox.PushJob{SubscriptionID: sub.ID, PersonID: personID, Event: event, Body: string(msg), Urgency: "high",
			CreatedAt: now, NotBefore: now, ExpiresAt: now.Add(24 * time.Hour)}
		if err := tx.Table("push_jobs").Create(&job).Error; err != nil {
			return fmt.Errorf("queue push: %w", err)
		}
	}
	return s.OutboxQueued(tx)
}

// DeviceKeysEver lists every passkey the person ever had, removed ones too,
// oldest first: the devices page names the passkey that added each.
func (s *Directory) DeviceKeysEver(ctx context.Context, personID string) ([]DeviceKey, error) {
	var out []DeviceKey
	if err := s.DB().WithContext(ctx).Table("device_keys").Where("person_id = ?", personID).Order("created_at").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list passkeys: %w", err)
	}
	return out, nil
}
