package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/app"
	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/people"
)

// The running service seals the audit log by itself; `audit verify` says the
// log is intact, and after an event is edited in the database it names the
// event and exits 1.
func TestAuditVerifyFindsAnEditedEvent(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := startServer(t, db)
		created := mustCLI(t, s.env, "agent", "create", "--name", "audited", "--scopes", strings.Join(people.AllScopes, ","))
		lines := strings.Split(strings.TrimSpace(created.stdout), "\n")
		session, err := apptest.Connect(context.Background(), s.URL+"/mcp", lines[len(lines)-1])
		if err != nil {
			t.Fatal(err)
		}
		defer session.Close()
		for n := range 3 {
			if r, err := apptest.CallTool(context.Background(), session, "approvals_create", pullRequestAsk(0, n)); err != nil || r.IsError {
				t.Fatalf("approvals_create: %v %s", err, r.Text)
			}
		}

		// The service seals every second; on PostgreSQL what one run marked, the next seals.
		sealed := regexp.MustCompile(`: 3 sealed events checked, chain head 3 [0-9a-f]{64}; 0 newer events not sealed yet\n`)
		var out result
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			out = mustCLI(t, s.env, "audit", "verify")
			if sealed.MatchString(out.stdout) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the service did not seal the 3 events within 20 s:\n%s", out)
			}
		}
		if !strings.Contains(out.stdout, "ok: no sealed row was edited, deleted or added") {
			t.Fatalf("audit verify:\n%s", out)
		}

		store, err := app.OpenStore(context.Background(), mustConfig(t, s.env), apptest.Logger())
		if err != nil {
			t.Fatal(err)
		}
		var seq int64
		if err := store.DB().Table("events").Select("MIN(seq)").Scan(&seq).Error; err != nil {
			t.Fatal(err)
		}
		if err := store.DB().Exec(`UPDATE events SET note = 'edited' WHERE seq = ?`, seq).Error; err != nil {
			t.Fatal(err)
		}
		r := cli(t, s.env, "audit", "verify")
		if r.code != 1 || !regexp.MustCompile(`event \d+ \(chain position 1, created on appr_\w+\) was changed after it was sealed`).MatchString(r.stdout) ||
			!strings.Contains(r.stderr, "does not verify: 1 problem") {
			t.Fatalf("audit verify after an edit: exit %d\n%s", r.code, r)
		}
		if r := cli(t, s.env, "audit", "check"); r.code != 2 {
			t.Errorf("audit check: exit %d, want 2 (usage)\n%s", r.code, r)
		}
	})
}
