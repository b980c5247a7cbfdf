package views

import (
	"net/url"
	"time"

	"github.com/countersign/countersign/models"
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
}

// Open says whether the ask still waits for an answer.
func (r AskRow) Open() bool { return models.Status(r.Status).Open() }

// InboxView is the list of open asks waiting for the viewer.
type InboxView struct {
	Asks    []AskRow
	Now     time.Time
	MCPURL  string // where agents connect
	IsAdmin bool   // the viewer also sees asks of nobody in particular
	More    bool   // there are more open asks than shown
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
	return s + ", newest first."
}
