package views

import (
	"strconv"

	"github.com/countersign/countersign/ask"
)

// WindowChoice is "Approve, and the same for…" on an ask a window may
// cover: whose asks of what it would approve ahead, and the lengths to
// pick from.
type WindowChoice struct {
	Agent   string // the subject of the agent that filed the ask
	Kind    string
	Target  ask.Target
	Minutes []int // ask.WindowMinutes
	Default int   // the length picked first
}

// What says in words the asks the window would approve: "agent:bot's calls
// of write_file on filesystem".
func (w WindowChoice) What() string { return w.Agent + "'s " + TargetText(w.Kind, w.Target) }

// DefaultLength is the default length in words.
func (w WindowChoice) DefaultLength() string { return ask.WindowLength(w.Default) }

// TargetText says in words the asks of kind about target: "calls of
// write_file on filesystem", "reviews of https://…", "work_change requests
// about board b_1".
func TargetText(kind string, t ask.Target) string {
	switch kind {
	case ask.KindToolCall:
		return "calls of " + t.Tool + " on " + t.Server
	case ask.KindReview:
		return "reviews of " + t.URL
	case ask.KindDocument:
		if t.SpaceID != "" {
			return "documents " + t.DocumentID + " in space " + t.SpaceID
		}
		return "documents " + t.DocumentID
	}
	about := t.TargetType + " " + t.TargetID
	if t.TargetType == "" && t.TargetID == "" {
		about = "no target"
	}
	return kind + " requests about " + about
}

func itoa(n int) string { return strconv.Itoa(n) }
