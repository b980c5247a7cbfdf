package asks

import (
	"fmt"
	"time"

	"github.com/countersign/countersign/models/core"
	"gorm.io/gorm"
)

// ChallengeTTL is how long a decision nonce can be used.
const ChallengeTTL = 5 * time.Minute

// killChallenges deletes, inside tx, the unspent nonces of an ask that is
// leaving pending: a signature made for the ask as it was cannot decide it
// once it is pending again (after a question and its answer).
func (s *Lifecycle) killChallenges(tx *gorm.DB, approvalID string) error {
	if err := tx.Exec(`DELETE FROM decision_challenges WHERE approval_id = ? AND used_at IS NULL`, approvalID).Error; err != nil {
		return fmt.Errorf("delete the ask's unspent nonces: %w", err)
	}
	return nil
}

// SpendChallenge uses up, inside tx, the nonce issued for exactly this
// decision by this person on this ask and payload.
func (s *Lifecycle) SpendChallenge(tx *gorm.DB, a *Approval, personID, decision string, nonce []byte) error {
	res := tx.Exec(`UPDATE decision_challenges SET used_at = ? WHERE nonce = ? AND used_at IS NULL AND approval_id = ?
		AND person_id = ? AND decision = ? AND payload_sha256 = ? AND expires_at > ?`,
		s.Now(), fmt.Sprintf("%x", nonce), a.ID, personID, decision, a.PayloadSHA256, s.Now())
	if res.Error != nil {
		return fmt.Errorf("spend challenge: %w", res.Error)
	}
	if res.RowsAffected != 1 {
		return core.Refuse(core.FailedPrecondition, "nonce", "this signature's challenge was used, expired, or was issued for another ask, decision or person; nothing was recorded")
	}
	return nil
}
