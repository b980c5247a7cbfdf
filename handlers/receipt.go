package handlers

import (
	"context"
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/ask"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/people"
	"github.com/countersign/countersign/views"
)

// ApprovalReceipt is the receipt of the viewer's signed answer on an ask:
// the verdict, what, when and the check that was used, then the way on to
// the asks still waiting. An ask the viewer did not answer opens as itself.
func (h *Handlers) ApprovalReceipt(c echo.Context) error {
	ctx, v := c.Request().Context(), viewerOf(c)
	a, err := h.store.GetApproval(ctx, v.account.ID, c.Param("id"))
	if err != nil {
		return err
	}
	r, ok, err := h.receiptOf(ctx, a, v.member)
	if err != nil {
		return err
	}
	if !ok {
		return c.Redirect(http.StatusSeeOther, "/approvals/"+url.PathEscape(a.ID))
	}
	if r.Next, r.Waiting, err = h.waitingAfter(ctx, v.member, a); err != nil {
		return err
	}
	if a.Proof != nil {
		r.ProofURL = "/approvals/" + url.PathEscape(a.ID) + "/proof.json"
	}
	return h.render(c, http.StatusOK, views.ReceiptPage(h.page(c, r.Verdict, ""), r))
}

// receiptOf is the receipt of m's answer on a: ok is false when m signed
// no answer on it that stands (it is open for them, or someone else
// decided it).
func (h *Handlers) receiptOf(ctx context.Context, a *asks.Approval, m *people.Member) (views.Receipt, bool, error) {
	r := views.Receipt{ApprovalID: a.ID, Title: a.Title, At: h.store.Now(), Check: "your passkey's signature over the ask's payload, SHA-256 " + a.PayloadSHA256[:min(12, len(a.PayloadSHA256))] + "…"}
	if a.DecidedAt != nil {
		r.At = *a.DecidedAt
	}
	mine := a.DecidedBy == m.Subject
	if a.Requirement != nil {
		signed, err := h.store.SignedBy(ctx, m, []string{a.ID})
		if err != nil {
			return r, false, err
		}
		mine = signed[a.ID]
	}
	if !mine {
		return r, false, nil
	}
	switch a.Status {
	case asks.StatusApproved, asks.StatusInProgress, asks.StatusDone, asks.StatusFailed:
		r.Verdict, r.Tone = "Approved", "approved"
		if ask.NeedsCheckCode(a.Kind, a.Payload) {
			r.Check = "the check code " + ask.CheckCode(a.PayloadSHA256) + " and " + r.Check
		}
		if a.Kind == ask.KindDecision && a.Note != "" {
			r.Verdict = "Approved: " + a.Note
		}
	case asks.StatusDenied:
		r.Verdict, r.Tone = "Denied", "denied"
		if a.Decision == string(asks.VerdictNotMine) {
			r.Verdict = "Denied as not yours"
		}
	case asks.StatusPending:
		if a.Requirement == nil {
			return r, false, nil
		}
		r.Verdict, r.Tone = "Your signature is in", "waiting"
	default:
		return r, false, nil
	}
	return r, true, nil
}
