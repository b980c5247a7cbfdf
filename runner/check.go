package runner

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/ask"
	"github.com/countersign/countersign/proof"
)

// Approval is an approval as approvals_get answers it: the members a runner
// reads. Nothing in it is trusted until Check has verified it.
type Approval struct {
	ApprovalID    string          `json:"approval_id"`
	Kind          string          `json:"kind"`
	Status        string          `json:"status"`
	Payload       json.RawMessage `json:"payload"`
	PayloadSHA256 string          `json:"payload_sha256"`
	Proof         json.RawMessage `json:"proof"`
	Quorum        *struct {
		Requirement json.RawMessage `json:"requirement"`
	} `json:"quorum"`
	ExpiresAt time.Time `json:"expires_at"`
	Timeline  []Event   `json:"timeline"`
}

// Event is one line of an approval's timeline.
type Event struct {
	At     time.Time           `json:"at"`
	Actor  string              `json:"actor"`
	By     string              `json:"by"`
	Step   string              `json:"step"`
	From   string              `json:"from"`
	To     string              `json:"to"`
	Note   string              `json:"note"`
	Runner *proof.RunnerReport `json:"runner"`
}

// ReadPin reads payload.run of a run's payload.
func ReadPin(payload []byte) (*ask.RunPayload, error) {
	var p struct {
		Run *ask.RunPayload `json:"run"`
	}
	if err := json.Unmarshal(payload, &p); err != nil || p.Run == nil {
		return nil, errors.New("the payload is not a run")
	}
	return p.Run, nil
}

// Plan is a run that passed every check: what to execute, and what each
// report signs.
type Plan struct {
	ApprovalID    string
	PayloadSHA256 string
	RunnerID      string
	Script        string   // absolute, symlinks resolved, inside the scripts folder
	Code          []byte   // the script's bytes as read and hashed: what runs (see execute)
	Argv          []string // as approved; argv[0] relative to the scripts folder
	ExpiresAt     time.Time
	Effect        string   // the run's declared effect: read_only, local_write, remote or production
	Signers       []string // the distinct people whose approvals the proof holds, by the pinned keys
}

// Refusal is why a runner will not execute a run it is addressed to; the
// run is claimed and reported failed with it, and never starts.
type Refusal struct{ Reason string }

func (r *Refusal) Error() string { return r.Reason }

func refuse(format string, args ...any) *Refusal {
	return &Refusal{Reason: fmt.Sprintf(format, args...)}
}

// ErrNotMine is a run that names another runner's key: this runner neither
// claims nor reports on it.
var ErrNotMine = errors.New("the run names another runner's public key")

// Check decides, on the runner's own evidence only, whether a run may
// execute now: the payload is a run that names this runner's key; it is
// canonical and hashes to payload_sha256; the decision proof verifies
// offline against the pinned device keys at origin, approves exactly this
// approval and payload, and was signed by a key of the person asked; the run
// has not expired; argv[0] resolves inside the scripts folder (no "..", no
// symlink out) to a regular file whose SHA-256 is script_sha256. On a run an
// approval rule covers, the proof is a bundle that must meet the requirement
// frozen into the ask: that many distinct persons of the pinned keys, each
// signing this payload and that requirement (checkBundle). The plan names
// the people who signed, for the runner's own floor (Runner.belowFloor). A
// run that fails a check returns a *Refusal saying which; one for another
// runner returns ErrNotMine.
func (h *Host) Check(a *Approval, origin string, now time.Time) (*Plan, error) {
	pin, err := ReadPin(a.Payload)
	if err != nil {
		return nil, refuse("%v", err)
	}
	if pin.RunnerPublicKey != h.PublicKey() {
		return nil, ErrNotMine
	}
	_, payloadSHA, err := ask.CanonicalHash(a.Payload)
	if err != nil {
		return nil, refuse("the payload is not I-JSON: %v", err)
	}
	if payloadSHA != a.PayloadSHA256 {
		return nil, refuse("the payload does not hash to payload_sha256: the server's copy and its hash disagree")
	}
	if len(a.Proof) == 0 || string(a.Proof) == "null" {
		return nil, refuse("no decision proof: nobody's device signed an approve of this run")
	}
	var signers []string
	var edited []byte
	if proof.IsBundle(a.Proof) || a.Quorum != nil {
		signers, err = checkBundle(a, payloadSHA, h.Trusted, origin)
	} else {
		signers, edited, err = checkProof(a, payloadSHA, pin.AskedOf, h.Trusted, origin)
	}
	if err != nil {
		return nil, err
	}
	argv := pin.Argv
	if edited != nil {
		if argv, err = editedArgv(a.Payload, edited); err != nil {
			return nil, err
		}
	}
	secs, err := strconv.ParseInt(pin.ExpiresAt.String(), 10, 64)
	if err != nil {
		return nil, refuse("expires_at is not unix seconds")
	}
	expires := time.Unix(secs, 0)
	if !now.Before(expires) {
		return nil, refuse("the run expired at %s; it is %s now", expires.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	if len(pin.Argv) == 0 {
		return nil, refuse("argv is empty")
	}
	script, err := h.resolve(pin.Argv[0])
	if err != nil {
		return nil, err
	}
	code, err := readScript(script)
	if err != nil {
		return nil, refuse("cannot read the script %s: %v", pin.Argv[0], err)
	}
	codeSum := sha256.Sum256(code)
	if got := hex.EncodeToString(codeSum[:]); got != pin.ScriptSHA256 {
		return nil, refuse("the script %s changed: its SHA-256 is %s, the approved one %s", pin.Argv[0], got, pin.ScriptSHA256)
	}
	return &Plan{ApprovalID: a.ApprovalID, PayloadSHA256: payloadSHA, RunnerID: pin.RunnerID, Script: script, Code: code,
		Argv: argv, ExpiresAt: expires, Effect: pin.Effect, Signers: signers}, nil
}

// resolve finds argv[0] inside the scripts folder: a relative path with no
// ".." segment, whose real path (symlinks resolved) is still inside the
// folder's real path, and a regular file.
func (h *Host) resolve(arg0 string) (string, error) {
	if filepath.IsAbs(arg0) || strings.HasPrefix(arg0, "/") || strings.HasPrefix(arg0, `\`) {
		return "", refuse("argv[0] %q is absolute; it must be a path inside the scripts folder", arg0)
	}
	for _, seg := range strings.FieldsFunc(arg0, func(r rune) bool { return r == '/' || r == '\\' }) {
		if seg == ".." {
			return "", refuse("argv[0] %q has a \"..\" segment; it must stay inside the scripts folder", arg0)
		}
	}
	root, err := filepath.EvalSymlinks(h.Scripts)
	if err != nil {
		return "", refuse("the scripts folder %s: %v", h.Scripts, err)
	}
	real, err := filepath.EvalSymlinks(filepath.Join(root, arg0))
	if err != nil {
		return "", refuse("argv[0] %q: %v", arg0, err)
	}
	rel, err := filepath.Rel(root, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", refuse("argv[0] %q leads outside the scripts folder (to %s, through a symlink)", arg0, real)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", refuse("argv[0] %q: %v", arg0, err)
	}
	if !fi.Mode().IsRegular() {
		return "", refuse("argv[0] %q is not a regular file", arg0)
	}
	return real, nil
}

// maxScript bounds the script a runner reads, hashes and keeps to run.
const maxScript = 16 << 20

// readScript reads the script once: the bytes hashed are the bytes run.
func readScript(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	code, err := io.ReadAll(io.LimitReader(f, maxScript+1))
	if err != nil {
		return nil, err
	}
	if len(code) > maxScript {
		return nil, fmt.Errorf("over %d bytes", maxScript)
	}
	return code, nil
}

// checkProof checks the single-signer proof of a run no rule covers: it
// verifies against the pinned keys and approves exactly this run, signed by
// a key of the person asked, who is its one signer. On an approve of the
// run as the person edited it, it returns the edited payload the proof
// carries, whose hash the signature covers.
func checkProof(a *Approval, payloadSHA, askedOf string, trusted *proof.Keys, origin string) ([]string, []byte, error) {
	p, err := proof.Parse(a.Proof)
	if err != nil {
		return nil, nil, refuse("the decision proof is not a countersign proof: %v", err)
	}
	res, err := proof.Verify(p, proof.Expect{RPID: trusted.RPID, Origin: origin, Keys: trusted})
	if err != nil {
		return nil, nil, refuse("the decision proof does not verify against the pinned device keys: %v", err)
	}
	var edited []byte
	switch {
	case res.ApprovalID != a.ApprovalID:
		return nil, nil, refuse("the decision proof is for approval %s, not %s", res.ApprovalID, a.ApprovalID)
	case res.PayloadSHA256 != payloadSHA:
		return nil, nil, refuse("the decision proof signs another payload (%s) than this run's (%s)", res.PayloadSHA256, payloadSHA)
	case res.EditedSHA256 != "" && p.EditedPayload == nil:
		return nil, nil, refuse("the decision proof approves an edited run but does not carry the edited payload, so the runner cannot know what was approved")
	case res.EditedSHA256 != "":
		edited = p.EditedPayload
	case res.Decision != "approve":
		return nil, nil, refuse("the decision proof signs %q, not approve", res.Decision)
	}
	if res.KeyPerson != askedOf {
		return nil, nil, refuse("the decision was signed by a key of %s, but the run was asked of %s", res.KeyPerson, askedOf)
	}
	return []string{res.KeyPerson}, edited, nil
}

// editedArgv is the argv of a run as the person edited it, when the edit
// is one the pin allows: arguments after argv[0] changed, and nothing else
// of the pin (the script, its hash, the runner, its key, the effect, the
// expiry, the person asked, the number of arguments).
func editedArgv(payload, edited []byte) ([]string, error) {
	edits, err := proof.Edits(payload, edited)
	if err != nil {
		return nil, refuse("the edited run does not read: %v", err)
	}
	for _, e := range edits {
		tokens, err := ask.PathTokens(e.Path)
		if err != nil || len(tokens) != 3 || tokens[0] != "run" || tokens[1] != "argv" || tokens[2] == "0" || e.Before == nil || e.After == nil {
			return nil, refuse("the person's edit changes %s, which the pin does not allow: only the arguments after argv[0] may change", e.Path)
		}
	}
	pin, err := ReadPin(edited)
	if err != nil {
		return nil, refuse("the edited run: %v", err)
	}
	return pin.Argv, nil
}

// checkBundle checks the proof of a run an approval rule covers: a bundle
// of this run whose requirement is the one frozen into the ask, and that
// meets it against the pinned keys (proof.VerifyBundle: every signature
// valid, distinct persons of the pool, at least the count approving), whose
// people are its signers.
func checkBundle(a *Approval, payloadSHA string, trusted *proof.Keys, origin string) ([]string, error) {
	if !proof.IsBundle(a.Proof) {
		return nil, refuse("the run is covered by an approval rule, but its proof is one signature, not the bundle the rule needs")
	}
	b, err := proof.ParseBundle(a.Proof)
	if err != nil {
		return nil, refuse("the decision bundle is not a countersign bundle: %v", err)
	}
	if a.Quorum != nil && !sameJSON(a.Quorum.Requirement, b.Requirement) {
		return nil, refuse("the decision bundle binds another requirement than the one frozen into the run")
	}
	res, err := proof.VerifyBundle(b, proof.Expect{RPID: trusted.RPID, Origin: origin, Keys: trusted})
	if err != nil {
		return nil, refuse("the decision bundle does not meet its requirement against the pinned device keys: %v", err)
	}
	switch {
	case res.ApprovalID != a.ApprovalID:
		return nil, refuse("the decision bundle is for approval %s, not %s", res.ApprovalID, a.ApprovalID)
	case res.PayloadSHA256 != payloadSHA:
		return nil, refuse("the decision bundle signs another payload (%s) than this run's (%s)", res.PayloadSHA256, payloadSHA)
	case res.Decision != "approve":
		return nil, refuse("the decision bundle decides %q, not approve", res.Decision)
	}
	return res.Signers, nil
}

// sameJSON says whether two JSON texts are the same value.
func sameJSON(x, y []byte) bool {
	cx, _, errX := ask.CanonicalHash(x)
	cy, _, errY := ask.CanonicalHash(y)
	return errX == nil && errY == nil && string(cx) == string(cy)
}
