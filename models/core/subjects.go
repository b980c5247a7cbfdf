package core

import (
	"fmt"
	"slices"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
	"gorm.io/gorm"
)

// SubjectKey is a subject as the uniqueness of subjects compares it: NFKC,
// case-folded, NFKC again (Unicode's NFKC_Casefold, short of removing
// default-ignorable code points, which the subject pattern refuses anyway).
func SubjectKey(subject string) string {
	return norm.NFKC.String(cases.Fold().String(norm.NFKC.String(subject)))
}

// FillSubjectKeys sets, inside tx, the subject_key of every person row that
// has none and whose subject no other person has under SubjectKey; rows that
// clash keep none (SubjectClashes lists them). Migration 17 runs it, and so
// does a rename, which may end a clash.
func FillSubjectKeys(tx *gorm.DB) error {
	var rows []struct{ ID, Subject string }
	if err := tx.Table("persons").Select("id, subject").Find(&rows).Error; err != nil {
		return fmt.Errorf("read subjects: %w", err)
	}
	count := map[string]int{}
	for _, r := range rows {
		count[SubjectKey(r.Subject)]++
	}
	var unkeyed []string
	if err := tx.Table("persons").Where("subject_key IS NULL").Pluck("id", &unkeyed).Error; err != nil {
		return fmt.Errorf("read subjects: %w", err)
	}
	for _, r := range rows {
		if key := SubjectKey(r.Subject); count[key] == 1 && slices.Contains(unkeyed, r.ID) {
			if err := tx.Exec(`UPDATE persons SET subject_key = ? WHERE id = ?`, key, r.ID).Error; err != nil {
				return fmt.Errorf("fill subject key of %s: %w", r.ID, err)
			}
		}
	}
	return nil
}
