package oidc

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/countersign/countersign/models/core"
)

// SigningKey is one of the provider's signing keys: its key id and its
// private JWK (JSON), made by package oauth. The current key has no
// RetiredAt; a retired one is still published until PublishedUntil, so that
// tokens it signed keep verifying.
type SigningKey struct {
	Kid            string `gorm:"primaryKey"`
	PrivateJWK     string `gorm:"column:private_jwk"`
	CreatedAt      time.Time
	RetiredAt      *time.Time
	PublishedUntil *time.Time
}

// TableName is the table of the provider's signing keys.
func (SigningKey) TableName() string { return "oidc_keys" }

// KeyMaker makes a new signing key: its key id and its private JWK.
type KeyMaker func() (kid, privateJWK string, err error)

type keyMakerBox struct {
	mu   sync.Mutex
	make KeyMaker
}

// SetSigningKeyMaker sets how CurrentSigningKey makes the first key when
// there is none; package oauth sets it, for the key material is its own.
func (s *Provider) SetSigningKeyMaker(f KeyMaker) {
	s.keyMaker.mu.Lock()
	defer s.keyMaker.mu.Unlock()
	s.keyMaker.make = f
}

func (s *Provider) maker() KeyMaker {
	s.keyMaker.mu.Lock()
	defer s.keyMaker.mu.Unlock()
	return s.keyMaker.make
}

// CurrentSigningKey returns the key the provider signs with, made at first
// use (SetSigningKeyMaker). Two first uses at once keep one key: at most one
// key is current (the index oidc_keys_one_current), and the loser reads the
// winner's.
func (s *Provider) CurrentSigningKey(ctx context.Context) (*SigningKey, error) {
	k, err := s.currentKey(s.DB().WithContext(ctx))
	if err == nil || !errors.Is(err, gorm.ErrRecordNotFound) {
		return k, err
	}
	mk := s.maker()
	if mk == nil {
		return nil, core.Refuse(core.FailedPrecondition, "key", "the provider has no signing key and no way to make one")
	}
	kid, jwk, err := mk()
	if err != nil {
		return nil, fmt.Errorf("make signing key: %w", err)
	}
	err = s.Write(ctx, func(tx *gorm.DB) error {
		if err := tx.Clauses(clause.OnConflict{DoNothing: true}).
			Create(&SigningKey{Kid: kid, PrivateJWK: jwk, CreatedAt: s.Now()}).Error; err != nil {
			return err
		}
		k, err = s.currentKey(tx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("make signing key: %w", err)
	}
	return k, nil
}

func (s *Provider) currentKey(db *gorm.DB) (*SigningKey, error) {
	var k SigningKey
	if err := db.Where("retired_at IS NULL").Take(&k).Error; err != nil {
		return nil, err
	}
	return &k, nil
}

// PublishedSigningKeys are the keys a verifier may meet: the current one,
// then the retired ones still published, newest first.
func (s *Provider) PublishedSigningKeys(ctx context.Context) ([]SigningKey, error) {
	var keys []SigningKey
	err := s.DB().WithContext(ctx).Where("retired_at IS NULL OR published_until > ?", s.Now()).
		Order("retired_at IS NOT NULL, created_at DESC").Find(&keys).Error
	if err != nil {
		return nil, fmt.Errorf("published signing keys: %w", err)
	}
	return keys, nil
}

// RotateSigningKey makes newKid the current key and retires the current one,
// published for overlap more so that what it signed still verifies. Keys
// whose publication ended are dropped.
func (s *Provider) RotateSigningKey(ctx context.Context, newKid, newPrivateJWK string, overlap time.Duration) error {
	if overlap < 0 {
		return core.Invalid("overlap", "must not be negative")
	}
	now := s.Now()
	err := s.Write(ctx, func(tx *gorm.DB) error {
		if err := tx.Model(&SigningKey{}).Where("retired_at IS NULL").
			Updates(map[string]any{"retired_at": now, "published_until": now.Add(overlap)}).Error; err != nil {
			return err
		}
		if err := tx.Where("retired_at IS NOT NULL AND published_until <= ?", now).Delete(&SigningKey{}).Error; err != nil {
			return err
		}
		return tx.Create(&SigningKey{Kid: newKid, PrivateJWK: newPrivateJWK, CreatedAt: now}).Error
	})
	if err != nil {
		return fmt.Errorf("rotate signing key: %w", err)
	}
	return nil
}
