package ask

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// CheckCode is the two-digit code an agent shows the person beside one of
// the riskiest asks, and the ask page asks them to pick before they sign:
// the first two bytes of the payload's SHA-256, read as a big-endian
// uint16, mod 100, zero-padded ("07"). It is derived from the hash alone,
// so an agent computes it from payload_sha256 and the signature over the
// hash already covers it; the point is that the person looks at both
// screens. A payloadSHA256 that is not 64 hex characters has no code: "".
func CheckCode(payloadSHA256 string) string {
	sum, err := hex.DecodeString(payloadSHA256)
	if err != nil || len(sum) != 32 {
		return ""
	}
	return fmt.Sprintf("%02d", (uint16(sum[0])<<8|uint16(sum[1]))%100)
}

// NeedsCheckCode says whether an ask of kind with this canonical payload is
// one of the riskiest, whose approval asks the person for its check code:
// a roll, a tool call through the gate, and a run whose effect is remote
// or production. A payload that does not read needs one: when in doubt, ask.
func NeedsCheckCode(kind, canonicalPayload string) bool {
	switch kind {
	case KindRoll, KindToolCall:
		return true
	case KindRun:
		var p struct {
			Run struct {
				Effect string `json:"effect"`
			} `json:"run"`
		}
		if err := json.Unmarshal([]byte(canonicalPayload), &p); err != nil {
			return true
		}
		return p.Run.Effect == "remote" || p.Run.Effect == "production"
	}
	return false
}
