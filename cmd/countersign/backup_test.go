package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
)

// countersign backup, run while agents file asks, writes a copy that opens
// as a sound, migrated database holding every ask answered before it began.
func TestBackupWhileAsksAreFiled(t *testing.T) {
	s := startServer(t, apptest.SQLite, map[string]string{"COUNTERSIGN_ASK_RATE": "100000/s", "COUNTERSIGN_ASK_BURST": "100000"})
	created := mustCLI(t, s.env, "agent", "create", "--name", "filer", "--scopes", strings.Join(people.AllScopes, ","))
	lines := strings.Split(strings.TrimSpace(created.stdout), "\n")
	token := lines[len(lines)-1]

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		mu       sync.Mutex
		answered []string
		failed   []string
		wg       sync.WaitGroup
	)
	for c := range 8 {
		session, err := apptest.Connect(ctx, s.URL+"/mcp", token)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		wg.Go(func() {
			for n := 0; ctx.Err() == nil; n++ {
				r, err := apptest.CallTool(ctx, session, "approvals_create", pullRequestAsk(c, n))
				mu.Lock()
				switch id, _ := r.Out["approval_id"].(string); {
				case err != nil && ctx.Err() == nil:
					failed = append(failed, err.Error())
				case err == nil && (r.IsError || id == ""):
					failed = append(failed, r.Text)
				case err == nil:
					answered = append(answered, id)
				}
				mu.Unlock()
			}
		})
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(answered) }
	for deadline := time.Now().Add(time.Minute); count() < 200; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("only %d asks answered within a minute", count())
		}
	}
	mu.Lock()
	before := append([]string(nil), answered...) // answered, so committed, before the backup starts
	mu.Unlock()

	file := filepath.Join(t.TempDir(), "backup.db")
	r := mustCLI(t, s.env, "backup", "--out", file)
	during := count() - len(before)
	// Writes go on after the backup: the service was not stopped or locked out.
	for deadline := time.Now().Add(30 * time.Second); count() < len(before)+during+50; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no asks were answered after the backup: %d before it, %d now", len(before)+during, count())
		}
	}
	cancel()
	wg.Wait()
	if len(failed) > 0 {
		t.Fatalf("%d asks failed while the backup ran, the first: %s", len(failed), failed[0])
	}
	if !strings.Contains(r.stdout, "backup written: "+file) || !strings.Contains(r.stdout, "integrity_check ok") {
		t.Errorf("backup's report:\n%s", r)
	}
	t.Logf("%d asks answered before the backup, %d while it ran; %s", len(before), during, strings.TrimSpace(r.stdout))

	// The copy, opened on its own: sound, migrated, and every ask is there.
	db, err := gorm.Open(sqlite.Open(core.SQLiteDSN(file)), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatalf("open the backup: %v", err)
	}
	var check []string
	if err := db.Raw(`PRAGMA integrity_check`).Scan(&check).Error; err != nil || len(check) != 1 || check[0] != "ok" {
		t.Fatalf("PRAGMA integrity_check of the backup = %q (%v), want ok", check, err)
	}
	store := models.NewStore(db, core.SQLite, time.Hour)
	if err := store.SchemaCurrent(context.Background()); err != nil {
		t.Fatalf("the backup is not migrated: %v", err)
	}
	acct, err := store.AccountByName(context.Background(), people.DefaultAccountName)
	if err != nil {
		t.Fatal(err)
	}
	missing := 0
	for _, id := range before {
		if a, err := store.GetApproval(context.Background(), acct.ID, id); err != nil || a.Status != asks.StatusPending {
			if missing++; missing <= 5 {
				t.Errorf("ask %s, answered before the backup, in the backup: %v", id, err)
			}
		}
	}
	if missing > 0 {
		t.Fatalf("%d of %d asks answered before the backup are not in it", missing, len(before))
	}

	// An existing file is refused and left as it was; no temporary file stays.
	kept, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if r := cli(t, s.env, "backup", "--out", file); r.code != 1 || !strings.Contains(r.stderr, "already exists") {
		t.Errorf("backup onto an existing file:\n%s\nwant exit 1 saying it exists", r)
	}
	if now, err := os.ReadFile(file); err != nil || !bytes.Equal(now, kept) {
		t.Errorf("the refused backup changed %s (%v)", file, err)
	}
	if left, _ := filepath.Glob(file + ".partial-*"); len(left) > 0 {
		t.Errorf("temporary files left beside the backup: %v", left)
	}
	if r := cli(t, s.env, "backup"); r.code != 2 || !strings.Contains(r.stderr, "usage: countersign backup --out FILE") {
		t.Errorf("backup without --out:\n%s\nwant exit 2 with the usage", r)
	}
}

// On PostgreSQL backup refuses and names pg_dump.
func TestBackupOnPostgreSQLSaysPgDump(t *testing.T) {
	file := filepath.Join(t.TempDir(), "backup.db")
	env := map[string]string{"COUNTERSIGN_DATABASE_URL": "postgres://countersign@db.example:5432/countersign"}
	r := cli(t, env, "backup", "--out", file)
	if r.code != 1 || !strings.Contains(r.stderr, "pg_dump") || !strings.Contains(r.stderr, "PostgreSQL") {
		t.Errorf("backup on PostgreSQL:\n%s\nwant exit 1 naming pg_dump", r)
	}
	if _, err := os.Stat(file); err == nil {
		t.Errorf("backup on PostgreSQL made %s", file)
	}
}
