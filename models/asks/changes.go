package asks

import (
	"github.com/countersign/countersign/models/core"
	"gorm.io/gorm"
)

// approvalChanged records that ev, just appended to its ask's timeline,
// changed the ask.
func (s *Lifecycle) approvalChanged(tx *gorm.DB, ev *TimelineEvent) error {
	return s.Changed(tx, core.Change{Kind: core.ApprovalChanged, AccountID: ev.AccountID, ApprovalID: ev.ApprovalID, Seq: ev.Seq})
}
