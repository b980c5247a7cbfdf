package handlers

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/proof"
)

type challengeRequest struct {
	Decision string `json:"decision"` // approve, deny, not_mine, question or option:<index>
	Question string `json:"question"` // the question's text, for question
}

// decisionCeremony is kept server-side between the challenge and the signature.
type decisionCeremony struct {
	ApprovalID string          `json:"approval_id"`
	Decision   string          `json:"decision"` // as signed: question:<sha256> for a question
	Question   string          `json:"question,omitempty"`
	Nonce      proof.B64       `json:"nonce"`
	Session    json.RawMessage `json:"session"`
}

// verdictOf reads the decision a person chose into the verdict it records
// and the decision string the signature covers.
func verdictOf(a *models.Approval, req challengeRequest) (models.Decision, error) {
	d := models.Decision{Verdict: models.Verdict(req.Decision)}
	switch {
	case req.Decision == "approve", req.Decision == "deny", req.Decision == "not_mine":
	case req.Decision == "question":
		q := strings.TrimSpace(req.Question)
		if q == "" {
			return d, models.Invalid("question", "write the question you want the agent to answer")
		}
		if n := len([]rune(q)); n > models.NoteLimit {
			return d, models.Invalid("question", "at most %d characters (got %d)", models.NoteLimit, n)
		}
		d.Note = q
	case strings.HasPrefix(req.Decision, "option:") && proof.ValidDecision(req.Decision):
		var i int
		fmt.Sscanf(strings.TrimPrefix(req.Decision, "option:"), "%d", &i)
		if a.Kind != models.KindDecision || i >= len(a.DecisionOptions()) {
			return d, models.Invalid("decision", "%q is not an option of this ask", req.Decision)
		}
	default:
		return d, models.Invalid("decision", "must be approve, deny, not_mine, question or option:<index>")
	}
	if a.Kind == models.KindDecision && req.Decision == "approve" {
		return d, models.Invalid("decision", "a decision ask is approved by picking one of its options")
	}
	return d, nil
}

// DecisionChallenge issues the single-use nonce of one decision and answers
// the WebAuthn options whose challenge covers the ask, its payload hash, the
// decision and the nonce.
func (h *Handlers) DecisionChallenge(c echo.Context) error {
	ctx := c.Request().Context()
	v := viewerOf(c)
	a, err := h.store.GetApproval(ctx, v.account.ID, c.Param("id"))
	if err != nil {
		return err
	}
	var req challengeRequest
	if err := readJSON(c, &req); err != nil {
		return err
	}
	d, err := verdictOf(a, req)
	if err != nil {
		return err
	}
	nonce := make([]byte, proof.NonceSize)
	if _, err := rand.Read(nonce); err != nil {
		return err
	}
	if err := h.store.IssueChallenge(ctx, v.member, a, d.Signed(), nonce); err != nil {
		return err
	}
	u, err := h.user(ctx, v.member.ID)
	if err != nil {
		return err
	}
	challenge := proof.Challenge(proof.Domain, a.ID, a.PayloadSHA256, d.Signed(), nonce)
	options, session, err := h.rp.BeginDecision(u, challenge)
	if err != nil {
		return err
	}
	state, _ := json.Marshal(decisionCeremony{ApprovalID: a.ID, Decision: d.Signed(), Question: d.Note, Nonce: nonce, Session: session})
	id, err := h.store.SaveCeremony(ctx, "decision", v.member.ID, state)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"ceremony": id, "options": options})
}

// Decide checks the person's signature over the decision and commits the
// decision, its proof, the spent nonce and the timeline event together.
func (h *Handlers) Decide(c echo.Context) error {
	ctx := c.Request().Context()
	v := viewerOf(c)
	var reply ceremonyReply
	if err := readJSON(c, &reply); err != nil {
		return err
	}
	raw, personID, err := h.store.TakeCeremony(ctx, reply.Ceremony, "decision")
	if err != nil {
		return err
	}
	var st decisionCeremony
	if err := json.Unmarshal(raw, &st); err != nil {
		return err
	}
	if personID != v.member.ID || st.ApprovalID != c.Param("id") {
		return models.Refuse(models.PermissionDenied, "ceremony", "this signature prompt was made for another person or ask; nothing was recorded")
	}
	a, err := h.store.GetApproval(ctx, v.account.ID, st.ApprovalID)
	if err != nil {
		return err
	}
	u, err := h.user(ctx, v.member.ID)
	if err != nil {
		return err
	}
	challenge := proof.Challenge(proof.Domain, a.ID, a.PayloadSHA256, st.Decision, st.Nonce)
	assertion, err := h.rp.FinishDecision(u, st.Session, reply.Credential, challenge)
	if err != nil {
		return err
	}
	key, err := h.store.DeviceKeyByID(ctx, assertion.CredentialID)
	if err != nil {
		return err
	}
	publicKey, err := decodeB64(key.PublicKey)
	if err != nil {
		return err
	}
	d := models.Decision{Verdict: models.Verdict(st.Decision), Nonce: st.Nonce, CredentialID: assertion.CredentialID,
		SignCount: assertion.SignCount, Credential: assertion.Credential}
	if st.Question != "" {
		d.Verdict, d.Note = models.VerdictQuestion, st.Question
	}
	p := h.rp.Proof(assertion, publicKey, a.ID, a.PayloadSHA256, st.Decision, st.Nonce, proof.Unsigned{
		Person: v.member.Subject, AccountID: v.account.ID, DecidedAt: h.store.Now(), Question: st.Question,
	})
	p.Payload = proof.B64(a.Payload) // the canonical bytes payload_sha256 covers, so a verifier needs no server
	if d.Proof, err = json.Marshal(p); err != nil {
		return err
	}
	decided, err := h.store.Decide(ctx, v.account.ID, a.ID, v.member, d)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]string{"status": string(decided.Status), "redirect": "/approvals/" + decided.ID})
}

// ApprovalProof downloads the proof that decided an ask.
func (h *Handlers) ApprovalProof(c echo.Context) error {
	v := viewerOf(c)
	a, err := h.store.GetApproval(c.Request().Context(), v.account.ID, c.Param("id"))
	if err != nil {
		return err
	}
	if a.Proof == nil {
		return models.Refuse(models.NotFound, "proof", "approval %s has no signed decision yet", a.ID)
	}
	c.Response().Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s.proof.json"`, a.ID))
	return c.JSONBlob(http.StatusOK, []byte(*a.Proof))
}
