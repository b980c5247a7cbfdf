// Package passkey runs the WebAuthn ceremonies of Countersign with
// go-webauthn: registering a person's passkey, signing in, and signing a
// decision over the challenge of the proof package. The state of each
// ceremony is kept server-side by the caller, as the JSON this package returns.
package passkey

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"

	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
	"github.com/countersign/countersign/proof"
)

// RP is the relying party: this service, at its public origin.
type RP struct {
	wa     *webauthn.WebAuthn
	RPID   string
	Origin string
}

// New makes the relying party for baseURL (its host is the RP ID).
func New(baseURL string) (*RP, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("passkey: base URL: %w", err)
	}
	origin := u.Scheme + "://" + u.Host
	wa, err := webauthn.New(&webauthn.Config{
		RPID:          u.Hostname(),
		RPDisplayName: "Countersign",
		RPOrigins:     []string{origin},
		AuthenticatorSelection: protocol.AuthenticatorSelection{
			ResidentKey:      protocol.ResidentKeyRequirementRequired,
			UserVerification: protocol.VerificationRequired,
		},
		Timeouts: webauthn.TimeoutsConfig{
			Login:        webauthn.TimeoutConfig{Enforce: true, Timeout: 5 * time.Minute},
			Registration: webauthn.TimeoutConfig{Enforce: true, Timeout: 5 * time.Minute},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("passkey: %w", err)
	}
	return &RP{wa: wa, RPID: u.Hostname(), Origin: origin}, nil
}

// User is a person as WebAuthn sees them.
type User struct {
	ID          string // the person id: the passkey's user handle
	Subject     string
	DisplayName string
	Keys        []people.DeviceKey
}

// WebAuthnID is the user handle.
func (u *User) WebAuthnID() []byte { return []byte(u.ID) }

// WebAuthnName is the account name an authenticator shows.
func (u *User) WebAuthnName() string { return u.Subject }

// WebAuthnDisplayName is the name an authenticator shows.
func (u *User) WebAuthnDisplayName() string {
	if u.DisplayName != "" {
		return u.DisplayName
	}
	return u.Subject
}

// WebAuthnCredentials are the person's live passkeys.
func (u *User) WebAuthnCredentials() []webauthn.Credential {
	out := make([]webauthn.Credential, 0, len(u.Keys))
	for _, k := range u.Keys {
		var c webauthn.Credential
		if json.Unmarshal([]byte(k.Credential), &c) == nil {
			out = append(out, c)
		}
	}
	return out
}

// Options is what the browser gets to start a ceremony: the JSON that
// PublicKeyCredential.parseCreationOptionsFromJSON / parseRequestOptionsFromJSON read.
type Options = json.RawMessage

// BeginRegistration starts making a passkey for u; existing keys are excluded.
func (rp *RP) BeginRegistration(u *User) (Options, []byte, error) {
	creation, session, err := rp.wa.BeginRegistration(u,
		webauthn.WithExclusions(webauthn.Credentials(u.WebAuthnCredentials()).CredentialDescriptors()),
		webauthn.WithResidentKeyRequirement(protocol.ResidentKeyRequirementRequired),
	)
	if err != nil {
		return nil, nil, fmt.Errorf("begin registration: %w", err)
	}
	return marshalPair(creation.Response, session)
}

// FinishRegistration checks the browser's credential.toJSON() and returns the
// new device key, named name.
func (rp *RP) FinishRegistration(u *User, sessionJSON, body []byte, name string) (*people.DeviceKey, error) {
	var session webauthn.SessionData
	if err := json.Unmarshal(sessionJSON, &session); err != nil {
		return nil, fmt.Errorf("registration session: %w", err)
	}
	parsed, err := protocol.ParseCredentialCreationResponseBytes(body)
	if err != nil {
		return nil, refusal("the passkey response could not be read", err)
	}
	cred, err := rp.wa.CreateCredential(u, session, parsed)
	if err != nil {
		return nil, refusal("the passkey was not accepted", err)
	}
	if !cred.Flags.UserVerified {
		return nil, core.Refuse(core.PermissionDenied, "credential", "the passkey did not verify you (Face ID, Touch ID or a PIN is required)")
	}
	record, err := json.Marshal(cred)
	if err != nil {
		return nil, err
	}
	return &people.DeviceKey{
		ID: b64(cred.ID), Name: name, Credential: string(record), PublicKey: b64(cred.PublicKey),
		SignCount: int64(cred.Authenticator.SignCount), BackupEligible: cred.Flags.BackupEligible, BackedUp: cred.Flags.BackupState,
	}, nil
}

// BeginSignIn starts a discoverable sign-in: the browser offers the
// person's passkeys for this site.
func (rp *RP) BeginSignIn() (Options, []byte, error) {
	assertion, session, err := rp.wa.BeginDiscoverableLogin(webauthn.WithUserVerification(protocol.VerificationRequired))
	if err != nil {
		return nil, nil, fmt.Errorf("begin sign-in: %w", err)
	}
	return marshalPair(assertion.Response, session)
}

// Assertion is a verified passkey signature.
type Assertion struct {
	PersonID     string
	CredentialID string // base64url
	SignCount    uint32
	Credential   string // the updated credential record
	parsed       *protocol.ParsedCredentialAssertionData
}

// FinishSignIn checks a discoverable assertion; lookup returns the person a
// user handle names.
func (rp *RP) FinishSignIn(sessionJSON, body []byte, lookup func(personID string) (*User, error)) (*Assertion, error) {
	var session webauthn.SessionData
	if err := json.Unmarshal(sessionJSON, &session); err != nil {
		return nil, fmt.Errorf("sign-in session: %w", err)
	}
	parsed, err := protocol.ParseCredentialRequestResponseBytes(body)
	if err != nil {
		return nil, refusal("the passkey response could not be read", err)
	}
	var who *User
	cred, err := rp.wa.ValidateDiscoverableLogin(func(rawID, userHandle []byte) (webauthn.User, error) {
		u, err := lookup(string(userHandle))
		if err != nil {
			return nil, err
		}
		who = u
		return u, nil
	}, session, parsed)
	if err != nil {
		return nil, refusal("the passkey was not accepted", err)
	}
	return rp.assertion(who, cred, parsed)
}

// BeginDecision starts the signature of one decision: the challenge is the
// proof layout's, and only u's own passkeys may answer.
func (rp *RP) BeginDecision(u *User, challenge []byte) (Options, []byte, error) {
	return rp.beginSigned(u, challenge, "you have no passkey to sign with")
}

// FinishDecision checks the signature of a decision. want is the challenge
// the server computed; the assertion must be over exactly it.
func (rp *RP) FinishDecision(u *User, sessionJSON, body []byte, want []byte) (*Assertion, error) {
	return rp.finishSigned(u, sessionJSON, body, want, "this prompt was made for another decision; start again")
}

// beginSigned starts an assertion over a challenge the server computed (a
// decision's, or an add-device one): only u's own passkeys may answer, with
// user verification. none is the refusal when u has no passkey.
func (rp *RP) beginSigned(u *User, challenge []byte, none string) (Options, []byte, error) {
	creds := webauthn.Credentials(u.WebAuthnCredentials())
	if len(creds) == 0 {
		return nil, nil, core.Refuse(core.FailedPrecondition, "credential", "%s", none)
	}
	assertion, session, err := rp.wa.BeginLogin(u,
		webauthn.WithChallenge(challenge),
		webauthn.WithUserVerification(protocol.VerificationRequired),
		webauthn.WithAllowedCredentials(creds.CredentialDescriptors()),
	)
	if err != nil {
		return nil, nil, fmt.Errorf("begin assertion: %w", err)
	}
	return marshalPair(assertion.Response, session)
}

// finishSigned checks an assertion begun by beginSigned: a passkey of u's
// signed exactly want and verified its user. otherPrompt is the refusal
// when the session was made for another challenge.
func (rp *RP) finishSigned(u *User, sessionJSON, body []byte, want []byte, otherPrompt string) (*Assertion, error) {
	var session webauthn.SessionData
	if err := json.Unmarshal(sessionJSON, &session); err != nil {
		return nil, fmt.Errorf("assertion session: %w", err)
	}
	if session.Challenge != base64.RawURLEncoding.EncodeToString(want) {
		return nil, core.Refuse(core.PermissionDenied, "challenge", "%s", otherPrompt)
	}
	parsed, err := protocol.ParseCredentialRequestResponseBytes(body)
	if err != nil {
		return nil, refusal("the signature could not be read", err)
	}
	// go-webauthn reads clientDataJSON with encoding/json, which keeps the
	// last of two members with one name: refuse what verify would refuse,
	// so no proof is kept that reads one way here and another elsewhere.
	if err := proof.NoDuplicateMembers(parsed.Raw.AssertionResponse.ClientDataJSON); err != nil {
		return nil, core.Refuse(core.PermissionDenied, "credential", "the signature was not accepted: clientDataJSON: %v", err)
	}
	cred, err := rp.wa.ValidateLogin(u, session, parsed)
	if err != nil {
		return nil, refusal("the signature was not accepted", err)
	}
	// Belt and braces: go-webauthn checked these; a proof must hold them too.
	if !bytes.Equal(challengeOf(parsed), want) {
		return nil, core.Refuse(core.PermissionDenied, "challenge", "the signature is over another challenge")
	}
	if !parsed.Response.AuthenticatorData.Flags.UserVerified() {
		return nil, core.Refuse(core.PermissionDenied, "credential", "the passkey did not verify you (Face ID, Touch ID or a PIN is required)")
	}
	return rp.assertion(u, cred, parsed)
}

func challengeOf(p *protocol.ParsedCredentialAssertionData) []byte {
	b, _ := base64.RawURLEncoding.DecodeString(p.Response.CollectedClientData.Challenge)
	return b
}

func (rp *RP) assertion(u *User, cred *webauthn.Credential, parsed *protocol.ParsedCredentialAssertionData) (*Assertion, error) {
	record, err := json.Marshal(cred)
	if err != nil {
		return nil, err
	}
	return &Assertion{
		PersonID: u.ID, CredentialID: b64(cred.ID), SignCount: parsed.Response.AuthenticatorData.Counter,
		Credential: string(record), parsed: parsed,
	}, nil
}

// Proof builds the proof of a verified decision signature.
func (rp *RP) Proof(a *Assertion, publicKey []byte, approvalID, payloadSHA256, decision string, nonce []byte, unsigned proof.Unsigned) *proof.Proof {
	raw := a.parsed.Raw.AssertionResponse
	return &proof.Proof{
		Format: proof.Format, Domain: proof.Domain, ApprovalID: approvalID, PayloadSHA256: payloadSHA256,
		Decision: decision, Nonce: nonce, CredentialID: a.parsed.RawID, PublicKey: publicKey, RPID: rp.RPID,
		AuthenticatorData: proof.B64(raw.AuthenticatorData), ClientDataJSON: proof.B64(raw.ClientDataJSON),
		Signature: proof.B64(raw.Signature), Unsigned: unsigned,
	}
}

func marshalPair(options any, session *webauthn.SessionData) (Options, []byte, error) {
	o, err := json.Marshal(options)
	if err != nil {
		return nil, nil, err
	}
	s, err := json.Marshal(session)
	if err != nil {
		return nil, nil, err
	}
	return o, s, nil
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// refusal turns a WebAuthn failure into a PERMISSION_DENIED that says what
// failed; the library's detail is kept for the log.
func refusal(what string, err error) error {
	var pe *protocol.Error
	if errors.As(err, &pe) && pe.Details != "" {
		return core.Refuse(core.PermissionDenied, "credential", "%s: %s", what, pe.Details)
	}
	if core.CodeOf(err) != "" {
		return err
	}
	return core.Refuse(core.PermissionDenied, "credential", "%s", what)
}
