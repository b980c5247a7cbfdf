// Package core is what every room of the storage tree stands on: the
// connection and its dialect, the migrations, the SQLite write group, the
// change feed, errors, ids and the transaction carried in a context.
// It stands on no room; every room imports it (docs/architecture.md).
package core

import (
	"crypto/rand"

	"context"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"sync/atomic"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// RandomToken returns a prefixed secret of 256 random bits.
func RandomToken(prefix string) string {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		panic(err)
	}
	return prefix + IDEncoding.EncodeToString(raw)
}

// Store is the connection every domain shares: the database and its
// dialect, the clock, the SQLite write group and the change feed.
type Store struct {
	db      *gorm.DB
	dialect Dialect
	clock   atomic.Pointer[func() time.Time]
	group   *writeGroup // SQLite: writes are committed in groups, one group at a time
	changes *Changes
	// writeWait is told each SQLite write's wait in the queue (SetWriteObserver).
	writeWait func(time.Duration)
}

// New wraps an opened, migrated database.
func New(db *gorm.DB, dialect Dialect) *Store {
	s := &Store{db: db, dialect: dialect, changes: newChanges()}
	if dialect == SQLite {
		s.group = newWriteGroup()
	}
	s.SetClock(time.Now)
	return s
}

// SetClock replaces the store's clock; tests use it to move time. It is safe
// while the service's workers read the clock. Its times are cut to whole
// microseconds, which both databases keep exactly, so that a time the store
// just wrote reads back equal.
func (s *Store) SetClock(now func() time.Time) {
	f := func() time.Time { return now().UTC().Truncate(time.Microsecond) }
	s.clock.Store(&f)
}

// Now reads the store's clock.
func (s *Store) Now() time.Time { return (*s.clock.Load())() }

// DB is the underlying database handle, for health checks and tests.
func (s *Store) DB() *gorm.DB { return s.db }

// Dialect names the database behind the store.
func (s *Store) Dialect() Dialect { return s.dialect }

// Ping answers nil when the database answers.
func (s *Store) Ping(ctx context.Context) error {
	sqlDB, err := s.db.DB()
	if err != nil {
		return err
	}
	return sqlDB.PingContext(ctx)
}

// Lock returns tx set to lock the rows it reads until the transaction ends.
// SQLite needs none: its write transactions start IMMEDIATE and hold the lock.
func (s *Store) Lock(tx *gorm.DB) *gorm.DB {
	if s.dialect == Postgres {
		return tx.Clauses(clause.Locking{Strength: "UPDATE"})
	}
	return tx
}

var IDEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// NewID returns prefix_ followed by 80 random bits: ids cannot be guessed.
func NewID(prefix string) string {
	b := make([]byte, 10)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return prefix + "_" + IDEncoding.EncodeToString(b)
}

// Role is a person's place in an account.
type Role string

// The roles, strongest first.
const (
	RoleOwner  Role = "owner"
	RoleAdmin  Role = "admin"
	RoleMember Role = "member"
)

// ParseRole checks a role name.
func ParseRole(s string) (Role, error) {
	switch r := Role(s); r {
	case RoleOwner, RoleAdmin, RoleMember:
		return r, nil
	}
	return "", Invalid("role", "must be owner, admin or member, not %q", s)
}

// HashToken is how a bearer token is kept: only its SHA-256.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}
