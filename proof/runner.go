package proof

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"strconv"
)

// RunnerDomain separates a runner's report signatures from every other use
// of its key.
const RunnerDomain = "countersign/runner-report/v1"

// RunnerReport is the signature a runner puts on one report of a pinned run
// (approvals_add_progress "runner"); docs/runners.md specifies it.
type RunnerReport struct {
	RunnerID  string `json:"runner_id"`
	SignedAt  int64  `json:"signed_at"` // unix seconds
	Signature string `json:"signature"` // unpadded base64url of the 64-byte Ed25519 signature
}

// NoteSHA256 is the lower-case hex SHA-256 of a report's note, the form a
// report signs it in.
func NoteSHA256(note string) string {
	sum := sha256.Sum256([]byte(note))
	return hex.EncodeToString(sum[:])
}

// RunnerMessage is the bytes a runner signs for one report:
//
//	lp(domain) || lp(approval_id) || lp(payload_sha256) || lp(step) || lp(note_sha256) || lp(signed_at)
//
// with lp(x) the length of x as a 4-byte big-endian unsigned integer followed
// by x, the same layout as the decision challenge; note_sha256 is the
// lower-case hex SHA-256 of the note's UTF-8 bytes and signed_at is decimal
// unix seconds. Ed25519 signs these bytes directly (no hash before).
func RunnerMessage(approvalID, payloadSHA256, step, note string, signedAt int64) []byte {
	var buf bytes.Buffer
	for _, field := range []string{RunnerDomain, approvalID, payloadSHA256, step, NoteSHA256(note), strconv.FormatInt(signedAt, 10)} {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(field)))
		buf.Write(n[:])
		buf.WriteString(field)
	}
	return buf.Bytes()
}

// SignRunnerReport signs one report with the runner's private key.
func SignRunnerReport(key ed25519.PrivateKey, runnerID, approvalID, payloadSHA256, step, note string, signedAt int64) RunnerReport {
	sig := ed25519.Sign(key, RunnerMessage(approvalID, payloadSHA256, step, note, signedAt))
	return RunnerReport{RunnerID: runnerID, SignedAt: signedAt, Signature: base64.RawURLEncoding.EncodeToString(sig)}
}

// ErrRunnerSignature is a report signature that does not verify.
var ErrRunnerSignature = errors.New("the runner's signature does not verify over this approval, payload hash, step, note and signed_at with the run's runner_public_key")

// VerifyRunnerReport checks a report's signature with the runner's public
// key, written as the unpadded base64url of its 32 bytes.
func VerifyRunnerReport(publicKey string, approvalID, payloadSHA256, step, note string, r RunnerReport) error {
	pub, err := base64.RawURLEncoding.DecodeString(publicKey)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		return errors.New("runner_public_key is not the unpadded base64url of a 32-byte Ed25519 key")
	}
	sig, err := base64.RawURLEncoding.DecodeString(r.Signature)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return errors.New("the signature is not the unpadded base64url of a 64-byte Ed25519 signature")
	}
	if !ed25519.Verify(pub, RunnerMessage(approvalID, payloadSHA256, step, note, r.SignedAt), sig) {
		return ErrRunnerSignature
	}
	return nil
}
