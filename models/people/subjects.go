package people

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"gorm.io/gorm"
)

// StepPersonRenamed records on the audit chain of each of a person's
// accounts that the operator gave them another subject.
const StepPersonRenamed = "person_renamed"

// agentSubjectPrefix starts every agent's subject; no person takes one.
const agentSubjectPrefix = "agent:"

// CheckSubject says whether s can be a person's subject: the pattern, and
// not in agents' namespace.
func CheckSubject(s string) error {
	if !subjectPattern.MatchString(s) {
		return core.Invalid("subject", "a subject is 1 to 128 letters, digits or @._:+- characters, starting with a letter or digit")
	}
	if strings.HasPrefix(core.SubjectKey(s), agentSubjectPrefix) {
		return core.Invalid("subject", "%q reads as an agent's subject (agent:<name>); a person's subject cannot start with agent:", s)
	}
	return nil
}

// subjectHolder returns, inside tx, the person other than exceptID whose
// subject is subject under SubjectKey, or nil: by the unique subject_key,
// and among the rows whose key is not set yet (clashes an older version left).
func subjectHolder(tx *gorm.DB, subject, exceptID string) (*Person, error) {
	key := core.SubjectKey(subject)
	var p Person
	err := tx.Table("persons").Select("id, subject, display_name, created_at").Where("subject_key = ? AND id <> ?", key, exceptID).Take(&p).Error
	if err == nil {
		return &p, nil
	}
	if !errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, fmt.Errorf("find subject: %w", err)
	}
	var unkeyed []Person
	if err := tx.Table("persons").Select("id, subject, display_name, created_at").Where("subject_key IS NULL AND id <> ?", exceptID).Find(&unkeyed).Error; err != nil {
		return nil, fmt.Errorf("find subject: %w", err)
	}
	for _, u := range unkeyed {
		if core.SubjectKey(u.Subject) == key {
			return &u, nil
		}
	}
	return nil, nil
}

// takenRefusal is the refusal of subject, which holder already has.
func takenRefusal(subject, holder string) error {
	if subject == holder {
		return core.Refuse(core.FailedPrecondition, "subject", "%q is taken; choose another subject (an existing person joins through an add-role invite)", subject)
	}
	return core.Refuse(core.FailedPrecondition, "subject", "%q is taken: it is the existing person %q in another case or Unicode form, "+
		"and subjects that read alike would name two people as one; choose another subject (an existing person joins through an add-role invite)", subject, holder)
}

// SubjectFree refuses a subject some person has under SubjectKey, before a
// new person registers a passkey to take it (AcceptInvite checks it again).
func (s *Directory) SubjectFree(ctx context.Context, subject string) error {
	holder, err := subjectHolder(s.DB().WithContext(ctx), subject, "")
	if err != nil || holder == nil {
		return err
	}
	return takenRefusal(subject, holder.Subject)
}

// createPerson stores a new person inside tx with their subject_key; a
// subject some person already has under SubjectKey is refused, also when a
// concurrent writer stored it first (the unique index).
func (s *Directory) createPerson(tx *gorm.DB, p *Person) error {
	if holder, err := subjectHolder(tx, p.Subject, p.ID); err != nil {
		return err
	} else if holder != nil {
		return takenRefusal(p.Subject, holder.Subject)
	}
	if err := tx.Table("persons").Create(p).Error; err != nil {
		return fmt.Errorf("add person: %w", err)
	}
	if err := tx.Exec(`UPDATE persons SET subject_key = ? WHERE id = ?`, core.SubjectKey(p.Subject), p.ID).Error; err != nil {
		if msg := err.Error(); strings.Contains(msg, "subject_key") || strings.Contains(msg, "persons_subject_folded") {
			return takenRefusal(p.Subject, p.Subject) // a concurrent writer stored it first
		}
		return fmt.Errorf("add person: %w", err)
	}
	return nil
}

// SubjectClash is persons whose subjects read alike: the same SubjectKey.
type SubjectClash struct {
	Key      string
	Subjects []string // as written, sorted
}

// SubjectClashes lists the persons whose subjects clash under SubjectKey
// (rows an older version wrote), by key.
func (s *Directory) SubjectClashes(ctx context.Context) ([]SubjectClash, error) {
	var rows []Person
	if err := s.DB().WithContext(ctx).Table("persons").Select("id, subject").Order("subject").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("read subjects: %w", err)
	}
	byKey := map[string][]string{}
	var keys []string
	for _, r := range rows {
		k := core.SubjectKey(r.Subject)
		if _, ok := byKey[k]; !ok {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], r.Subject)
	}
	slices.Sort(keys)
	var out []SubjectClash
	for _, k := range keys {
		if len(byKey[k]) > 1 {
			out = append(out, SubjectClash{Key: k, Subjects: byKey[k]})
		}
	}
	return out, nil
}

// CheckSubjects refuses, at start, a database where persons' subjects
// clash under SubjectKey, listing every clash and the command that ends it.
func (s *Directory) CheckSubjects(ctx context.Context) error {
	clashes, err := s.SubjectClashes(ctx)
	if err != nil || len(clashes) == 0 {
		return err
	}
	var b strings.Builder
	b.WriteString("persons whose subjects differ only in case or Unicode form, which would name two people as one:")
	for _, c := range clashes {
		quoted := make([]string, len(c.Subjects))
		for i, sub := range c.Subjects {
			quoted[i] = fmt.Sprintf("%q", sub)
		}
		b.WriteString("\n  " + strings.Join(quoted, ", "))
	}
	b.WriteString("\nrename all but one of each with `countersign person rename OLD NEW`, then start again")
	return errors.New(b.String())
}

// RenamePerson gives the person whose subject is exactly old the subject
// newSubject, which no other person may have under SubjectKey. What names
// them by subject and is still to come follows: open asks asked of them,
// unused add-role invites for them and the unrevoked policies they signed.
// The history keeps the old subject (decisions, proofs, the audit chain), and
// each of their accounts' audit chains records the rename, by by.
func (s *Directory) RenamePerson(ctx context.Context, old, newSubject, by string) (*Person, error) {
	newSubject = strings.TrimSpace(newSubject)
	if err := CheckSubject(newSubject); err != nil {
		return nil, err
	}
	if newSubject == old {
		return nil, core.Invalid("subject", "the new subject is the old one")
	}
	var p Person
	err := s.Write(ctx, func(tx *gorm.DB) error {
		err := s.Lock(tx.Table("persons")).Select("id, subject, display_name, created_at").Where("subject = ?", old).Take(&p).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return core.Refuse(core.NotFound, "subject", "no person has subject %q (the old subject is matched exactly)", old)
		}
		if err != nil {
			return fmt.Errorf("find person: %w", err)
		}
		if holder, err := subjectHolder(tx, newSubject, p.ID); err != nil {
			return err
		} else if holder != nil {
			return core.Refuse(core.FailedPrecondition, "subject", "%q is taken: the existing person %q has it under case folding and NFKC; choose another subject", newSubject, holder.Subject)
		}
		if err := tx.Exec(`UPDATE persons SET subject = ?, subject_key = ? WHERE id = ?`, newSubject, core.SubjectKey(newSubject), p.ID).Error; err != nil {
			return fmt.Errorf("rename person: %w", err)
		}
		for _, u := range []struct{ sql string }{
			{`UPDATE approvals SET asked_of = ? WHERE asked_of = ? AND status IN ('pending', 'question')`},
			{`UPDATE invites SET subject = ? WHERE subject = ? AND kind = 'add_role' AND used_at IS NULL`},
		} {
			if err := tx.Exec(u.sql, newSubject, old).Error; err != nil {
				return fmt.Errorf("rename person: %w", err)
			}
		}
		if err := tx.Exec(`UPDATE policies SET signer_subject = ? WHERE signer_id = ? AND revoked_at IS NULL`, newSubject, p.ID).Error; err != nil {
			return fmt.Errorf("rename person: %w", err)
		}
		if err := core.FillSubjectKeys(tx); err != nil {
			return err
		}
		var accounts []string
		if err := tx.Table("memberships").Where("person_id = ?", p.ID).Order("account_id").Pluck("account_id", &accounts).Error; err != nil {
			return fmt.Errorf("rename person: %w", err)
		}
		for _, acct := range accounts {
			if err := s.AccountEvent(tx, s.Now(), acct, asks.ActorAdmin, by, StepPersonRenamed,
				fmt.Sprintf("%s is now %s", old, newSubject), map[string]string{"person_id": p.ID, "from": old, "to": newSubject}); err != nil {
				return err
			}
		}
		p.Subject = newSubject
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &p, nil
}
