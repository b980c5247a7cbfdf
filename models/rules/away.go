package rules

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
	"github.com/countersign/countersign/proof"
	"gorm.io/gorm"
)

// A member can mark themselves away until a time, naming a delegate (table
// aways, one row per account and person). While they are away, the asks an
// approval rule would count them on go to the delegate instead: a new ask's
// frozen requirement names the delegate in their place, so the delegate
// signs in their place and the bundle still verifies offline; reminders and
// escalation pushes of asks filed before go to the delegate when the
// delegate may sign them. The delegate is never below the rule's pool (they
// are in it, or hold at least the away person's role) and never the
// requester's own person (the agent's ForPersonID): then the away person
// stays counted.

// MaxAway is the longest a member can mark themselves away for at once.
const MaxAway = 90 * 24 * time.Hour

// Away is a member's away status.
type Away struct {
	AccountID       string
	PersonID        string
	DelegateID      string
	DelegateSubject string
	Until           time.Time
	CreatedAt       time.Time
}

// AwayOf returns the member's away status, or nil when they are not away
// (never marked, came back, or the time passed).
func (s *Book) AwayOf(ctx context.Context, m *people.Member) (*Away, error) {
	var w Away
	err := s.DB().WithContext(ctx).Raw(`SELECT w.account_id, w.person_id, w.delegate_id, p.subject AS delegate_subject, w.until, w.created_at
		FROM aways w JOIN persons p ON p.id = w.delegate_id WHERE w.account_id = ? AND w.person_id = ? AND w.until > ?`,
		m.AccountID, m.ID, s.Now()).Scan(&w).Error
	if err != nil {
		return nil, fmt.Errorf("read away status: %w", err)
	}
	if w.PersonID == "" {
		return nil, nil
	}
	return &w, nil
}

// SetAway marks the member away until the time, their asks going to the
// member of the account with subject delegate. The delegate must hold at
// least the member's role (never below: a rule whose pool they are in
// accepts them at filing either way), and cannot be the member; until must
// be in the future and at most MaxAway ahead. A refusal changes nothing.
func (s *Book) SetAway(ctx context.Context, m *people.Member, until time.Time, delegate string) (*Away, error) {
	now := s.Now()
	switch {
	case !until.After(now):
		return nil, core.Invalid("until", "the time you are away until must be in the future, not %s", until.UTC().Format(time.RFC3339))
	case until.Sub(now) > MaxAway:
		return nil, core.Invalid("until", "at most %d days ahead", int(MaxAway/(24*time.Hour)))
	case delegate == "":
		return nil, core.Invalid("delegate", "name the member your asks go to while you are away")
	case delegate == m.Subject:
		return nil, core.Invalid("delegate", "your delegate is someone else: your asks go to them while you are away")
	}
	d, err := s.MemberBySubject(ctx, m.AccountID, delegate)
	if err != nil {
		return nil, core.Invalid("delegate", "no member of this account has subject %q", delegate)
	}
	if people.RoleRank(d.Role) < people.RoleRank(m.Role) {
		return nil, core.Invalid("delegate", "%s is a %s, below your role (%s): a delegate signs in your place, so they hold your role or a higher one", d.Subject, d.Role, m.Role)
	}
	w := &Away{AccountID: m.AccountID, PersonID: m.ID, DelegateID: d.ID, DelegateSubject: d.Subject, Until: until.UTC(), CreatedAt: now}
	err = s.Write(ctx, func(tx *gorm.DB) error {
		if err := tx.Exec(`INSERT INTO aways (account_id, person_id, delegate_id, until, created_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (account_id, person_id) DO UPDATE SET delegate_id = excluded.delegate_id, until = excluded.until, created_at = excluded.created_at`,
			w.AccountID, w.PersonID, w.DelegateID, w.Until, w.CreatedAt).Error; err != nil {
			return fmt.Errorf("store away status: %w", err)
		}
		ev := &asks.TimelineEvent{AccountID: m.AccountID, At: now, ActorKind: asks.ActorPerson, Actor: m.Subject, Step: StepAway,
			Note: fmt.Sprintf("away until %s; asks go to %s", w.Until.Format(time.RFC3339), d.Subject),
			Data: core.JSONText(map[string]any{"until": w.Until, "delegate": d.Subject})}
		return tx.Table("events").Create(ev).Error
	})
	if err != nil {
		return nil, err
	}
	return w, nil
}

// ComeBack ends the member's away status; it is no error when they were not away.
func (s *Book) ComeBack(ctx context.Context, m *people.Member) error {
	return s.Write(ctx, func(tx *gorm.DB) error {
		res := tx.Exec(`DELETE FROM aways WHERE account_id = ? AND person_id = ?`, m.AccountID, m.ID)
		if res.Error != nil {
			return fmt.Errorf("end away status: %w", res.Error)
		}
		if res.RowsAffected == 0 {
			return nil
		}
		ev := &asks.TimelineEvent{AccountID: m.AccountID, At: s.Now(), ActorKind: asks.ActorPerson, Actor: m.Subject, Step: StepBack, Note: "back: asks come to them again"}
		return tx.Table("events").Create(ev).Error
	})
}

// Steps the audit log records for away status (events with no approval id).
const (
	StepAway = "away"
	StepBack = "back"
)

// delegation is one away person of an account and their delegate, with
// both roles, as read inside a transaction.
type delegation struct {
	Away, Delegate         string // subjects
	AwayRole, DelegateRole core.Role
}

// delegationsOf reads, inside tx, who of the account is away now and to whom.
func (s *Book) delegationsOf(tx *gorm.DB, accountID string) (map[string]delegation, error) {
	var rows []delegation
	err := tx.Raw(`SELECT pa.subject AS away, pd.subject AS delegate, ma.role AS away_role, md.role AS delegate_role
		FROM aways w
		JOIN persons pa ON pa.id = w.person_id JOIN persons pd ON pd.id = w.delegate_id
		JOIN memberships ma ON ma.account_id = w.account_id AND ma.person_id = w.person_id
		JOIN memberships md ON md.account_id = w.account_id AND md.person_id = w.delegate_id
		WHERE w.account_id = ? AND w.until > ?`, accountID, s.Now()).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("read away statuses: %w", err)
	}
	out := make(map[string]delegation, len(rows))
	for _, r := range rows {
		out[r.Away] = r
	}
	return out, nil
}

// delegateFor says to whom the asks of away person p go on an ask whose
// pool is pool: their delegate when the delegate is in the pool or holds at
// least p's role, is not away themselves, and is not own (the requester's
// own person); "" when p is not away or no delegate qualifies.
func delegateFor(ds map[string]delegation, p string, pool []string, own string) string {
	d, ok := ds[p]
	if !ok || d.Delegate == own || d.Delegate == p {
		return ""
	}
	if _, away := ds[d.Delegate]; away {
		return ""
	}
	if !slices.Contains(pool, d.Delegate) && people.RoleRank(d.DelegateRole) < people.RoleRank(d.AwayRole) {
		return ""
	}
	return d.Delegate
}

// DelegateRequirement puts, inside the filing transaction, each away person
// of req's people whose delegate qualifies (delegateFor) out of it and the
// delegate in, so that the delegate signs in their place; a delegate
// already counted leaves the away person in, so the pool never shrinks
// below what the rule was checked against.
func (s *Book) DelegateRequirement(tx *gorm.DB, a *asks.Approval, req *proof.Requirement) error {
	ds, err := s.delegationsOf(tx, a.AccountID)
	if err != nil || len(ds) == 0 {
		return err
	}
	own, err := ownPerson(tx, a)
	if err != nil {
		return err
	}
	people := slices.Clone(req.People)
	for i, p := range people {
		if d := delegateFor(ds, p, req.People, own); d != "" && !slices.Contains(people, d) {
			people[i] = d
		}
	}
	slices.Sort(people)
	req.People = people
	return nil
}

// ownPerson reads the subject of the person the ask's requesting agent
// acts for, "" when it acts for nobody.
func ownPerson(tx *gorm.DB, a *asks.Approval) (string, error) {
	var owns []string
	if err := tx.Table("agents a").Joins("JOIN persons p ON p.id = a.for_person_id").
		Where("a.id = ?", a.RequesterID).Pluck("p.subject", &owns).Error; err != nil {
		return "", fmt.Errorf("read the requester's person: %w", err)
	}
	if len(owns) == 0 {
		return "", nil
	}
	return owns[0], nil
}

// pushSubjects are the people to push about an ask a rule covers: those of
// want still able to sign, each away one replaced by their delegate when the
// delegate may sign the ask (they are among its people, or of its
// escalation pool once escalated) and qualifies (delegateFor).
func (s *Book) pushSubjects(tx *gorm.DB, a *asks.Approval, req *proof.Requirement, want []string) ([]string, error) {
	ds, err := s.delegationsOf(tx, a.AccountID)
	if err != nil {
		return nil, err
	}
	own, err := ownPerson(tx, a)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range want {
		if d := delegateFor(ds, p, req.People, own); d != "" && req.MaySign(d, a.EscalatedAt != nil) {
			p = d
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out, nil
}
