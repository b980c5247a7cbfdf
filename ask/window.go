package ask

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// WindowMinutes are the lengths a person may pick for "Approve, and the
// same for…": 15 minutes to 8 hours.
var WindowMinutes = []int{15, 30, 60, 120, 240, 480}

// DefaultWindowMinutes is the length the ask page picks first.
const DefaultWindowMinutes = 30

// Target is what an ask is about, as a window matches it: the server and
// tool of a tool_call, the URL of a review, the document and space of a
// document (not its version), the target of an advisory request. Only the
// members of its kind are set, and an empty member is left out of its JSON.
type Target struct {
	Server     string `json:"server,omitempty"`
	Tool       string `json:"tool,omitempty"`
	URL        string `json:"url,omitempty"`
	DocumentID string `json:"document_id,omitempty"`
	SpaceID    string `json:"space_id,omitempty"`
	TargetType string `json:"target_type,omitempty"`
	TargetID   string `json:"target_id,omitempty"`
}

// TargetOf returns what an ask of kind, with its canonical payload, is
// about. ok is false for a kind no window covers (a pull request, roll,
// run, decision, policy, rule or member change: they always ask a person)
// and for a payload that does not read.
func TargetOf(kind, canonicalPayload string) (t Target, ok bool) {
	raw := []byte(canonicalPayload)
	switch kind {
	case KindToolCall:
		var p struct {
			ToolCall ToolCallPayload `json:"tool_call"`
		}
		if json.Unmarshal(raw, &p) != nil || p.ToolCall.Tool == "" {
			return t, false
		}
		return Target{Server: p.ToolCall.Server, Tool: p.ToolCall.Tool}, true
	case KindReview:
		var p struct {
			Review ReviewPayload `json:"review"`
		}
		if json.Unmarshal(raw, &p) != nil || p.Review.URL == "" {
			return t, false
		}
		return Target{URL: p.Review.URL}, true
	case KindDocument:
		var p struct {
			Document DocumentPayload `json:"document"`
		}
		if json.Unmarshal(raw, &p) != nil || p.Document.DocumentID == "" {
			return t, false
		}
		return Target{DocumentID: p.Document.DocumentID, SpaceID: p.Document.SpaceID}, true
	case KindWorkChange, KindMemoryChange, KindLifeChange, KindAgentRequest:
		p, read := ReadRequestPayload(raw)
		if !read || p.Kind != kind {
			return t, false
		}
		return Target{TargetType: p.TargetType, TargetID: p.TargetID}, true
	}
	return t, false
}

// Window is what a person signs with "Approve, and the same for…": the
// asks Agent files of Kind about Target are approved for Minutes after the
// decision. Its JSON is the text the decision approve_for:<sha256> hashes
// (docs/proof.md §3).
type Window struct {
	Agent   string `json:"agent"` // the subject of the agent that filed the ask
	Kind    string `json:"kind"`
	Minutes int    `json:"minutes"`
	Target  Target `json:"target"`
}

// JSON is the window's RFC 8785 JSON.
func (w Window) JSON() string { return canonicalText(w) }

// JSON is the target's RFC 8785 JSON, as a window's policy keeps it.
func (t Target) JSON() string { return canonicalText(t) }

// canonicalText is the RFC 8785 JSON of a window or a target: strings and
// an int, which always marshal.
func canonicalText(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("marshal %T: %v", v, err))
	}
	canonical, _, err := CanonicalHash(raw)
	if err != nil {
		panic(fmt.Sprintf("canonicalize %T: %v", v, err))
	}
	return string(canonical)
}

// ReadWindow reads a window's JSON strictly: only its members, spelt
// exactly, and already in RFC 8785 form, so that one window has one text.
func ReadWindow(text string) (Window, error) {
	var w Window
	d := json.NewDecoder(bytes.NewReader([]byte(text)))
	d.DisallowUnknownFields()
	if err := d.Decode(&w); err != nil {
		return w, Invalid("approve_for", "not a window's JSON: %v", err)
	}
	if w.JSON() != text {
		return w, Invalid("approve_for", "not a window in its RFC 8785 form")
	}
	return w, nil
}

// WindowLength says a window's minutes in words: "30 minutes", "1 hour", "8 hours".
func WindowLength(minutes int) string {
	switch {
	case minutes == 60:
		return "1 hour"
	case minutes%60 == 0:
		return strconv.Itoa(minutes/60) + " hours"
	}
	return strconv.Itoa(minutes) + " minutes"
}

// CheckWindowMinutes refuses a window length not on the menu.
func CheckWindowMinutes(minutes int) error {
	if slices.Contains(WindowMinutes, minutes) {
		return nil
	}
	menu := make([]string, len(WindowMinutes))
	for i, m := range WindowMinutes {
		menu[i] = strconv.Itoa(m)
	}
	return Invalid("minutes", "must be one of %s (15 minutes to 8 hours), not %d", strings.Join(menu, ", "), minutes)
}
