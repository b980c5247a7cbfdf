package apptest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"

	"github.com/fxamacker/cbor/v2"
)

// Authenticator is a software passkey for tests: one P-256 key pair, a
// discoverable credential that verifies its user, with a signature counter.
// It answers go-webauthn's options JSON the way a browser's
// navigator.credentials.create/get and credential.toJSON() would.
//
// Misbehave makes it lie in the ways a broken or hostile client could.
type Authenticator struct {
	mu  sync.Mutex
	key *ecdsa.PrivateKey

	// CredentialID, UserHandle and RPID are set by Register; a test may set
	// them by hand to forge a credential the server never saw.
	CredentialID []byte
	UserHandle   []byte
	RPID         string
	// Counter is the signature counter: Assert increments it before it signs.
	Counter uint32
	// BackupEligible sets the BE and BS flags (a synced passkey).
	BackupEligible bool

	Misbehave Misbehaviour
}

// Misbehaviour lists the lies an Authenticator can tell.
type Misbehaviour struct {
	NoUserVerification bool   // leave the UV flag out
	Origin             string // claim this origin in clientDataJSON instead of the page's
	OriginFirst        string // write a first "origin" member with this origin before the page's: two members, no browser's doing
	RPID               string // hash this RP ID into authenticatorData instead of the options'
	FrozenCounter      bool   // do not increment the counter before signing
}

// NewAuthenticator makes a passkey with a fresh key pair and credential id.
func NewAuthenticator() *Authenticator {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	id := make([]byte, 32)
	if _, err := rand.Read(id); err != nil {
		panic(err)
	}
	return &Authenticator{key: key, CredentialID: id}
}

// Authenticator data flags (WebAuthn §6.1).
const (
	flagUP = 0x01
	flagUV = 0x04
	flagBE = 0x08
	flagBS = 0x10
	flagAT = 0x40
)

// coseAlgES256 is COSE algorithm -7: ECDSA with SHA-256 on P-256.
const coseAlgES256 = -7

// PublicKeyCOSE is the credential public key as a COSE_Key (EC2, ES256, P-256).
func (a *Authenticator) PublicKeyCOSE() []byte {
	raw, err := a.key.PublicKey.Bytes() // 0x04 || X || Y
	if err != nil {
		panic(err)
	}
	enc, err := cbor.CTAP2EncOptions().EncMode()
	if err != nil {
		panic(err)
	}
	b, err := enc.Marshal(map[int]any{1: 2, 3: coseAlgES256, -1: 1, -2: raw[1:33], -3: raw[33:65]})
	if err != nil {
		panic(err)
	}
	return b
}

// CredentialIDString is the credential id as base64url, as the server stores it.
func (a *Authenticator) CredentialIDString() string {
	return base64.RawURLEncoding.EncodeToString(a.CredentialID)
}

type creationOptions struct {
	RP struct {
		ID string `json:"id"`
	} `json:"rp"`
	User struct {
		ID string `json:"id"`
	} `json:"user"`
	Challenge        string `json:"challenge"`
	PubKeyCredParams []struct {
		Type string `json:"type"`
		Alg  int    `json:"alg"`
	} `json:"pubKeyCredParams"`
	ExcludeCredentials []credentialDescriptor `json:"excludeCredentials"`
	Extensions         map[string]any         `json:"extensions"`
}

type requestOptions struct {
	Challenge        string                 `json:"challenge"`
	RPID             string                 `json:"rpId"`
	AllowCredentials []credentialDescriptor `json:"allowCredentials"`
	UserVerification string                 `json:"userVerification"`
}

type credentialDescriptor struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

// Register answers PublicKeyCredentialCreationOptions (go-webauthn's JSON)
// from the page at originURL with the JSON of credential.toJSON(): an
// attestation of format "none" over the new credential.
func (a *Authenticator) Register(originURL string, creationOptionsJSON []byte) ([]byte, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var opts creationOptions
	if err := json.Unmarshal(creationOptionsJSON, &opts); err != nil {
		return nil, fmt.Errorf("authenticator: creation options: %w", err)
	}
	origin, host, err := originOf(originURL)
	if err != nil {
		return nil, err
	}
	rpID := opts.RP.ID
	if rpID == "" {
		rpID = host
	}
	if rpID != host && !strings.HasSuffix(host, "."+rpID) {
		return nil, fmt.Errorf("authenticator: RP ID %q is not %s or a parent of it (SecurityError)", rpID, host)
	}
	es256 := false
	for _, p := range opts.PubKeyCredParams {
		es256 = es256 || (p.Type == "public-key" && p.Alg == coseAlgES256)
	}
	if !es256 {
		return nil, errors.New("authenticator: the RP does not accept ES256 (NotSupportedError)")
	}
	for _, d := range opts.ExcludeCredentials {
		if id, err := decodeB64URL(d.ID); err == nil && bytes.Equal(id, a.CredentialID) {
			return nil, errors.New("authenticator: this passkey is already registered (InvalidStateError)")
		}
	}
	user, err := decodeB64URL(opts.User.ID)
	if err != nil || len(user) == 0 {
		return nil, fmt.Errorf("authenticator: user.id is not base64url: %v", err)
	}
	challenge, err := decodeB64URL(opts.Challenge)
	if err != nil {
		return nil, fmt.Errorf("authenticator: challenge is not base64url: %w", err)
	}
	a.UserHandle, a.RPID, a.Counter = user, rpID, 0

	clientData := a.clientData("webauthn.create", challenge, origin)
	var attested bytes.Buffer
	attested.Write(make([]byte, 16)) // AAGUID: none
	_ = binary.Write(&attested, binary.BigEndian, uint16(len(a.CredentialID)))
	attested.Write(a.CredentialID)
	attested.Write(a.PublicKeyCOSE())
	authData := a.authData(flagAT, a.Counter, attested.Bytes())

	enc, err := cbor.CTAP2EncOptions().EncMode()
	if err != nil {
		return nil, err
	}
	attestation, err := enc.Marshal(map[string]any{"fmt": "none", "attStmt": map[string]any{}, "authData": authData})
	if err != nil {
		return nil, fmt.Errorf("authenticator: attestation object: %w", err)
	}
	spki, err := x509.MarshalPKIXPublicKey(&a.key.PublicKey)
	if err != nil {
		return nil, err
	}
	extensions := map[string]any{}
	if v, ok := opts.Extensions["credProps"].(bool); ok && v {
		extensions["credProps"] = map[string]any{"rk": true}
	}
	return json.Marshal(map[string]any{
		"id":                      b64url(a.CredentialID),
		"rawId":                   b64url(a.CredentialID),
		"type":                    "public-key",
		"authenticatorAttachment": "platform",
		"clientExtensionResults":  extensions,
		"response": map[string]any{
			"clientDataJSON":     b64url(clientData),
			"attestationObject":  b64url(attestation),
			"authenticatorData":  b64url(authData),
			"transports":         []string{"internal", "hybrid"},
			"publicKey":          b64url(spki),
			"publicKeyAlgorithm": coseAlgES256,
		},
	})
}

// Assert answers PublicKeyCredentialRequestOptions from the page at
// originURL with the JSON of an assertion's credential.toJSON(): the counter
// moves up, and the signature covers authenticatorData || SHA-256(clientDataJSON).
func (a *Authenticator) Assert(originURL string, requestOptionsJSON []byte) ([]byte, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.RPID == "" || len(a.UserHandle) == 0 {
		return nil, errors.New("authenticator: not registered anywhere (NotAllowedError)")
	}
	var opts requestOptions
	if err := json.Unmarshal(requestOptionsJSON, &opts); err != nil {
		return nil, fmt.Errorf("authenticator: request options: %w", err)
	}
	origin, host, err := originOf(originURL)
	if err != nil {
		return nil, err
	}
	rpID := opts.RPID
	if rpID == "" {
		rpID = host
	}
	if rpID != a.RPID {
		return nil, fmt.Errorf("authenticator: no passkey for RP ID %q, only for %q (NotAllowedError)", rpID, a.RPID)
	}
	if len(opts.AllowCredentials) > 0 {
		allowed := false
		for _, d := range opts.AllowCredentials {
			id, err := decodeB64URL(d.ID)
			allowed = allowed || (err == nil && bytes.Equal(id, a.CredentialID))
		}
		if !allowed {
			return nil, errors.New("authenticator: this passkey is not in allowCredentials (NotAllowedError)")
		}
	}
	challenge, err := decodeB64URL(opts.Challenge)
	if err != nil {
		return nil, fmt.Errorf("authenticator: challenge is not base64url: %w", err)
	}
	if !a.Misbehave.FrozenCounter {
		a.Counter++
	}
	clientData := a.clientData("webauthn.get", challenge, origin)
	authData := a.authData(0, a.Counter, nil)
	cdHash := sha256.Sum256(clientData)
	digest := sha256.Sum256(append(bytes.Clone(authData), cdHash[:]...))
	sig, err := ecdsa.SignASN1(rand.Reader, a.key, digest[:])
	if err != nil {
		return nil, fmt.Errorf("authenticator: sign: %w", err)
	}
	return json.Marshal(map[string]any{
		"id":                      b64url(a.CredentialID),
		"rawId":                   b64url(a.CredentialID),
		"type":                    "public-key",
		"authenticatorAttachment": "platform",
		"clientExtensionResults":  map[string]any{},
		"response": map[string]any{
			"clientDataJSON":    b64url(clientData),
			"authenticatorData": b64url(authData),
			"signature":         b64url(sig),
			"userHandle":        b64url(a.UserHandle),
		},
	})
}

// clientData is the CollectedClientData a browser serializes.
func (a *Authenticator) clientData(typ string, challenge []byte, origin string) []byte {
	if a.Misbehave.Origin != "" {
		origin = a.Misbehave.Origin
	}
	b, _ := json.Marshal(struct {
		Type        string `json:"type"`
		Challenge   string `json:"challenge"`
		Origin      string `json:"origin"`
		CrossOrigin bool   `json:"crossOrigin"`
	}{typ, b64url(challenge), origin, false})
	if a.Misbehave.OriginFirst != "" {
		first, _ := json.Marshal(a.Misbehave.OriginFirst)
		b = bytes.Replace(b, []byte(`"origin":`), []byte(`"origin":`+string(first)+`,"origin":`), 1)
	}
	return b
}

// authData is rpIdHash || flags || counter || rest, with UP and UV (unless
// told to leave UV out) and the backup flags of a synced passkey.
func (a *Authenticator) authData(extraFlags byte, counter uint32, rest []byte) []byte {
	rpID := a.RPID
	if a.Misbehave.RPID != "" {
		rpID = a.Misbehave.RPID
	}
	rpHash := sha256.Sum256([]byte(rpID))
	flags := byte(flagUP|flagUV) | extraFlags
	if a.Misbehave.NoUserVerification {
		flags &^= flagUV
	}
	if a.BackupEligible {
		flags |= flagBE | flagBS
	}
	out := make([]byte, 0, 37+len(rest))
	out = append(out, rpHash[:]...)
	out = append(out, flags)
	out = binary.BigEndian.AppendUint32(out, counter)
	return append(out, rest...)
}

// originOf splits a page URL into its origin and host name.
func originOf(pageURL string) (origin, host string, err error) {
	u, err := url.Parse(pageURL)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "", "", fmt.Errorf("authenticator: %q is not a page URL", pageURL)
	}
	return u.Scheme + "://" + u.Host, u.Hostname(), nil
}

func b64url(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func decodeB64URL(s string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
}
