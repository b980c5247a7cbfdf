package models

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/ask"

	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// benchAsks is how many asks the approvals_list benchmark runs over.
const benchAsks = 1_000_000

// benchLayout numbers the way buildBench fills the database: change it when
// the generator changes, so the cache made by the old one is not used.
const benchLayout = 2

// benchDirEnv points the benchmark at another data folder, such as a copy of
// the cached one with an index added by hand, instead of the cache.
const benchDirEnv = "COUNTERSIGN_BENCH_LIST_DIR"

// BenchmarkListByBinding measures ListApprovals with each binding filter over
// a SQLite database of a million asks, and reports the p50 and p99 latency of
// single calls. The database is built once (6 to 10 minutes on 2 cores) and cached in
// os.TempDir() under a name carrying the schema version; run it with
//
//	go test ./models -run '^$' -bench BenchmarkListByBinding -timeout 30m -v
func BenchmarkListByBinding(b *testing.B) {
	if testing.Short() {
		b.Skip("builds a database of a million asks")
	}
	env := openBenchStore(b)
	for _, f := range benchFilters(env.gen) {
		b.Run(f.name, func(b *testing.B) {
			ctx := context.Background()
			b.Logf("plan: %s", env.plan(b, f.filter(0)))
			var (
				latency = make([]time.Duration, 0, 4096)
				rows    int
				n       int
			)
			for b.Loop() {
				filter := f.filter(n)
				start := time.Now()
				list, _, err := env.store.ListApprovals(ctx, f.account, filter)
				latency = append(latency, time.Since(start))
				if err != nil {
					b.Fatalf("list %+v: %v", filter, err)
				}
				b.StopTimer()
				if err := f.check(filter, list); err != nil {
					b.Fatalf("list %+v: %v", filter, err)
				}
				b.StartTimer()
				rows += len(list)
				n++
			}
			slices.Sort(latency)
			b.ReportMetric(benchMS(benchPercentile(latency, 0.50)), "p50-ms")
			b.ReportMetric(benchMS(benchPercentile(latency, 0.99)), "p99-ms")
			b.ReportMetric(float64(rows)/float64(n), "rows/op")
		})
	}
}

// benchFilter is one binding filter; filter(n) gives the n-th query of it, all
// of which match at least one ask.
type benchFilter struct {
	name    string
	account string
	filter  func(n int) asks.ListFilter
}

// check says whether list is a page that ListApprovals may answer f with:
// non-empty, newest first, every ask of the account and matching every field.
func (f benchFilter) check(lf asks.ListFilter, list []asks.Approval) error {
	if len(list) == 0 {
		return errors.New("no ask, though the query was made from one")
	}
	for i, a := range list {
		switch {
		case i > 0 && a.Seq >= list[i-1].Seq:
			return fmt.Errorf("not newest first at %d", i)
		case a.AccountID != f.account:
			return fmt.Errorf("ask %s of account %s", a.ID, a.AccountID)
		case lf.Repo != "" && a.RepoKey != strings.ToLower(lf.Repo),
			lf.Number != 0 && a.PRNumber != lf.Number,
			lf.Head != "" && a.Head != lf.Head,
			lf.PayloadSHA256 != "" && a.PayloadSHA256 != lf.PayloadSHA256,
			lf.JobID != "" && a.JobID != lf.JobID,
			lf.Kind != "" && a.Kind != lf.Kind,
			lf.Status == "open" && !a.Status.Open():
			return fmt.Errorf("ask %s does not match: repo %q number %d head %q sha %q job %q status %s",
				a.ID, a.RepoKey, a.PRNumber, a.Head, a.PayloadSHA256, a.JobID, a.Status)
		}
	}
	return nil
}

// benchSamples is how many different asks each filter's queries are made from.
const benchSamples = 512

func benchFilters(g benchGen) []benchFilter {
	account := g.accounts[0]
	// Asks of the first account, spread over the whole table, that carry the binding.
	pick := func(ok func(benchAsk) bool) []benchAsk {
		var out []benchAsk
		for i := 0; len(out) < benchSamples; i = (i + 7919) % benchAsks {
			if a := g.ask(i); a.account == account && ok(a) {
				out = append(out, a)
			}
		}
		return out
	}
	pr := pick(func(a benchAsk) bool { return a.kind == ask.KindPullRequest })
	open := pick(func(a benchAsk) bool { return a.kind == ask.KindPullRequest && a.status.Open() })
	job := pick(func(a benchAsk) bool { return a.jobID != "" })
	every := pick(func(benchAsk) bool { return true })
	at := func(s []benchAsk, n int) benchAsk { return s[n%len(s)] }
	return []benchFilter{
		{"repo+number", account, func(n int) asks.ListFilter { a := at(pr, n); return asks.ListFilter{Repo: a.repo, Number: a.number} }},
		{"repo+number+head", account, func(n int) asks.ListFilter {
			a := at(pr, n)
			return asks.ListFilter{Repo: a.repo, Number: a.number, Head: a.head}
		}},
		{"head", account, func(n int) asks.ListFilter { return asks.ListFilter{Head: at(pr, n).head} }},
		{"payload_sha256", account, func(n int) asks.ListFilter { return asks.ListFilter{PayloadSHA256: at(every, n).sha} }},
		{"job_id", account, func(n int) asks.ListFilter { return asks.ListFilter{JobID: at(job, n).jobID} }},
		{"repo+status_open", account, func(n int) asks.ListFilter { return asks.ListFilter{Repo: at(open, n).repo, Status: "open"} }},
		// Alone, as the tool allows them too.
		{"repo", account, func(n int) asks.ListFilter { return asks.ListFilter{Repo: at(pr, n).repo} }},
		{"status_open", account, func(int) asks.ListFilter { return asks.ListFilter{Status: "open"} }},
		{"kind", account, func(n int) asks.ListFilter {
			return asks.ListFilter{Kind: []string{ask.KindRoll, ask.KindDecision, ask.KindRun}[n%3]}
		}},
	}
}

func benchPercentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func benchMS(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// benchEnv is the opened benchmark database.
type benchEnv struct {
	path  string // the SQLite file
	db    *gorm.DB
	store *Store
	gen   benchGen
}

var benchCache struct {
	once sync.Once
	env  *benchEnv
	err  error
}

func openBenchStore(b *testing.B) *benchEnv {
	b.Helper()
	benchCache.once.Do(func() { benchCache.env, benchCache.err = openBench(b) })
	if benchCache.err != nil {
		b.Fatal(benchCache.err)
	}
	return benchCache.env
}

func openBench(b *testing.B) (*benchEnv, error) {
	ctx := context.Background()
	version := core.Migrations[len(core.Migrations)-1].Version
	dir := os.Getenv(benchDirEnv)
	if dir == "" {
		dir = filepath.Join(os.TempDir(), fmt.Sprintf("countersign-bench-1m-v%d-data%d", version, benchLayout))
		if _, err := os.Stat(filepath.Join(dir, "countersign.db")); errors.Is(err, os.ErrNotExist) {
			removeStaleBench(b, dir)
			if err := buildBench(b, dir); err != nil {
				return nil, err
			}
		}
	} else if _, err := os.Stat(filepath.Join(dir, "countersign.db")); err != nil {
		return nil, fmt.Errorf("%s=%s: %w (copy the cached folder there first)", benchDirEnv, dir, err)
	}
	db, dialect, err := core.Open(ctx, "", dir, 0, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, err
	}
	var accounts []string
	if err := db.Raw(`SELECT id FROM accounts ORDER BY name`).Scan(&accounts).Error; err != nil {
		return nil, err
	}
	var last int64
	if err := db.Raw(`SELECT max(seq) FROM approvals`).Scan(&last).Error; err != nil {
		return nil, err
	}
	if len(accounts) != 2 || last != benchAsks {
		return nil, fmt.Errorf("%s holds %d accounts and %d asks, not 2 and %d: remove it to rebuild", dir, len(accounts), last, benchAsks)
	}
	b.Logf("benchmark database: %s", filepath.Join(dir, "countersign.db"))
	return &benchEnv{path: filepath.Join(dir, "countersign.db"), db: db, store: NewStore(db, dialect, 7*24*time.Hour), gen: benchGen{accounts: accounts}}, nil
}

// removeStaleBench deletes the caches of earlier schema versions or layouts
// (about a gigabyte each); folders still being built are left alone.
func removeStaleBench(b *testing.B, keep string) {
	old, _ := filepath.Glob(filepath.Join(os.TempDir(), "countersign-bench-1m-v*"))
	for _, d := range old {
		if d != keep && !strings.Contains(filepath.Base(d), ".building-") {
			b.Logf("removing stale benchmark database %s", d)
			os.RemoveAll(d)
		}
	}
}

// buildBench makes the database in a folder of its own and renames it to dir
// only when it is whole, so an interrupted build is never used.
func buildBench(b *testing.B, dir string) (err error) {
	ctx := context.Background()
	started := time.Now()
	tmp := fmt.Sprintf("%s.building-%d", dir, os.Getpid())
	os.RemoveAll(tmp)
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()
	db, dialect, err := core.Open(ctx, "", tmp, 0, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	store := NewStore(db, dialect, 7*24*time.Hour)
	var g benchGen
	for _, name := range []string{"bench-a", "bench-b"} {
		acct, err := store.CreateAccount(ctx, name)
		if err != nil {
			return err
		}
		g.accounts = append(g.accounts, acct.ID)
		for j := range 2 {
			agent, _, err := store.CreateAgent(ctx, acct.ID, fmt.Sprintf("bot-%d", j), people.AllScopes)
			if err != nil {
				return err
			}
			g.agents = append(g.agents, agent.ID)
		}
	}
	sqlDB, err := db.DB()
	if err != nil {
		return err
	}
	const perTx, perStmt = 50_000, 500
	for from := 0; from < benchAsks; from += perTx {
		if err := insertBenchAsks(ctx, sqlDB, g, from, min(from+perTx, benchAsks), perStmt); err != nil {
			return fmt.Errorf("insert asks from %d: %w", from, err)
		}
	}
	if err := sqlDB.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("keep benchmark database: %w", err)
	}
	b.Logf("built %d asks in %s", benchAsks, time.Since(started).Round(time.Second))
	return nil
}

// benchColumns are the approvals columns the builder writes; the others keep
// their defaults (links and proof NULL, version 1, priority 0, no supersedes).
var benchColumns = []string{"id", "account_id", "kind", "title", "summary", "approve_means", "deny_means",
	"payload", "payload_sha256", "context", "agent_label", "requester_id", "requester_subject", "asked_of",
	"status", "decision", "decided_by", "decided_at", "note", "repo_key", "pr_number", "head", "job_id",
	"expires_at", "created_at", "updated_at"}

// insertBenchAsks writes asks [from, to) in one transaction, perStmt rows per INSERT.
func insertBenchAsks(ctx context.Context, db *sql.DB, g benchGen, from, to, perStmt int) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `PRAGMA cache_size = -262144`); err != nil {
		return err
	}
	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(benchColumns)), ", ") + ")"
	stmtFor := map[int]*sql.Stmt{}
	args := make([]any, 0, perStmt*len(benchColumns))
	for start := from; start < to; start += perStmt {
		n := min(perStmt, to-start)
		stmt := stmtFor[n]
		if stmt == nil {
			q := "INSERT INTO approvals (" + strings.Join(benchColumns, ", ") + ") VALUES " +
				strings.TrimSuffix(strings.Repeat(row+", ", n), ", ")
			if stmt, err = tx.PrepareContext(ctx, q); err != nil {
				return err
			}
			stmtFor[n] = stmt
		}
		args = args[:0]
		for i := start; i < start+n; i++ {
			args = append(args, g.ask(i).values()...)
		}
		if _, err := stmt.ExecContext(ctx, args...); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// benchGen makes ask i of the benchmark database, the same every time, so the
// queries can be made without reading the database back.
type benchGen struct {
	accounts []string // two
	agents   []string // two per account, in account order; only set while building
}

// benchAsk is one generated ask.
type benchAsk struct {
	i                      int
	id, account, requester string
	kind                   string
	status                 asks.Status
	repo                   string // as a payload writes it, mixed case; repo_key is its lower case
	number                 int64
	head, jobID, planItem  string
	payload, sha           string
	created                time.Time
}

// Status mix, per thousand, of a long-running account: most asks are closed.
var benchStatuses = []struct {
	status   asks.Status
	perMille int
}{
	{asks.StatusPending, 10}, {asks.StatusQuestion, 5}, {asks.StatusApproved, 40}, {asks.StatusInProgress, 15}, {asks.StatusDone, 450},
	{asks.StatusDenied, 120}, {asks.StatusFailed, 30}, {asks.StatusStale, 150}, {asks.StatusCancelled, 30}, {asks.StatusExpired, 150},
}

// Kind mix, per twenty asks of an account.
var benchKinds = []string{
	ask.KindPullRequest, ask.KindPullRequest, ask.KindPullRequest, ask.KindPullRequest, ask.KindPullRequest, ask.KindPullRequest,
	ask.KindPullRequest, ask.KindPullRequest, ask.KindPullRequest, ask.KindPullRequest, ask.KindPullRequest, ask.KindPullRequest,
	ask.KindRoll, ask.KindRoll, ask.KindReview, ask.KindDocument, ask.KindDecision, ask.KindDecision, ask.KindDecision, ask.KindRun,
}

var benchEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func (g benchGen) ask(i int) benchAsk {
	var seed [8]byte
	binary.BigEndian.PutUint64(seed[:], uint64(i))
	h := sha256.Sum256(seed[:])
	u := func(k int) uint64 { return binary.BigEndian.Uint64(h[k*8:]) }
	a := benchAsk{
		i:       i,
		id:      "appr_" + core.IDEncoding.EncodeToString(h[24:]),
		account: g.accounts[i%2],
		kind:    benchKinds[(i/2)%len(benchKinds)],
		created: benchEpoch.Add(time.Duration(i) * 20 * time.Second),
	}
	if g.agents != nil {
		a.requester = g.agents[(i%2)*2+(i/2)%2]
	}
	p := int(u(0) % 1000)
	for _, s := range benchStatuses {
		if p < s.perMille {
			a.status = s.status
			break
		}
		p -= s.perMille
	}
	if u(1)%10 < 7 {
		a.jobID = fmt.Sprintf("job_%d", u(2)%50_000)
		a.planItem = fmt.Sprintf("item_%d", u(2)%7)
	}
	switch a.kind {
	case ask.KindPullRequest:
		r := u(3) % 1000
		a.repo = fmt.Sprintf("Org%d/Repo-%d", r%37, r)
		a.number = int64(u(1)>>8%300) + 1
		a.head = hex.EncodeToString(h[:20])
		a.payload = fmt.Sprintf(`{"pull_request":{"head":"%s","number":%d,"repo":"%s","title":"Change %d"}}`, a.head, a.number, a.repo, i)
	case ask.KindRoll:
		a.payload = fmt.Sprintf(`{"roll":{"behind":%d,"deployments":["web"],"main_commit":"%s","running_commit":"%s"}}`, i%9, hex.EncodeToString(h[:20]), hex.EncodeToString(h[12:32]))
	case ask.KindReview:
		a.payload = fmt.Sprintf(`{"review":{"url":"https://review.example.com/r/%d"}}`, i)
	case ask.KindDocument:
		a.payload = fmt.Sprintf(`{"document":{"document_id":"doc_%d","space_id":"space_%d","version":0}}`, i%20_000, i%40)
	case ask.KindDecision:
		// Decisions repeat: the same question is asked again, so a hash matches several asks.
		a.payload = fmt.Sprintf(`{"decision":{"options":["ship %d","wait"]}}`, u(3)%5000)
	case ask.KindRun:
		a.payload = fmt.Sprintf(`{"run":{"argv":["scripts/job.sh","%d"],"effect":"read_only","runner_id":"run_1","script_sha256":"%s"}}`, i, hex.EncodeToString(h[:32]))
	}
	sum := sha256.Sum256([]byte(a.payload))
	a.sha = hex.EncodeToString(sum[:])
	return a
}

// values are the benchColumns of the ask, in order.
func (a benchAsk) values() []any {
	ctx := `{"no_context_reason":"a routine change"}`
	if a.jobID != "" {
		ctx = fmt.Sprintf(`{"job_id":"%s","plan_id":"plan_1","plan_item":"%s"}`, a.jobID, a.planItem)
	}
	var decision, decidedBy string
	var decidedAt any
	switch a.status {
	case asks.StatusApproved, asks.StatusInProgress, asks.StatusDone, asks.StatusFailed, asks.StatusStale:
		decision, decidedBy, decidedAt = "approve", "ada", a.created.Add(3*time.Minute)
	case asks.StatusDenied:
		decision, decidedBy, decidedAt = "deny", "ada", a.created.Add(3*time.Minute)
	}
	return []any{
		a.id, a.account, a.kind, fmt.Sprintf("Ask %d of kind %s", a.i, a.kind), "What it means, in a sentence or two.",
		"I go ahead", "Nothing happens", a.payload, a.sha, ctx, "bench", a.requester, "agent:bench",
		"", string(a.status), decision, decidedBy, decidedAt, "", strings.ToLower(a.repo), a.number, a.head, a.jobID,
		a.created.Add(7 * 24 * time.Hour), a.created, a.created.Add(5 * time.Minute),
	}
}

// plan returns SQLite's plan for the query ListApprovals makes for f, with
// its values bound as they are when the benchmark runs it.
func (e *benchEnv) plan(b *testing.B, f asks.ListFilter) string {
	b.Helper()
	db, err := gorm.Open(sqlite.Open(core.SQLiteDSN(e.path)), &gorm.Config{Logger: logger.Discard, SkipDefaultTransaction: true})
	if err != nil {
		b.Fatalf("open for plan: %v", err)
	}
	defer func() {
		if sqlDB, err := db.DB(); err == nil {
			sqlDB.Close()
		}
	}()
	var (
		query string
		vars  []any
	)
	err = db.Callback().Query().After("gorm:query").Register("bench:plan", func(tx *gorm.DB) {
		query, vars = tx.Statement.SQL.String(), slices.Clone(tx.Statement.Vars)
	})
	if err != nil {
		b.Fatalf("register: %v", err)
	}
	if _, _, err := NewStore(db, core.SQLite, time.Hour).ListApprovals(context.Background(), e.gen.accounts[0], f); err != nil {
		b.Fatalf("list: %v", err)
	}
	rows, err := db.Raw("EXPLAIN QUERY PLAN "+query, vars...).Rows()
	if err != nil {
		b.Fatalf("explain %s: %v", query, err)
	}
	defer rows.Close()
	var details []string
	for rows.Next() {
		var id, parent, notUsed int
		var detail string
		if err := rows.Scan(&id, &parent, &notUsed, &detail); err != nil {
			b.Fatalf("explain: %v", err)
		}
		details = append(details, detail)
	}
	return strings.Join(details, "; ") + "  ←  " + query
}
