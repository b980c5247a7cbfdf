package models

// Validation of an ask's context (seed 001, approvals_create): what the ask is
// about, kept beside the payload and never in its hash. Countersign holds no
// plans, jobs or documents: ids are recorded and shown as given.
//
// The context is read like a payload (see payload.go): RFC 8785 first (no
// duplicate names, no trailing data, I-JSON only), then a check of every
// member against the typed struct with exact names, null refused, then a
// strict typed decode.
//
// Choices made where seed 001 is vague (the strict reading):
//   - plan_id, plan_item, canvas_id, scene_document_id, diagram_ids entries
//     and document ids are strings: one line, at most 200 characters
//     (diagram_ids entries non-empty). plan_item is a string, not a number.
//   - plan_item needs plan_id; plan_id alone is not a plan item and does not
//     satisfy the context rule.
//   - job_id, when not empty, starts with "job_".
//   - A documents entry is either {document_id, space_id?} or {kind, number,
//     space_id?}: both forms at once, or neither, is refused. kind is a one
//     line word of at most 64 characters (what the number counts, as in
//     "pull_request" or "issue"); number an integer of at least 1.
//   - commits entries need repo ("owner/name") and sha (7 to 64 lower-case
//     hex); subject is optional, one line, at most 200.
//   - no_context_reason counts only when it is not blank.
//   - explanation: what, why, approve and deny are text of at most 500
//     characters (line breaks allowed). effect needs kind; ships is one line of
//     at most 300, summary at most 500, touches at most 20 one-line entries of
//     at most 300. risk needs level; text at most 500.
//   - evidence items: kind is required, and an item carries only the members
//     of its kind: code {language, text}, diff {path, text}, log {text}, link
//     {url}, each with an optional title (one line, at most 120). All of those
//     members are required for their kind. text is at most 20000 characters,
//     tab and line breaks allowed, other control characters (terminal escape
//     codes included) refused; language one line of at most 64; path one line
//     of at most 1000. Code, diff and log are private content: without
//     allowPrivateEvidence the item is refused with PERMISSION_DENIED before
//     its members are checked.
//   - An item of the documents, diagram_ids, commits or effect.touches lists
//     that breaks a rule is named by its index.
//   - HasPlanItemOrDocument is true when the context names a plan item (with
//     its plan_id) or at least one document, or the payload names one (a
//     document payload always does, whatever payloadNamesDocument says).

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// AskContext is a validated ask context.
type AskContext struct {
	Canonical             []byte // JCS bytes of the context object, nil when none was sent
	JobID                 string // context.job_id as sent ("" when none): the binding of a job's asks
	HasPlanItemOrDocument bool   // a plan item or a document is named, by the context or the payload
}

type cxContext struct {
	PlanID          string         `json:"plan_id"`
	PlanItem        string         `json:"plan_item"`
	JobID           string         `json:"job_id"`
	Documents       []cxDocument   `json:"documents"`
	DiagramIDs      []string       `json:"diagram_ids"`
	CanvasID        string         `json:"canvas_id"`
	SceneDocumentID string         `json:"scene_document_id"`
	Commits         []cxCommit     `json:"commits"`
	NoContextReason string         `json:"no_context_reason"`
	Explanation     *cxExplanation `json:"explanation"`
}

type cxDocument struct {
	DocumentID *string      `json:"document_id"`
	Kind       *string      `json:"kind"`
	Number     *json.Number `json:"number"`
	SpaceID    string       `json:"space_id"`
}

type cxCommit struct {
	Repo    string `json:"repo"`
	SHA     string `json:"sha"`
	Subject string `json:"subject"`
}

type cxExplanation struct {
	What     string       `json:"what"`
	Why      string       `json:"why"`
	Approve  string       `json:"approve"`
	Deny     string       `json:"deny"`
	Effect   *cxEffect    `json:"effect"`
	Risk     *cxRisk      `json:"risk"`
	Evidence []cxEvidence `json:"evidence"`
}

type cxEffect struct {
	Kind    string   `json:"kind"`
	Ships   string   `json:"ships"`
	Summary string   `json:"summary"`
	Touches []string `json:"touches"`
}

type cxRisk struct {
	Level string `json:"level"`
	Text  string `json:"text"`
}

type cxEvidence struct {
	Kind     string  `json:"kind"`
	Title    *string `json:"title"`
	Language *string `json:"language"`
	Path     *string `json:"path"`
	Text     *string `json:"text"`
	URL      *string `json:"url"`
}

// The kinds whose asks need a plan item, a document or a no_context_reason.
var cxKindsNeedingContext = []string{"pull_request", "roll", "document", "decision", "run"}

var cxRiskLevels = []string{"low", "medium", "high"}

// The members each evidence kind carries besides kind and title.
var cxEvidenceMembers = map[string][]string{
	"code": {"language", "text"},
	"diff": {"path", "text"},
	"log":  {"text"},
	"link": {"url"},
}

const cxMaxEach = 20

// ParseContext validates the context of an ask of the given kind.
// payloadNamesDocument says the payload itself names a document (a document
// payload); allowPrivateEvidence answers with the account's
// allow_private_evidence setting, and is asked only when the context carries
// code, diff or log evidence. raw may be empty or null when no context was sent; Canonical is then
// nil. Every refusal is an *Error naming the dotted path of the member at
// fault, under "context".
func ParseContext(kind string, raw json.RawMessage, payloadNamesDocument bool, allowPrivateEvidence func() (bool, error)) (*AskContext, error) {
	payloadNamesDocument = payloadNamesDocument || kind == "document"
	out := &AskContext{HasPlanItemOrDocument: payloadNamesDocument}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return out, cxRequire(kind, out, "")
	}
	canonical, _, err := CanonicalHash(raw)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			return nil, Invalid("context", "%s", e.Msg)
		}
		return nil, Invalid("context", "%v", err)
	}
	tree, err := askvDecodeTree(raw)
	if err != nil {
		return nil, Invalid("context", "not valid JSON: %v", err)
	}
	var c cxContext
	if err := askvDecodeTyped(raw, tree, "context", &c); err != nil {
		return nil, err
	}
	if err := cxCheck(&c, allowPrivateEvidence); err != nil {
		return nil, err
	}
	out.Canonical = canonical
	out.JobID = c.JobID
	if c.PlanItem != "" || len(c.Documents) > 0 {
		out.HasPlanItemOrDocument = true
	}
	return out, cxRequire(kind, out, c.NoContextReason)
}

// cxRequire applies seed 001's rule: a pull_request, roll, document, decision
// or run ask with no plan item and no document is refused unless it says why
// there is none.
func cxRequire(kind string, c *AskContext, noContextReason string) error {
	if !slices.Contains(cxKindsNeedingContext, kind) || c.HasPlanItemOrDocument || strings.TrimSpace(noContextReason) != "" {
		return nil
	}
	return Invalid("context", "a %s ask needs context: name a plan item (context.plan_item with context.plan_id) or at least one document (context.documents), or say why there is none in context.no_context_reason", kind)
}

func cxCheck(c *cxContext, allowPrivateEvidence func() (bool, error)) error {
	for _, f := range []struct{ name, value string }{
		{"plan_id", c.PlanID}, {"plan_item", c.PlanItem}, {"job_id", c.JobID},
		{"canvas_id", c.CanvasID}, {"scene_document_id", c.SceneDocumentID},
	} {
		if err := askvText("context."+f.name, f.value, 200, true, false); err != nil {
			return err
		}
	}
	if c.PlanItem != "" && strings.TrimSpace(c.PlanID) == "" {
		return Invalid("context.plan_id", "required with plan_item: the plan the item belongs to")
	}
	if c.PlanItem != "" && strings.TrimSpace(c.PlanItem) == "" {
		return Invalid("context.plan_item", "must not be blank")
	}
	if c.JobID != "" && !strings.HasPrefix(c.JobID, "job_") {
		return Invalid("context.job_id", `must be a coordinator job id, starting with "job_"`)
	}
	if len(c.Documents) > cxMaxEach {
		return Invalid("context.documents", "at most %d documents, got %d", cxMaxEach, len(c.Documents))
	}
	for i, d := range c.Documents {
		if err := cxCheckDocument(fmt.Sprintf("context.documents[%d]", i), d); err != nil {
			return err
		}
	}
	if len(c.DiagramIDs) > cxMaxEach {
		return Invalid("context.diagram_ids", "at most %d diagram ids, got %d", cxMaxEach, len(c.DiagramIDs))
	}
	for i, id := range c.DiagramIDs {
		if err := askvText(fmt.Sprintf("context.diagram_ids[%d]", i), id, 200, true, true); err != nil {
			return err
		}
	}
	if len(c.Commits) > cxMaxEach {
		return Invalid("context.commits", "at most %d commits, got %d", cxMaxEach, len(c.Commits))
	}
	for i, cm := range c.Commits {
		f := fmt.Sprintf("context.commits[%d]", i)
		if err := askvRepo(f+".repo", cm.Repo, cm.Repo != ""); err != nil {
			return err
		}
		if cm.SHA == "" {
			return Invalid(f+".sha", "required: the commit sha, 7 to 64 lower-case hex characters")
		}
		if err := askvCommitSHA(f+".sha", cm.SHA); err != nil {
			return err
		}
		if err := askvText(f+".subject", cm.Subject, 200, true, false); err != nil {
			return err
		}
	}
	if err := askvText("context.no_context_reason", c.NoContextReason, 500, false, false); err != nil {
		return err
	}
	if c.Explanation != nil {
		if err := cxCheckExplanation(c.Explanation, allowPrivateEvidence); err != nil {
			return err
		}
	}
	return nil
}

func cxCheckDocument(f string, d cxDocument) error {
	byID, byNumber := d.DocumentID != nil, d.Kind != nil || d.Number != nil
	switch {
	case byID && byNumber:
		return Invalid(f, "either document_id, or kind and number: not both")
	case byID:
		if err := askvText(f+".document_id", *d.DocumentID, 200, true, true); err != nil {
			return err
		}
	case byNumber:
		if d.Kind == nil {
			return Invalid(f+".kind", "required with number: what the number counts")
		}
		if err := askvText(f+".kind", *d.Kind, 64, true, true); err != nil {
			return err
		}
		if d.Number == nil {
			return Invalid(f+".number", "required with kind: an integer of at least 1")
		}
		if _, err := askvInt(f+".number", *d.Number, 1); err != nil {
			return err
		}
	default:
		return Invalid(f, "needs document_id, or kind and number")
	}
	return askvText(f+".space_id", d.SpaceID, 200, true, false)
}

func cxCheckExplanation(x *cxExplanation, allowPrivateEvidence func() (bool, error)) error {
	const p = "context.explanation"
	for _, f := range []struct{ name, value string }{{"what", x.What}, {"why", x.Why}, {"approve", x.Approve}, {"deny", x.Deny}} {
		if err := askvText(p+"."+f.name, f.value, 500, false, false); err != nil {
			return err
		}
	}
	if e := x.Effect; e != nil {
		if e.Kind == "" {
			return Invalid(p+".effect.kind", "required: one of %s", strings.Join(askvEffects, ", "))
		}
		if !slices.Contains(askvEffects, e.Kind) {
			return Invalid(p+".effect.kind", "unknown effect %q: one of %s", askvClip(e.Kind), strings.Join(askvEffects, ", "))
		}
		if err := askvText(p+".effect.ships", e.Ships, 300, true, false); err != nil {
			return err
		}
		if err := askvText(p+".effect.summary", e.Summary, 500, false, false); err != nil {
			return err
		}
		if len(e.Touches) > cxMaxEach {
			return Invalid(p+".effect.touches", "at most %d entries, got %d", cxMaxEach, len(e.Touches))
		}
		for i, t := range e.Touches {
			if err := askvText(fmt.Sprintf("%s.effect.touches[%d]", p, i), t, 300, true, true); err != nil {
				return err
			}
		}
	}
	if r := x.Risk; r != nil {
		if r.Level == "" {
			return Invalid(p+".risk.level", "required: one of %s", strings.Join(cxRiskLevels, ", "))
		}
		if !slices.Contains(cxRiskLevels, r.Level) {
			return Invalid(p+".risk.level", "unknown level %q: one of %s", askvClip(r.Level), strings.Join(cxRiskLevels, ", "))
		}
		if err := askvText(p+".risk.text", r.Text, 500, false, false); err != nil {
			return err
		}
	}
	if len(x.Evidence) > 8 {
		return Invalid(p+".evidence", "at most 8 items, got %d", len(x.Evidence))
	}
	for i, ev := range x.Evidence {
		if err := cxCheckEvidence(fmt.Sprintf("%s.evidence[%d]", p, i), ev, allowPrivateEvidence); err != nil {
			return err
		}
	}
	return nil
}

func cxCheckEvidence(f string, ev cxEvidence, allowPrivateEvidence func() (bool, error)) error {
	members, ok := cxEvidenceMembers[ev.Kind]
	if !ok {
		if ev.Kind == "" {
			return Invalid(f+".kind", "required: code, diff, log or link")
		}
		return Invalid(f+".kind", "unknown evidence kind %q: code, diff, log or link", askvClip(ev.Kind))
	}
	if ev.Kind != "link" {
		allowed, err := allowPrivateEvidence()
		if err != nil {
			return err
		}
		if !allowed {
			return Refuse(PermissionDenied, f, "%s evidence is private content and this account does not allow private evidence: leave it out, or use a link (an owner can turn on allow_private_evidence)", ev.Kind)
		}
	}
	present := map[string]*string{"language": ev.Language, "path": ev.Path, "text": ev.Text, "url": ev.URL}
	for _, name := range []string{"language", "path", "text", "url"} {
		if present[name] != nil && !slices.Contains(members, name) {
			return Invalid(f+"."+name, "%s evidence carries only %s and an optional title", ev.Kind, strings.Join(members, " and "))
		}
	}
	for _, name := range members {
		if present[name] == nil {
			return Invalid(f+"."+name, "required for %s evidence", ev.Kind)
		}
	}
	if ev.Title != nil {
		if err := askvText(f+".title", *ev.Title, 120, true, false); err != nil {
			return err
		}
	}
	switch ev.Kind {
	case "code":
		if err := askvText(f+".language", *ev.Language, 64, true, true); err != nil {
			return err
		}
	case "diff":
		if err := askvText(f+".path", *ev.Path, 1000, true, true); err != nil {
			return err
		}
	case "link":
		return askvHTTPSURL(f+".url", *ev.URL, true)
	}
	return askvText(f+".text", *ev.Text, 20000, false, true)
}
