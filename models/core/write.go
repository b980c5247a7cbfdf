package core

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// maxGroup bounds how many writes one SQLite commit carries.
const maxGroup = 64

// writeGroup commits SQLite writes in groups. SQLite allows one writer at a
// time and every commit waits for the disk (synchronous FULL), so writes that
// arrive while a commit is under way queue here and go together in the next
// one: one transaction, each write in its own savepoint, one commit. Nobody
// waits for a group to fill; a write that finds the database idle commits at
// once, alone.
type writeGroup struct {
	slot  chan struct{}      // held by the caller that runs a commit
	queue chan *pendingWrite // writes waiting for a commit
}

type pendingWrite struct {
	ctx    context.Context
	fn     func(tx *gorm.DB) error
	done   chan error // its outcome, once its commit ended
	queued time.Time  // when it joined the queue
}

func newWriteGroup() *writeGroup {
	return &writeGroup{slot: make(chan struct{}, 1), queue: make(chan *pendingWrite, 4*maxGroup)}
}

// Write runs fn in a transaction and returns once that transaction committed,
// or fn's error when fn failed (then none of fn's writes is kept). After the
// commit it publishes what fn changed to the change feed (see Changes). On SQLite the
// transaction may carry other callers' writes too (see writeGroup): fn sees
// the ones before it in the group as if they had committed (a failed one was
// undone before fn ran), and the group commits together.
//
// Calls nest only through the context: when ctx carries a transaction
// (WithTx), fn runs in it and Write returns fn's error; what fn changes is
// published with the outer write, once that commits. So a room's method
// called inside another room's write joins it instead of waiting for a
// second transaction (on SQLite, for the one writer the first one holds).
func (s *Store) Write(ctx context.Context, fn func(tx *gorm.DB) error) error {
	if tx := TxOf(ctx); tx != nil {
		return fn(tx)
	}
	mark := &writeMark{}
	if err := s.commit(context.WithValue(ctx, writeMarkKey{}, mark), fn); err != nil {
		return err
	}
	s.changes.Publish(mark.changes)
	return nil
}

// writeMark rides in a write's context and records what others must hear of
// once the write commits.
type writeMark struct {
	changes []Change // each once
}

type writeMarkKey struct{}

type txKey struct{}

// WithTx returns ctx carrying tx, a transaction of a Write under way: a Write
// given the returned context runs in tx (see Write).
func WithTx(ctx context.Context, tx *gorm.DB) context.Context {
	return context.WithValue(ctx, txKey{}, tx)
}

// TxOf is the transaction ctx carries (WithTx), or nil.
func TxOf(ctx context.Context) *gorm.DB {
	tx, _ := ctx.Value(txKey{}).(*gorm.DB)
	return tx
}

// markOf is the mark of the write tx belongs to; nil outside write.
func markOf(tx *gorm.DB) *writeMark {
	m, _ := tx.Statement.Context.Value(writeMarkKey{}).(*writeMark)
	return m
}

// SetWriteObserver sets a function told, for every SQLite write, how long it
// waited in the queue for the one writer before its transaction began (the
// metrics' writer queue wait). It runs on the committing goroutine: it must
// be quick. PostgreSQL has no such queue.
func (s *Store) SetWriteObserver(f func(wait time.Duration)) { s.writeWait = f }

func (s *Store) commit(ctx context.Context, fn func(tx *gorm.DB) error) error {
	if s.group == nil {
		return s.db.WithContext(ctx).Transaction(fn)
	}
	w := &pendingWrite{ctx: ctx, fn: fn, done: make(chan error, 1), queued: time.Now()}
	select {
	case s.group.queue <- w:
	case <-ctx.Done():
		return ctx.Err()
	}
	// Once queued, the write is waited for even when ctx ends: a caller must
	// never hear "failed" about a write that then commits.
	for {
		select {
		case err := <-w.done:
			if p, ok := err.(*writePanic); ok {
				panic(p.value) // the caller panics as it would have without the group
			}
			return err
		case s.group.slot <- struct{}{}:
			s.commitQueued()
			<-s.group.slot
		}
	}
}

// commitQueued runs the writes waiting in the queue, up to maxGroup, in one
// transaction and tells each its outcome. The caller holds the slot.
func (s *Store) commitQueued() {
	var group []*pendingWrite
drain:
	for len(group) < maxGroup {
		select {
		case w := <-s.group.queue:
			if err := w.ctx.Err(); err != nil {
				w.done <- err // its caller gave up before it ran: nothing was written
				continue
			}
			if s.writeWait != nil {
				s.writeWait(time.Since(w.queued))
			}
			group = append(group, w)
		default:
			break drain
		}
	}
	if len(group) == 0 {
		return
	}
	outcomes := make([]error, len(group))
	// The transaction is not tied to any caller's context: one caller going
	// away must not cut the others' commit short (SQLite rolls back the whole
	// transaction when a statement in it is interrupted).
	err := s.db.WithContext(context.Background()).Transaction(func(tx *gorm.DB) error {
		if len(group) == 1 {
			outcomes[0] = runWrite(tx.WithContext(context.WithoutCancel(group[0].ctx)), group[0].fn)
			return outcomes[0]
		}
		for i, w := range group {
			var broken error
			outcomes[i], broken = inSavepoint(tx.WithContext(context.WithoutCancel(w.ctx)), w.fn)
			if broken != nil {
				return broken
			}
		}
		return nil
	})
	for i, w := range group {
		if outcomes[i] == nil {
			outcomes[i] = err // the commit's outcome
		}
		w.done <- outcomes[i]
	}
}

// inSavepoint runs fn inside a savepoint of tx and undoes fn's writes when it
// fails. fnErr is fn's outcome; broken is set when the savepoint itself could
// not be set, undone or released, and the whole transaction must go.
func inSavepoint(tx *gorm.DB, fn func(tx *gorm.DB) error) (fnErr, broken error) {
	if err := tx.Exec("SAVEPOINT write").Error; err != nil {
		return err, fmt.Errorf("set savepoint: %w", err)
	}
	if fnErr = runWrite(tx, fn); fnErr != nil {
		if err := tx.Exec("ROLLBACK TO write").Error; err != nil {
			return fnErr, fmt.Errorf("roll back to savepoint: %w", err)
		}
	}
	if err := tx.Exec("RELEASE write").Error; err != nil {
		return firstErr(fnErr, err), fmt.Errorf("release savepoint: %w", err)
	}
	return fnErr, nil
}

func firstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// writePanic is the outcome of a write that panicked: its writes are undone,
// and write panics again with value in its caller's goroutine.
type writePanic struct{ value any }

func (p *writePanic) Error() string { return fmt.Sprintf("write panicked: %v", p.value) }

// runWrite calls fn, turning a panic into an error so that the other writes of
// the group still hear their outcome.
func runWrite(tx *gorm.DB, fn func(tx *gorm.DB) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &writePanic{value: r}
		}
	}()
	return fn(tx)
}
