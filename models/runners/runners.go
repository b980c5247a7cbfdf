package runners

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/countersign/countersign/ask"

	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/proof"
	"gorm.io/gorm"
)

// Runner is an enrolled executor of pinned runs: a process on a host that
// holds the Ed25519 private key of PublicKey and a bearer token that can only
// read the runs that name it and report on them.
type Runner struct {
	ID         string
	AccountID  string
	Name       string
	PublicKey  string // unpadded base64url of the 32-byte Ed25519 public key
	TokenHash  string
	Disabled   bool
	DisabledBy string
	DisabledAt *time.Time
	CreatedBy  string
	CreatedAt  time.Time
}

// RunnerTokenPrefix starts every runner token. The runner's id follows it,
// then a dot and the secret, so that the runner host knows its own id from
// its token alone.
const RunnerTokenPrefix = "cs_runner_"

// IsRunnerToken says whether a bearer token is a runner's.
func IsRunnerToken(token string) bool { return strings.HasPrefix(token, RunnerTokenPrefix) }

// RunnerIDOfToken reads the runner id a runner token carries; "" when it is not a runner token.
func RunnerIDOfToken(token string) string {
	rest, ok := strings.CutPrefix(token, RunnerTokenPrefix)
	if !ok {
		return ""
	}
	id, _, ok := strings.Cut(rest, ".")
	if !ok || !strings.HasPrefix(id, "rnr_") {
		return ""
	}
	return id
}

var runnerName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// ParseRunnerPublicKey checks an Ed25519 public key written as the unpadded
// base64url of its 32 bytes (countersign runner init prints it so) and
// returns its bytes.
func ParseRunnerPublicKey(key string) ([]byte, error) {
	b, err := base64.RawURLEncoding.DecodeString(key)
	if err != nil || len(b) != 32 || base64.RawURLEncoding.EncodeToString(b) != key {
		return nil, core.Invalid("public_key", "an Ed25519 public key is the unpadded base64url of its 32 bytes (43 characters), as countersign runner init prints it")
	}
	return b, nil
}

// Steps on the account's audit chain for its runners.
const (
	StepRunnerEnrolled = "runner_enrolled"
	StepRunnerDisabled = "runner_disabled"
)

// EnrollRunner records a runner of the account with its public key and
// returns it with its token, which is shown this once: only its hash is kept.
func (s *Registry) EnrollRunner(ctx context.Context, accountID, name, publicKey, by string) (*Runner, string, error) {
	if !runnerName.MatchString(name) {
		return nil, "", core.Invalid("name", "a runner name is 1 to 64 letters, digits, '.', '_' or '-'")
	}
	publicKey = strings.TrimSpace(publicKey)
	if _, err := ParseRunnerPublicKey(publicKey); err != nil {
		return nil, "", err
	}
	r := &Runner{ID: core.NewID("rnr"), AccountID: accountID, Name: name, PublicKey: publicKey, CreatedBy: by, CreatedAt: s.Now()}
	token := core.RandomToken(RunnerTokenPrefix + r.ID + ".")
	r.TokenHash = core.HashToken(token)
	err := s.Write(ctx, func(tx *gorm.DB) error {
		var n int64
		if err := tx.Table("runners").Where("account_id = ? AND name = ?", accountID, name).Count(&n).Error; err != nil {
			return err
		}
		if n > 0 {
			return core.Refuse(core.FailedPrecondition, "name", "a runner named %q exists in this account", name)
		}
		if err := tx.Table("runners").Create(r).Error; err != nil {
			return err
		}
		return s.AccountEvent(tx, s.Now(), accountID, asks.ActorAdmin, by, StepRunnerEnrolled, "runner "+name+" ("+r.ID+") enrolled with key "+publicKey, nil)
	})
	if err != nil {
		return nil, "", fmt.Errorf("enroll runner: %w", err)
	}
	return r, token, nil
}

// RunnerByToken finds the runner a bearer token belongs to, disabled or not.
func (s *Registry) RunnerByToken(ctx context.Context, token string) (*Runner, error) {
	return s.RunnerByTokenHash(ctx, core.HashToken(token))
}

// RunnerByTokenHash is RunnerByToken for the token's hash (HashToken), as
// another instance names it when it forwards a call.
func (s *Registry) RunnerByTokenHash(ctx context.Context, hash string) (*Runner, error) {
	var r Runner
	err := s.DB().WithContext(ctx).Table("runners").Where("token_hash = ?", hash).Take(&r).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, core.Refuse(core.NotFound, "token", "no runner has this token")
	}
	if err != nil {
		return nil, fmt.Errorf("find runner: %w", err)
	}
	return &r, nil
}

// RunnerByID finds a runner of the account by its id.
func (s *Registry) RunnerByID(ctx context.Context, accountID, id string) (*Runner, error) {
	return s.runnerBy(s.DB().WithContext(ctx), accountID, "id", id)
}

// RunnerByName finds a runner of the account by its name.
func (s *Registry) RunnerByName(ctx context.Context, accountID, name string) (*Runner, error) {
	return s.runnerBy(s.DB().WithContext(ctx), accountID, "name", name)
}

func (s *Registry) runnerBy(tx *gorm.DB, accountID, column, value string) (*Runner, error) {
	var r Runner
	err := tx.Table("runners").Where("account_id = ? AND "+column+" = ?", accountID, value).Take(&r).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, core.Refuse(core.NotFound, column, "no runner with %s %q in this account", column, value)
	}
	if err != nil {
		return nil, fmt.Errorf("find runner: %w", err)
	}
	return &r, nil
}

// ListRunners returns the account's runners, oldest first.
func (s *Registry) ListRunners(ctx context.Context, accountID string) ([]Runner, error) {
	var out []Runner
	if err := s.DB().WithContext(ctx).Table("runners").Where("account_id = ?", accountID).Order("created_at, id").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list runners: %w", err)
	}
	return out, nil
}

// DisableRunner stops the runner's token for good and fails closed every run
// that names it and has not ended: pending, question, approved and in
// progress alike go to failed, in one transaction. Disabling a disabled
// runner changes nothing.
func (s *Registry) DisableRunner(ctx context.Context, accountID, name, by string) (*Runner, error) {
	var r *Runner
	err := s.Write(ctx, func(tx *gorm.DB) error {
		var err error
		if r, err = s.runnerBy(s.Lock(tx), accountID, "name", name); err != nil || r.Disabled {
			return err
		}
		now := s.Now()
		if err := tx.Table("runners").Where("id = ?", r.ID).
			Updates(map[string]any{"disabled": true, "disabled_by": by, "disabled_at": now}).Error; err != nil {
			return err
		}
		r.Disabled, r.DisabledBy, r.DisabledAt = true, by, &now
		var runs []asks.Approval
		if err := s.Lock(tx.Table("approvals")).Where("runner_id = ? AND account_id = ? AND status IN ?", r.ID, accountID,
			append(append([]asks.Status{}, asks.OpenStatuses...), asks.ActiveStatuses...)).Order("seq").Find(&runs).Error; err != nil {
			return fmt.Errorf("find the runner's runs: %w", err)
		}
		for i := range runs {
			if err := s.Move(tx, &runs[i], asks.StatusChange{Event: asks.EventRunnerDisabled, ActorKind: asks.ActorAdmin, Actor: by,
				Note: "runner " + r.Name + " was disabled; this run will not run"}); err != nil {
				return err
			}
		}
		return s.AccountEvent(tx, s.Now(), accountID, asks.ActorAdmin, by, StepRunnerDisabled, "runner "+r.Name+" ("+r.ID+") disabled", nil)
	})
	if err != nil {
		return nil, fmt.Errorf("disable runner: %w", err)
	}
	return r, nil
}

// CheckRunner refuses a pinned run whose runner is not an enrolled, enabled
// runner of the account with exactly the public key the run names.
func (s *Registry) CheckRunner(ctx context.Context, accountID, runnerID, publicKey string) error {
	r, err := s.RunnerByID(ctx, accountID, runnerID)
	if core.CodeOf(err) == core.NotFound {
		return core.Refuse(core.FailedPrecondition, "payload.run.runner_id", "runner %q is not enrolled in this account; an admin enrolls it (countersign runner enroll, or Admin → Runners) before pinned runs can name it", runnerID)
	}
	if err != nil {
		return err
	}
	if r.Disabled {
		return core.Refuse(core.FailedPrecondition, "payload.run.runner_id", "runner %q (%s) is disabled; name an enabled runner", r.ID, r.Name)
	}
	if r.PublicKey != publicKey {
		return core.Refuse(core.FailedPrecondition, "payload.run.runner_public_key", "is not the public key runner %q was enrolled with; send the enrolled one", r.ID)
	}
	return nil
}

// RunnerSteps are the steps a runner reports on a pinned run.
var RunnerSteps = []string{"started", "step", "done", "failed"}

// ReportWindow is how far a report's signed_at may be from the server's clock.
const ReportWindow = 5 * time.Minute

// RunnerReport is one report of a pinned run by the runner it names: the
// step, its note, the compare-and-set state and the runner's signature.
type RunnerReport struct {
	Step          string
	ExpectedState string
	Note          string
	Signature     proof.RunnerReport
}

// AddRunnerReport records a report of a pinned run by its runner. The
// signature must verify with the runner_public_key frozen in the run's
// payload over the approval id, the payload hash, the step, the note's hash
// and signed_at, which must be within ReportWindow of now, and must not have
// been recorded before (a replay); the runner must be the caller and the one
// the run names. Anything else is refused and nothing is recorded. The
// timeline event carries the signature, so that anyone can check the report
// offline.
func (s *Registry) AddRunnerReport(ctx context.Context, runner *Runner, id string, rep RunnerReport) (*asks.Approval, error) {
	if !slices.Contains(RunnerSteps, rep.Step) {
		return nil, core.Invalid("step", "a runner reports %s, not %q", strings.Join(RunnerSteps, ", "), rep.Step)
	}
	expected, err := asks.ParseExpectedState(rep.ExpectedState)
	if err != nil {
		return nil, err
	}
	if n := core.RuneCount(rep.Note); n > asks.NoteLimit {
		return nil, core.Invalid("note", "at most %d characters (got %d)", asks.NoteLimit, n)
	}
	sig := rep.Signature
	if sig.RunnerID != runner.ID {
		return nil, core.Refuse(core.PermissionDenied, "runner.runner_id", "this token is runner %s's; it signs reports only as itself", runner.ID)
	}
	if d := s.Now().Sub(time.Unix(sig.SignedAt, 0)); d > ReportWindow || d < -ReportWindow {
		return nil, core.Refuse(core.PermissionDenied, "runner.signed_at", "signed_at %d is more than %s from the server's clock (%d); sign each report as you send it",
			sig.SignedAt, ReportWindow, s.Now().Unix())
	}
	return s.Update(ctx, runner.AccountID, id, expected, func(tx *gorm.DB, a *asks.Approval) (*asks.StatusChange, error) {
		if a.Kind != ask.KindRun || a.RunnerID != runner.ID {
			return nil, core.Refuse(core.NotFound, "approval_id", "no run %q names runner %s", id, runner.ID)
		}
		key, err := runPublicKey(a)
		if err != nil {
			return nil, err
		}
		if err := proof.VerifyRunnerReport(key, a.ID, a.PayloadSHA256, rep.Step, rep.Note, sig); err != nil {
			return nil, core.Refuse(core.PermissionDenied, "runner.signature", "%v; nothing was recorded", err)
		}
		if err := s.recordReportSignature(tx, a, sig); err != nil {
			return nil, err
		}
		ch := &asks.StatusChange{ActorKind: asks.ActorRunner, Actor: runner.ID, Note: rep.Note, Data: map[string]any{"runner": sig}}
		switch rep.Step {
		case "started":
			ch.Event = asks.EventStarted
		case "step":
			ch.Event = asks.EventStep
		case "done":
			ch.Event = asks.EventDone
		case "failed":
			ch.Event = asks.EventFailed
		}
		return ch, nil
	})
}

// runPublicKey reads runner_public_key from a run's frozen payload.
func runPublicKey(a *asks.Approval) (string, error) {
	var p struct {
		Run struct {
			RunnerPublicKey string `json:"runner_public_key"`
		} `json:"run"`
	}
	if err := json.Unmarshal([]byte(a.Payload), &p); err != nil {
		return "", fmt.Errorf("read the run's payload: %w", err)
	}
	return p.Run.RunnerPublicKey, nil
}
