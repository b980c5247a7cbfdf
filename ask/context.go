package ask

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
	"fmt"
	"slices"
	"strings"
)

// CheckedContext is a context that passed ParseContext: what the store keeps
// of it beside the payload.
type CheckedContext struct {
	Canonical             []byte // JCS bytes of the context object, nil when none was sent
	JobID                 string // context.job_id as sent ("" when none): the binding of a job's asks
	HasPlanItemOrDocument bool   // a plan item or a document is named, by the context or the payload
}

// Context is what an ask is about, recorded and shown as given, with the
// requester's explanation. It is the shape the validator accepts and the ask
// page shows, one for both.
type Context struct {
	PlanID          string            `json:"plan_id"`
	PlanItem        string            `json:"plan_item"`
	JobID           string            `json:"job_id"`
	Documents       []ContextDocument `json:"documents"`
	DiagramIDs      []string          `json:"diagram_ids"`
	CanvasID        string            `json:"canvas_id"`
	SceneDocumentID string            `json:"scene_document_id"`
	Commits         []ContextCommit   `json:"commits"`
	NoContextReason string            `json:"no_context_reason"`
	Explanation     *Explanation      `json:"explanation"`
}

// HasIDs says whether the context names anything besides its explanation.
func (c Context) HasIDs() bool {
	return c.PlanID != "" || c.PlanItem != "" || c.JobID != "" || len(c.Documents) > 0 || len(c.DiagramIDs) > 0 ||
		c.CanvasID != "" || c.SceneDocumentID != "" || len(c.Commits) > 0 || c.NoContextReason != ""
}

// ContextDocument names a document by id, or by kind and number (what the
// number counts, as in "issue"), in an optional space.
type ContextDocument struct {
	DocumentID string      `json:"document_id"`
	Kind       string      `json:"kind"`
	Number     json.Number `json:"number"`
	SpaceID    string      `json:"space_id"`
}

// Name is how the document reads: its id, or its kind and number, and its space.
func (d ContextDocument) Name() string {
	name := d.DocumentID
	if name == "" {
		name = d.Kind + " " + d.Number.String()
	}
	if d.SpaceID != "" {
		name += " in space " + d.SpaceID
	}
	return name
}

// ContextCommit is a commit the ask is about.
type ContextCommit struct {
	Repo    string `json:"repo"`
	SHA     string `json:"sha"`
	Subject string `json:"subject"`
}

// Explanation is the ask in the requester's plain words: unsigned, shown
// under the signed payload.
type Explanation struct {
	What     string     `json:"what"`
	Why      string     `json:"why"`
	Approve  string     `json:"approve"`
	Deny     string     `json:"deny"`
	Effect   *Effect    `json:"effect"`
	Risk     *Risk      `json:"risk"`
	Evidence []Evidence `json:"evidence"`
}

// Effect is what approving changes.
type Effect struct {
	Kind    string   `json:"kind"`
	Ships   string   `json:"ships"`
	Summary string   `json:"summary"`
	Touches []string `json:"touches"`
}

// Risk is the requester's view of what could go wrong.
type Risk struct {
	Level string `json:"level"`
	Text  string `json:"text"`
}

// Evidence is one item that backs the explanation: code, a diff, a log or a
// link. An item carries only the members of its kind.
type Evidence struct {
	Kind     string `json:"kind"`
	Title    string `json:"title"`
	Language string `json:"language"`
	Path     string `json:"path"`
	Text     string `json:"text"`
	URL      string `json:"url"`
}

// The kinds whose asks need a plan item, a document or a no_context_reason.
var kindsNeedingContext = []string{KindPullRequest, KindRoll, KindDocument, KindDecision, KindRun}

// KindsRequiringContext are the kinds whose asks are refused when they carry
// no context at all: those of kindsNeedingContext but a document, whose
// payload is itself the document the context would name. Tool schemas
// publish it (approvals_create).
func KindsRequiringContext() []string {
	return slices.DeleteFunc(slices.Clone(kindsNeedingContext), func(k string) bool { return k == KindDocument })
}

// RiskLevels are the levels an explanation's risk may name, lowest first.
var RiskLevels = []string{"low", "medium", "high"}

// The members each evidence kind carries besides kind and title.
var evidenceMembers = map[string][]string{
	"code": {"language", "text"},
	"diff": {"path", "text"},
	"log":  {"text"},
	"link": {"url"},
}

const maxEach = 20

// ParseContext validates the context of an ask of the given kind.
// payloadNamesDocument says the payload itself names a document (a document
// payload); allowPrivateEvidence answers with the account's
// allow_private_evidence setting, and is asked only when the context carries
// code, diff or log evidence. raw may be empty or null when no context was sent; Canonical is then
// nil. Every refusal is a *Refusal naming the dotted path of the member at
// fault, under "context".
func ParseContext(kind string, raw json.RawMessage, payloadNamesDocument bool, allowPrivateEvidence func() (bool, error)) (*CheckedContext, error) {
	payloadNamesDocument = payloadNamesDocument || kind == KindDocument
	out := &CheckedContext{HasPlanItemOrDocument: payloadNamesDocument}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return out, requireContext(kind, out, "")
	}
	canonical, _, tree, err := readSent("context", raw)
	if err != nil {
		return nil, err
	}
	var c Context
	if err := decodeTyped(raw, tree, "context", &c); err != nil {
		return nil, err
	}
	sent, _ := tree.(map[string]any) // an object: decodeTyped checked its shape
	if err := checkContext(&c, sent, allowPrivateEvidence); err != nil {
		return nil, err
	}
	out.Canonical = canonical
	out.JobID = c.JobID
	if c.PlanItem != "" || len(c.Documents) > 0 {
		out.HasPlanItemOrDocument = true
	}
	return out, requireContext(kind, out, c.NoContextReason)
}

// requireContext applies seed 001's rule: a pull_request, roll, document, decision
// or run ask with no plan item and no document is refused unless it says why
// there is none.
func requireContext(kind string, c *CheckedContext, noContextReason string) error {
	if !slices.Contains(kindsNeedingContext, kind) || c.HasPlanItemOrDocument || strings.TrimSpace(noContextReason) != "" {
		return nil
	}
	return Invalid("context", "a %s ask needs context: name a plan item (context.plan_item with context.plan_id) or at least one document (context.documents), or say why there is none in context.no_context_reason", kind)
}

// checkContext checks c, decoded from the object sent. sent is the generic
// decoding of the same object: it tells a member sent empty from one left out,
// which the typed struct cannot.
func checkContext(c *Context, sent map[string]any, allowPrivateEvidence func() (bool, error)) error {
	for _, f := range []struct{ name, value string }{
		{"plan_id", c.PlanID}, {"plan_item", c.PlanItem}, {"job_id", c.JobID},
		{"canvas_id", c.CanvasID}, {"scene_document_id", c.SceneDocumentID},
	} {
		if err := checkText("context."+f.name, f.value, 200, true, false); err != nil {
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
	if len(c.Documents) > maxEach {
		return Invalid("context.documents", "at most %d documents, got %d", maxEach, len(c.Documents))
	}
	sentDocuments := sentObjects(sent, "documents")
	for i, d := range c.Documents {
		if err := checkContextDocument(fmt.Sprintf("context.documents[%d]", i), d, sentDocuments[i]); err != nil {
			return err
		}
	}
	if len(c.DiagramIDs) > maxEach {
		return Invalid("context.diagram_ids", "at most %d diagram ids, got %d", maxEach, len(c.DiagramIDs))
	}
	for i, id := range c.DiagramIDs {
		if err := checkText(fmt.Sprintf("context.diagram_ids[%d]", i), id, 200, true, true); err != nil {
			return err
		}
	}
	if len(c.Commits) > maxEach {
		return Invalid("context.commits", "at most %d commits, got %d", maxEach, len(c.Commits))
	}
	for i, cm := range c.Commits {
		f := fmt.Sprintf("context.commits[%d]", i)
		if err := checkRepo(f+".repo", cm.Repo, cm.Repo != ""); err != nil {
			return err
		}
		if cm.SHA == "" {
			return Invalid(f+".sha", "required: the commit sha, 7 to 64 lower-case hex characters")
		}
		if err := checkCommitSHA(f+".sha", cm.SHA); err != nil {
			return err
		}
		if err := checkText(f+".subject", cm.Subject, 200, true, false); err != nil {
			return err
		}
	}
	if err := checkText("context.no_context_reason", c.NoContextReason, 500, false, false); err != nil {
		return err
	}
	if c.Explanation != nil {
		if err := checkExplanation(c.Explanation, sentObject(sent, "explanation"), allowPrivateEvidence); err != nil {
			return err
		}
	}
	return nil
}

func checkContextDocument(f string, d ContextDocument, sent map[string]any) error {
	byID, byNumber := has(sent, "document_id"), has(sent, "kind") || has(sent, "number")
	switch {
	case byID && byNumber:
		return Invalid(f, "either document_id, or kind and number: not both")
	case byID:
		if err := checkText(f+".document_id", d.DocumentID, 200, true, true); err != nil {
			return err
		}
	case byNumber:
		if !has(sent, "kind") {
			return Invalid(f+".kind", "required with number: what the number counts")
		}
		if err := checkText(f+".kind", d.Kind, 64, true, true); err != nil {
			return err
		}
		if !has(sent, "number") {
			return Invalid(f+".number", "required with kind: an integer of at least 1")
		}
		if _, err := checkInt(f+".number", d.Number, 1); err != nil {
			return err
		}
	default:
		return Invalid(f, "needs document_id, or kind and number")
	}
	return checkText(f+".space_id", d.SpaceID, 200, true, false)
}

func checkExplanation(x *Explanation, sent map[string]any, allowPrivateEvidence func() (bool, error)) error {
	const p = "context.explanation"
	for _, f := range []struct{ name, value string }{{"what", x.What}, {"why", x.Why}, {"approve", x.Approve}, {"deny", x.Deny}} {
		if err := checkText(p+"."+f.name, f.value, 500, false, false); err != nil {
			return err
		}
	}
	if e := x.Effect; e != nil {
		if e.Kind == "" {
			return Invalid(p+".effect.kind", "required: one of %s", strings.Join(effects, ", "))
		}
		if !slices.Contains(effects, e.Kind) {
			return Invalid(p+".effect.kind", "unknown effect %q: one of %s", clip(e.Kind), strings.Join(effects, ", "))
		}
		if err := checkText(p+".effect.ships", e.Ships, 300, true, false); err != nil {
			return err
		}
		if err := checkText(p+".effect.summary", e.Summary, 500, false, false); err != nil {
			return err
		}
		if len(e.Touches) > maxEach {
			return Invalid(p+".effect.touches", "at most %d entries, got %d", maxEach, len(e.Touches))
		}
		for i, t := range e.Touches {
			if err := checkText(fmt.Sprintf("%s.effect.touches[%d]", p, i), t, 300, true, true); err != nil {
				return err
			}
		}
	}
	if r := x.Risk; r != nil {
		if r.Level == "" {
			return Invalid(p+".risk.level", "required: one of %s", strings.Join(RiskLevels, ", "))
		}
		if !slices.Contains(RiskLevels, r.Level) {
			return Invalid(p+".risk.level", "unknown level %q: one of %s", clip(r.Level), strings.Join(RiskLevels, ", "))
		}
		if err := checkText(p+".risk.text", r.Text, 500, false, false); err != nil {
			return err
		}
	}
	if len(x.Evidence) > 8 {
		return Invalid(p+".evidence", "at most 8 items, got %d", len(x.Evidence))
	}
	sentEvidence := sentObjects(sent, "evidence")
	for i, ev := range x.Evidence {
		if err := checkEvidence(fmt.Sprintf("%s.evidence[%d]", p, i), ev, sentEvidence[i], allowPrivateEvidence); err != nil {
			return err
		}
	}
	return nil
}

func checkEvidence(f string, ev Evidence, sent map[string]any, allowPrivateEvidence func() (bool, error)) error {
	members, ok := evidenceMembers[ev.Kind]
	if !ok {
		if ev.Kind == "" {
			return Invalid(f+".kind", "required: code, diff, log or link")
		}
		return Invalid(f+".kind", "unknown evidence kind %q: code, diff, log or link", clip(ev.Kind))
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
	for _, name := range []string{"language", "path", "text", "url"} {
		if has(sent, name) && !slices.Contains(members, name) {
			return Invalid(f+"."+name, "%s evidence carries only %s and an optional title", ev.Kind, strings.Join(members, " and "))
		}
	}
	for _, name := range members {
		if !has(sent, name) {
			return Invalid(f+"."+name, "required for %s evidence", ev.Kind)
		}
	}
	if err := checkText(f+".title", ev.Title, 120, true, false); err != nil {
		return err
	}
	switch ev.Kind {
	case "code":
		if err := checkText(f+".language", ev.Language, 64, true, true); err != nil {
			return err
		}
	case "diff":
		if err := checkText(f+".path", ev.Path, 1000, true, true); err != nil {
			return err
		}
	case "link":
		return checkHTTPSURL(f+".url", ev.URL, true)
	}
	return checkText(f+".text", ev.Text, 20000, false, true)
}

// sentObject returns the object member name of obj, or nil when there is none.
func sentObject(obj map[string]any, name string) map[string]any {
	o, _ := obj[name].(map[string]any)
	return o
}

// sentObjects returns the objects of the list member name of obj, one for
// each entry (nil where an entry is not an object).
func sentObjects(obj map[string]any, name string) []map[string]any {
	list, _ := obj[name].([]any)
	out := make([]map[string]any, len(list))
	for i, v := range list {
		out[i], _ = v.(map[string]any)
	}
	return out
}

// has says whether obj carries the member name, whatever its value.
func has(obj map[string]any, name string) bool {
	_, ok := obj[name]
	return ok
}
