package views

import (
	"net/url"
	"time"

	"github.com/a-h/templ"
)

// ConsentView is the page where a person lets an OAuth client act for them.
type ConsentView struct {
	ClientName   string
	ClientHost   string // the client_id's host, for a client whose metadata document vouches for its name
	RedirectHost string
	Unverified   bool // the client registered itself: its name is its own word
	AccountName  string
	Subject      string
	Scopes       []ScopeChoice
	// ScopeRule says which scopes a grant must keep, and why.
	ScopeRule string
	// Request is the checked authorization request, which the form carries
	// back: only its own parameters, never anything else of the query.
	Request []HiddenField
	Error   string
}

// HiddenField is one hidden input of a form.
type HiddenField struct {
	Name, Value string
}

// ScopeChoice is one scope the client asked for, which the person may untick.
type ScopeChoice struct {
	Name, Means string
	Kept        bool // ticked
}

// ConnectedClientRow is a client the person connected, on the devices page.
type ConnectedClientRow struct {
	AgentID, AgentName, ClientName, RedirectHost, Scopes string
	Unverified, Disabled                                 bool
	CreatedAt                                            time.Time
}

// scopeMeans says what a scope lets a client do.
var scopeMeans = map[string]string{
	"mcp:read":        "Connect to Countersign's MCP endpoint and read",
	"mcp:write":       "Connect to Countersign's MCP endpoint and act",
	"approvals:read":  "Read your account's asks and their decisions",
	"approvals:write": "File asks in your name and report progress on them",
}

// ScopeMeaning is what a scope lets a client do, in words.
func ScopeMeaning(scope string) string { return scopeMeans[scope] }

func disconnectPath(agentID string) templ.SafeURL {
	return templ.SafeURL("/devices/clients/" + url.PathEscape(agentID) + "/disconnect")
}
