package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/countersign/countersign/app"
	"github.com/countersign/countersign/models/ops"
)

const backupUsage = "usage: countersign backup --out FILE"

// errBackupPostgres is the answer to a backup of a PostgreSQL database:
// pg_dump does that job, online and consistent, better than we could.
var errBackupPostgres = errors.New("backup copies the embedded SQLite database; this service uses PostgreSQL (COUNTERSIGN_DATABASE_URL): back it up with pg_dump, e.g. pg_dump --format=custom --file=countersign.dump \"$COUNTERSIGN_DATABASE_URL\"")

// backupCommand writes an online, consistent copy of the SQLite database to
// a new file while the service may be running.
func backupCommand(ctx context.Context, cfg app.Config, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("backup", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	file := fs.String("out", "", "the new backup file")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 || *file == "" {
		return usageError{backupUsage}
	}
	if cfg.DatabaseURL != "" {
		return errBackupPostgres
	}
	b, err := ops.BackupSQLite(ctx, cfg.SQLitePath(), *file)
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	fmt.Fprintf(out, "backup written: %s (%d bytes, schema version %d, integrity_check ok)\n", b.Path, b.Bytes, b.SchemaVersion)
	return nil
}
