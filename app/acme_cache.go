package app

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"golang.org/x/crypto/acme/autocert"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/core"
)

// sharedACMECache is autocert's Cache in the database, for the instances on
// one PostgreSQL: they then share one ACME account and one certificate
// (instead of one each, against Let's Encrypt's rate limits), and an
// instance answers an HTTP-01 or TLS-ALPN-01 challenge that another started,
// because autocert looks a token up in its Cache when it is not in memory.
// It holds the certificate's private key and the account key.
type sharedACMECache struct {
	store *models.Store
}

var _ autocert.Cache = sharedACMECache{}

// Get returns the entry name, or autocert.ErrCacheMiss when there is none.
func (c sharedACMECache) Get(ctx context.Context, name string) ([]byte, error) {
	data, err := c.store.ACMEEntry(ctx, name)
	if errors.Is(err, core.ErrNotFound) {
		return nil, autocert.ErrCacheMiss
	}
	if err != nil {
		return nil, fmt.Errorf("ACME cache: %w", err)
	}
	return data, nil
}

// Put stores data under name, replacing what was there.
func (c sharedACMECache) Put(ctx context.Context, name string, data []byte) error {
	if err := c.store.PutACMEEntry(ctx, name, data); err != nil {
		return fmt.Errorf("ACME cache: %w", err)
	}
	return nil
}

// Delete removes the entry name, if there is one.
func (c sharedACMECache) Delete(ctx context.Context, name string) error {
	if err := c.store.DeleteACMEEntry(ctx, name); err != nil {
		return fmt.Errorf("ACME cache: %w", err)
	}
	return nil
}

// acmeCache is where the ACME manager keeps its account key, certificates
// and challenge tokens: in the database on PostgreSQL, shared by every
// instance; under the data folder on SQLite, whose one instance owns it.
func acmeCache(cfg Config, store *models.Store) autocert.Cache {
	if store.Dialect() == core.Postgres {
		return sharedACMECache{store: store}
	}
	return autocert.DirCache(filepath.Join(cfg.Data, ACMECacheDir))
}
