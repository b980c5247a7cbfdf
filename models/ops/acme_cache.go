package ops

import (
	"context"
	"fmt"

	"github.com/countersign/countersign/models/core"
	"gorm.io/gorm"
)

// The ACME cache is what the built-in TLS (COUNTERSIGN_ACME_DOMAIN) keeps
// between handshakes and restarts: the ACME account key, the certificate
// with its private key, and the tokens of challenges under way. On
// PostgreSQL it lives in the database so that every instance serves the one
// certificate and answers a challenge another instance started. The entries
// are opaque named blobs here; package app speaks autocert's cache over them.

// ACMEEntry reads the ACME cache entry name, or returns ErrNotFound.
func (s *Upkeep) ACMEEntry(ctx context.Context, name string) ([]byte, error) {
	var data [][]byte
	if err := s.DB().WithContext(ctx).Table("acme_cache").Where("name = ?", name).Pluck("data", &data).Error; err != nil {
		return nil, fmt.Errorf("read ACME cache entry %s: %w", name, err)
	}
	if len(data) == 0 {
		return nil, core.Refuse(core.NotFound, "name", "no ACME cache entry %s", name)
	}
	return data[0], nil
}

// PutACMEEntry stores data under name, replacing what was there: two
// instances putting one name at once both succeed, the later put kept.
func (s *Upkeep) PutACMEEntry(ctx context.Context, name string, data []byte) error {
	if data == nil {
		data = []byte{} // NOT NULL: an empty entry is still an entry
	}
	err := s.Write(ctx, func(tx *gorm.DB) error {
		return tx.Exec(`INSERT INTO acme_cache (name, data, updated_at) VALUES (?, ?, ?)
ON CONFLICT (name) DO UPDATE SET data = excluded.data, updated_at = excluded.updated_at`, name, data, s.Now().UTC()).Error
	})
	if err != nil {
		return fmt.Errorf("store ACME cache entry %s: %w", name, err)
	}
	return nil
}

// DeleteACMEEntry removes the entry name; removing one that is not there is
// no error.
func (s *Upkeep) DeleteACMEEntry(ctx context.Context, name string) error {
	err := s.Write(ctx, func(tx *gorm.DB) error {
		return tx.Exec(`DELETE FROM acme_cache WHERE name = ?`, name).Error
	})
	if err != nil {
		return fmt.Errorf("delete ACME cache entry %s: %w", name, err)
	}
	return nil
}
