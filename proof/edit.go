package proof

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gowebpki/jcs"
)

// editedPrefix starts the decision string of an approve of an edited payload.
const editedPrefix = "approve_edited:"

// EditedDecision is the decision string of an approve of the payload as the
// person edited it: the edited payload's hash (of its RFC 8785 bytes), so
// that one signature binds both the ask's payload (payload_sha256) and
// exactly what the person let run.
func EditedDecision(editedSHA256 string) string { return editedPrefix + editedSHA256 }

// EditedSHA256 reads the edited payload's hash out of an approve_edited
// decision; ok is false for any other decision.
func EditedSHA256(decision string) (string, bool) {
	h, ok := strings.CutPrefix(decision, editedPrefix)
	if !ok || !isLowerHex(h, 64) {
		return "", false
	}
	return h, true
}

// Edit is one member in which the edited payload differs from the ask's:
// its JSON pointer (RFC 6901) and its value before and after, as JSON; a
// side where the member is absent is nil.
type Edit struct {
	Path   string          `json:"path"`
	Before json.RawMessage `json:"before,omitempty"`
	After  json.RawMessage `json:"after,omitempty"`
}

// Edits lists, in document order, the members in which edited differs from
// original: a scalar that changed, a member only one side has, an array
// whose length changed, or a value that changed its type is one Edit at its
// own pointer. Equal documents have none.
func Edits(original, edited []byte) ([]Edit, error) {
	var a, b any
	for _, in := range []struct {
		raw []byte
		v   *any
	}{{original, &a}, {edited, &b}} {
		d := json.NewDecoder(bytes.NewReader(in.raw))
		d.UseNumber()
		if err := d.Decode(in.v); err != nil {
			return nil, fmt.Errorf("not JSON: %w", err)
		}
	}
	var out []Edit
	if err := diff("", a, b, &out); err != nil {
		return nil, err
	}
	return out, nil
}

func diff(path string, a, b any, out *[]Edit) error {
	switch x := a.(type) {
	case map[string]any:
		if y, ok := b.(map[string]any); ok {
			var names []string
			for k := range x {
				names = append(names, k)
			}
			for k := range y {
				if _, ok := x[k]; !ok {
					names = append(names, k)
				}
			}
			slices.Sort(names)
			for _, k := range names {
				va, inA := x[k]
				vb, inB := y[k]
				p := path + "/" + PointerToken(k)
				if !inA || !inB {
					e, err := edit(p, va, inA, vb, inB)
					if err != nil {
						return err
					}
					*out = append(*out, e)
					continue
				}
				if err := diff(p, va, vb, out); err != nil {
					return err
				}
			}
			return nil
		}
	case []any:
		if y, ok := b.([]any); ok && len(x) == len(y) {
			for i := range x {
				if err := diff(path+"/"+strconv.Itoa(i), x[i], y[i], out); err != nil {
					return err
				}
			}
			return nil
		}
	}
	ja, err := canonical(a)
	if err != nil {
		return err
	}
	jb, err := canonical(b)
	if err != nil {
		return err
	}
	if !bytes.Equal(ja, jb) {
		*out = append(*out, Edit{Path: path, Before: ja, After: jb})
	}
	return nil
}

func edit(path string, a any, inA bool, b any, inB bool) (Edit, error) {
	e := Edit{Path: path}
	var err error
	if inA {
		if e.Before, err = canonical(a); err != nil {
			return e, err
		}
	}
	if inB {
		e.After, err = canonical(b)
	}
	return e, err
}

// canonical is v's RFC 8785 bytes.
func canonical(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return jcs.Transform(raw)
}

// PointerToken escapes one member name for a JSON pointer (RFC 6901: ~ as
// ~0, / as ~1).
func PointerToken(name string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(name)
}

// checkEdited checks the edited payload a proof of an approve_edited
// decision carries: canonical, and hashing to the hash the decision signs.
// It returns the edits against the payload when the proof carries both.
func checkEdited(p *Proof) ([]Edit, error) {
	edited, isEdit := EditedSHA256(p.Decision)
	if p.EditedPayload == nil {
		return nil, nil
	}
	if !isEdit {
		return nil, fail("edited_payload", "an edited_payload rides only with an approve_edited decision, not %q", p.Decision)
	}
	canonicalBytes, err := jcs.Transform(p.EditedPayload)
	if err != nil {
		return nil, fail("edited_payload", "edited_payload is not I-JSON: %v", err)
	}
	if !bytes.Equal(canonicalBytes, p.EditedPayload) {
		return nil, fail("edited_payload", "edited_payload is not in its RFC 8785 canonical form")
	}
	if sum := sha256.Sum256(p.EditedPayload); hex.EncodeToString(sum[:]) != edited {
		return nil, fail("edited_payload", "the edited payload does not hash to the one the decision signs: its SHA-256 is %x", sum)
	}
	if p.Payload == nil {
		return nil, nil
	}
	edits, err := Edits(p.Payload, p.EditedPayload)
	if err != nil {
		return nil, fail("edited_payload", "%v", err)
	}
	if len(edits) == 0 {
		return nil, fail("edited_payload", "the edited payload is the ask's payload unchanged: an unchanged payload is approved with approve")
	}
	return edits, nil
}
