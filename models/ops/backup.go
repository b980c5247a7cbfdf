package ops

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/countersign/countersign/models/core"
	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// ErrBackupExists is returned by BackupSQLite when the backup file is
// already there: a backup never overwrites a file.
var ErrBackupExists = errors.New("the backup file already exists")

// Backup says what BackupSQLite wrote.
type Backup struct {
	Path          string // the backup file, absolute
	Bytes         int64  // its size
	SchemaVersion int    // the last migration it holds
}

// BackupSQLite copies the SQLite database at dbPath to out while the service
// runs: VACUUM INTO reads inside one transaction, so the copy is a
// consistent snapshot of every write committed before it began, and writers
// go on beside it (WAL). The copy is written under a temporary name in out's
// folder, synced, checked (PRAGMA integrity_check) and only then linked to
// out, which must not exist: no half-written or overwritten file is ever
// left at out. The source database is not migrated or otherwise changed.
func BackupSQLite(ctx context.Context, dbPath, out string) (Backup, error) {
	out, err := filepath.Abs(out)
	if err != nil {
		return Backup{}, fmt.Errorf("backup path: %w", err)
	}
	if _, err := os.Lstat(out); err == nil {
		return Backup{}, fmt.Errorf("%w: %s (choose a new name; a backup never overwrites)", ErrBackupExists, out)
	} else if !errors.Is(err, os.ErrNotExist) {
		return Backup{}, fmt.Errorf("look at the backup path: %w", err)
	}
	var suffix [6]byte
	if _, err := rand.Read(suffix[:]); err != nil {
		return Backup{}, fmt.Errorf("name the temporary backup: %w", err)
	}
	tmp := out + ".partial-" + hex.EncodeToString(suffix[:])
	defer os.Remove(tmp) // after the link, or after a failure: out alone stays

	src, err := openSQLiteFile(dbPath)
	if err != nil {
		return Backup{}, err
	}
	err = src.WithContext(ctx).Exec(`VACUUM INTO ?`, tmp).Error
	if cerr := closeDB(src); err == nil {
		err = cerr
	}
	if err != nil {
		return Backup{}, fmt.Errorf("copy the database (VACUUM INTO): %w", err)
	}
	if err := syncFile(tmp); err != nil {
		return Backup{}, err
	}
	version, err := checkSQLiteCopy(ctx, tmp)
	if err != nil {
		return Backup{}, err
	}
	// A hard link fails when out exists: a file made there since the check
	// above is not overwritten either.
	if err := os.Link(tmp, out); err != nil {
		if errors.Is(err, os.ErrExist) {
			return Backup{}, fmt.Errorf("%w: %s (made while the backup ran)", ErrBackupExists, out)
		}
		return Backup{}, fmt.Errorf("put the backup in place: %w", err)
	}
	if err := syncFile(filepath.Dir(out)); err != nil {
		return Backup{}, err
	}
	info, err := os.Stat(out)
	if err != nil {
		return Backup{}, fmt.Errorf("stat the backup: %w", err)
	}
	return Backup{Path: out, Bytes: info.Size(), SchemaVersion: version}, nil
}

// closeDB closes the connection pool behind db.
func closeDB(db *gorm.DB) error {
	sqlDB, err := db.DB()
	if err != nil {
		return err
	}
	return sqlDB.Close()
}

// openSQLiteFile opens an existing SQLite file with the service's settings
// (busy timeout, WAL), without migrating it.
func openSQLiteFile(path string) (*gorm.DB, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("open the database to back up: %w", err)
	}
	db, err := gorm.Open(sqlite.Open(core.SQLiteDSN(path)), &gorm.Config{Logger: logger.Discard, SkipDefaultTransaction: true})
	if err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	return db, nil
}

// checkSQLiteCopy runs PRAGMA integrity_check on the copy at path and reads
// its schema version.
func checkSQLiteCopy(ctx context.Context, path string) (version int, err error) {
	db, err := gorm.Open(sqlite.Open("file:"+path+"?mode=ro"), &gorm.Config{Logger: logger.Discard, SkipDefaultTransaction: true})
	if err != nil {
		return 0, fmt.Errorf("open the copy: %w", err)
	}
	defer func() {
		if cerr := closeDB(db); err == nil && cerr != nil {
			err = fmt.Errorf("close the copy: %w", cerr)
		}
	}()
	var result string
	if err := db.WithContext(ctx).Raw(`PRAGMA integrity_check`).Scan(&result).Error; err != nil {
		return 0, fmt.Errorf("check the copy: %w", err)
	}
	if result != "ok" {
		return 0, fmt.Errorf("the copy fails PRAGMA integrity_check: %s", result)
	}
	if err := db.WithContext(ctx).Raw(`SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&version).Error; err != nil {
		return 0, fmt.Errorf("read the copy's schema version: %w", err)
	}
	return version, nil
}

// syncFile flushes a file or folder to stable storage.
func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("sync %s: %w", path, err)
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync %s: %w", path, err)
	}
	return nil
}
