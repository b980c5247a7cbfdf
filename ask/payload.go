package ask

// Validation of an ask's frozen payload (seed 001, approvals_create) and its
// canonical hash (SPEC "Payload and hash").
//
// How a payload is read, in order:
//
//  1. The raw bytes go through RFC 8785 (JCS) first. That refuses what is not
//     I-JSON: bad syntax, trailing data, duplicate member names (also when they
//     differ only by escapes, "a" and "\u0061"), invalid UTF-8, lone
//     surrogates and numbers outside the IEEE 754 double range.
//  2. The payload is decoded into a generic tree (json.Decoder.UseNumber) and
//     checked against the typed struct of its kind, member by member, with
//     exact (case-sensitive) names: encoding/json matches names without case,
//     so {"Repo": …} would otherwise be read as "repo" while the person is shown
//     "Repo". Unknown members, null values and wrong JSON types are refused
//     with the dotted path of the member.
//  3. It is then decoded into that typed struct with
//     json.Decoder.DisallowUnknownFields and UseNumber, and the rules of the
//     kind are checked.
//
// The canonical bytes are the JCS form of the payload exactly as sent: no
// trimming and no Unicode normalisation, so NFC and NFD text hash differently,
// while key order and white space do not change the hash.
//
// Choices made where seed 001 is vague (the strict reading):
//   - Integers (pull request numbers, version, behind, expires_at) must be JSON
//     numbers whose decimal value is an exact integer (1.5 and 1e-1 are
//     refused; 1.0 and 1e3 are the integers 1 and 1000, which is also how JCS
//     writes them) and at most 2^53-1, the I-JSON safe range: a larger integer
//     would not survive the canonical form (JCS writes numbers as doubles), so
//     the person would sign a number other than the one sent.
//   - null is refused everywhere: leave an optional member out instead.
//   - Commit shas are 7 to 64 lower-case hex characters (git writes them so, and
//     the head binding of approvals_list matches exactly).
//   - pull_request repo and head may carry surrounding white space (seed 001:
//     the list filters match them "trimmed"); the trimmed value is validated
//     and bound, and the payload itself keeps the bytes as sent. A repo part
//     may not be "." or "..".
//   - One-line text (titles, roll gate/rollback/steps, deployments, ids) may
//     not hold control characters, U+2028/U+2029 or bidirectional override and
//     isolate characters (U+202A-U+202E, U+2066-U+2069), which can make a
//     line read other than it is. Multi-line text (run cmd) allows tab, CR and
//     LF only.
//   - roll: deployments are required (1 to 20), main_commit and running_commit
//     are required; prs, migrations, other_commits, behind and the train
//     extras are optional. A pr needs number and title, an other_commit needs
//     sha and subject; list entries are non-empty, one line, at most 300
//     characters.
//   - decision options are compared trimmed and exactly (no case folding); the
//     80-character limit counts the option as sent, in runes.
//   - run: cmd is optional on a pinned run (argv is what runs; cmd is the
//     command as a person reads it) and may span lines. A run with neither
//     script_sha256 nor runner_id is "cmd-only" and refused with the seed's
//     hint. Otherwise the pin must be whole, checked in the order
//     script_sha256, runner_id, argv, effect, runner_public_key, expires_at,
//     asked_of, and the first one missing (absent or empty) is named. argv has
//     at most 256 entries of at most 2000 characters, none holding NUL; argv[0]
//     is one line and has no ".." segment (split on "/" and "\"); the runner
//     enforces the scripts folder itself. expires_at must be after now and at
//     most 60 minutes ahead (15 for production), boundaries included.
//     runner_id, runner_public_key and asked_of are one line of at most 200,
//     1000 and 200 characters. The payload's asked_of is not compared with the
//     call's asked_of argument here: the caller must do that.
//   - review url: an absolute https URL with a host, no user info, at most
//     2000 characters.
//   - tool_call (seed 002, a call of an MCP tool the gate holds): server is
//     one line of at most 200 characters; tool is a valid MCP tool name (1 to
//     128 of A-Z a-z 0-9 _ - .); arguments is a JSON object (it may be empty,
//     its members may be anything, null included) of at most 64 KiB in its
//     canonical form. expires_at (optional, unix seconds, after now and at
//     most 24 hours ahead) is when the gate stops waiting: the ask's life
//     ends then. It is in the payload, so the person signs it with the call:
//     a proof says "this call, while its caller still waited", and the page
//     that shows the time left shows a signed value, as for a run.
//   - document: document_id is required, one line, at most 200 characters;
//     space_id optional (may be empty), same limits; version an integer >= 0,
//     absent means 0, the current one.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Payload is a validated, frozen ask payload.
type Payload struct {
	Canonical []byte // RFC 8785 (JCS) canonical bytes of the payload object as sent
	SHA256    string // lower-case hex SHA-256 of Canonical
	// bindings, for indexed list filters
	Repo      string    // pull_request repo as sent, trimmed ("owner/name"); "" for other kinds
	Number    int64     // pull_request number; 0 otherwise
	Head      string    // pull_request head, trimmed; "" otherwise
	ExpiresAt time.Time // run.expires_at or tool_call.expires_at; zero when the kind sets no life of its own
	Run       *RunPin   // non-nil for a pinned run
}

// RunPin is what a pinned run freezes besides its command: only the named
// runner, with its own key, runs argv of the script with that SHA-256, once,
// before ExpiresAt.
type RunPin struct {
	ScriptSHA256    string
	RunnerID        string
	Argv            []string
	Effect          string
	RunnerPublicKey string
	ExpiresAt       time.Time
	AskedOf         string
}

// The effects a run or an explanation may declare.
var effects = []string{"read_only", "local_write", "remote", "production"}

const (
	runMaxAhead           = 60 * time.Minute
	runMaxAheadProduction = 15 * time.Minute
	cmdOnlyHint           = "a run with cmd only is refused since 2026-10-18: file a decision and run the command yourself after the approve"
)

// PullRequestPayload is payload.pull_request: the shape the validator accepts
// and the ask page shows, one for both.
type PullRequestPayload struct {
	Repo   string      `json:"repo"`
	Number json.Number `json:"number"`
	Head   string      `json:"head"`
	Title  string      `json:"title"`
}

// RollPayload is payload.roll; a roll train adds gate_tree, gate, steps and rollback.
type RollPayload struct {
	Deployments   []string     `json:"deployments"`
	MainCommit    string       `json:"main_commit"`
	RunningCommit string       `json:"running_commit"`
	PRs           []RollPR     `json:"prs"`
	Migrations    []string     `json:"migrations"`
	OtherCommits  []RollCommit `json:"other_commits"`
	Behind        json.Number  `json:"behind"`
	GateTree      string       `json:"gate_tree"`
	Gate          string       `json:"gate"`
	Steps         []string     `json:"steps"`
	Rollback      string       `json:"rollback"`
}

// RollPR is a pull request a roll ships.
type RollPR struct {
	Number json.Number `json:"number"`
	Title  string      `json:"title"`
}

// RollCommit is a commit a roll ships outside any pull request.
type RollCommit struct {
	SHA     string `json:"sha"`
	Subject string `json:"subject"`
}

// ReviewPayload is payload.review.
type ReviewPayload struct {
	URL string `json:"url"`
}

// DocumentPayload is payload.document; version 0 is the current one.
type DocumentPayload struct {
	DocumentID string      `json:"document_id"`
	SpaceID    string      `json:"space_id"`
	Version    json.Number `json:"version"`
}

// DecisionPayload is payload.decision: the person picks one option.
type DecisionPayload struct {
	Options []string `json:"options"`
}

// RunPayload is payload.run, pinned.
type RunPayload struct {
	Cmd             string       `json:"cmd"`
	ScriptSHA256    string       `json:"script_sha256"`
	RunnerID        string       `json:"runner_id"`
	Argv            []string     `json:"argv"`
	Effect          string       `json:"effect"`
	RunnerPublicKey string       `json:"runner_public_key"`
	ExpiresAt       json.Number  `json:"expires_at"`
	AskedOf         string       `json:"asked_of"`
	Roll            *RollPayload `json:"roll"`
}

// ToolCallPayload is payload.tool_call: the exact call of an MCP tool a
// person lets through the gate.
type ToolCallPayload struct {
	Server    string         `json:"server"`
	Tool      string         `json:"tool"`
	Arguments map[string]any `json:"arguments"`
	ExpiresAt json.Number    `json:"expires_at"` // when the gate stops waiting, unix seconds; "" when not sent
}

// MaxToolCallArguments bounds a tool_call's arguments, in canonical bytes.
const MaxToolCallArguments = 64 << 10

// MaxToolCallWait is how far ahead a tool_call's expires_at may be: a gate
// holds its caller's request open while it waits, which no proxy keeps up
// for a day. A gate that waits longer files no expires_at.
const MaxToolCallWait = 24 * time.Hour

// ParsePayload validates the payload of an ask of the given kind, filed with
// approvals_create (or, for an authorization, by the CIBA provider), at time now, and returns it frozen: its canonical bytes,
// their hash and the bindings the list filters use. Every refusal is a
// *Refusal naming the dotted path of the member at fault.
func ParsePayload(kind string, raw json.RawMessage, now time.Time) (*Payload, error) {
	switch {
	case kind == KindAutoApprove:
		return nil, Invalid("kind", "an auto_approve ask is not filed with approvals_create: use approvals_request_auto_approve")
	case kind == KindRuleChange:
		return nil, Invalid("kind", "a rule_change ask is not filed by an agent: an owner or admin proposes it on the Admin → Rules page")
	case kind == KindMemberChange:
		return nil, Invalid("kind", "a member_change ask is not filed by an agent: an owner or admin proposes it on the Admin → Members page")
	case kind == "":
		return nil, Invalid("kind", "required: one of %s", strings.Join(Kinds, ", "))
	case !slices.Contains(Kinds, kind) && kind != KindAuthorization: // the provider files authorization asks
		return nil, Invalid("kind", "unknown kind %q: one of %s", clip(kind), strings.Join(Kinds, ", "))
	}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return nil, Invalid("payload", `required: an object with exactly one member, named after the kind: {"%s": {…}}`, kind)
	}
	canonical, sum, tree, err := readSent("payload", raw)
	if err != nil {
		return nil, err
	}
	top, ok := tree.(map[string]any)
	if !ok {
		return nil, Invalid("payload", `must be a JSON object with exactly one member, named after the kind: {"%s": {…}}`, kind)
	}
	if _, ok := top[kind]; !ok {
		names := sortedKeys(top)
		if len(names) == 0 {
			return nil, Invalid("payload", `is empty: it needs exactly one member, named after the kind: {"%s": {…}}`, kind)
		}
		return nil, Invalid("payload."+names[0], `unknown member: a %s payload has exactly one member, %q`, kind, kind)
	}
	for _, name := range sortedKeys(top) {
		if name != kind {
			return nil, Invalid("payload."+name, `unknown member: a %s payload has exactly one member, %q; a person must never sign what the page does not show`, kind, kind)
		}
	}
	var members map[string]json.RawMessage
	if err := decodeStrict(raw, &members); err != nil {
		return nil, Invalid("payload", "not valid JSON: %v", err)
	}
	memberRaw, memberTree, path := members[kind], top[kind], "payload."+kind

	p := &Payload{Canonical: canonical, SHA256: sum}
	switch kind {
	case KindPullRequest:
		var v PullRequestPayload
		if err := decodeTyped(memberRaw, memberTree, path, &v); err != nil {
			return nil, err
		}
		if err := checkPullRequest(&v, path, p); err != nil {
			return nil, err
		}
	case KindRoll:
		var v RollPayload
		if err := decodeTyped(memberRaw, memberTree, path, &v); err != nil {
			return nil, err
		}
		if err := checkRoll(&v, path); err != nil {
			return nil, err
		}
	case KindReview:
		var v ReviewPayload
		if err := decodeTyped(memberRaw, memberTree, path, &v); err != nil {
			return nil, err
		}
		if err := checkHTTPSURL(path+".url", v.URL, true); err != nil {
			return nil, err
		}
	case KindDocument:
		var v DocumentPayload
		if err := decodeTyped(memberRaw, memberTree, path, &v); err != nil {
			return nil, err
		}
		if err := checkDocument(&v, path); err != nil {
			return nil, err
		}
	case KindDecision:
		var v DecisionPayload
		if err := decodeTyped(memberRaw, memberTree, path, &v); err != nil {
			return nil, err
		}
		if err := checkDecision(&v, path); err != nil {
			return nil, err
		}
	case KindRun:
		var v RunPayload
		if err := decodeTyped(memberRaw, memberTree, path, &v); err != nil {
			return nil, err
		}
		pin, err := checkRun(&v, path, now)
		if err != nil {
			return nil, err
		}
		p.Run = pin
		p.ExpiresAt = pin.ExpiresAt
	case KindToolCall:
		var v ToolCallPayload
		if err := decodeTyped(memberRaw, memberTree, path, &v); err != nil {
			return nil, err
		}
		exp, err := checkToolCall(&v, memberRaw, path, now)
		if err != nil {
			return nil, err
		}
		p.ExpiresAt = exp
	case KindAuthorization:
		if r := checkAuthorization(memberRaw, memberTree, path); r != nil {
			return nil, r
		}
	}
	return p, nil
}

// checkToolCall checks a tool_call: the server one line, the tool a valid MCP
// tool name, the arguments an object of at most 64 KiB canonical, and
// expires_at, when sent, after now and at most MaxToolCallWait ahead. It
// returns the time expires_at names, zero when it was not sent.
func checkToolCall(v *ToolCallPayload, raw json.RawMessage, path string, now time.Time) (time.Time, error) {
	if err := checkText(path+".server", v.Server, 200, true, true); err != nil {
		return time.Time{}, err
	}
	if err := CheckToolName(path+".tool", v.Tool); err != nil {
		return time.Time{}, err
	}
	if v.Arguments == nil {
		return time.Time{}, Invalid(path+".arguments", "required: the call's arguments, a JSON object ({} for none)")
	}
	var members struct {
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(raw, &members); err != nil {
		return time.Time{}, Invalid(path+".arguments", "not valid JSON: %v", err)
	}
	canonical, _, err := CanonicalHash(members.Arguments)
	if err != nil {
		return time.Time{}, Invalid(path+".arguments", "%v", err)
	}
	if len(canonical) > MaxToolCallArguments {
		return time.Time{}, Invalid(path+".arguments", "at most %d bytes in canonical form, got %d", MaxToolCallArguments, len(canonical))
	}
	if v.ExpiresAt == "" {
		return time.Time{}, nil
	}
	secs, err := checkInt(path+".expires_at", v.ExpiresAt, 0)
	if err != nil {
		return time.Time{}, err
	}
	exp := time.Unix(secs, 0).UTC()
	if !exp.After(now) {
		return time.Time{}, Invalid(path+".expires_at", "must be in the future (unix seconds, when the gate stops waiting): %d is not after now, %d", secs, now.Unix())
	}
	if exp.Sub(now) > MaxToolCallWait {
		return time.Time{}, Invalid(path+".expires_at", "at most 24 hours ahead: %d is %s after now, %d; leave it out for a longer wait", secs, exp.Sub(now).Round(time.Second), now.Unix())
	}
	return exp, nil
}

// CheckToolName checks an MCP tool name: 1 to 128 ASCII letters, digits, _, - and ".".
func CheckToolName(field, name string) error {
	if name == "" {
		return Invalid(field, "required: the MCP tool name, 1 to 128 of A-Z a-z 0-9 _ - .")
	}
	if len(name) > 128 {
		return Invalid(field, "an MCP tool name has at most 128 characters, got %d", len(name))
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return Invalid(field, "not a valid MCP tool name: %q is not one of A-Z a-z 0-9 _ - .", r)
		}
	}
	return nil
}

func checkPullRequest(v *PullRequestPayload, path string, p *Payload) error {
	repo := strings.TrimSpace(v.Repo)
	if err := checkRepo(path+".repo", repo, v.Repo != ""); err != nil {
		return err
	}
	if v.Number == "" {
		return Invalid(path+".number", "required: the pull request number, an integer of at least 1")
	}
	n, err := checkInt(path+".number", v.Number, 1)
	if err != nil {
		return err
	}
	head := strings.TrimSpace(v.Head)
	if v.Head == "" {
		return Invalid(path+".head", "required: the head commit sha the person approves, 7 to 64 lower-case hex characters")
	}
	if err := checkCommitSHA(path+".head", head); err != nil {
		return err
	}
	if err := checkText(path+".title", v.Title, 300, true, true); err != nil {
		return err
	}
	p.Repo, p.Number, p.Head = repo, n, head
	return nil
}

func checkRoll(v *RollPayload, path string) error {
	if len(v.Deployments) == 0 {
		return Invalid(path+".deployments", "required: 1 to 20 deployments the roll updates")
	}
	if len(v.Deployments) > 20 {
		return Invalid(path+".deployments", "at most 20 deployments, got %d", len(v.Deployments))
	}
	for i, d := range v.Deployments {
		if err := checkText(fmt.Sprintf("%s.deployments[%d]", path, i), d, 300, true, true); err != nil {
			return err
		}
	}
	if v.MainCommit == "" {
		return Invalid(path+".main_commit", "required: the main commit the roll ships, 7 to 64 lower-case hex characters")
	}
	if err := checkCommitSHA(path+".main_commit", v.MainCommit); err != nil {
		return err
	}
	if v.RunningCommit == "" {
		return Invalid(path+".running_commit", "required: the commit running now, 7 to 64 lower-case hex characters")
	}
	if err := checkCommitSHA(path+".running_commit", v.RunningCommit); err != nil {
		return err
	}
	if len(v.PRs) > 200 {
		return Invalid(path+".prs", "at most 200 pull requests, got %d", len(v.PRs))
	}
	for i, pr := range v.PRs {
		f := fmt.Sprintf("%s.prs[%d]", path, i)
		if pr.Number == "" {
			return Invalid(f+".number", "required: the pull request number, an integer of at least 1")
		}
		if _, err := checkInt(f+".number", pr.Number, 1); err != nil {
			return err
		}
		if err := checkText(f+".title", pr.Title, 300, true, true); err != nil {
			return err
		}
	}
	if len(v.Migrations) > 200 {
		return Invalid(path+".migrations", "at most 200 migrations, got %d", len(v.Migrations))
	}
	for i, m := range v.Migrations {
		if err := checkText(fmt.Sprintf("%s.migrations[%d]", path, i), m, 300, true, true); err != nil {
			return err
		}
	}
	if len(v.OtherCommits) > 200 {
		return Invalid(path+".other_commits", "at most 200 other commits, got %d", len(v.OtherCommits))
	}
	for i, c := range v.OtherCommits {
		f := fmt.Sprintf("%s.other_commits[%d]", path, i)
		if c.SHA == "" {
			return Invalid(f+".sha", "required: the commit sha, 7 to 64 lower-case hex characters")
		}
		if err := checkCommitSHA(f+".sha", c.SHA); err != nil {
			return err
		}
		if err := checkText(f+".subject", c.Subject, 300, true, true); err != nil {
			return err
		}
	}
	if v.Behind != "" {
		if _, err := checkInt(path+".behind", v.Behind, 0); err != nil {
			return err
		}
	}
	for _, f := range []struct{ name, value string }{{"gate_tree", v.GateTree}, {"gate", v.Gate}, {"rollback", v.Rollback}} {
		if err := checkText(path+"."+f.name, f.value, 300, true, false); err != nil {
			return err
		}
	}
	if len(v.Steps) > 50 {
		return Invalid(path+".steps", "at most 50 steps, got %d", len(v.Steps))
	}
	for i, s := range v.Steps {
		if err := checkText(fmt.Sprintf("%s.steps[%d]", path, i), s, 300, true, true); err != nil {
			return err
		}
	}
	return nil
}

func checkDocument(v *DocumentPayload, path string) error {
	if err := checkText(path+".document_id", v.DocumentID, 200, true, true); err != nil {
		return err
	}
	if err := checkText(path+".space_id", v.SpaceID, 200, true, false); err != nil {
		return err
	}
	if v.Version != "" {
		if _, err := checkInt(path+".version", v.Version, 0); err != nil {
			return err
		}
	}
	return nil
}

func checkDecision(v *DecisionPayload, path string) error {
	f := path + ".options"
	if len(v.Options) < 2 || len(v.Options) > 4 {
		return Invalid(f, "2 to 4 different options, got %d", len(v.Options))
	}
	seen := map[string]int{}
	for i, o := range v.Options {
		of := fmt.Sprintf("%s[%d]", f, i)
		if err := checkText(of, o, 80, true, true); err != nil {
			return err
		}
		t := strings.TrimSpace(o)
		if j, dup := seen[t]; dup {
			return Invalid(of, "the same answer as options[%d]: the options must be different", j)
		}
		seen[t] = i
	}
	return nil
}

func checkRun(v *RunPayload, path string, now time.Time) (*RunPin, error) {
	if v.ScriptSHA256 == "" && v.RunnerID == "" {
		return nil, Invalid(path, "a new run is pinned: script_sha256, runner_id, argv, effect, runner_public_key, expires_at and asked_of; %s", cmdOnlyHint)
	}
	if err := checkText(path+".cmd", v.Cmd, 2000, false, false); err != nil {
		return nil, err
	}
	missing := []struct {
		name    string
		missing bool
		what    string
	}{
		{"script_sha256", v.ScriptSHA256 == "", "the SHA-256 of the script, 64 lower-case hex characters"},
		{"runner_id", v.RunnerID == "", "the enrolled runner that runs it"},
		{"argv", len(v.Argv) == 0, "the argument list, argv[0] the script under the runner's approved scripts folder"},
		{"effect", v.Effect == "", "one of " + strings.Join(effects, ", ")},
		{"runner_public_key", v.RunnerPublicKey == "", "the runner's enrolled public key"},
		{"expires_at", v.ExpiresAt == "", "unix seconds, within 60 minutes (15 for production)"},
		{"asked_of", v.AskedOf == "", "the subject of the person asked"},
	}
	for _, m := range missing {
		if m.missing {
			return nil, Invalid(path+"."+m.name, "required on a pinned run: %s", m.what)
		}
	}
	if !isHex(v.ScriptSHA256, true) || len(v.ScriptSHA256) != 64 {
		return nil, Invalid(path+".script_sha256", "must be exactly 64 lower-case hex characters (a SHA-256)")
	}
	if err := checkText(path+".runner_id", v.RunnerID, 200, true, true); err != nil {
		return nil, err
	}
	if len(v.Argv) > 256 {
		return nil, Invalid(path+".argv", "at most 256 arguments, got %d", len(v.Argv))
	}
	for i, a := range v.Argv {
		f := fmt.Sprintf("%s.argv[%d]", path, i)
		if utf8.RuneCountInString(a) > 2000 {
			return nil, Invalid(f, "at most 2000 characters")
		}
		if strings.ContainsRune(a, 0) {
			return nil, Invalid(f, "must not contain NUL")
		}
	}
	if err := checkText(path+".argv[0]", v.Argv[0], 2000, true, true); err != nil {
		return nil, err
	}
	for _, seg := range strings.FieldsFunc(v.Argv[0], func(r rune) bool { return r == '/' || r == '\\' }) {
		if seg == ".." {
			return nil, Invalid(path+".argv[0]", `must not contain a ".." path segment: argv[0] is a script under the runner's approved scripts folder`)
		}
	}
	if !slices.Contains(effects, v.Effect) {
		return nil, Invalid(path+".effect", "unknown effect %q: one of %s", clip(v.Effect), strings.Join(effects, ", "))
	}
	if err := checkText(path+".runner_public_key", v.RunnerPublicKey, 1000, true, true); err != nil {
		return nil, err
	}
	secs, err := checkInt(path+".expires_at", v.ExpiresAt, 0)
	if err != nil {
		return nil, err
	}
	exp := time.Unix(secs, 0).UTC()
	limit, limitText := runMaxAhead, "60 minutes"
	if v.Effect == "production" {
		limit, limitText = runMaxAheadProduction, "15 minutes for a production run"
	}
	if !exp.After(now) {
		return nil, Invalid(path+".expires_at", "must be in the future (unix seconds): %d is not after now, %d", secs, now.Unix())
	}
	if exp.Sub(now) > limit {
		return nil, Invalid(path+".expires_at", "at most %s ahead: %d is %s after now, %d", limitText, secs, exp.Sub(now).Round(time.Second), now.Unix())
	}
	if err := checkText(path+".asked_of", v.AskedOf, 200, true, true); err != nil {
		return nil, err
	}
	if v.Roll != nil {
		if err := checkRoll(v.Roll, path+".roll"); err != nil {
			return nil, err
		}
	}
	return &RunPin{
		ScriptSHA256:    v.ScriptSHA256,
		RunnerID:        v.RunnerID,
		Argv:            slices.Clone(v.Argv),
		Effect:          v.Effect,
		RunnerPublicKey: v.RunnerPublicKey,
		ExpiresAt:       exp,
		AskedOf:         v.AskedOf,
	}, nil
}
