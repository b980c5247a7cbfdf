package passkey

import (
	"crypto/sha256"
)

// deviceAddDomain opens every add-device challenge, so that what a passkey
// signs to let its person add another can be taken for nothing else: a
// sign-in challenge is random, a decision's has the proof layout.
const deviceAddDomain = "countersign/add-device/v1"

// DeviceAddChallenge is the challenge one of a person's passkeys signs to let
// them add another: SHA-256 of the domain, the person id and a fresh random
// nonce, each ended by a zero byte.
func DeviceAddChallenge(personID string, nonce []byte) []byte {
	h := sha256.New()
	for _, part := range [][]byte{[]byte(deviceAddDomain), []byte(personID), nonce} {
		h.Write(part)
		h.Write([]byte{0})
	}
	return h.Sum(nil)
}

// BeginDeviceAdd starts the assertion that lets u add a passkey: only u's
// own passkeys may answer, with user verification, over challenge (see
// DeviceAddChallenge).
func (rp *RP) BeginDeviceAdd(u *User, challenge []byte) (Options, []byte, error) {
	return rp.beginSigned(u, challenge, "you have no passkey to confirm with")
}

// FinishDeviceAdd checks the assertion that lets u add a passkey: a passkey
// of u's signed exactly want, and verified its user.
func (rp *RP) FinishDeviceAdd(u *User, sessionJSON, body []byte, want []byte) (*Assertion, error) {
	return rp.finishSigned(u, sessionJSON, body, want, "this prompt was not made to add a passkey; start again")
}
