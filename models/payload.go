package models

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
//   - document: document_id is required, one line, at most 200 characters;
//     space_id optional (may be empty), same limits; version an integer >= 0,
//     absent means 0, the current one.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gowebpki/jcs"
)

// Payload is a validated, frozen ask payload.
type Payload struct {
	Canonical []byte // RFC 8785 (JCS) canonical bytes of the payload object as sent
	SHA256    string // lower-case hex SHA-256 of Canonical
	// bindings, for indexed list filters
	Repo      string    // pull_request repo as sent, trimmed ("owner/name"); "" for other kinds
	Number    int64     // pull_request number; 0 otherwise
	Head      string    // pull_request head, trimmed; "" otherwise
	ExpiresAt time.Time // run.expires_at; zero when the kind sets no life of its own
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

// The kinds approvals_create files, in the order the seed names them.
var plKinds = []string{"pull_request", "roll", "review", "document", "decision", "run"}

// The effects a run or an explanation may declare.
var askvEffects = []string{"read_only", "local_write", "remote", "production"}

const (
	plRunMaxAhead           = 60 * time.Minute
	plRunMaxAheadProduction = 15 * time.Minute
	plCmdOnlyHint           = "a run with cmd only is refused since 2026-10-18: file a decision and run the command yourself after the approve"
	askvMaxSafeInt          = 1<<53 - 1
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

// CanonicalHash returns the RFC 8785 (JCS) canonical bytes of any JSON value
// and the lower-case hex SHA-256 of them. It is the hash of a payload and of
// the observed payload an agent reports on "started". The value is taken as
// sent: no Unicode normalisation. A value that is not I-JSON (bad syntax,
// trailing data, duplicate names, invalid UTF-8, lone surrogates, numbers out
// of the double range) is an INVALID_ARGUMENT with no field: the caller knows
// which argument it hashed and may set Field.
func CanonicalHash(raw json.RawMessage) (canonical []byte, sha256hex string, err error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, "", Invalid("", "a JSON value is required")
	}
	canonical, err = jcs.Transform(raw)
	if err != nil {
		return nil, "", Invalid("", "not valid I-JSON for RFC 8785 canonical form: %v", err)
	}
	sum := sha256.Sum256(canonical)
	return canonical, hex.EncodeToString(sum[:]), nil
}

// ParsePayload validates the payload of an ask of the given kind, filed with
// approvals_create, at time now, and returns it frozen: its canonical bytes,
// their hash and the bindings the list filters use. Every refusal is an
// *Error naming the dotted path of the member at fault.
func ParsePayload(kind string, raw json.RawMessage, now time.Time) (*Payload, error) {
	switch {
	case kind == "auto_approve":
		return nil, Invalid("kind", "an auto_approve ask is not filed with approvals_create: use approvals_request_auto_approve")
	case kind == "":
		return nil, Invalid("kind", "required: one of %s", strings.Join(plKinds, ", "))
	case !slices.Contains(plKinds, kind):
		return nil, Invalid("kind", "unknown kind %q: one of %s", askvClip(kind), strings.Join(plKinds, ", "))
	}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return nil, Invalid("payload", `required: an object with exactly one member, named after the kind: {"%s": {…}}`, kind)
	}
	canonical, sum, err := CanonicalHash(raw)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			return nil, Invalid("payload", "%s", e.Msg)
		}
		return nil, Invalid("payload", "%v", err)
	}
	tree, err := askvDecodeTree(raw)
	if err != nil {
		return nil, Invalid("payload", "not valid JSON: %v", err)
	}
	top, ok := tree.(map[string]any)
	if !ok {
		return nil, Invalid("payload", `must be a JSON object with exactly one member, named after the kind: {"%s": {…}}`, kind)
	}
	if _, ok := top[kind]; !ok {
		names := askvSortedKeys(top)
		if len(names) == 0 {
			return nil, Invalid("payload", `is empty: it needs exactly one member, named after the kind: {"%s": {…}}`, kind)
		}
		return nil, Invalid("payload."+names[0], `unknown member: a %s payload has exactly one member, %q`, kind, kind)
	}
	for _, name := range askvSortedKeys(top) {
		if name != kind {
			return nil, Invalid("payload."+name, `unknown member: a %s payload has exactly one member, %q; a person must never sign what the page does not show`, kind, kind)
		}
	}
	var members map[string]json.RawMessage
	if err := askvDecodeStrict(raw, &members); err != nil {
		return nil, Invalid("payload", "not valid JSON: %v", err)
	}
	memberRaw, memberTree, path := members[kind], top[kind], "payload."+kind

	p := &Payload{Canonical: canonical, SHA256: sum}
	switch kind {
	case "pull_request":
		var v PullRequestPayload
		if err := askvDecodeTyped(memberRaw, memberTree, path, &v); err != nil {
			return nil, err
		}
		if err := plCheckPullRequest(&v, path, p); err != nil {
			return nil, err
		}
	case "roll":
		var v RollPayload
		if err := askvDecodeTyped(memberRaw, memberTree, path, &v); err != nil {
			return nil, err
		}
		if err := plCheckRoll(&v, path); err != nil {
			return nil, err
		}
	case "review":
		var v ReviewPayload
		if err := askvDecodeTyped(memberRaw, memberTree, path, &v); err != nil {
			return nil, err
		}
		if err := askvHTTPSURL(path+".url", v.URL, true); err != nil {
			return nil, err
		}
	case "document":
		var v DocumentPayload
		if err := askvDecodeTyped(memberRaw, memberTree, path, &v); err != nil {
			return nil, err
		}
		if err := plCheckDocument(&v, path); err != nil {
			return nil, err
		}
	case "decision":
		var v DecisionPayload
		if err := askvDecodeTyped(memberRaw, memberTree, path, &v); err != nil {
			return nil, err
		}
		if err := plCheckDecision(&v, path); err != nil {
			return nil, err
		}
	case "run":
		var v RunPayload
		if err := askvDecodeTyped(memberRaw, memberTree, path, &v); err != nil {
			return nil, err
		}
		pin, err := plCheckRun(&v, path, now)
		if err != nil {
			return nil, err
		}
		p.Run = pin
		p.ExpiresAt = pin.ExpiresAt
	}
	return p, nil
}

func plCheckPullRequest(v *PullRequestPayload, path string, p *Payload) error {
	repo := strings.TrimSpace(v.Repo)
	if err := askvRepo(path+".repo", repo, v.Repo != ""); err != nil {
		return err
	}
	if v.Number == "" {
		return Invalid(path+".number", "required: the pull request number, an integer of at least 1")
	}
	n, err := askvInt(path+".number", v.Number, 1)
	if err != nil {
		return err
	}
	head := strings.TrimSpace(v.Head)
	if v.Head == "" {
		return Invalid(path+".head", "required: the head commit sha the person approves, 7 to 64 lower-case hex characters")
	}
	if err := askvCommitSHA(path+".head", head); err != nil {
		return err
	}
	if err := askvText(path+".title", v.Title, 300, true, true); err != nil {
		return err
	}
	p.Repo, p.Number, p.Head = repo, n, head
	return nil
}

func plCheckRoll(v *RollPayload, path string) error {
	if len(v.Deployments) == 0 {
		return Invalid(path+".deployments", "required: 1 to 20 deployments the roll updates")
	}
	if len(v.Deployments) > 20 {
		return Invalid(path+".deployments", "at most 20 deployments, got %d", len(v.Deployments))
	}
	for i, d := range v.Deployments {
		if err := askvText(fmt.Sprintf("%s.deployments[%d]", path, i), d, 300, true, true); err != nil {
			return err
		}
	}
	if v.MainCommit == "" {
		return Invalid(path+".main_commit", "required: the main commit the roll ships, 7 to 64 lower-case hex characters")
	}
	if err := askvCommitSHA(path+".main_commit", v.MainCommit); err != nil {
		return err
	}
	if v.RunningCommit == "" {
		return Invalid(path+".running_commit", "required: the commit running now, 7 to 64 lower-case hex characters")
	}
	if err := askvCommitSHA(path+".running_commit", v.RunningCommit); err != nil {
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
		if _, err := askvInt(f+".number", pr.Number, 1); err != nil {
			return err
		}
		if err := askvText(f+".title", pr.Title, 300, true, true); err != nil {
			return err
		}
	}
	if len(v.Migrations) > 200 {
		return Invalid(path+".migrations", "at most 200 migrations, got %d", len(v.Migrations))
	}
	for i, m := range v.Migrations {
		if err := askvText(fmt.Sprintf("%s.migrations[%d]", path, i), m, 300, true, true); err != nil {
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
		if err := askvCommitSHA(f+".sha", c.SHA); err != nil {
			return err
		}
		if err := askvText(f+".subject", c.Subject, 300, true, true); err != nil {
			return err
		}
	}
	if v.Behind != "" {
		if _, err := askvInt(path+".behind", v.Behind, 0); err != nil {
			return err
		}
	}
	for _, f := range []struct{ name, value string }{{"gate_tree", v.GateTree}, {"gate", v.Gate}, {"rollback", v.Rollback}} {
		if err := askvText(path+"."+f.name, f.value, 300, true, false); err != nil {
			return err
		}
	}
	if len(v.Steps) > 50 {
		return Invalid(path+".steps", "at most 50 steps, got %d", len(v.Steps))
	}
	for i, s := range v.Steps {
		if err := askvText(fmt.Sprintf("%s.steps[%d]", path, i), s, 300, true, true); err != nil {
			return err
		}
	}
	return nil
}

func plCheckDocument(v *DocumentPayload, path string) error {
	if err := askvText(path+".document_id", v.DocumentID, 200, true, true); err != nil {
		return err
	}
	if err := askvText(path+".space_id", v.SpaceID, 200, true, false); err != nil {
		return err
	}
	if v.Version != "" {
		if _, err := askvInt(path+".version", v.Version, 0); err != nil {
			return err
		}
	}
	return nil
}

func plCheckDecision(v *DecisionPayload, path string) error {
	f := path + ".options"
	if len(v.Options) < 2 || len(v.Options) > 4 {
		return Invalid(f, "2 to 4 different options, got %d", len(v.Options))
	}
	seen := map[string]int{}
	for i, o := range v.Options {
		of := fmt.Sprintf("%s[%d]", f, i)
		if err := askvText(of, o, 80, true, true); err != nil {
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

func plCheckRun(v *RunPayload, path string, now time.Time) (*RunPin, error) {
	if v.ScriptSHA256 == "" && v.RunnerID == "" {
		return nil, Invalid(path, "a new run is pinned: script_sha256, runner_id, argv, effect, runner_public_key, expires_at and asked_of; %s", plCmdOnlyHint)
	}
	if err := askvText(path+".cmd", v.Cmd, 2000, false, false); err != nil {
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
		{"effect", v.Effect == "", "one of " + strings.Join(askvEffects, ", ")},
		{"runner_public_key", v.RunnerPublicKey == "", "the runner's enrolled public key"},
		{"expires_at", v.ExpiresAt == "", "unix seconds, within 60 minutes (15 for production)"},
		{"asked_of", v.AskedOf == "", "the subject of the person asked"},
	}
	for _, m := range missing {
		if m.missing {
			return nil, Invalid(path+"."+m.name, "required on a pinned run: %s", m.what)
		}
	}
	if !askvIsHex(v.ScriptSHA256, true) || len(v.ScriptSHA256) != 64 {
		return nil, Invalid(path+".script_sha256", "must be exactly 64 lower-case hex characters (a SHA-256)")
	}
	if err := askvText(path+".runner_id", v.RunnerID, 200, true, true); err != nil {
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
	if err := askvText(path+".argv[0]", v.Argv[0], 2000, true, true); err != nil {
		return nil, err
	}
	for _, seg := range strings.FieldsFunc(v.Argv[0], func(r rune) bool { return r == '/' || r == '\\' }) {
		if seg == ".." {
			return nil, Invalid(path+".argv[0]", `must not contain a ".." path segment: argv[0] is a script under the runner's approved scripts folder`)
		}
	}
	if !slices.Contains(askvEffects, v.Effect) {
		return nil, Invalid(path+".effect", "unknown effect %q: one of %s", askvClip(v.Effect), strings.Join(askvEffects, ", "))
	}
	if err := askvText(path+".runner_public_key", v.RunnerPublicKey, 1000, true, true); err != nil {
		return nil, err
	}
	secs, err := askvInt(path+".expires_at", v.ExpiresAt, 0)
	if err != nil {
		return nil, err
	}
	exp := time.Unix(secs, 0).UTC()
	limit, limitText := plRunMaxAhead, "60 minutes"
	if v.Effect == "production" {
		limit, limitText = plRunMaxAheadProduction, "15 minutes for a production run"
	}
	if !exp.After(now) {
		return nil, Invalid(path+".expires_at", "must be in the future (unix seconds): %d is not after now, %d", secs, now.Unix())
	}
	if exp.Sub(now) > limit {
		return nil, Invalid(path+".expires_at", "at most %s ahead: %d is %s after now, %d", limitText, secs, exp.Sub(now).Round(time.Second), now.Unix())
	}
	if err := askvText(path+".asked_of", v.AskedOf, 200, true, true); err != nil {
		return nil, err
	}
	if v.Roll != nil {
		if err := plCheckRoll(v.Roll, path+".roll"); err != nil {
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

// ---- helpers shared by payload.go, context.go and ask_text.go ----

// askvDecodeTree decodes one JSON value with numbers kept as json.Number and
// refuses trailing data.
func askvDecodeTree(raw []byte) (any, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the JSON value")
	}
	return v, nil
}

// askvDecodeStrict decodes one JSON value into dst with unknown fields
// refused, numbers kept as json.Number, and trailing data refused.
func askvDecodeStrict(raw []byte, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

// askvDecodeTyped checks tree (the generic decoding of raw) against the shape
// of dst with exact member names, then decodes raw into dst strictly.
func askvDecodeTyped(raw []byte, tree any, path string, dst any) error {
	if err := askvShape(tree, reflect.TypeOf(dst).Elem(), path); err != nil {
		return err
	}
	if err := askvDecodeStrict(raw, dst); err != nil {
		return Invalid(path, "%v", err)
	}
	return nil
}

var askvNumberType = reflect.TypeOf(json.Number(""))

// askvShape checks that v, a value decoded with UseNumber, has the JSON shape
// of t: objects for structs with only the members their json tags name,
// spelled exactly; lists for slices; strings; numbers for json.Number. null is
// refused everywhere.
func askvShape(v any, t reflect.Type, path string) error {
	if v == nil {
		return Invalid(path, "must not be null: leave an optional member out instead")
	}
	switch t.Kind() {
	case reflect.Pointer:
		return askvShape(v, t.Elem(), path)
	case reflect.String:
		if t == askvNumberType {
			if _, ok := v.(json.Number); !ok {
				return Invalid(path, "must be a number, not %s", askvJSONType(v))
			}
			return nil
		}
		if _, ok := v.(string); !ok {
			return Invalid(path, "must be a string, not %s", askvJSONType(v))
		}
		return nil
	case reflect.Slice:
		list, ok := v.([]any)
		if !ok {
			return Invalid(path, "must be a list, not %s", askvJSONType(v))
		}
		for i, e := range list {
			if err := askvShape(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		return nil
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return Invalid(path, "must be an object, not %s", askvJSONType(v))
		}
		names := make([]string, 0, t.NumField())
		fields := map[string]reflect.Type{}
		for i := 0; i < t.NumField(); i++ {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
			names = append(names, name)
			fields[name] = t.Field(i).Type
		}
		for _, k := range askvSortedKeys(obj) {
			if _, ok := fields[k]; !ok {
				return Invalid(path+"."+askvClip(k), "unknown member: %s takes only %s; a person must never sign what the page does not show", path, strings.Join(names, ", "))
			}
		}
		for _, name := range names {
			if mv, ok := obj[name]; ok {
				if err := askvShape(mv, fields[name], path+"."+name); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return Invalid(path, "cannot be checked") // not reached: every struct used is made of the kinds above
}

func askvJSONType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

func askvSortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// askvClip shortens a value quoted back in a refusal.
func askvClip(s string) string {
	if utf8.RuneCountInString(s) <= 64 {
		return s
	}
	r := []rune(s)
	return string(r[:64]) + "…"
}

// askvInt reads n as an exact integer of at least min and at most 2^53-1.
// The decimal value counts, not the spelling: 1.0 and 1e3 are integers, 1.5
// and 1e-1 are not. The exponent is bounded before any arithmetic.
func askvInt(field string, n json.Number, min int64) (int64, error) {
	s := string(n)
	v, ok, big := askvExactInt(s)
	if !ok {
		return 0, Invalid(field, "must be an integer, got %s", askvClip(s))
	}
	if big || v > askvMaxSafeInt {
		return 0, Invalid(field, "must be at most %d (2^53-1), got %s", int64(askvMaxSafeInt), askvClip(s))
	}
	if v < min {
		return 0, Invalid(field, "must be at least %d, got %s", min, askvClip(s))
	}
	return v, nil
}

// askvExactInt parses a JSON number literal. ok is false when it is not an
// exact integer; big is true when its magnitude is beyond 2^53-1 (v is then
// meaningless).
func askvExactInt(s string) (v int64, ok, big bool) {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	mant, expStr, hasExp := strings.Cut(strings.ToLower(s), "e")
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := intPart + frac
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		return 0, false, false
	}
	exp := 0
	if hasExp {
		e := strings.TrimPrefix(expStr, "+")
		eneg := strings.HasPrefix(e, "-")
		e = strings.TrimLeft(strings.TrimPrefix(e, "-"), "0")
		if strings.Trim(e, "0123456789") != "" {
			return 0, false, false
		}
		if len(e) > 6 {
			e = "999999" // far beyond any double; keeps the arithmetic bounded
		}
		if e != "" {
			x, _ := strconv.Atoi(e)
			exp = x
		}
		if eneg {
			exp = -exp
		}
	}
	exp -= len(frac)
	digits = strings.TrimLeft(digits, "0")
	if digits == "" {
		return 0, true, false // zero, -0 included
	}
	for strings.HasSuffix(digits, "0") {
		digits = digits[:len(digits)-1]
		exp++
	}
	if exp < 0 {
		return 0, false, false
	}
	if len(digits)+exp > 16 {
		return 0, true, true
	}
	x, err := strconv.ParseInt(digits+strings.Repeat("0", exp), 10, 64)
	if err != nil {
		return 0, true, true
	}
	if neg {
		x = -x
	}
	return x, true, false
}

func askvIsHex(s string, lower bool) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f':
		case !lower && c >= 'A' && c <= 'F':
		default:
			return false
		}
	}
	return true
}

// askvCommitSHA checks a git commit sha: 7 to 64 lower-case hex characters.
func askvCommitSHA(field, s string) error {
	if len(s) < 7 || len(s) > 64 || !askvIsHex(s, true) {
		return Invalid(field, "must be a commit sha, 7 to 64 lower-case hex characters, got %q", askvClip(s))
	}
	return nil
}

func askvRepoPart(s string) bool {
	if s == "" || s == "." || s == ".." {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// askvRepo checks "owner/name", each part of [A-Za-z0-9._-]+.
func askvRepo(field, repo string, present bool) error {
	if !present || repo == "" {
		return Invalid(field, `required: the repository, "owner/name"`)
	}
	owner, name, ok := strings.Cut(repo, "/")
	if !ok || !askvRepoPart(owner) || !askvRepoPart(name) || len(repo) > 200 {
		return Invalid(field, `must be "owner/name", each part of letters, digits, ".", "_" and "-", got %q`, askvClip(repo))
	}
	return nil
}

// askvBadRune reports the first character text may not hold: invalid UTF-8,
// control characters (in multi-line text tab, LF and CR are allowed),
// bidirectional override and isolate characters, and the line and paragraph
// separators U+2028 and U+2029.
func askvBadRune(s string, oneLine bool) (rune, bool) {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size <= 1 {
				return r, true
			}
		}
		switch {
		case !oneLine && (r == '\n' || r == '\t' || r == '\r'):
		case unicode.IsControl(r):
			return r, true
		case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069:
			return r, true
		case r == 0x2028 || r == 0x2029: // JSON encoders escape them: returned bytes would differ
			return r, true
		}
	}
	return 0, false
}

// askvText checks a text field: required (not blank), at most max characters
// (runes), and free of the characters askvBadRune refuses.
func askvText(field, s string, max int, oneLine, required bool) error {
	if required && strings.TrimSpace(s) == "" {
		return Invalid(field, "required: a non-empty text of at most %d characters", max)
	}
	if n := utf8.RuneCountInString(s); n > max {
		return Invalid(field, "at most %d characters, got %d", max, n)
	}
	if r, bad := askvBadRune(s, oneLine); bad {
		if oneLine {
			return Invalid(field, "must be one line of plain text: no line breaks, control or bidirectional override characters (found U+%04X)", r)
		}
		return Invalid(field, "must be plain text: no control characters other than tab and line breaks, no bidirectional override characters (found U+%04X)", r)
	}
	return nil
}

// askvHTTPSURL checks an absolute https URL with a host and no user info, of
// at most 2000 characters.
func askvHTTPSURL(field, s string, required bool) error {
	if s == "" {
		if required {
			return Invalid(field, "required: an absolute https URL")
		}
		return nil
	}
	if n := utf8.RuneCountInString(s); n > 2000 {
		return Invalid(field, "at most 2000 characters, got %d", n)
	}
	for _, r := range s {
		if unicode.IsControl(r) || unicode.IsSpace(r) || (r >= 0x202A && r <= 0x202E) || (r >= 0x2066 && r <= 0x2069) {
			return Invalid(field, "must be an absolute https URL without white space or control characters")
		}
	}
	u, err := url.Parse(s)
	if err != nil || !strings.EqualFold(u.Scheme, "https") || u.Opaque != "" || u.Host == "" || u.Hostname() == "" {
		return Invalid(field, "must be an absolute https URL with a host (https://host/…), got %q", askvClip(s))
	}
	if u.User != nil {
		return Invalid(field, "must not carry user info (user@ or user:password@) before the host")
	}
	return nil
}
