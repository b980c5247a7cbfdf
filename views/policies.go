package views

import (
	"net/url"
	"time"

	"github.com/a-h/templ"

	"github.com/countersign/countersign/ask"
)

// PolicyView is an auto-approve policy as the policy screens show it.
type PolicyView struct {
	ID             string
	ApprovalID     string // the auto_approve ask whose signed approval turned it on
	Scope          PolicyScope
	Requester      string // the agent that asked for it
	Device         string
	SignedBy       string
	CredentialID   string
	SignedAt       time.Time
	ExpiresAt      time.Time
	State          string // active, revoked, expired or inactive
	Why            string // why it is not active
	ApprovedCount  int
	SkippedCount   int
	LastApprovedAt *time.Time
	RevokedAt      *time.Time
	RevokedBy      string
	RevokeNote     string
	Replaces       string
	ReplacedBy     string
	// Window is set on a window a person opened from an ask: the kind and
	// target of the asks it approves; Requester is its agent.
	Window *PolicyWindow
}

// PolicyWindow is what a window approves: its agent's asks of Kind about Target.
type PolicyWindow struct {
	Kind   string
	Target ask.Target
}

// WindowText says in words whose asks a window approves: "agent:bot's calls
// of write_file on filesystem"; "" for the account's policy.
func (p PolicyView) WindowText() string {
	if p.Window == nil {
		return ""
	}
	return p.Requester + "'s " + TargetText(p.Window.Kind, p.Window.Target)
}

// Active says whether the policy approves matching asks now.
func (p PolicyView) Active() bool { return p.State == "active" }

// AsksWord is "ask" or "asks", after the approved count.
func (p PolicyView) AsksWord() string {
	if p.ApprovedCount == 1 {
		return "ask"
	}
	return "asks"
}

// StateText says in words where the policy is.
func (p PolicyView) StateText() string {
	switch {
	case p.State == "active":
		return "On"
	case p.ReplacedBy != "":
		return "Off: replaced by a newer policy"
	case p.Why != "":
		return "Off: " + p.Why
	}
	return "Off"
}

// StateClass colours a policy's state like an ask's.
func (p PolicyView) StateClass() string {
	switch p.State {
	case "active":
		return "status-approved"
	case "revoked":
		return "status-denied"
	case "expired":
		return "status-expired"
	}
	return "status-stale"
}

// PolicyAskRow is an ask a policy approved.
type PolicyAskRow struct {
	ID        string
	Title     string
	Kind      string
	Requester string
	Status    string
	At        time.Time
}

// PoliciesView is a person's auto-approve page: the account's newest
// auto-approve policy, the asks it approved, the windows on now, and the
// requests that wait for a signature.
type PoliciesView struct {
	Policy   *PolicyView  // nil when the account never had one
	Windows  []PolicyView // the windows on now, newest first
	Approved []PolicyAskRow
	Requests []AskRow
	IsAdmin  bool
	Error    string // a refusal of the revoke form
	Note     string // the note the refused form carried
	Now      time.Time
	// All is, for an owner or admin, every policy of the account; nil for others.
	All *AdminPoliciesView
}

// AdminPoliciesView is every policy of the account, filtered by state.
type AdminPoliciesView struct {
	Policies []PolicyView
	State    string   // the state filter, or ""
	States   []string // the states a filter can name
	Next     string   // the page token of older policies, "" on the last page
	Error    string
	Now      time.Time
}

// windowRevokePath is where the form that turns window id off posts.
func windowRevokePath(id string) templ.SafeURL {
	return templ.SafeURL("/policies/" + url.PathEscape(id) + "/revoke")
}

// OlderLink is the link to the next, older page with the same filter.
func (v AdminPoliciesView) OlderLink() templ.SafeURL {
	q := url.Values{}
	if v.State != "" {
		q.Set("state", v.State)
	}
	q.Set("page", v.Next)
	return localLink("/policies", q)
}
