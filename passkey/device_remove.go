package passkey

import (
	"crypto/sha256"
)

// deviceRemoveDomain opens every remove-device challenge, so that what a
// passkey signs to retire one of its person's passkeys can be taken for
// nothing else: not a sign-in, a decision, nor adding a passkey.
const deviceRemoveDomain = "countersign/remove-device/v1"

// DeviceRemoveChallenge is the challenge one of a person's passkeys signs to
// remove the passkey credentialID: SHA-256 of the domain, the person id, the
// credential id (base64url) and a fresh random nonce, each ended by a zero
// byte. The passkey to remove is named in what is signed, so an assertion
// made to remove one passkey removes no other.
func DeviceRemoveChallenge(personID, credentialID string, nonce []byte) []byte {
	h := sha256.New()
	for _, part := range [][]byte{[]byte(deviceRemoveDomain), []byte(personID), []byte(credentialID), nonce} {
		h.Write(part)
		h.Write([]byte{0})
	}
	return h.Sum(nil)
}

// BeginDeviceRemove starts the assertion that lets u remove a passkey: only
// u's own live passkeys may answer, with user verification, over challenge
// (see DeviceRemoveChallenge).
func (rp *RP) BeginDeviceRemove(u *User, challenge []byte) (Options, []byte, error) {
	return rp.beginSigned(u, challenge, "you have no passkey to confirm with")
}

// FinishDeviceRemove checks the assertion that lets u remove a passkey: a
// live passkey of u's signed exactly want, and verified its user.
func (rp *RP) FinishDeviceRemove(u *User, sessionJSON, body []byte, want []byte) (*Assertion, error) {
	return rp.finishSigned(u, sessionJSON, body, want, "this prompt was not made to remove this passkey; start again")
}
