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
// ("approve", "deny", "not_mine", "option:<index>", "question:<sha256 hex
// of the question text>", "reply:<sha256 hex of the reply>" or
// "approve_edited:<sha256 hex of the edited payload>" or "approve_for:<sha256
// hex of the window's canonical JSON>") are their UTF-8 bytes; and nonce is the 32 raw
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
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/protocol/webauthncose"
	"github.com/gowebpki/jcs"
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

// AnswerDecision is the decision string of a free-text answer to a request's
// question: its text is hashed so the signature covers exactly what was answered.
func AnswerDecision(text string) string {
	sum := sha256.Sum256([]byte(text))
	return "answer:" + hex.EncodeToString(sum[:])
}

// ReplyDecision is the decision string of a deny that answers in place of
// the tool: its reply is hashed so the signature covers exactly what the
// tool's caller is told.
func ReplyDecision(text string) string {
	sum := sha256.Sum256([]byte(text))
	return "reply:" + hex.EncodeToString(sum[:])
}

// WindowDecision is the decision string of an approve that also approves,
// for a while, the asks of the same agent, kind and target: window is the
// RFC 8785 JSON of that window (docs/proof.md §3), hashed so the signature
// covers exactly what is approved ahead.
func WindowDecision(window string) string {
	sum := sha256.Sum256([]byte(window))
	return "approve_for:" + hex.EncodeToString(sum[:])
}

// ValidDecision says whether d is a decision string of the layout.
func ValidDecision(d string) bool {
	switch {
	case d == "approve", d == "deny", d == "not_mine":
		return true
	case strings.HasPrefix(d, "option:"):
		n, err := strconv.Atoi(strings.TrimPrefix(d, "option:"))
		return err == nil && n >= 0 && n < 100 && strconv.Itoa(n) == strings.TrimPrefix(d, "option:")
	case strings.HasPrefix(d, "choice:"):
		n, err := strconv.Atoi(strings.TrimPrefix(d, "choice:"))
		return err == nil && n >= 0 && n < 100 && strconv.Itoa(n) == strings.TrimPrefix(d, "choice:")
	case strings.HasPrefix(d, "question:"), strings.HasPrefix(d, "answer:"), strings.HasPrefix(d, "reply:"), strings.HasPrefix(d, editedPrefix), strings.HasPrefix(d, "approve_for:"):
		_, h, _ := strings.Cut(d, ":")
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
// the canonical payload the hash covers, the key, and the assertion.
// Unsigned rides along for people to read; no signature covers it.
// docs/proof.md specifies every member.
type Proof struct {
	Format        string `json:"format"` // "countersign-proof/v1"
	Domain        string `json:"domain"`
	ApprovalID    string `json:"approval_id"`
	PayloadSHA256 string `json:"payload_sha256"`
	Payload       B64    `json:"payload,omitempty"` // RFC 8785 (JCS) bytes; absent in proofs made before it was added
	// EditedPayload is the payload as the person edited and approved it
	// (RFC 8785 bytes), on an approve_edited decision, which signs its hash.
	EditedPayload     B64    `json:"edited_payload,omitempty"`
	Decision          string `json:"decision"`
	Nonce             B64    `json:"nonce"`
	CredentialID      B64    `json:"credential_id"`
	PublicKey         B64    `json:"public_key"` // COSE_Key
	RPID              string `json:"rp_id"`
	AuthenticatorData B64    `json:"authenticator_data"`
	ClientDataJSON    B64    `json:"client_data_json"`
	Signature         B64    `json:"signature"`
	// Requirement is the approval rule's requirement the signature binds,
	// on an ask a rule covers (domain DomainRequirement); absent otherwise.
	Requirement *Requirement `json:"requirement,omitempty"`
	// Batch is the list of decisions one assertion signed, when this proof's
	// decision is one of a batch (domain countersign/batch/v1).
	Batch    []BatchItem `json:"batch,omitempty"`
	Unsigned Unsigned    `json:"unsigned"`
}

// Format names the proof layout.
const Format = "countersign-proof/v1"

// Unsigned claims: who the server says signed, and when. Not covered by the signature.
type Unsigned struct {
	Person    string    `json:"person"`
	AccountID string    `json:"account_id"`
	DecidedAt time.Time `json:"decided_at"`
	Question  string    `json:"question,omitempty"` // the text a question decision hashes
	Answer    string    `json:"answer,omitempty"`   // the text an answer decision hashes
	Reply     string    `json:"reply,omitempty"`    // the text a reply decision hashes
	// ApproveFor is the window's JSON an approve_for decision hashes: the
	// agent, kind and target whose asks are approved, and for how many minutes.
	ApproveFor string `json:"approve_for,omitempty"`
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
	CredentialID B64        `json:"credential_id"`
	PublicKey    B64        `json:"public_key"`
	Person       string     `json:"person"`
	Name         string     `json:"name"`
	CreatedAt    time.Time  `json:"created_at"`
	Removed      bool       `json:"removed,omitempty"`
	RemovedAt    *time.Time `json:"removed_at,omitempty"` // absent in exports made before it was added
}

// ClockSkew is how far apart two clocks of one service may be: a key's
// created_at and removed_at and a proof's decided_at are each stamped by
// the instance that did it, and several instances may share one database.
const ClockSkew = time.Second

// The member names a reader accepts, exactly as written (encoding/json alone
// would also take "Decision" for "decision").
var (
	proofMembers    = []string{"format", "domain", "approval_id", "payload_sha256", "payload", "edited_payload", "decision", "nonce", "credential_id", "public_key", "rp_id", "authenticator_data", "client_data_json", "signature", "requirement", "batch", "unsigned"}
	unsignedMembers = []string{"person", "account_id", "decided_at", "question", "answer", "reply", "approve_for"}
	keysMembers     = []string{"format", "account_id", "rp_id", "exported_at", "keys"}
	deviceMembers   = []string{"credential_id", "public_key", "person", "name", "created_at", "removed", "removed_at"}
)

// Parse reads a proof strictly: one I-JSON object (no member named twice
// at any depth, no trailing data) whose members, and those of unsigned, are all
// known and spelt exactly. Two readers can then never see two different
// proofs in the same bytes.
func Parse(raw []byte) (*Proof, error) {
	if err := strictObject(raw, proofMembers, "unsigned", unsignedMembers); err != nil {
		return nil, err
	}
	var p Proof
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	if p.Requirement != nil {
		var top map[string]json.RawMessage
		_ = json.Unmarshal(raw, &top)
		if _, err := ParseRequirement(top["requirement"]); err != nil {
			return nil, err
		}
	}
	return &p, nil
}

// ParseKeys reads a key export as strictly as Parse reads a proof.
func ParseKeys(raw []byte) (*Keys, error) {
	if err := strictObject(raw, keysMembers, "keys", deviceMembers); err != nil {
		return nil, err
	}
	var k Keys
	if err := json.Unmarshal(raw, &k); err != nil {
		return nil, err
	}
	for _, d := range k.Keys {
		if d.RemovedAt != nil && !d.Removed {
			return nil, fmt.Errorf("key %s has a removed_at but is not removed", base64.RawURLEncoding.EncodeToString(d.CredentialID))
		}
	}
	return &k, nil
}

// strictObject checks that raw is I-JSON holding one object with only the
// names given, and that its member inner (an object, or an array of
// objects) holds only innerNames.
func strictObject(raw []byte, names []string, inner string, innerNames []string) error {
	if err := NoDuplicateMembers(raw); err != nil {
		return fmt.Errorf("not I-JSON (RFC 7493): %w", err)
	}
	if _, err := jcs.Transform(raw); err != nil {
		return fmt.Errorf("not I-JSON (RFC 7493: one value, no duplicate member names, valid UTF-8): %w", err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil || top == nil {
		return errors.New("not a JSON object")
	}
	if err := knownNames(top, names, ""); err != nil {
		return err
	}
	in, ok := top[inner]
	if !ok || string(in) == "null" {
		return nil
	}
	var objects []map[string]json.RawMessage
	if in[0] == '[' {
		if err := json.Unmarshal(in, &objects); err != nil {
			return fmt.Errorf("%s: must be an array of objects", inner)
		}
	} else {
		var one map[string]json.RawMessage
		if err := json.Unmarshal(in, &one); err != nil {
			return fmt.Errorf("%s: must be an object", inner)
		}
		objects = append(objects, one)
	}
	for _, o := range objects {
		if err := knownNames(o, innerNames, inner+"."); err != nil {
			return err
		}
	}
	return nil
}

func knownNames(o map[string]json.RawMessage, names []string, prefix string) error {
	for name := range o {
		if !slices.Contains(names, name) {
			return fmt.Errorf("unknown member %q", prefix+name)
		}
	}
	return nil
}

// Failure is one check a proof failed. Check is the check's name in
// docs/proof.md, stable across versions; Reason says what was wrong.
type Failure struct {
	Check  string
	Reason string
}

func (f *Failure) Error() string { return f.Check + ": " + f.Reason }

func fail(check, format string, args ...any) *Failure {
	return &Failure{Check: check, Reason: fmt.Sprintf(format, args...)}
}

// Expect is what a verifier holds the proof against, besides the proof itself.
type Expect struct {
	// RPID, when not empty, must equal the proof's rp_id.
	RPID string
	// Origin is the one origin the clientDataJSON may name. Empty means
	// "https://" + the RP ID. It must be https://<rp id or a subdomain of
	// it>[:port], or http://localhost[:port] for a local service.
	Origin string
	// Keys, when not nil, must list the proof's credential with its public key.
	Keys *Keys
}

// Result is what a valid proof shows.
type Result struct {
	ApprovalID    string
	PayloadSHA256 string
	Decision      string
	CredentialID  string // base64url
	Origin        string
	PayloadTold   bool // the proof carries the payload and it hashes to payload_sha256
	// EditedSHA256 is the hash of the payload as the person edited it, on an
	// approve_edited decision; Edits are the members they changed, when the
	// proof carries both payloads.
	EditedSHA256  string
	Edits         []Edit
	KeyRegistered bool   // true only when checked against a key export
	KeyPerson     string // the person the export names for the key
	SignCount     uint32
}

// ExpectedOrigin is the origin the clientDataJSON of a proof for rpID must
// name, given the origin a verifier was told ("" for none). It refuses an
// origin that is not the RP ID's own (or a subdomain's) over https, or
// http://localhost for a local RP ID.
func ExpectedOrigin(rpID, given string) (string, error) {
	if given == "" {
		return "https://" + rpID, nil
	}
	u, err := url.Parse(given)
	if err != nil || u.Host == "" || u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" ||
		u.Scheme+"://"+u.Host != given {
		return "", fail("origin", "%q is not an origin (scheme://host[:port], nothing after)", given)
	}
	host := u.Hostname()
	if host != rpID && !strings.HasSuffix(host, "."+rpID) {
		return "", fail("origin", "origin %q is not of the RP ID %q or one of its subdomains", given, rpID)
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && host == "localhost":
	default:
		return "", fail("origin", "origin %q is not https (http is allowed for localhost only)", given)
	}
	return given, nil
}

// Verify checks a proof offline: its members are well formed; the payload,
// when the proof carries it, is canonical and hashes to payload_sha256; the
// challenge recomputed from its parts matches clientDataJSON, which is of a
// webauthn.get made at the expected origin and not cross-origin; the RP ID
// hash and the user-present and user-verified flags are in
// authenticatorData; and the signature verifies with the public key. With
// want.Keys it also checks that the key is a registered device key of the
// account, and that the key was registered and not yet removed at the
// proof's decided_at. A proof that fails returns a *Failure.
func Verify(p *Proof, want Expect) (*Result, error) {
	if p.Format != Format {
		return nil, fail("format", "format is %q, want %q", p.Format, Format)
	}
	switch {
	case p.Batch != nil:
		if err := checkBatch(p); err != nil {
			return nil, err
		}
	case p.Requirement == nil && p.Domain != Domain:
		return nil, fail("domain", "domain is %q, want %q", p.Domain, Domain)
	case p.Requirement != nil && p.Domain != DomainRequirement:
		return nil, fail("domain", "domain is %q, want %q for a proof that binds a requirement", p.Domain, DomainRequirement)
	}
	if p.ApprovalID == "" {
		return nil, fail("approval_id", "approval_id is empty")
	}
	if !ValidDecision(p.Decision) {
		return nil, fail("decision", "decision %q is not one of approve, deny, not_mine, option:<index>, question:<sha256>, choice:<index>, answer:<sha256>, reply:<sha256>, approve_edited:<sha256>, approve_for:<sha256>", p.Decision)
	}
	if !isLowerHex(p.PayloadSHA256, 64) {
		return nil, fail("payload_sha256", "payload_sha256 is not 64 lower-case hex characters")
	}
	told := p.Payload != nil
	if told {
		canonical, err := jcs.Transform(p.Payload)
		if err != nil {
			return nil, fail("payload", "payload is not I-JSON: %v", err)
		}
		if !bytes.Equal(canonical, p.Payload) {
			return nil, fail("payload", "payload is not in its RFC 8785 canonical form")
		}
		if sum := sha256.Sum256(p.Payload); hex.EncodeToString(sum[:]) != p.PayloadSHA256 {
			return nil, fail("payload", "the payload does not hash to payload_sha256: its SHA-256 is %x", sum)
		}
	}
	edits, err := checkEdited(p)
	if err != nil {
		return nil, err
	}
	if len(p.Nonce) != NonceSize {
		return nil, fail("nonce", "nonce has %d bytes, want %d", len(p.Nonce), NonceSize)
	}
	if p.RPID == "" {
		return nil, fail("rp_id", "rp_id is empty")
	}
	if want.RPID != "" && want.RPID != p.RPID {
		return nil, fail("rp_id", "rp_id is %q, want %q", p.RPID, want.RPID)
	}
	if strings.HasPrefix(p.Decision, "question:") && p.Unsigned.Question != "" && QuestionDecision(p.Unsigned.Question) != p.Decision {
		return nil, fail("question", "the question text beside the proof does not hash to the signed decision")
	}
	if strings.HasPrefix(p.Decision, "answer:") && p.Unsigned.Answer != "" && AnswerDecision(p.Unsigned.Answer) != p.Decision {
		return nil, fail("answer", "the answer text beside the proof does not hash to the signed decision")
	}
	if strings.HasPrefix(p.Decision, "reply:") && p.Unsigned.Reply != "" && ReplyDecision(p.Unsigned.Reply) != p.Decision {
		return nil, fail("reply", "the reply text beside the proof does not hash to the signed decision")
	}
	if strings.HasPrefix(p.Decision, "approve_for:") && p.Unsigned.ApproveFor != "" && WindowDecision(p.Unsigned.ApproveFor) != p.Decision {
		return nil, fail("approve_for", "the window beside the proof does not hash to the signed decision")
	}
	origin, err := ExpectedOrigin(p.RPID, want.Origin)
	if err != nil {
		return nil, err
	}
	var challenge []byte
	if p.Batch != nil {
		challenge, err = BatchChallenge(p.Batch, p.Nonce)
	} else {
		challenge, err = DecisionChallenge(p.ApprovalID, p.PayloadSHA256, p.Decision, p.Requirement, p.Nonce)
	}
	if err != nil {
		return nil, fail("requirement", "%v", err)
	}

	cd, err := readClientData(p.ClientDataJSON)
	if err != nil {
		return nil, fail("client_data_json", "%v", err)
	}
	if cd.Type != "webauthn.get" {
		return nil, fail("type", "client_data_json type is %q, want webauthn.get", cd.Type)
	}
	signed, err := base64.RawURLEncoding.DecodeString(cd.Challenge)
	if err != nil || !bytes.Equal(signed, challenge) {
		return nil, fail("challenge", "client_data_json challenge is not the challenge of this approval, payload hash, decision, requirement and nonce")
	}
	if cd.Origin != origin {
		return nil, fail("origin", "client_data_json origin is %q, want %q", cd.Origin, origin)
	}
	if cd.CrossOrigin != nil && *cd.CrossOrigin || cd.TopOrigin != nil {
		return nil, fail("cross_origin", "the assertion was made in a frame of another origin (crossOrigin true or a topOrigin)")
	}

	if len(p.AuthenticatorData) < 37 {
		return nil, fail("authenticator_data", "authenticator_data has %d bytes, want at least 37", len(p.AuthenticatorData))
	}
	rpHash := sha256.Sum256([]byte(p.RPID))
	if !bytes.Equal(p.AuthenticatorData[:32], rpHash[:]) {
		return nil, fail("rp_id_hash", "authenticator_data was made for another RP ID than %q", p.RPID)
	}
	if flags := p.AuthenticatorData[32]; flags&flagUP == 0 || flags&flagUV == 0 {
		return nil, fail("flags", "authenticator_data does not say the user was present and verified")
	}
	var ad protocol.AuthenticatorData
	if err := ad.Unmarshal(p.AuthenticatorData); err != nil {
		return nil, fail("authenticator_data", "%v", err)
	}

	key, err := webauthncose.ParsePublicKey(p.PublicKey)
	if err != nil {
		return nil, fail("public_key", "%v", err)
	}
	cdHash := sha256.Sum256(p.ClientDataJSON)
	ok, err := webauthncose.VerifySignature(key, append(bytes.Clone(p.AuthenticatorData), cdHash[:]...), p.Signature)
	if err != nil || !ok {
		return nil, fail("signature", "signature does not verify with public_key")
	}

	res := &Result{
		ApprovalID: p.ApprovalID, PayloadSHA256: p.PayloadSHA256, Decision: p.Decision, PayloadTold: told, Edits: edits,
		CredentialID: base64.RawURLEncoding.EncodeToString(p.CredentialID), Origin: cd.Origin, SignCount: ad.Counter,
	}
	res.EditedSHA256, _ = EditedSHA256(p.Decision)
	if keys := want.Keys; keys != nil {
		if keys.Format != KeysFormat {
			return nil, fail("keys", "keys format is %q, want %q", keys.Format, KeysFormat)
		}
		if keys.RPID != "" && keys.RPID != p.RPID {
			return nil, fail("keys", "keys are of RP ID %q, the proof of %q", keys.RPID, p.RPID)
		}
		if p.Unsigned.AccountID != "" && keys.AccountID != p.Unsigned.AccountID {
			return nil, fail("keys", "keys are of account %s, the proof names account %s", keys.AccountID, p.Unsigned.AccountID)
		}
		for _, k := range keys.Keys {
			if bytes.Equal(k.CredentialID, p.CredentialID) {
				if !bytes.Equal(k.PublicKey, p.PublicKey) {
					return nil, fail("keys", "the key export holds another public key for this credential id")
				}
				res.KeyRegistered, res.KeyPerson = true, k.Person
				if err := keyLived(k, p.Unsigned.DecidedAt); err != nil {
					return nil, err
				}
				break
			}
		}
		if !res.KeyRegistered {
			return nil, fail("keys", "the signing key is not a registered device key of the account")
		}
	}
	return res, nil
}

// keyLived checks that the key was registered, and not yet removed, at the
// time the proof says it was decided: a key cannot have signed a decision
// made before it existed or after it was removed. decided_at is a claim no
// signature covers, so this holds the proof's own word against the export;
// ClockSkew allows for the two times being stamped by two instances.
func keyLived(k DeviceKey, decided time.Time) error {
	if decided.IsZero() {
		return fail("key_lifetime", "the proof does not say when it was decided (unsigned.decided_at), so it cannot be held against "+
			"the times its key was registered and removed")
	}
	if k.CreatedAt.After(decided.Add(ClockSkew)) {
		return fail("key_lifetime", "the signing key was registered at %s, after the decision's time %s (unsigned.decided_at): "+
			"a key registered after a decision cannot have signed it", k.CreatedAt.UTC().Format(time.RFC3339Nano), decided.UTC().Format(time.RFC3339Nano))
	}
	if k.RemovedAt != nil && !k.RemovedAt.After(decided.Add(-ClockSkew)) {
		return fail("key_lifetime", "the signing key was removed at %s, before the decision's time %s (unsigned.decided_at): "+
			"a key removed before a decision cannot have signed it", k.RemovedAt.UTC().Format(time.RFC3339Nano), decided.UTC().Format(time.RFC3339Nano))
	}
	return nil
}

// Authenticator data flags (WebAuthn §6.1).
const (
	flagUP = 0x01
	flagUV = 0x04
)

// clientData holds the members of clientDataJSON a verifier reads;
// crossOrigin and topOrigin are pointers so that their absence shows.
type clientData struct {
	Type        string
	Challenge   string
	Origin      string
	CrossOrigin *bool
	TopOrigin   *string
}

// readClientData reads the members of clientDataJSON by their exact names
// (encoding/json alone would take "Origin" for "origin"), refusing one that
// names any member twice (encoding/json alone would take the last).
func readClientData(raw []byte) (*clientData, error) {
	if err := NoDuplicateMembers(raw); err != nil {
		return nil, err
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil || members == nil {
		return nil, errors.New("not a JSON object")
	}
	cd := &clientData{}
	for name, dst := range map[string]any{"type": &cd.Type, "challenge": &cd.Challenge, "origin": &cd.Origin,
		"crossOrigin": &cd.CrossOrigin, "topOrigin": &cd.TopOrigin} {
		if v, ok := members[name]; ok {
			if err := json.Unmarshal(v, dst); err != nil {
				return nil, fmt.Errorf("member %s: %w", name, err)
			}
		}
	}
	return cd, nil
}

func isLowerHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, c := range []byte(s) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
