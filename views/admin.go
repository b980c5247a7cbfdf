package views

import (
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"
)

// MembersView is the account's members and invites.
type MembersView struct {
	Members []MemberRow
	Invites []InviteRow
	Roles   []string
	// InviteRoles are the roles the viewer can grant by invite: none above their own.
	InviteRoles []string
	InviteURL   string // a new invite's one-time URL, shown once
	// InviteAddRole says the new invite is for an existing person, who accepts by signing in.
	InviteAddRole bool
	// InviteHeldBy is the ask the new invite waits for: a rule asks two
	// people for an owner or admin, and it works once they have signed.
	InviteHeldBy string
	Error        string // a refusal, shown at its field (ErrorField) or above the lists
	ErrorField   string
	Now          time.Time
}

// MemberRow is one member of the account.
type MemberRow struct {
	PersonID    string
	Subject     string
	DisplayName string
	Role        string
	Self        bool // the signed-in person
}

// InviteRow is one invite, pending or used.
type InviteRow struct {
	ID        string // the hash of its token: what its revoke form names
	AddRole   bool   // for an existing person, who accepts by signing in; else for a new person
	Role      string
	Subject   string
	CreatedBy string
	CreatedAt time.Time
	ExpiresAt time.Time
	UsedAt    *time.Time
	UsedBy    string
	HeldBy    string // the ask it waits for, when held
}

// State says whether the invite waits, waits for its ask's approval
// (held), was used, or ran out.
func (i InviteRow) State(now time.Time) string {
	switch {
	case i.UsedAt != nil:
		return "used"
	case i.HeldBy != "":
		return "held"
	case !now.Before(i.ExpiresAt):
		return "expired"
	}
	return "pending"
}

// invitePath is where an invite's form posts.
func invitePath(id, action string) templ.SafeURL {
	return templ.SafeURL("/admin/invites/" + url.PathEscape(id) + "/" + action)
}

func memberPath(personID, action string) templ.SafeURL {
	return templ.SafeURL("/admin/members/" + url.PathEscape(personID) + "/" + action)
}

// AgentsView is the account's agents.
type AgentsView struct {
	Agents     []AgentRow
	Scopes     []string
	NewAgent   string // the name of an agent just made
	Token      string // its bearer token, shown once
	MCPURL     string
	Error      string // a refusal, shown at its field (ErrorField) or above the lists
	ErrorField string
	Members    []string // the subjects an agent can be made for
}

// AgentRow is one agent.
type AgentRow struct {
	Name           string
	Subject        string
	Scopes         []string
	For            string // the subject of the person it acts for, if any
	Disabled       bool
	DisabledReason string
	CreatedAt      time.Time
}

// Blocked says a person blocked the agent with "Not mine" (its reason
// then reads "not mine: ada"), rather than an admin disabling it.
func (r AgentRow) Blocked() bool { return strings.HasPrefix(r.DisabledReason, "not mine: ") }

func agentPath(name, action string) templ.SafeURL {
	return templ.SafeURL("/admin/agents/" + url.PathEscape(name) + "/" + action)
}

// AuditView is a page of the account's timeline events, newest first.
type AuditView struct {
	Events     []AuditRow
	ApprovalID string
	ActorKind  string
	Step       string
	Actor      string
	ActorKinds []string
	Steps      []string
	Next       int64 // the cursor of the next, older page; 0 on the last
	Error      string
	Chain      *ChainView // the end of the account's hash chain; nil when it could not be read
}

// ChainView is the end of an account's audit hash chain.
type ChainView struct {
	Pos      int64  // events sealed
	Hash     string // the last position's hash
	Unsealed int64  // newer events waiting for the sealer
}

// AuditRow is one timeline event of the account.
type AuditRow struct {
	Event
	ApprovalID string
}

// OlderLink is the link to the next, older page with the same filters.
func (v AuditView) OlderLink() templ.SafeURL {
	q := url.Values{}
	for k, val := range map[string]string{"approval": v.ApprovalID, "actor_kind": v.ActorKind, "step": v.Step, "actor": v.Actor} {
		if val != "" {
			q.Set(k, val)
		}
	}
	q.Set("before", strconv.FormatInt(v.Next, 10))
	return localLink("/admin/audit", q)
}

// inviteClass colours an invite's state like an ask's.
func inviteClass(state string) string {
	switch state {
	case "pending", "held":
		return "status-pending"
	case "used":
		return "status-approved"
	}
	return "status-expired"
}

// RunnersView is the account's runners.
type RunnersView struct {
	Runners     []RunnerRow
	NewRunner   string // the name of a runner just enrolled
	NewRunnerID string
	Token       string // its token, shown once
	MCPURL      string
	ServerURL   string
	Error       string
}

// RunnerRow is one runner.
type RunnerRow struct {
	ID         string
	Name       string
	PublicKey  string
	Disabled   bool
	DisabledBy string
	CreatedAt  time.Time
}

func runnerPath(name, action string) templ.SafeURL {
	return templ.SafeURL("/admin/runners/" + url.PathEscape(name) + "/" + action)
}
