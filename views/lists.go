package views

import (
	"net/url"
	"time"

	"github.com/countersign/countersign/models/asks"
)

// AskRow is one ask in the inbox or the history.
type AskRow struct {
	ID         string
	Kind       string
	Title      string
	AgentLabel string
	Requester  string
	AskedOf    string
	Status     string
	CreatedAt  time.Time
	ExpiresAt  time.Time
	// KeptAsking is the rule that kept an active policy from approving the
	// ask ("a roll or release"), "" when no policy skipped it.
	KeptAsking string
	// Quorum is where an ask an approval rule covers stands, "1 of 2
	// approved (ada)"; "" for other asks.
	Quorum string
	// Danger is "production" or "high risk" (Ask.Danger), "" for others.
	Danger string
	// NeedsCode: approving it takes the agent's check code.
	NeedsCode bool
	// People is how many people its rule needs, 0 when no rule covers it.
	People int
	// Batchable: the viewer may answer it with others in one passkey
	// prompt; NotBatched says why not, for an ask they answer on its page.
	Batchable  bool
	NotBatched string
}

// Who names who asks, as the ask's page does (see whoAsks).
func (r AskRow) Who() (agent, from string) { return whoAsks(r.Kind, r.AgentLabel, r.Requester) }

// Agent names the verified agent once, as an inbox card does: the
// requester's subject (a rule change: the person who proposed it).
func (r AskRow) Agent() string {
	agent, _ := r.Who()
	return agent
}

// Open says whether the ask still waits for an answer.
func (r AskRow) Open() bool { return asks.Status(r.Status).Open() }

// InboxView is the list of open asks waiting for the viewer.
// Batchable counts the asks the viewer may answer in one batch.
func (v InboxView) Batchable() int {
	n := 0
	for _, a := range v.Asks {
		if a.Batchable {
			n++
		}
	}
	return n
}

type InboxView struct {
	Asks    []AskRow
	Now     time.Time
	MCPURL  string // where agents connect
	IsAdmin bool   // the viewer also sees asks of nobody in particular
	More    bool   // there are more open asks than shown
	// Others are the open asks that wait for other people's signatures,
	// not the viewer's: those an approval rule covers that the viewer
	// signed already, or may not sign.
	Others []AskRow
	// Push is this person's notifications, for the empty inbox's checklist.
	Push PushView
}

// HistoryView is the account's asks, filtered, one page at a time.
type HistoryView struct {
	Asks     []AskRow
	Now      time.Time
	Status   string   // the status filter: a state, open, active, closed or ""
	Kind     string   // the kind filter, or ""
	Statuses []string // the states a filter can name
	Kinds    []string // the kinds a filter can name
	Next     string   // the page token of older asks, "" on the last page
	Error    string   // why the filter was refused
}

// OlderLink is the link to the next, older page with the same filters.
func (v HistoryView) OlderLink() string {
	q := url.Values{}
	if v.Status != "" {
		q.Set("status", v.Status)
	}
	if v.Kind != "" {
		q.Set("kind", v.Kind)
	}
	q.Set("page", v.Next)
	return string(localLink("/history", q))
}

// Line says what the inbox shows.
func (v InboxView) Line() string {
	s := plural(len(v.Asks), "open ask", "open asks") + " for you"
	if v.IsAdmin {
		s += " and for the owners and admins"
	}
	return s + ", soonest deadline first."
}

// Pending says whether the ask waits for a person's answer, not for its agent's.
func (r AskRow) Pending() bool { return asks.Status(r.Status) == asks.StatusPending }
