package handlers

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/decision"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
)

type challengeRequest struct {
	Decision string `json:"decision"` // approve, approve_edited, deny, not_mine, question, reply, approve_for, option:<index>, choice:<index> or answer
	Question string `json:"question"` // the question's text, for question
	Answer   string `json:"answer"`   // the answer's text, for answer
	Reply    string `json:"reply"`    // the reply's text, for reply
	Minutes  int    `json:"minutes"`  // for approve_for: how long the same is approved
	// Edited is the payload as the person edited it, for approve_edited.
	Edited json.RawMessage `json:"edited_payload"`
	// CheckCode is the check code the person picked, to approve one of the riskiest asks.
	CheckCode string `json:"check_code"`
}

// choice is the request as the decision service reads it, the same whether a
// session or a push link is its authority.
func (r challengeRequest) choice() decision.Choice {
	return decision.Choice{Verdict: asks.Verdict(r.Decision), Question: r.Question, Answer: r.Answer, Reply: r.Reply, Minutes: r.Minutes, CheckCode: r.CheckCode, Edited: r.Edited}
}

// DecisionChallenge answers the WebAuthn options of one decision by the
// viewer on the ask (see decision.Service.Begin).
func (h *Handlers) DecisionChallenge(c echo.Context) error {
	var req challengeRequest
	if err := readJSON(c, &req, maxWebBody); err != nil {
		return err
	}
	id, options, err := h.decisions.Begin(c.Request().Context(), viewerOf(c).member, c.Param("id"), req.choice())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"ceremony": id, "options": options})
}

// Decide records the viewer's signed decision (see decision.Service.Complete)
// and sends the page on to the next ask to answer (see nextAsk).
func (h *Handlers) Decide(c echo.Context) error {
	var reply ceremonyReply
	if err := readJSON(c, &reply, maxWebBody); err != nil {
		return err
	}
	ctx, m := c.Request().Context(), viewerOf(c).member
	decided, err := h.decisions.Complete(ctx, m, c.Param("id"), reply.Ceremony, reply.Credential)
	if err != nil {
		return err
	}
	next, err := h.nextAsk(ctx, m, decided)
	if err != nil {
		return err
	}
	out := map[string]string{"status": string(decided.Status), "redirect": next}
	if decided.Status != asks.StatusQuestion {
		// The page shows the answer's receipt first, which leads on to next.
		out["receipt"] = "/approvals/" + url.PathEscape(decided.ID) + "/receipt"
	}
	return c.JSON(http.StatusOK, out)
}

// ApprovalProof downloads the proof that decided an ask.
func (h *Handlers) ApprovalProof(c echo.Context) error {
	v := viewerOf(c)
	a, err := h.store.GetApproval(c.Request().Context(), v.account.ID, c.Param("id"))
	if err != nil {
		return err
	}
	if a.Proof == nil {
		return core.Refuse(core.NotFound, "proof", "approval %s has no signed decision yet", a.ID)
	}
	c.Response().Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s.proof.json"`, a.ID))
	return c.JSONBlob(http.StatusOK, []byte(*a.Proof))
}
