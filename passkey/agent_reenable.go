package passkey

import "crypto/sha256"

// agentReenableDomain opens every re-enable-agent challenge, so that what a
// passkey signs to re-enable a blocked agent can be taken for nothing else:
// not a sign-in, a decision, nor a change to a passkey.
const agentReenableDomain = "countersign/reenable-agent/v1"

// AgentReenableChallenge is the challenge an owner's or admin's passkey
// signs to re-enable the blocked agent agentID of accountID: SHA-256 of the
// domain, the person id, the account id, the agent id and a fresh random
// nonce, each ended by a zero byte. The agent is named in what is signed,
// so an assertion made to re-enable one agent re-enables no other.
func AgentReenableChallenge(personID, accountID, agentID string, nonce []byte) []byte {
	h := sha256.New()
	for _, part := range [][]byte{[]byte(agentReenableDomain), []byte(personID), []byte(accountID), []byte(agentID), nonce} {
		h.Write(part)
		h.Write([]byte{0})
	}
	return h.Sum(nil)
}

// BeginAgentReenable starts the assertion that lets u re-enable an agent:
// only u's own live passkeys may answer, with user verification, over
// challenge (see AgentReenableChallenge).
func (rp *RP) BeginAgentReenable(u *User, challenge []byte) (Options, []byte, error) {
	return rp.beginSigned(u, challenge, "you have no passkey to confirm with")
}

// FinishAgentReenable checks the assertion that lets u re-enable an agent:
// a live passkey of u's signed exactly want, and verified its user.
func (rp *RP) FinishAgentReenable(u *User, sessionJSON, body []byte, want []byte) (*Assertion, error) {
	return rp.finishSigned(u, sessionJSON, body, want, "this prompt was not made to re-enable this agent; start again")
}
