package views

import (
	"strconv"
	"strings"
	"time"
)

// Quorum is what the page of an ask an approval rule covers says of its
// signatures: the rule, who has signed, who may still sign, and whether it
// escalated.
type Quorum struct {
	RuleID      string
	RuleName    string
	Count       int
	Approved    []string // who approved, in order
	DeniedBy    string
	Waiting     []string // who may still sign: the pool's people who have not, and the escalation pool once escalated
	NotCounted  string   // the requester's own person, whose signature does not count
	Escalation  []string // the escalation pool
	EscalateIn  time.Duration
	EscalatedAt *time.Time
	You         *Signed // the viewer's own signature, nil when they have not signed
	Viewer      string  // the viewer's subject: "you" in the list of who approved
}

// Signed is the viewer's own signature on an ask a rule covers: once it is
// in, it counts and cannot be given again, so the page shows it in place of
// the answer buttons.
type Signed struct {
	Approved bool // it counts towards the quorum; false for a deny or not mine
	At       time.Time
}

// Verb is what the viewer did, as "You … at 14:02" reads it.
func (s *Signed) Verb() string {
	if s.Approved {
		return "approved"
	}
	return "denied"
}

// Line is the quorum in one line: "1 of 2 approved (ada)"; the viewer
// reads themself as "you".
func (q *Quorum) Line() string {
	s := strconv.Itoa(len(q.Approved)) + " of " + strconv.Itoa(q.Count) + " approved"
	if len(q.Approved) > 0 {
		names := make([]string, len(q.Approved))
		for i, n := range q.Approved {
			if n == q.Viewer && q.Viewer != "" {
				n = "you"
			}
			names[i] = n
		}
		s += " (" + strings.Join(names, ", ") + ")"
	}
	return s
}

// WaitingLine is who may still sign, "waiting for bob, carol", or "" when
// nobody is awaited.
func (q *Quorum) WaitingLine() string {
	if len(q.Waiting) == 0 || q.DeniedBy != "" || len(q.Approved) >= q.Count {
		return ""
	}
	return "waiting for " + strings.Join(q.Waiting, ", ")
}

// RuleLabel names the rule: its name, or its id when it has none.
func (q *Quorum) RuleLabel() string {
	if q.RuleName != "" {
		return q.RuleName
	}
	return q.RuleID
}
