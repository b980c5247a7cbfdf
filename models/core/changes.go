package core

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"gorm.io/gorm"
)

// ChangeKind says what a committed write changed.
type ChangeKind string

// The kinds of change.
const (
	// ApprovalChanged: an ask moved, or a note landed on its timeline.
	ApprovalChanged ChangeKind = "approval"
	// OutboxQueued: pushes or channel messages wait in an outbox (its wire
	// value is the older "pushes", which instances of every version read).
	OutboxQueued ChangeKind = "pushes"
	// SessionsEnded: web sessions ended: one (SessionHash, signed out), or a
	// person's in one account (removed from it) or in all (AccountID "":
	// signed out everywhere).
	SessionsEnded ChangeKind = "sessions"
	// AgentsChanged: an agent changed, so every instance forgets the agent
	// tokens it remembers; with AgentID, that agent's access ended (it was
	// disabled or deleted, or its OAuth grants ended), so every instance
	// also closes the MCP sessions and streams it holds open.
	AgentsChanged ChangeKind = "agents"
	// RunsChanged: a run that names RunnerID moved, so its runner reads its runs again.
	RunsChanged ChangeKind = "runs"
	// ChangesMissed: this instance may have missed changes (its PostgreSQL
	// listener reconnected); a subscriber reads again what it shows.
	ChangesMissed ChangeKind = "missed"
)

// Change says, after a commit, what the commit changed.
type Change struct {
	Kind       ChangeKind `json:"k"`
	AccountID  string     `json:"a,omitempty"`
	ApprovalID string     `json:"id,omitempty"`  // ApprovalChanged
	Seq        int64      `json:"seq,omitempty"` // ApprovalChanged: the timeline event it appended; shown up to it means current
	PersonID   string     `json:"p,omitempty"`   // SessionsEnded
	RunnerID   string     `json:"r,omitempty"`   // RunsChanged
	AgentID    string     `json:"ag,omitempty"`  // AgentsChanged: the agent whose access ended
	// SessionHash is, for SessionsEnded of one session, its id hash.
	SessionHash string `json:"s,omitempty"`
	// From is, for ApprovalChanged published by the instance that wrote it,
	// the first timeline event the write appended to the ask: a write that
	// appends several (an approve and the command it executes) is published
	// once, with Seq its last. 0 when only Seq is known (another instance's
	// NOTIFY, sent per event).
	From int64 `json:"-"`
}

// EndsSession says whether c ends the web session whose cookie secret is
// token, of personID signed in to accountID.
func (c Change) EndsSession(token, personID, accountID string) bool {
	if c.Kind != SessionsEnded {
		return false
	}
	if c.SessionHash != "" {
		return c.SessionHash == HashToken(token)
	}
	return c.PersonID == personID && (c.AccountID == "" || c.AccountID == accountID)
}

// Changes is the one feed of committed changes. Every write publishes what it
// changed to this instance's subscribers once it commits; on PostgreSQL it
// also runs NOTIFY countersign_change in the same transaction, and
// ListenPostgres publishes what other instances committed. Subscribers are
// called on the publisher's goroutine and must not block: the live timeline
// wakes a channel, the push sender wakes its loop, the MCP endpoint sends a
// notification.
type Changes struct {
	Instance string       // tells this instance's notifications from the others'
	heard    atomic.Int64 // the newest timeline event seq this feed published
	listened atomic.Bool  // a PostgreSQL listener has been connected before
	up       atomic.Bool  // the PostgreSQL listener is connected now
	mu       sync.RWMutex
	next     int
	subs     map[int]func(Change)
}

func newChanges() *Changes {
	return &Changes{Instance: NewID("inst"), subs: map[int]func(Change){}}
}

// Subscribe calls f with every change from now on, until cancel is called.
func (f *Changes) Subscribe(fn func(Change)) (cancel func()) {
	f.mu.Lock()
	id := f.next
	f.next++
	f.subs[id] = fn
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		delete(f.subs, id)
		f.mu.Unlock()
	}
}

func (f *Changes) Publish(changes []Change) {
	if len(changes) == 0 {
		return
	}
	for _, c := range changes {
		f.hear(c.Seq)
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	for _, c := range changes {
		for _, fn := range f.subs {
			fn(c)
		}
	}
}

// hear notes that the feed has published up to timeline event seq.
func (f *Changes) hear(seq int64) {
	for {
		old := f.heard.Load()
		if seq <= old || f.heard.CompareAndSwap(old, seq) {
			return
		}
	}
}

// Listening says whether this instance's PostgreSQL listener is connected
// now: while it is not, other instances' changes go unheard (and are caught
// up on once it is back). Always false on SQLite, which has no listener.
func (f *Changes) Listening() bool { return f.up.Load() }

// Changes is the store's change feed.
func (s *Store) Changes() *Changes { return s.changes }

// ChangeChannel is the PostgreSQL channel every instance listens on.
const ChangeChannel = "countersign_change"

// Notification is the payload of one NOTIFY: who sent it and the change.
type Notification struct {
	Instance string `json:"i"`
	Change
}

// Changed records, inside a write, a change to publish once the write
// commits; on PostgreSQL it also notifies the other instances, at commit.
// A change already recorded in this write is recorded once.
func (s *Store) Changed(tx *gorm.DB, c Change) error {
	m := markOf(tx)
	if m != nil {
		i := slices.IndexFunc(m.changes, func(o Change) bool {
			return o.Kind == c.Kind && o.AccountID == c.AccountID && o.ApprovalID == c.ApprovalID && o.PersonID == c.PersonID &&
				o.SessionHash == c.SessionHash && o.RunnerID == c.RunnerID && o.AgentID == c.AgentID
		})
		if i >= 0 && m.changes[i].Seq >= c.Seq {
			return nil
		}
		if i >= 0 {
			m.changes[i].Seq = c.Seq
		} else {
			first := c
			first.From = c.Seq
			m.changes = append(m.changes, first)
		}
	}
	if s.dialect != Postgres {
		return nil
	}
	payload, err := json.Marshal(Notification{Instance: s.changes.Instance, Change: c})
	if err != nil {
		return fmt.Errorf("notify change: %w", err)
	}
	return tx.Exec(`SELECT pg_notify(?, ?)`, ChangeChannel, string(payload)).Error
}

// OutboxQueued records inside a write that it queued pushes or channel
// messages: this instance's senders wake after the commit, and NOTIFY wakes
// the others'.
func (s *Store) OutboxQueued(tx *gorm.DB) error {
	return s.Changed(tx, Change{Kind: OutboxQueued})
}

// SessionsEnded records that web sessions ended (see SessionsEnded), so
// that the live views they had open close.
func (s *Store) SessionsEnded(tx *gorm.DB, c Change) error {
	c.Kind = SessionsEnded
	return s.Changed(tx, c)
}

// ListenerName is the application_name of the LISTEN connection of the
// instance whose change feed has this id, as pg_stat_activity shows it.
func ListenerName(feed *Changes) string { return "countersign-listen-" + feed.Instance }

// catchUpMargin is how far below the newest event seq it heard a reconnected
// listener looks again: a transaction that took a smaller seq may commit
// after one with a larger seq. Announcing a change twice costs a subscriber
// one read; missing one costs it the change.
const catchUpMargin = 1000

// ListenPostgres publishes the changes other instances commit, through one
// LISTEN connection, until ctx ends. When the connection drops it reconnects
// (at once after a connection that was up, then backing off to a minute
// while the server stays away) and then announces every ask whose timeline
// moved meanwhile, read from the events table, so that no change committed
// while it was deaf goes unheard; ChangesMissed tells subscribers the rest
// (pushes, ended sessions) may have been missed.
func (s *Store) ListenPostgres(ctx context.Context, databaseURL string, log *slog.Logger) {
	wait := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := s.listenOnce(ctx, databaseURL, log, func() { wait = 100 * time.Millisecond })
		if err != nil && ctx.Err() == nil {
			log.Warn("listen for changes; live views, subscriptions and other instances' pushes wait meanwhile", "err", err, "retry_in", wait)
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
		wait = min(wait*2, time.Minute)
	}
}

// listenOnce listens until the connection fails; listening is called once
// LISTEN is in place.
func (s *Store) listenOnce(ctx context.Context, databaseURL string, log *slog.Logger, listening func()) error {
	cfg, err := PostgresConfig(databaseURL)
	if err != nil {
		return err
	}
	cfg.RuntimeParams["application_name"] = ListenerName(s.changes)
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+ChangeChannel); err != nil {
		return err
	}
	listening()
	if err := s.catchUp(ctx); err != nil {
		return err
	}
	s.changes.up.Store(true)
	defer s.changes.up.Store(false)
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		var note Notification
		if err := json.Unmarshal([]byte(n.Payload), &note); err != nil {
			log.Warn("a change notification that is not one; skipped", "payload", n.Payload, "err", err)
			continue
		}
		if note.Instance != s.changes.Instance {
			s.changes.Publish([]Change{note.Change})
		}
	}
}

// catchUp announces, once LISTEN is in place again, every ask whose
// timeline moved since the newest event this feed heard of (less
// catchUpMargin), then ChangesMissed. The first connection has nothing to
// catch up on: it notes where the timeline stands.
func (s *Store) catchUp(ctx context.Context) error {
	heard := s.changes.heard.Load()
	if !s.changes.listened.Swap(true) {
		var top int64
		if err := s.db.WithContext(ctx).Table("events").Select("COALESCE(MAX(seq), 0)").Scan(&top).Error; err != nil {
			return fmt.Errorf("catch up on changes: %w", err)
		}
		s.changes.hear(top)
		s.changes.Publish([]Change{{Kind: ChangesMissed}})
		return nil
	}
	var moved []Change
	err := s.db.WithContext(ctx).Table("events").
		Select("account_id, approval_id, MAX(seq) AS seq").
		Where("seq > ? AND approval_id <> ''", max(heard-catchUpMargin, 0)).
		Group("account_id, approval_id").Order("seq").Scan(&moved).Error
	if err != nil {
		return fmt.Errorf("catch up on changes: %w", err)
	}
	for i := range moved {
		moved[i].Kind = ApprovalChanged
	}
	s.changes.Publish(append(moved, Change{Kind: ChangesMissed}))
	return nil
}
