package main

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
)

// A database an older version wrote may hold persons whose subjects differ
// only in case ("Bob" and "bob"): serve refuses to start naming both, until
// the operator renames one with `countersign person rename`.
func TestServeRefusesClashingSubjectsUntilOneIsRenamed(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	env := map[string]string{"COUNTERSIGN_DATA": data}
	mustCLI(t, env, "account", "list", "--init")

	// Write the rows as a version before migration 18 could: no subject_key.
	db, _, err := core.Open(ctx, "", data, 0, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	var acct string
	if err := db.Raw(`SELECT id FROM accounts WHERE name = ?`, people.DefaultAccountName).Scan(&acct).Error; err != nil || acct == "" {
		t.Fatalf("default account: %q %v", acct, err)
	}
	now := time.Now().UTC()
	for _, stmt := range []string{
		`DROP INDEX persons_subject_folded`,
		`ALTER TABLE persons DROP COLUMN subject_key`,
		`DELETE FROM schema_migrations WHERE version = 18`,
	} {
		if err := db.Exec(stmt).Error; err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	for _, p := range [][2]string{{"per_bob", "bob"}, {"per_Bob", "Bob"}, {"per_carol", "carol"}} {
		if err := db.Exec(`INSERT INTO persons (id, subject, display_name, created_at) VALUES (?, ?, ?, ?)`, p[0], p[1], p[1], now).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.Exec(`INSERT INTO memberships (account_id, person_id, role, created_at) VALUES (?, ?, ?, ?)`, acct, p[0], core.RoleMember, now).Error; err != nil {
			t.Fatal(err)
		}
	}
	if sqlDB, err := db.DB(); err == nil {
		sqlDB.Close()
	}

	serveEnv := map[string]string{"COUNTERSIGN_DATA": data, "COUNTERSIGN_ADDR": "127.0.0.1:0"}
	r := cli(t, serveEnv, "serve")
	if r.code != 1 || !strings.Contains(r.stderr, `"Bob", "bob"`) || !strings.Contains(r.stderr, "countersign person rename OLD NEW") || strings.Contains(r.stderr, "carol") {
		t.Fatalf("serve on clashing subjects: %s\nwant exit 1 naming Bob and bob (not carol) and the rename command", r)
	}

	for _, tc := range []struct{ name, old, new, want string }{
		{"to a subject another person has in another case", "carol", "BOB", "is taken"},
		{"to a subject another person has exactly", "Bob", "carol", `"carol" is taken`},
		{"of a person nobody is", "dave", "david", `no person has subject "dave"`},
		{"to an agent's subject", "Bob", "agent:bob", "agent:"},
	} {
		t.Run("a rename "+tc.name+" is refused", func(t *testing.T) {
			r := cli(t, env, "person", "rename", tc.old, tc.new)
			if r.code != 1 || !strings.Contains(r.stderr, tc.want) {
				t.Fatalf("person rename %s %s: %s\nwant exit 1 saying %s", tc.old, tc.new, r, tc.want)
			}
		})
	}
	if r := cli(t, env, "person", "rename", "Bob"); r.code != 2 || !strings.Contains(r.stderr, "usage: countersign person rename OLD NEW") {
		t.Errorf("person rename with one argument: %s, want exit 2 with the usage", r)
	}

	if r := mustCLI(t, env, "person", "rename", "Bob", "robert"); !strings.Contains(r.stdout, "is now robert") {
		t.Errorf("person rename Bob robert: %s", r)
	}
	s := startServer(t, apptest.SQLite, env)
	if err := s.stop(t); err != nil {
		t.Fatalf("stop: %v", err)
	}
	mustCLI(t, env, "audit", "verify") // the rename's audit events keep the chain intact

	db, _, err = core.Open(ctx, "", data, 0, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if sqlDB, err := db.DB(); err == nil {
			sqlDB.Close()
		}
	}()
	var rows []struct{ ID, Subject, SubjectKey string }
	if err := db.Raw(`SELECT id, subject, subject_key FROM persons ORDER BY id`).Scan(&rows).Error; err != nil {
		t.Fatal(err)
	}
	want := map[string][2]string{"per_Bob": {"robert", "robert"}, "per_bob": {"bob", "bob"}, "per_carol": {"carol", "carol"}}
	for _, row := range rows {
		if w, ok := want[row.ID]; ok && (row.Subject != w[0] || row.SubjectKey != w[1]) {
			t.Errorf("person %s = %q key %q, want %q key %q", row.ID, row.Subject, row.SubjectKey, w[0], w[1])
		}
	}
	var renamed int64
	if err := db.Raw(`SELECT count(*) FROM events WHERE step = ? AND account_id = ? AND note = ?`, people.StepPersonRenamed, acct, "Bob is now robert").Scan(&renamed).Error; err != nil || renamed != 1 {
		t.Errorf("%d person_renamed events on the account's audit log (%v), want 1", renamed, err)
	}
}
