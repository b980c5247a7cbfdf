package views

import (
	"net/url"
	"time"

	"github.com/a-h/templ"
)

// WorkBoard is the account's work board as its page shows it.
type WorkBoard struct {
	Columns   []WorkColumn
	CanManage bool   // owners and admins add, rename and remove columns
	Error     string // a refusal of the last action, shown above the board
}

// WorkColumn is a column of the board with its items, oldest first.
type WorkColumn struct {
	Key   string
	Name  string
	Items []WorkItem
}

// WorkItem is one item of the board.
type WorkItem struct {
	ID          string
	Title       string
	Description string
	Column      string // its column's key
}

// WorkItemPage is one item with its history and the columns it can move to.
type WorkItemPage struct {
	Item    WorkItem
	Columns []WorkColumn // without items
	History []WorkEvent
	Error   string
	Now     time.Time
}

// WorkEvent is one line of an item's history.
type WorkEvent struct {
	At         time.Time
	ActorKind  string
	Actor      string
	Action     string
	From       string // column names
	To         string
	ApprovalID string // the approved request that moved it, if one did
	Note       string
}

// workItemPath is the page of one work item.
func workItemPath(id string) templ.SafeURL {
	return templ.SafeURL("/work/items/" + url.PathEscape(id))
}

// workItemAction is the form target of an action on one item.
func workItemAction(id, action string) templ.SafeURL {
	return templ.SafeURL("/work/items/" + url.PathEscape(id) + "/" + action)
}

// workColumnAction is the form target of an action on one column.
func workColumnAction(key, action string) templ.SafeURL {
	return templ.SafeURL("/work/columns/" + url.PathEscape(key) + "/" + action)
}

// Sessions is the page of the account's agent sessions.
type Sessions struct {
	Sessions []SessionRow
	Now      time.Time
}

// SessionRow is one agent session: who runs it, its state, what it waits on
// and its last heartbeat.
type SessionRow struct {
	ID          string
	Label       string
	Agent       string
	State       string // active, waiting or ended
	StartedAt   time.Time
	HeartbeatAt time.Time
	EndedAt     *time.Time
	EndReason   string
	WaitingOn   []SessionAsk
}

// SessionAsk is an open request a session waits on.
type SessionAsk struct {
	ID        string
	Title     string
	Kind      string
	ExpiresAt time.Time
}
