package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/glebarez/sqlite"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// Dialect names the SQL database behind a Store.
type Dialect string

// The two databases Countersign runs on.
const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
)

// SQLiteFile is the name of the SQLite database file in the data folder.
const SQLiteFile = "countersign.db"

// PoolSize is how many connections models.Open keeps to the database unless
// told otherwise: on SQLite one writer at a time is the rule and readers run
// beside it in WAL mode, so a few suffice; on PostgreSQL enough for the
// server's concurrent requests, within the server's default max_connections
// of 100 for two instances (COUNTERSIGN_DATABASE_POOL sets it for more).
func PoolSize(dialect Dialect) int {
	if dialect == SQLite {
		return 8
	}
	return 32
}

// Open connects to the database named by databaseURL, or, when it is empty, to
// the SQLite file countersign.db in dataDir (made if missing), and applies the
// migrations that have not run yet, telling log of each. On PostgreSQL pool
// is how many connections it keeps at most (0: PoolSize); SQLite keeps its
// PoolSize.
func Open(ctx context.Context, databaseURL, dataDir string, pool int, log *slog.Logger) (*gorm.DB, Dialect, error) {
	cfg := &gorm.Config{
		// gorm logs nothing: every query error is returned to its caller, which
		// wraps it and has it logged once, where it becomes a 500.
		Logger:                 logger.Discard,
		SkipDefaultTransaction: true,
		NowFunc:                func() time.Time { return time.Now().UTC() },
	}
	var (
		db      *gorm.DB
		dialect Dialect
		err     error
	)
	switch {
	case databaseURL == "":
		if err := os.MkdirAll(dataDir, 0o700); err != nil {
			return nil, "", fmt.Errorf("make data folder: %w", err)
		}
		db, err = gorm.Open(sqlite.Open(SQLiteDSN(filepath.Join(dataDir, SQLiteFile))), cfg)
		dialect = SQLite
	case strings.HasPrefix(databaseURL, "postgres://"), strings.HasPrefix(databaseURL, "postgresql://"):
		pgcfg, perr := PostgresConfig(databaseURL)
		if perr != nil {
			return nil, "", perr
		}
		db, err = gorm.Open(postgres.New(postgres.Config{Conn: stdlib.OpenDB(*pgcfg)}), cfg)
		dialect = Postgres
	default:
		return nil, "", errors.New("database URL must start with postgres:// (or be empty for the embedded SQLite file)")
	}
	if err != nil {
		return nil, "", fmt.Errorf("open %s database: %w", dialect, err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, "", fmt.Errorf("open %s database: %w", dialect, err)
	}
	poolSize := PoolSize(dialect)
	if dialect == Postgres && pool > 0 {
		poolSize = pool
	}
	sqlDB.SetMaxOpenConns(poolSize)
	// Every open connection may stay idle: a pool that closes connections
	// between bursts opens new ones under load, and on PostgreSQL each costs a
	// backend process, a SCRAM handshake and its prepared statements (with 8
	// idle of 32, 32 clients filing asks spent more time connecting than asking).
	sqlDB.SetMaxIdleConns(poolSize)
	sqlDB.SetConnMaxIdleTime(5 * time.Minute)
	if err := sqlDB.PingContext(ctx); err != nil {
		return nil, "", fmt.Errorf("reach %s database: %w", dialect, err)
	}
	if err := Migrate(ctx, db, dialect, log); err != nil {
		return nil, "", err
	}
	return db, dialect, nil
}

// sessionKeepalive is what every PostgreSQL session of Countersign's asks
// of the server, unless the database URL sets it: probe an idle client after
// 10 s, every 5 s, and give up after 3 unanswered probes or 25 s of
// unacknowledged data. A session whose instance's host died or dropped off
// the network then ends within about 25 s, and with it every lock it held
// (a sweep turn, a row under decision, a transaction's advisory lock); the
// kernel's defaults would keep them for over two hours.
var sessionKeepalive = [][2]string{
	{"tcp_keepalives_idle", "10"},
	{"tcp_keepalives_interval", "5"},
	{"tcp_keepalives_count", "3"},
	{"tcp_user_timeout", "25000"}, // ms
}

// PostgresConfig parses databaseURL for pgx, and has each new session set
// sessionKeepalive, but what the URL sets itself, right after it connects
// (with SET, not in the startup packet, which a pooler such as PgBouncer
// refuses to carry).
func PostgresConfig(databaseURL string) (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("database URL: %w", err)
	}
	var set []string
	for _, kv := range sessionKeepalive {
		if _, given := cfg.RuntimeParams[kv[0]]; !given {
			set = append(set, fmt.Sprintf("set_config('%s', '%s', false)", kv[0], kv[1]))
		}
	}
	if len(set) > 0 {
		query := "SELECT " + strings.Join(set, ", ")
		cfg.AfterConnect = func(ctx context.Context, conn *pgconn.PgConn) error {
			if _, err := conn.Exec(ctx, query).ReadAll(); err != nil {
				return fmt.Errorf("set TCP keepalives: %w", err)
			}
			return nil
		}
	}
	return cfg, nil
}

// SQLiteDSN is the DSN of the SQLite file at path. It turns on WAL, a busy
// timeout, foreign keys and immediate write transactions, so a transaction
// that reads then writes never loses the race for the write lock halfway.
func SQLiteDSN(path string) string {
	q := url.Values{}
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "foreign_keys(ON)")
	q.Add("_pragma", "synchronous(FULL)") // a power cut loses no committed ask either
	q.Add("_pragma", "temp_store(MEMORY)")
	q.Add("_pragma", "cache_size(-16384)")
	// No _time_format: glebarez/go-sqlite v1.21 stops reading the DSN after
	// it, which would silently drop _txlock. Its default format is SQLite's.
	q.Set("_txlock", "immediate")
	return "file:" + path + "?" + q.Encode()
}

// migration is one versioned, append-only schema step. Its SQL is written once
// for both databases; {{…}} words are replaced per dialect.
type migration struct {
	Version int
	name    string
	sql     string
}

// A statement that starts with {{postgres}} runs on PostgreSQL only: on
// SQLite it becomes a comment, which splitSQL leaves out.
var dialectWords = map[Dialect]*strings.Replacer{
	SQLite: strings.NewReplacer("{{serial}}", "INTEGER PRIMARY KEY AUTOINCREMENT", "{{time}}", "TIMESTAMP", "{{json}}", "TEXT", "{{bytes}}", "BLOB",
		"{{postgres}}", postgresOnly),
	Postgres: strings.NewReplacer("{{serial}}", "BIGSERIAL PRIMARY KEY", "{{time}}", "TIMESTAMPTZ", "{{json}}", "TEXT", "{{bytes}}", "BYTEA",
		"{{postgres}}", ""),
}

// postgresOnly marks, on SQLite, a migration statement meant for PostgreSQL only.
const postgresOnly = "-- PostgreSQL only: "

// Migrate applies, in order and each in its own transaction, the migrations
// the database has not recorded yet, and tells log of each one it applies.
func Migrate(ctx context.Context, db *gorm.DB, dialect Dialect, log *slog.Logger) error {
	db = db.WithContext(ctx)
	// Several instances may start at once on one PostgreSQL: each step runs
	// under the migration lock, so one migrates and the others wait, the
	// making of schema_migrations included (CREATE TABLE IF NOT EXISTS is
	// not safe against a concurrent one).
	locked := func(tx *gorm.DB) error {
		if dialect == Postgres {
			return tx.Exec(`SELECT pg_advisory_xact_lock(7261)`).Error
		}
		return nil
	}
	err := db.Transaction(func(tx *gorm.DB) error {
		if err := locked(tx); err != nil {
			return err
		}
		return tx.Exec(`CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at ` + dialectWords[dialect].Replace("{{time}}") + ` NOT NULL)`).Error
	})
	if err != nil {
		return fmt.Errorf("migrate: make schema_migrations: %w", err)
	}
	for _, m := range Migrations {
		err := db.Transaction(func(tx *gorm.DB) error {
			if err := locked(tx); err != nil {
				return err
			}
			var n int64
			if err := tx.Raw(`SELECT count(*) FROM schema_migrations WHERE version = ?`, m.Version).Scan(&n).Error; err != nil {
				return err
			}
			if n > 0 {
				return nil
			}
			for _, stmt := range splitSQL(dialectWords[dialect].Replace(m.sql)) {
				if err := tx.Exec(stmt).Error; err != nil {
					return fmt.Errorf("%w\n%s", err, stmt)
				}
			}
			if step := migrationSteps[m.Version]; step != nil {
				if err := step(tx); err != nil {
					return err
				}
			}
			log.Info("migrated", "version", m.Version, "name", m.name)
			return tx.Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`, m.Version, m.name, time.Now().UTC()).Error
		})
		if err != nil {
			return fmt.Errorf("migrate %d %s: %w", m.Version, m.name, err)
		}
	}
	return nil
}

func splitSQL(s string) []string {
	var out []string
	for _, stmt := range strings.Split(s, ";") {
		if stmt = strings.TrimSpace(stmt); stmt != "" && !strings.HasPrefix(stmt, postgresOnly) {
			out = append(out, stmt)
		}
	}
	return out
}
