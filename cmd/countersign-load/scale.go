package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
)

// The database runs (-wal, -scale) look at what one ask costs the database
// and whether approvals_list stays quick when the table is large:
//
//   - -wal N files N asks one after another through Store.CreateApproval and
//     reports the write-ahead log they made per ask (PostgreSQL): the LSN
//     distance, and with -waldump the records and bytes pg_waldump shows for
//     the transactions that touched the load's database;
//   - -scale N puts N asks in the approvals table in bulk (INSERT … SELECT,
//     generate_series on PostgreSQL, a recursive CTE on SQLite), then prints
//     the plan of every approvals_list filter and times each through
//     Store.ListApprovals with bindings picked at random.

// seedAsks puts n closed and open asks with their created events in the
// account, in bulk, with the spread a busy account has: 200 repositories,
// unique heads and payload hashes, 1,000 job ids, one ask in 50 open, the
// kinds mixed.
func seedAsks(ctx context.Context, db *gorm.DB, dialect core.Dialect, accountID, agentID string, n int) error {
	const batch = 100_000
	for from := 1; from <= n; from += batch {
		to := min(from+batch-1, n)
		var series, sha, head string
		if dialect == core.Postgres {
			series = fmt.Sprintf("(SELECT g FROM generate_series(%d, %d) AS g) AS s", from, to)
			sha, head = "lpad(to_hex(g), 64, '0')", "lpad(to_hex(g), 40, '0')"
		} else {
			series = fmt.Sprintf("(WITH RECURSIVE r(g) AS (SELECT %d UNION ALL SELECT g + 1 FROM r WHERE g < %d) SELECT g FROM r) AS s", from, to)
			sha, head = "printf('%064x', g)", "printf('%040x', g)"
		}
		insert := `INSERT INTO approvals (id, account_id, kind, title, payload, payload_sha256, requester_id, requester_subject,
	status, repo_key, pr_number, head, job_id, expires_at, created_at, updated_at)
SELECT 'appr_seed' || g, ?, CASE WHEN g % 10 = 0 THEN 'run' WHEN g % 10 = 1 THEN 'document' ELSE 'pull_request' END,
	'Merge #' || g, '{}', ` + sha + `, ?, 'agent:load',
	CASE WHEN g % 50 = 0 THEN 'pending' WHEN g % 7 = 0 THEN 'denied' WHEN g % 11 = 0 THEN 'approved' ELSE 'done' END,
	'acme/repo' || (g % 200), g / 200 + 1, ` + head + `, 'job_' || (g % 1000), ?, ?, ?
FROM ` + series
		now := time.Now().UTC()
		if err := db.WithContext(ctx).Exec(insert, accountID, agentID, now.Add(24*time.Hour), now, now).Error; err != nil {
			return fmt.Errorf("seed asks: %w", err)
		}
		events := `INSERT INTO events (account_id, approval_id, at, actor_kind, actor, step, to_status)
SELECT ?, 'appr_seed' || g, ?, 'agent', 'agent:load', 'created', 'pending' FROM ` + series
		if err := db.WithContext(ctx).Exec(events, accountID, now).Error; err != nil {
			return fmt.Errorf("seed events: %w", err)
		}
	}
	if err := db.WithContext(ctx).Exec("ANALYZE").Error; err != nil {
		return fmt.Errorf("analyze: %w", err)
	}
	return nil
}

// listCase is one approvals_list filter of the scale run: a filter made for
// seeded ask g.
type listCase struct {
	name   string
	filter func(g int) asks.ListFilter
}

var listCases = []listCase{
	{"repo", func(g int) asks.ListFilter { return asks.ListFilter{Repo: fmt.Sprintf("acme/repo%d", g%200)} }},
	{"repo+number", func(g int) asks.ListFilter {
		return asks.ListFilter{Repo: fmt.Sprintf("acme/repo%d", g%200), Number: int64(g/200 + 1)}
	}},
	{"head", func(g int) asks.ListFilter { return asks.ListFilter{Head: fmt.Sprintf("%040x", g)} }},
	{"payload_sha256", func(g int) asks.ListFilter { return asks.ListFilter{PayloadSHA256: fmt.Sprintf("%064x", g)} }},
	{"job_id", func(g int) asks.ListFilter { return asks.ListFilter{JobID: fmt.Sprintf("job_%d", g%1000)} }},
	{"status open", func(int) asks.ListFilter { return asks.ListFilter{Status: "open"} }},
	{"status denied", func(int) asks.ListFilter { return asks.ListFilter{Status: "denied"} }},
	{"status active", func(int) asks.ListFilter { return asks.ListFilter{Status: "active"} }},
	{"kind run", func(int) asks.ListFilter { return asks.ListFilter{Kind: "run"} }},
	{"no filter", func(int) asks.ListFilter { return asks.ListFilter{} }},
}

// runScale seeds n asks, prints the plans of the list filters, the inbox
// and the sweeper, and times each list filter.
func runScale(ctx context.Context, t *target, n, samples int, out io.Writer) error {
	db := t.store.DB()
	start := time.Now()
	if err := seedAsks(ctx, db, t.store.Dialect(), t.agent.AccountID, t.agent.ID, n); err != nil {
		return err
	}
	fmt.Fprintf(out, "seeded %d asks and their events in %s\n\n", n, time.Since(start).Round(time.Second))
	// The plans, from the SQL the store itself runs (captured by a gorm callback).
	for _, c := range listCases {
		sql, err := captureSQL(db, func() error {
			_, _, err := t.store.ListApprovals(ctx, t.agent.AccountID, c.filter(n/2))
			return err
		})
		if err != nil {
			return err
		}
		if err := explain(ctx, db, t.store.Dialect(), "approvals_list "+c.name, sql, out); err != nil {
			return err
		}
	}
	owner := &people.Member{AccountID: t.agent.AccountID, Role: core.RoleOwner, Person: people.Person{Subject: "ada"}}
	for _, q := range []struct {
		name string
		run  func() error
	}{
		{"sweeper (ExpireDue)", func() error { _, err := t.store.ExpireDue(ctx); return err }},
		{"inbox of an owner", func() error { _, err := t.store.Inbox(ctx, owner, core.DefaultPageSize); return err }},
	} {
		name, run := q.name, q.run
		sql, err := captureSQL(db, run)
		if err != nil {
			return err
		}
		if err := explain(ctx, db, t.store.Dialect(), name, sql, out); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "approvals_list through Store.ListApprovals, %d asks in the account, %d calls per filter, one at a time:\n", n, samples)
	fmt.Fprintf(out, "%16s %8s %8s %8s\n", "filter", "p50 ms", "p99 ms", "max ms")
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range listCases {
		took := make([]time.Duration, 0, samples)
		for range samples {
			g := 1 + r.IntN(n)
			t0 := time.Now()
			if _, _, err := t.store.ListApprovals(ctx, t.agent.AccountID, c.filter(g)); err != nil {
				return fmt.Errorf("list %s: %w", c.name, err)
			}
			took = append(took, time.Since(t0))
		}
		slices.Sort(took)
		p := phase{latency: took}
		fmt.Fprintf(out, "%16s %8.2f %8.2f %8.2f\n", c.name, ms(p.percentile(0.5)), ms(p.percentile(0.99)), ms(took[len(took)-1]))
	}
	return nil
}

// statement is one query gorm ran: its SQL and its arguments.
type statement struct {
	sql  string
	vars []any
}

// captureSQL runs fn and returns the queries it made through db, by a gorm
// callback that is removed afterwards.
func captureSQL(db *gorm.DB, fn func() error) ([]statement, error) {
	var got []statement
	name := "countersign-load:capture"
	var mu sync.Mutex
	if err := db.Callback().Query().After("gorm:query").Register(name, func(tx *gorm.DB) {
		if tx.Statement.Table != "approvals" { // the service's background work queries too
			return
		}
		mu.Lock()
		defer mu.Unlock()
		got = append(got, statement{tx.Statement.SQL.String(), slices.Clone(tx.Statement.Vars)})
	}); err != nil {
		return nil, err
	}
	defer db.Callback().Query().Remove(name)
	err := fn()
	return got, err
}

// explain prints the plan of each statement, run with its arguments (on
// PostgreSQL with EXPLAIN (ANALYZE, BUFFERS): the plan it chose, and what it
// read).
func explain(ctx context.Context, db *gorm.DB, dialect core.Dialect, name string, stmts []statement, out io.Writer) error {
	for _, st := range stmts {
		prefix := "EXPLAIN QUERY PLAN "
		if dialect == core.Postgres {
			prefix = "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF) "
		}
		rows, err := db.WithContext(ctx).Raw(prefix+st.sql, st.vars...).Rows()
		if err != nil {
			return fmt.Errorf("explain %s: %w", name, err)
		}
		fmt.Fprintf(out, "-- %s\n%s\n", name, db.Dialector.Explain(st.sql, st.vars...))
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				rows.Close()
				return err
			}
			fmt.Fprintf(out, "   %v\n", strings.Trim(fmt.Sprint(vals[len(vals)-1]), "[]"))
		}
		rows.Close()
		fmt.Fprintln(out)
	}
	return nil
}

// runWAL files n asks one after another (after a few unrecorded ones, so
// that the table's first pages are written) and reports the WAL they made.
func runWAL(ctx context.Context, t *target, n int, waldump, waldir string, out io.Writer) error {
	if t.store.Dialect() != core.Postgres {
		return fmt.Errorf("-wal measures PostgreSQL's write-ahead log: give -database")
	}
	db := t.store.DB()
	file := fileDirect(t.store, t.agent)
	for i := range 50 {
		if err := file(ctx, 0, int64(i+1)); err != nil {
			return err
		}
	}
	var dbOID int64
	if err := db.WithContext(ctx).Raw("SELECT oid FROM pg_database WHERE datname = current_database()").Scan(&dbOID).Error; err != nil {
		return err
	}
	var from, to string
	if err := db.WithContext(ctx).Raw("SELECT pg_current_wal_insert_lsn()::text").Scan(&from).Error; err != nil {
		return err
	}
	for i := range n {
		if err := file(ctx, 1, int64(i+1)); err != nil {
			return err
		}
	}
	if err := db.WithContext(ctx).Raw("SELECT pg_current_wal_insert_lsn()::text").Scan(&to).Error; err != nil {
		return err
	}
	var distance int64
	if err := db.WithContext(ctx).Raw("SELECT pg_wal_lsn_diff(?::pg_lsn, ?::pg_lsn)::bigint", to, from).Scan(&distance).Error; err != nil {
		return err
	}
	fmt.Fprintf(out, "WAL over %d asks filed one at a time: LSN %s to %s, %d bytes: %.0f bytes per ask (the server's whole WAL in that time: other databases on it write too)\n",
		n, from, to, distance, float64(distance)/float64(n))
	if waldump == "" {
		return nil
	}
	// pg_waldump sees the records once they are flushed.
	if err := db.WithContext(ctx).Exec("SELECT pg_switch_wal()").Error; err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, waldump, "-p", waldir, "-s", from, "-e", to)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	dump, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("run pg_waldump: %w", err)
	}
	st := walStats(dump, dbOID)
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("pg_waldump: %w: %.500s", err, stderr.String())
	}
	fmt.Fprintf(out, "pg_waldump, the %d transactions that touched this database: %.1f records and %.0f bytes per ask (%.0f without full-page images); by resource manager:\n",
		st.xacts, float64(st.records)/float64(n), float64(st.bytes)/float64(n), float64(st.recBytes)/float64(n))
	keys := make([]string, 0, len(st.byKind))
	for k := range st.byKind {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return st.byKind[b] - st.byKind[a] })
	for _, k := range keys {
		fmt.Fprintf(out, "  %6.2f per ask  %s\n", float64(st.byKind[k])/float64(n), k)
	}
	return nil
}

type walCount struct {
	xacts, records, bytes, recBytes int
	byKind                          map[string]int
}

var walLine = regexp.MustCompile(`^rmgr: (\S+)\s+len \(rec/tot\):\s+(\d+)/\s*(\d+), tx:\s+(\d+), lsn: \S+, prev \S+, desc: (\S+)`)

// walStats counts the records of pg_waldump's output that belong to the
// transactions which touched database dbOID (other databases of the server
// write meanwhile), with their commits.
func walStats(r io.Reader, dbOID int64) walCount {
	type rec struct {
		kind           string
		rec, tot, xact int
	}
	var recs []rec
	ours := map[int]bool{}
	marker := fmt.Sprintf("/%d/", dbOID)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		m := walLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		lenRec, _ := strconv.Atoi(m[2])
		lenTot, _ := strconv.Atoi(m[3])
		xact, _ := strconv.Atoi(m[4])
		if xact == 0 {
			continue
		}
		if strings.Contains(line, "rel 1663"+marker) {
			ours[xact] = true
		}
		recs = append(recs, rec{m[1] + " " + m[5], lenRec, lenTot, xact})
	}
	c := walCount{xacts: len(ours), byKind: map[string]int{}}
	for _, r := range recs {
		if !ours[r.xact] {
			continue
		}
		c.records++
		c.bytes += r.tot
		c.recBytes += r.rec
		c.byKind[r.kind]++
	}
	return c
}
