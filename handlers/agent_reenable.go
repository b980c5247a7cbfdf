package handlers

import (
	"crypto/rand"
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
	"github.com/countersign/countersign/passkey"
	"github.com/countersign/countersign/views"
)

// Re-enabling a blocked agent is signed, as removing a passkey is: "Not
// mine" blocks an agent because someone thought it was not theirs, so a
// session cookie alone must not turn it back on. The Re-enable button runs
// an assertion, by one of the admin's passkeys, over a re-enable challenge
// that names the agent; the prompt is used once and works only in the
// session that began it. The audit log records it.

// agentReenableCeremony is kept server-side between the two halves of the
// re-enable assertion.
type agentReenableCeremony struct {
	AgentID     string          `json:"agent_id"`
	SessionHash string          `json:"session_hash"`
	Nonce       []byte          `json:"nonce"`
	Session     json.RawMessage `json:"session"`
}

func (st *agentReenableCeremony) beganIn() string { return st.SessionHash }

// unsignedReenable refuses a re-enable that carries no assertion.
func unsignedReenable() error {
	return core.Refuse(core.PermissionDenied, "credential",
		"re-enabling an agent takes a confirmation with one of your passkeys: press Re-enable on the Agents page and confirm")
}

// AdminAgentReenableBegin answers the options of an assertion, by one of
// the admin's passkeys, over a challenge that names the disabled agent.
func (h *Handlers) AdminAgentReenableBegin(c echo.Context) error {
	ctx := c.Request().Context()
	v := viewerOf(c)
	agent, err := h.store.AgentByName(ctx, v.account.ID, c.Param("name"))
	if err != nil {
		return err
	}
	if !agent.Disabled {
		return core.Refuse(core.FailedPrecondition, "name", "agent %s is not disabled", agent.Name)
	}
	u, err := h.user(ctx, v.member.ID)
	if err != nil {
		return err
	}
	nonce := make([]byte, 32)
	if _, err := rand.Read(nonce); err != nil {
		return err
	}
	options, session, err := h.rp.BeginAgentReenable(u, passkey.AgentReenableChallenge(u.ID, v.account.ID, agent.ID, nonce))
	if err != nil {
		return err
	}
	return h.beginCeremony(c, "agent-reenable", v.member.ID, options,
		agentReenableCeremony{AgentID: agent.ID, SessionHash: core.HashToken(v.token), Nonce: nonce, Session: session})
}

// AdminAgentReenable turns a disabled agent back on, on a re-enable
// assertion made in this session for exactly that agent. A form post
// without the assertion is refused on the Agents page.
func (h *Handlers) AdminAgentReenable(c echo.Context) error {
	err := h.reenableAgent(c)
	if msg, status, ok := refusalOf(err); ok && !wantsJSON(c) {
		return h.agentsPage(c, status, views.AgentsView{Error: msg})
	}
	if err != nil {
		return err
	}
	h.setFlash(c, "agent-reenabled")
	return c.JSON(http.StatusOK, map[string]string{"redirect": "/admin/agents"})
}

func (h *Handlers) reenableAgent(c echo.Context) error {
	ctx := c.Request().Context()
	v := viewerOf(c)
	var st agentReenableCeremony
	reply, err := h.takeSignedReply(c, "agent-reenable", &st, unsignedReenable)
	if err != nil {
		return err
	}
	agent, err := h.store.AgentByName(ctx, v.account.ID, c.Param("name"))
	if err != nil {
		return err
	}
	if st.AgentID != agent.ID {
		return core.Refuse(core.PermissionDenied, "credential", "this passkey prompt was made to re-enable another agent; start again")
	}
	u, err := h.user(ctx, v.member.ID)
	if err != nil {
		return err
	}
	a, err := h.rp.FinishAgentReenable(u, st.Session, reply.Credential, passkey.AgentReenableChallenge(u.ID, v.account.ID, agent.ID, st.Nonce))
	if err != nil {
		return err
	}
	_, err = h.store.ReenableAgent(ctx, v.member, agent.ID, people.DeviceAssertion{
		PersonID: a.PersonID, CredentialID: a.CredentialID, SignCount: a.SignCount, Credential: a.Credential})
	return err
}
