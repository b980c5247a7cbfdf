package audit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/gowebpki/jcs"
	"gorm.io/gorm"
)

// The audit log is the events table. It is append-only and hash-chained: a
// sealer links every event, in the order of its seq, into its account's
// chain (table audit_chain): position pos holds the event's digest, the
// SHA-256 of its canonical form (EventDigest), and
//
//	hash = hex(SHA-256(previous hash || ":" || digest))
//
// where the previous hash of position 1 is empty. VerifyAudit recomputes every
// digest and link, so an edited, deleted or added event, or an edited or
// deleted chain row, is found and named. Sealing runs behind the writers
// (every second or two), never in an ask's transaction, so it costs an ask
// nothing; an event is open to an undetected edit only until it is sealed.
// Deleting the newest sealed rows together with their events leaves a shorter
// chain that still verifies: keep the head VerifyAudit reports somewhere else
// to catch that too.

// auditLink is one row of audit_chain.
type auditLink struct {
	Seq       int64 `gorm:"primaryKey;autoIncrement:false"`
	AccountID string
	Pos       int64
	Digest    string
	Hash      string
	SealedAt  time.Time
}

// sealBatch bounds the events one sealing transaction links.
const sealBatch = 500

// EventDigest is the lower-case hex SHA-256 of an event's canonical form: the
// RFC 8785 form of its fields, with at in RFC 3339 (UTC, nanoseconds) and
// data as the text it holds.
func EventDigest(e *asks.TimelineEvent) string {
	data := ""
	if e.Data != nil {
		data = *e.Data
	}
	b, err := json.Marshal(map[string]any{
		"seq": e.Seq, "account_id": e.AccountID, "approval_id": e.ApprovalID, "at": e.At.UTC().Format(time.RFC3339Nano),
		"actor_kind": e.ActorKind, "actor": e.Actor, "step": e.Step, "from": string(e.FromStatus), "to": string(e.ToStatus),
		"note": e.Note, "data": data,
	})
	if err == nil {
		b, err = jcs.Transform(b)
	}
	if err != nil {
		panic(fmt.Sprintf("canonical form of event %d: %v", e.Seq, err)) // strings and integers always have one
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// chainHash links digest to the chain after prev.
func chainHash(prev, digest string) string {
	sum := sha256.Sum256([]byte(prev + ":" + digest))
	return hex.EncodeToString(sum[:])
}

// AuditSealer seals the audit log. On PostgreSQL an event's seq is taken
// before its transaction commits, so a smaller seq can appear after a larger
// one: the sealer seals only up to a mark whose transactions have all ended,
// which takes two of its runs (see watermark). On SQLite, where writers take
// turns, every event it sees can be sealed.
type AuditSealer struct {
	s     *Trail
	ready int64   // PostgreSQL: every event up to it can be sealed
	mark  *pgMark // PostgreSQL: the mark waiting for its transactions to end
}

// pgMark is the highest seq PostgreSQL showed at one moment, and the
// transactions of this database that were running just after it: once they
// have all ended, no event with a seq up to maxSeq can still appear.
type pgMark struct {
	maxSeq  int64
	running []string // transaction ids
}

// NewAuditSealer returns the store's sealer. Several may run, in this
// instance or others: they take turns.
func (s *Trail) NewAuditSealer() *AuditSealer { return &AuditSealer{s: s} }

// Seal links every event that can be sealed now, sealBatch to a write so
// that asks go on between them, and returns how many it linked. On
// PostgreSQL what one call marks, the next seals.
func (z *AuditSealer) Seal(ctx context.Context) (int, error) {
	upTo, err := z.watermark(ctx)
	if err != nil || upTo == 0 {
		return 0, err
	}
	total := 0
	for {
		n, err := z.sealBatch(ctx, upTo)
		total += n
		if err != nil || n < sealBatch {
			return total, err
		}
	}
}

// sealBatch links up to sealBatch events, up to upTo, in one write.
func (z *AuditSealer) sealBatch(ctx context.Context, upTo int64) (int, error) {
	s, sealed := z.s, 0
	err := s.Write(ctx, func(tx *gorm.DB) error {
		sealed = 0
		if s.Dialect() == core.Postgres {
			// Sealers of several instances take turns.
			if err := tx.Exec(`SELECT pg_advisory_xact_lock(7262)`).Error; err != nil {
				return err
			}
		}
		last, err := chainEnd(tx)
		if err != nil {
			return err
		}
		var events []asks.TimelineEvent
		if err := tx.Table("events").Where("seq > ? AND seq <= ?", last, upTo).Order("seq").Limit(sealBatch).Find(&events).Error; err != nil {
			return fmt.Errorf("read events to seal: %w", err)
		}
		if len(events) == 0 {
			return nil
		}
		heads := map[string]*auditLink{}
		links := make([]auditLink, 0, len(events))
		now := s.Now()
		for i := range events {
			e := &events[i]
			head, ok := heads[e.AccountID]
			if !ok {
				head = &auditLink{}
				err := tx.Table("audit_chain").Where("account_id = ?", e.AccountID).Order("pos DESC").Limit(1).Find(head).Error
				if err != nil {
					return fmt.Errorf("read the chain head of %s: %w", e.AccountID, err)
				}
				heads[e.AccountID] = head
			}
			digest := EventDigest(e)
			link := auditLink{Seq: e.Seq, AccountID: e.AccountID, Pos: head.Pos + 1, Digest: digest, Hash: chainHash(head.Hash, digest), SealedAt: now}
			links = append(links, link)
			*head = link
		}
		if err := tx.Table("audit_chain").CreateInBatches(links, 200).Error; err != nil {
			return fmt.Errorf("seal events: %w", err)
		}
		sealed = len(links)
		return nil
	})
	return sealed, err
}

// watermark is the highest seq that can be sealed now; 0 when none can.
//
// On PostgreSQL a transaction that will commit an event with a seq at or
// below the highest visible one must be running when that highest one is
// read: it took its seq before then. So the mark reads the highest seq first
// and then the ids of this database's running transactions (every transaction
// that appends an event has written before, so it holds an id by then); a
// later run seals up to the mark once none of them is running any more.
// Transactions of other databases on the same server do not hold it up.
func (z *AuditSealer) watermark(ctx context.Context) (int64, error) {
	db := z.s.DB().WithContext(ctx)
	var last int64
	if z.s.Dialect() != core.Postgres {
		err := db.Table("events").Select("COALESCE(MAX(seq), 0)").Scan(&last).Error
		return last, err
	}
	if z.mark != nil {
		var still int64
		if len(z.mark.running) > 0 {
			if err := db.Raw(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND backend_xid::text IN ?`,
				z.mark.running).Scan(&still).Error; err != nil {
				return 0, fmt.Errorf("read the audit watermark: %w", err)
			}
		}
		if still == 0 {
			z.ready, z.mark = max(z.ready, z.mark.maxSeq), nil
		}
	}
	if z.mark == nil {
		if err := db.Table("events").Select("COALESCE(MAX(seq), 0)").Scan(&last).Error; err != nil {
			return 0, fmt.Errorf("read the audit watermark: %w", err)
		}
		if last > z.ready {
			mark := &pgMark{maxSeq: last}
			if err := db.Raw(`SELECT backend_xid::text FROM pg_stat_activity
				WHERE datname = current_database() AND backend_xid IS NOT NULL AND pid <> pg_backend_pid()`).Scan(&mark.running).Error; err != nil {
				return 0, fmt.Errorf("read the audit watermark: %w", err)
			}
			z.mark = mark
		}
	}
	return z.ready, nil
}

// AuditHead is the end of an account's hash chain.
type AuditHead struct {
	Pos      int64  // the last position, 0 for an empty chain
	Hash     string // its hash
	Unsealed int64  // newer events not sealed yet
}

// AuditHead reads the end of the account's chain, without checking it (that
// is VerifyAudit's work).
func (s *Trail) AuditHead(ctx context.Context, accountID string) (*AuditHead, error) {
	db := s.DB().WithContext(ctx)
	var head auditLink
	if err := db.Table("audit_chain").Where("account_id = ?", accountID).Order("pos DESC").Limit(1).Find(&head).Error; err != nil {
		return nil, fmt.Errorf("read the chain head: %w", err)
	}
	end, err := chainEnd(db)
	if err != nil {
		return nil, err
	}
	h := &AuditHead{Pos: head.Pos, Hash: head.Hash}
	h.Unsealed, err = unsealed(db, accountID, max(head.Seq, end))
	return h, err
}

// chainEnd is the seq of the last event sealed, in any account: every event
// up to it was sealed.
func chainEnd(db *gorm.DB) (int64, error) {
	var end int64
	if err := db.Table("audit_chain").Select("COALESCE(MAX(seq), 0)").Scan(&end).Error; err != nil {
		return 0, fmt.Errorf("read the chain's end: %w", err)
	}
	return end, nil
}

// unsealed counts the account's events after seq after, which the sealer
// has not reached.
func unsealed(db *gorm.DB, accountID string, after int64) (int64, error) {
	var n int64
	if err := db.Table("events").Where("account_id = ? AND seq > ?", accountID, after).Count(&n).Error; err != nil {
		return 0, fmt.Errorf("count unsealed events: %w", err)
	}
	return n, nil
}

// AuditReport is what VerifyAudit found in one account's audit log.
type AuditReport struct {
	Sealed   int64    // events checked against the chain
	HeadPos  int64    // the chain's last position, 0 for an empty chain
	HeadHash string   // and its hash
	Unsealed int64    // newer events not sealed yet
	Problems []string // every edited, deleted or added row found, oldest first
}

// OK says the log verified.
func (r *AuditReport) OK() bool { return len(r.Problems) == 0 }

// maxProblems bounds the problems one report lists.
const maxProblems = 100

// VerifyAudit checks the account's audit log against its chain: every link
// follows from the one before, every sealed event still has the digest it
// was sealed with, and no event was added among the sealed ones.
func (s *Trail) VerifyAudit(ctx context.Context, accountID string) (*AuditReport, error) {
	db := s.DB().WithContext(ctx)
	sealedThrough, err := chainEnd(db)
	if err != nil {
		return nil, err
	}
	r := &AuditReport{}
	problem := func(format string, args ...any) {
		if len(r.Problems) < maxProblems {
			r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
		} else if len(r.Problems) == maxProblems {
			r.Problems = append(r.Problems, "… and more")
		}
	}
	added := func(e asks.TimelineEvent) {
		problem("event %d (%s on %s) is not in the chain: it was added after the events around it were sealed", e.Seq, e.Step, e.ApprovalID)
	}
	// Walk the chain in pages, and beside it the events of the same seq range.
	var (
		prevHash string
		prevSeq  int64
		pos      int64
	)
	for {
		var links []auditLink
		if err := db.Table("audit_chain").Where("account_id = ? AND pos > ?", accountID, pos).Order("pos").Limit(sealBatch).Find(&links).Error; err != nil {
			return nil, fmt.Errorf("read the chain: %w", err)
		}
		if len(links) == 0 {
			break
		}
		upTo := links[len(links)-1].Seq
		var events []asks.TimelineEvent
		if err := db.Table("events").Where("account_id = ? AND seq > ? AND seq <= ?", accountID, prevSeq, max(upTo, prevSeq)).Order("seq").Find(&events).Error; err != nil {
			return nil, fmt.Errorf("read events: %w", err)
		}
		bySeq := make(map[int64]*asks.TimelineEvent, len(events))
		for i := range events {
			bySeq[events[i].Seq] = &events[i]
		}
		for _, l := range links {
			if l.Pos != pos+1 {
				problem("chain positions %d to %d are missing", pos+1, l.Pos-1)
			}
			if l.Seq <= prevSeq {
				problem("chain position %d names event %d, not after event %d", l.Pos, l.Seq, prevSeq)
			}
			if l.Hash != chainHash(prevHash, l.Digest) {
				problem("chain position %d (event %d) was changed: its hash does not follow from the one before", l.Pos, l.Seq)
			}
			e, ok := bySeq[l.Seq]
			switch {
			case !ok:
				problem("event %d (chain position %d) is missing", l.Seq, l.Pos)
			case EventDigest(e) != l.Digest:
				problem("event %d (chain position %d, %s on %s) was changed after it was sealed", l.Seq, l.Pos, e.Step, e.ApprovalID)
			default:
				r.Sealed++
			}
			delete(bySeq, l.Seq)
			prevHash, prevSeq, pos = l.Hash, max(prevSeq, l.Seq), l.Pos
		}
		for _, e := range events {
			if _, extra := bySeq[e.Seq]; extra {
				added(e)
			}
		}
	}
	r.HeadPos, r.HeadHash = pos, prevHash
	// Events after this account's last link but sealed through elsewhere were
	// added after sealing too; newer ones wait for the sealer.
	var later []asks.TimelineEvent
	if err := db.Table("events").Where("account_id = ? AND seq > ? AND seq <= ?", accountID, prevSeq, sealedThrough).Order("seq").Limit(maxProblems).Find(&later).Error; err != nil {
		return nil, fmt.Errorf("read events: %w", err)
	}
	for _, e := range later {
		added(e)
	}
	r.Unsealed, err = unsealed(db, accountID, max(prevSeq, sealedThrough))
	return r, err
}
