package oidc

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/countersign/countersign/models/core"
)

// spentAssertion is the id of a client assertion (or a signed request) that
// was used once, kept until it expires.
type spentAssertion struct {
	ClientID  string `gorm:"primaryKey"`
	Jti       string `gorm:"primaryKey;column:jti"`
	ExpiresAt time.Time
}

func (spentAssertion) TableName() string { return "oidc_assertions" }

// SpendAssertion records that the client used the assertion jti, which
// expires at expiresAt. A jti the client already used is refused with
// FAILED_PRECONDITION: of two at once, one wins. Spent ids past their
// expiry are dropped on the way, for their assertions are refused anyway.
func (s *Provider) SpendAssertion(ctx context.Context, clientID, jti string, expiresAt time.Time) error {
	if jti == "" {
		return core.Invalid("jti", "the assertion has no jti")
	}
	var spent bool
	err := s.Write(ctx, func(tx *gorm.DB) error {
		if err := tx.Where("expires_at < ?", s.Now()).Delete(&spentAssertion{}).Error; err != nil {
			return err
		}
		res := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&spentAssertion{ClientID: clientID, Jti: jti, ExpiresAt: expiresAt.UTC()})
		if res.Error != nil {
			return res.Error
		}
		spent = res.RowsAffected == 0
		return nil
	})
	if err != nil {
		return fmt.Errorf("spend assertion: %w", err)
	}
	if spent {
		return core.Refuse(core.FailedPrecondition, "jti", "the assertion %q was used before: each is used once", jti)
	}
	return nil
}
