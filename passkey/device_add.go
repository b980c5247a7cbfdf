package passkey

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"

	"github.com/countersign/countersign/models"
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
	creds := webauthn.Credentials(u.WebAuthnCredentials())
	if len(creds) == 0 {
		return nil, nil, models.Refuse(models.FailedPrecondition, "credential", "you have no passkey to confirm with")
	}
	assertion, session, err := rp.wa.BeginLogin(u,
		webauthn.WithChallenge(challenge),
		webauthn.WithUserVerification(protocol.VerificationRequired),
		webauthn.WithAllowedCredentials(creds.CredentialDescriptors()),
	)
	if err != nil {
		return nil, nil, fmt.Errorf("begin device add: %w", err)
	}
	return marshalPair(assertion.Response, session)
}

// FinishDeviceAdd checks the assertion that lets u add a passkey: a passkey
// of u's signed exactly want, and verified its user.
func (rp *RP) FinishDeviceAdd(u *User, sessionJSON, body []byte, want []byte) (*Assertion, error) {
	var session webauthn.SessionData
	if err := json.Unmarshal(sessionJSON, &session); err != nil {
		return nil, fmt.Errorf("device add session: %w", err)
	}
	if session.Challenge != base64.RawURLEncoding.EncodeToString(want) {
		return nil, models.Refuse(models.PermissionDenied, "challenge", "this prompt was not made to add a passkey; start again")
	}
	parsed, err := protocol.ParseCredentialRequestResponseBytes(body)
	if err != nil {
		return nil, refusal("the passkey response could not be read", err)
	}
	cred, err := rp.wa.ValidateLogin(u, session, parsed)
	if err != nil {
		return nil, refusal("the passkey was not accepted", err)
	}
	if !bytes.Equal(challengeOf(parsed), want) {
		return nil, models.Refuse(models.PermissionDenied, "challenge", "the passkey signed another challenge")
	}
	if !parsed.Response.AuthenticatorData.Flags.UserVerified() {
		return nil, models.Refuse(models.PermissionDenied, "credential", "the passkey did not verify you (Face ID, Touch ID or a PIN is required)")
	}
	return rp.assertion(u, cred, parsed)
}
