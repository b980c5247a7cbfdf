package decision

import (
	"github.com/countersign/countersign/ask"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
)

// checkCodePicked refuses to begin an approval of one of the riskiest asks
// (ask.NeedsCheckCode) unless the person picked its check code, the two
// digits the agent shows where it runs: a person approving out of habit
// signs nothing; an approve "and the same for a while" is an approval too.
// A deny, a question or an ask of any other kind needs no
// code. The code adds nothing to what is signed: the hash already covers it.
func checkCodePicked(a *asks.Approval, v asks.Verdict, picked string) error {
	if v != asks.VerdictApprove && v != asks.VerdictApproveEdited && v != asks.VerdictApproveFor || !ask.NeedsCheckCode(a.Kind, a.Payload) {
		return nil
	}
	if picked == "" {
		return core.Refuse(core.FailedPrecondition, "check_code", "pick the check code the agent shows you before you approve; nothing was signed")
	}
	if picked != ask.CheckCode(a.PayloadSHA256) {
		return core.Refuse(core.FailedPrecondition, "check_code", "%s is not this ask's check code: nothing was signed. Look at the code the agent shows you where it runs; if it shows none or another, deny", picked)
	}
	return nil
}
