package runners

import (
	"encoding/base64"
	"fmt"
	"time"

	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/proof"
	"gorm.io/gorm"
)

// reportSignatureKept is how long a recorded runner report's signature is
// kept past its signed_at: past ReportWindow the report is refused for its
// age anyway, and a minute more covers the clock moving between the checks.
const reportSignatureKept = ReportWindow + time.Minute

// recordReportSignature records, inside the write that records a verified
// runner report on ask a, the report's signature, and refuses a signature
// recorded before: a runner signs each report as it sends it (an Ed25519
// signature of the same bytes is the same signature), so a second one is a
// replay, which would otherwise show twice on the timeline. The signature is
// kept by its bytes, so a spelling of it with other unused base64 bits is
// the same signature.
func (s *Registry) recordReportSignature(tx *gorm.DB, a *asks.Approval, sig proof.RunnerReport) error {
	raw, err := base64.RawURLEncoding.DecodeString(sig.Signature)
	if err != nil { // verified before: cannot happen
		return fmt.Errorf("read the report's signature: %w", err)
	}
	key := base64.RawURLEncoding.EncodeToString(raw)
	var seen int64
	if err := tx.Table("runner_report_signatures").Where("signature = ?", key).Count(&seen).Error; err != nil {
		return fmt.Errorf("look for the report's signature: %w", err)
	}
	if seen > 0 {
		return core.Refuse(core.PermissionDenied, "runner.signature", "this signed report was recorded already: a report is recorded once, so a replay is refused; sign each report as you send it; nothing was recorded")
	}
	row := map[string]any{"signature": key, "approval_id": a.ID, "expires_at": time.Unix(sig.SignedAt, 0).UTC().Add(reportSignatureKept)}
	if err := tx.Table("runner_report_signatures").Create(row).Error; err != nil {
		return fmt.Errorf("record the report's signature: %w", err)
	}
	return nil
}
