package models_test

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
)

var updateSchema = flag.Bool("update-schema", false, "rewrite testdata/schema.*.sql from what the migrations make")

// The migrations make the schema recorded in testdata: SQLite's
// sqlite_master and PostgreSQL's pg_dump --schema-only, with the lines that
// name a server version or a random key left out. The files were written
// from the one flat models package, before it was split into rooms, so this
// test shows that the split changed no table, column, index or trigger. A new
// migration rewrites them: go test ./models -run TestTheMigrationsMakeTheRecordedSchema -update-schema.
func TestTheMigrationsMakeTheRecordedSchema(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		var got string
		switch db {
		case apptest.SQLite:
			got = sqliteSchema(t)
		case apptest.Postgres:
			got = postgresSchema(t, apptest.DatabaseURL(t, db))
		}
		path := filepath.Join("testdata", "schema."+string(db)+".sql")
		if *updateSchema {
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if got != string(want) {
			gotLines, wantLines := strings.Split(got, "\n"), strings.Split(string(want), "\n")
			for i := range max(len(gotLines), len(wantLines)) {
				g, w := line(gotLines, i), line(wantLines, i)
				if g != w {
					t.Fatalf("the schema differs from %s at line %d:\n got: %s\nwant: %s", path, i+1, g, w)
				}
			}
		}
	})
}

func line(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "(end)"
}

func sqliteSchema(t *testing.T) string {
	t.Helper()
	db, _, err := core.Open(context.Background(), "", t.TempDir(), 0, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		t.Fatal(err)
	}
	defer sqlDB.Close()
	rows, err := sqlDB.Query(`SELECT type, name, tbl_name, COALESCE(sql, '') FROM sqlite_master ORDER BY type, name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var typ, name, table, sql string
		if err := rows.Scan(&typ, &name, &table, &sql); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "-- %s %s on %s\n%s;\n", typ, name, table, sql)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func postgresSchema(t *testing.T, url string) string {
	t.Helper()
	db, _, err := core.Open(context.Background(), url, t.TempDir(), 0, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if sqlDB, err := db.DB(); err == nil {
		defer sqlDB.Close()
	}
	out, err := exec.Command("pg_dump", "--schema-only", "--no-owner", "--no-privileges", url).Output()
	if err != nil {
		t.Fatalf("pg_dump: %v", err)
	}
	var b strings.Builder
	blank := false
	for _, l := range strings.Split(string(out), "\n") {
		switch {
		case strings.HasPrefix(l, "--"), strings.HasPrefix(l, "SET "), strings.HasPrefix(l, "SELECT pg_catalog.set_config"),
			strings.HasPrefix(l, `\restrict`), strings.HasPrefix(l, `\unrestrict`):
			continue
		case strings.TrimSpace(l) == "":
			blank = true
			continue
		}
		if blank && b.Len() > 0 {
			b.WriteString("\n")
		}
		blank = false
		b.WriteString(l + "\n")
	}
	return b.String()
}
