// Package proof defines what a person signs when they decide an ask, and
// checks such a signature offline, without trusting the server that kept it.
//
// The WebAuthn challenge of a decision is
//
//	SHA-256( lp(domain) || lp(approval_id) || lp(payload_sha256) || lp(decision) || lp(nonce) )
//
// where lp(x) is the length of x as a 4-byte big-endian unsigned integer
// followed by the bytes of x; domain is "countersign/decision/v1";
// approval_id, payload_sha256 (64 lower-case hex characters) and decision
// ("approve", "deny", "not_mine", "option:<index>" or "question:<sha256 hex
// of the question text>") are their UTF-8 bytes; and nonce is the 32 raw
// bytes the server issued for this one decision.
package proof

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/protocol/webauthncose"
)

// Domain separates decision challenges from every other use of a passkey.
const Domain = "countersign/decision/v1"

// NonceSize is the length of the server's single-use nonce.
const NonceSize = 32

// Challenge computes the bytes a passkey signs for one decision.
func Challenge(domain, approvalID, payloadSHA256, decision string, nonce []byte) []byte {
	var buf bytes.Buffer
	for _, field := range [][]byte{[]byte(domain), []byte(approvalID), []byte(payloadSHA256), []byte(decision), nonce} {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(field)))
		buf.Write(n[:])
		buf.Write(field)
	}
	sum := sha256.Sum256(buf.Bytes())
	return sum[:]
}

// QuestionDecision is the decision string of a question: its text is hashed
// so the signature covers exactly what was asked.
func QuestionDecision(text string) string {
	sum := sha256.Sum256([]byte(text))
	return "question:" + hex.EncodeToString(sum[:])
}

// ValidDecision says whether d is a decision string of the layout.
func ValidDecision(d string) bool {
	switch {
	case d == "approve", d == "deny", d == "not_mine":
		return true
	case strings.HasPrefix(d, "option:"):
		n, err := strconv.Atoi(strings.TrimPrefix(d, "option:"))
		return err == nil && n >= 0 && n < 100 && strconv.Itoa(n) == strings.TrimPrefix(d, "option:")
	case strings.HasPrefix(d, "question:"):
		h := strings.TrimPrefix(d, "question:")
		_, err := hex.DecodeString(h)
		return err == nil && len(h) == 64 && strings.ToLower(h) == h
	}
	return false
}

// B64 is bytes that travel as unpadded base64url in JSON.
type B64 []byte

// MarshalJSON writes unpadded base64url.
func (b B64) MarshalJSON() ([]byte, error) {
	return json.Marshal(base64.RawURLEncoding.EncodeToString(b))
}

// UnmarshalJSON reads unpadded (or padded) base64url.
func (b *B64) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil {
		return fmt.Errorf("not base64url: %w", err)
	}
	*b = raw
	return nil
}

// Proof is a decision's signature kept whole: every input of the challenge,
// the key, and the assertion. Unsigned rides along for people to read; no
// signature covers it.
type Proof struct {
	Format            string   `json:"format"` // "countersign-proof/v1"
	Domain            string   `json:"domain"`
	ApprovalID        string   `json:"approval_id"`
	PayloadSHA256     string   `json:"payload_sha256"`
	Decision          string   `json:"decision"`
	Nonce             B64      `json:"nonce"`
	CredentialID      B64      `json:"credential_id"`
	PublicKey         B64      `json:"public_key"` // COSE_Key
	RPID              string   `json:"rp_id"`
	AuthenticatorData B64      `json:"authenticator_data"`
	ClientDataJSON    B64      `json:"client_data_json"`
	Signature         B64      `json:"signature"`
	Unsigned          Unsigned `json:"unsigned"`
}

// Format names the proof layout.
const Format = "countersign-proof/v1"

// Unsigned claims: who the server says signed, and when. Not covered by the signature.
type Unsigned struct {
	Person    string    `json:"person"`
	AccountID string    `json:"account_id"`
	DecidedAt time.Time `json:"decided_at"`
	Question  string    `json:"question,omitempty"` // the text a question decision hashes
}

// Keys is an export of an account's registered device keys (countersign keys export).
type Keys struct {
	Format    string      `json:"format"` // "countersign-keys/v1"
	AccountID string      `json:"account_id"`
	RPID      string      `json:"rp_id"`
	Exported  time.Time   `json:"exported_at"`
	Keys      []DeviceKey `json:"keys"`
}

// KeysFormat names the key export layout.
const KeysFormat = "countersign-keys/v1"

// DeviceKey is one registered passkey of a person.
type DeviceKey struct {
	CredentialID B64       `json:"credential_id"`
	PublicKey    B64       `json:"public_key"`
	Person       string    `json:"person"`
	Name         string    `json:"name"`
	CreatedAt    time.Time `json:"created_at"`
	Removed      bool      `json:"removed,omitempty"`
}

// Result is what a valid proof shows.
type Result struct {
	ApprovalID    string
	PayloadSHA256 string
	Decision      string
	CredentialID  string // base64url
	Origin        string
	KeyRegistered bool   // true only when checked against a key export
	KeyPerson     string // the person the export names for the key
	SignCount     uint32
}

// Verify checks a proof offline: the challenge recomputed from its parts
// matches clientDataJSON, the RP ID hash and the user-verified flag are in
// authenticatorData, and the signature verifies with the public key. With
// keys it also checks that the key is a registered device key of the
// account; rpID, when not empty, must equal the proof's.
func Verify(p *Proof, keys *Keys, rpID string) (*Result, error) {
	if p.Format != Format {
		return nil, fmt.Errorf("format is %q, want %q", p.Format, Format)
	}
	if p.Domain != Domain {
		return nil, fmt.Errorf("domain is %q, want %q", p.Domain, Domain)
	}
	if !ValidDecision(p.Decision) {
		return nil, fmt.Errorf("decision %q is not one of approve, deny, not_mine, option:<index>, question:<sha256>", p.Decision)
	}
	if len(p.PayloadSHA256) != 64 || strings.ToLower(p.PayloadSHA256) != p.PayloadSHA256 {
		return nil, errors.New("payload_sha256 is not 64 lower-case hex characters")
	}
	if _, err := hex.DecodeString(p.PayloadSHA256); err != nil {
		return nil, errors.New("payload_sha256 is not hex")
	}
	if len(p.Nonce) != NonceSize {
		return nil, fmt.Errorf("nonce has %d bytes, want %d", len(p.Nonce), NonceSize)
	}
	if rpID != "" && rpID != p.RPID {
		return nil, fmt.Errorf("rp_id is %q, want %q", p.RPID, rpID)
	}
	if strings.HasPrefix(p.Decision, "question:") && p.Unsigned.Question != "" && QuestionDecision(p.Unsigned.Question) != p.Decision {
		return nil, errors.New("the question text beside the proof does not hash to the signed decision")
	}
	challenge := Challenge(p.Domain, p.ApprovalID, p.PayloadSHA256, p.Decision, p.Nonce)

	var cd protocol.CollectedClientData
	if err := json.Unmarshal(p.ClientDataJSON, &cd); err != nil {
		return nil, fmt.Errorf("client_data_json: %w", err)
	}
	if cd.Type != protocol.AssertCeremony {
		return nil, fmt.Errorf("client_data_json type is %q, want webauthn.get", cd.Type)
	}
	signed, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(cd.Challenge, "="))
	if err != nil || !bytes.Equal(signed, challenge) {
		return nil, errors.New("client_data_json challenge is not the challenge of this approval, payload hash, decision and nonce")
	}

	var ad protocol.AuthenticatorData
	if err := ad.Unmarshal(p.AuthenticatorData); err != nil {
		return nil, fmt.Errorf("authenticator_data: %w", err)
	}
	rpHash := sha256.Sum256([]byte(p.RPID))
	if !bytes.Equal(ad.RPIDHash, rpHash[:]) {
		return nil, fmt.Errorf("authenticator_data was made for another RP ID than %q", p.RPID)
	}
	if !ad.Flags.UserPresent() || !ad.Flags.UserVerified() {
		return nil, errors.New("authenticator_data does not say the user was present and verified")
	}

	key, err := webauthncose.ParsePublicKey(p.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("public_key: %w", err)
	}
	cdHash := sha256.Sum256(p.ClientDataJSON)
	ok, err := webauthncose.VerifySignature(key, append(bytes.Clone(p.AuthenticatorData), cdHash[:]...), p.Signature)
	if err != nil || !ok {
		return nil, errors.New("signature does not verify with public_key")
	}

	res := &Result{
		ApprovalID: p.ApprovalID, PayloadSHA256: p.PayloadSHA256, Decision: p.Decision,
		CredentialID: base64.RawURLEncoding.EncodeToString(p.CredentialID), Origin: cd.Origin, SignCount: ad.Counter,
	}
	if keys != nil {
		if keys.Format != KeysFormat {
			return nil, fmt.Errorf("keys format is %q, want %q", keys.Format, KeysFormat)
		}
		if keys.RPID != "" && keys.RPID != p.RPID {
			return nil, fmt.Errorf("keys are of RP ID %q, the proof of %q", keys.RPID, p.RPID)
		}
		if p.Unsigned.AccountID != "" && keys.AccountID != p.Unsigned.AccountID {
			return nil, fmt.Errorf("keys are of account %s, the proof names account %s", keys.AccountID, p.Unsigned.AccountID)
		}
		for _, k := range keys.Keys {
			if bytes.Equal(k.CredentialID, p.CredentialID) {
				if !bytes.Equal(k.PublicKey, p.PublicKey) {
					return nil, errors.New("the key export holds another public key for this credential id")
				}
				res.KeyRegistered, res.KeyPerson = true, k.Person
				break
			}
		}
		if !res.KeyRegistered {
			return nil, errors.New("the signing key is not a registered device key of the account")
		}
	}
	return res, nil
}
