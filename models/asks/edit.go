package asks

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/countersign/countersign/ask"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/proof"
)

// EditableMembers returns the members of the ask's payload the person may
// change before they sign, nil when none.
func (a *Approval) EditableMembers() []ask.Editable {
	if a.Editable == "" {
		return nil
	}
	var out []ask.Editable
	_ = json.Unmarshal([]byte(a.Editable), &out)
	return out
}

// OffersEdits says whether the person may change members of the payload
// before they sign. Such an ask is only ever answered by a person, one at a
// time: no policy approves it and no batch holds it.
func (a *Approval) OffersEdits() bool { return a.Editable != "" }

// ActedOnSHA256 is the hash of the payload the requester acts on once the
// ask is approved: the edited payload's, when the person edited it.
func (a *Approval) ActedOnSHA256() string {
	if a.EditedPayloadSHA256 != "" {
		return a.EditedPayloadSHA256
	}
	return a.PayloadSHA256
}

// EditableJSON is the canonical form an ask keeps its editable list in, ""
// for none.
func EditableJSON(list []ask.Editable) (string, error) {
	if len(list) == 0 {
		return "", nil
	}
	raw, err := json.Marshal(list)
	if err != nil {
		return "", err
	}
	canonical, _, err := ask.CanonicalHash(raw)
	return string(canonical), err
}

// Edited is the payload as a person edited it, checked against the ask.
type Edited struct {
	Canonical []byte // RFC 8785 bytes
	SHA256    string
	Edits     []proof.Edit
}

// CheckEdit reads the payload a person edited on ask a, at time now: a
// payload of the ask's kind that passes every check the ask's own did,
// differing from it in at least one member, and only in members the ask
// marks editable, each within its schema. Anything else is refused and
// nothing is signed.
func CheckEdit(a *Approval, edited json.RawMessage, now time.Time) (*Edited, error) {
	if !a.OffersEdits() {
		return nil, core.Invalid("edited_payload", "approval %s marks no member editable: approve or deny it as filed", a.ID)
	}
	if a.Requirement != nil {
		return nil, core.Invalid("edited_payload", "approval %s needs more than one person, who each sign the payload as filed: it cannot be edited", a.ID)
	}
	p, err := ask.ParsePayload(a.Kind, edited, now)
	if err != nil {
		if r, ok := err.(*ask.Refusal); ok {
			return nil, core.Invalid("edited_payload", "%s: %s", r.Field, r.Msg)
		}
		return nil, err
	}
	edits, err := proof.Edits([]byte(a.Payload), p.Canonical)
	if err != nil {
		return nil, core.Invalid("edited_payload", "%v", err)
	}
	if len(edits) == 0 {
		return nil, core.Invalid("edited_payload", "nothing was changed: approve the ask as filed")
	}
	list := a.EditableMembers()
	var refused []string
	for _, e := range edits {
		member, ok := ask.EditableAt(list, e.Path)
		if !ok || e.After == nil {
			refused = append(refused, e.Path)
			continue
		}
		value, _ := ask.ValueAt(p.Canonical, e.Path)
		if err := member.Allows(value); err != nil {
			return nil, core.Invalid("edited_payload", "%v", err)
		}
	}
	if len(refused) > 0 {
		return nil, core.Refuse(core.PermissionDenied, "edited_payload", "%s %s not editable on approval %s: only %s may change",
			strings.Join(refused, ", "), isOrAre(len(refused)), a.ID, editablePaths(list))
	}
	return &Edited{Canonical: p.Canonical, SHA256: p.SHA256, Edits: edits}, nil
}

// Paths names the members the person edited, for the timeline.
func (e *Edited) Paths() string {
	paths := make([]string, len(e.Edits))
	for i, x := range e.Edits {
		paths[i] = x.Path
	}
	return strings.Join(paths, ", ")
}

func editablePaths(list []ask.Editable) string {
	paths := make([]string, len(list))
	for i, e := range list {
		paths[i] = e.Path
	}
	return strings.Join(paths, ", ")
}

func isOrAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}
