package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/countersign/countersign/ask"
)

// The phases and decisions an audit event names.
const (
	PhaseAllowed = "allowed" // the tool ran and succeeded
	PhaseRefused = "refused" // the tool never ran
	PhaseError   = "error"   // the tool ran, or was to run, and failed

	DecisionAllow = "allow"
	DecisionDeny  = "deny"
)

// AuditEvent is one governed call, written once it is over. It is the only
// place where both the caller and the approver appear: the downstream API
// sees one service account.
type AuditEvent struct {
	Time     time.Time `json:"time"`     // when the call arrived
	Tool     string    `json:"tool"`     // the tool called
	Label    string    `json:"label"`    // the tool's audit label for these arguments
	Caller   string    `json:"caller"`   // who called
	Approver string    `json:"approver"` // the person who approved or declined, or ""
	Phase    string    `json:"phase"`    // allowed, refused or error
	Decision string    `json:"decision"` // allow or deny
	Reason   string    `json:"reason"`   // why it was refused or failed, or ""
	// ArgumentsSHA256 is the hex SHA-256 of the call's arguments in RFC
	// 8785 canonical form (ArgumentsHash): what ran, or would have, exactly
	// as sent; "" only for arguments that are not I-JSON, which are refused.
	ArgumentsSHA256 string `json:"argumentsSha256"`
	// EditedArgumentsSHA256 is the hash, taken alike, of the arguments the
	// call ran with when the approver edited them; "" when it ran as sent.
	EditedArgumentsSHA256 string `json:"editedArgumentsSha256,omitempty"`
	DurationMs            int64  `json:"durationMs"` // from arrival to the end, the wait for a person included
}

// ArgumentsHash is the lower-case hex SHA-256 of a call's arguments in RFC
// 8785 (JCS) canonical form, hashed as the service hashes a payload
// (ask.CanonicalHash), so that key order and white space do not change it.
// Absent arguments are the empty object. Arguments that are not I-JSON
// (duplicate names, lone surrogates, numbers out of range) have no
// canonical form: two readers could take them two ways.
func ArgumentsHash(args json.RawMessage) (string, error) {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage(`{}`)
	}
	_, sum, err := ask.CanonicalHash(args)
	if err != nil {
		var r *ask.Refusal
		if errors.As(err, &r) {
			return "", errors.New(r.Msg)
		}
		return "", err
	}
	return sum, nil
}

// AuditFunc receives every audit event. It must not block for long: the
// caller's answer waits for it.
type AuditFunc func(ctx context.Context, e AuditEvent)

// SlogAudit writes audit events to a logger at level Info, one attribute per
// member. It is the default, on slog.Default().
func SlogAudit(log *slog.Logger) AuditFunc {
	return func(ctx context.Context, e AuditEvent) {
		log.LogAttrs(ctx, slog.LevelInfo, "gate",
			slog.Time("time", e.Time), slog.String("tool", e.Tool), slog.String("label", e.Label),
			slog.String("caller", e.Caller), slog.String("approver", e.Approver), slog.String("phase", e.Phase),
			slog.String("decision", e.Decision), slog.String("reason", e.Reason), slog.String("argumentsSha256", e.ArgumentsSHA256),
			slog.Int64("durationMs", e.DurationMs))
	}
}

// JSONLines writes audit events to w as one JSON object a line. A failed
// write is reported to onError (which may be nil).
func JSONLines(w io.Writer, onError func(error)) AuditFunc {
	var mu sync.Mutex
	return func(_ context.Context, e AuditEvent) {
		b, err := json.Marshal(e)
		if err == nil {
			mu.Lock()
			_, err = w.Write(append(b, '\n'))
			mu.Unlock()
		}
		if err != nil && onError != nil {
			onError(err)
		}
	}
}
