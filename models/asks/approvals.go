package asks

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/ask"

	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/proof"
	"gorm.io/gorm"
)

// Approval is an ask: what a requester wants a go on, frozen, and what became of it.
type Approval struct {
	Seq           int64 `gorm:"primaryKey;autoIncrement"`
	ID            string
	AccountID     string
	Kind          string
	Title         string
	Summary       string
	ApproveMeans  string
	DenyMeans     string
	Payload       string `gorm:"column:payload"` // RFC 8785 canonical JSON
	PayloadSHA256 string `gorm:"column:payload_sha256"`
	Context       *string
	Links         *string
	AgentLabel    string
	// CheckCodeShownIn is where the requester says it shows the check code
	// ("this chat"), "" when it did not say: a hint for the ask page, never
	// hashed or signed.
	CheckCodeShownIn string

	// Editable lists the members of the payload the person may change
	// before they sign (the canonical JSON of []ask.Editable), "" for none.
	Editable string
	// EditedPayload is the payload as the person edited and approved it
	// (RFC 8785 bytes) with its hash, on a decision approve_edited; "" otherwise.
	EditedPayload       string `gorm:"column:edited_payload"`
	EditedPayloadSHA256 string `gorm:"column:edited_payload_sha256"`

	RequesterID      string
	RequesterSubject string
	AskedOf          string
	Status           Status
	Decision         string
	DecidedBy        string
	DecidedAt        *time.Time
	Note             string
	Proof            *string
	Supersedes       string
	SupersededBy     string
	RepoKey          string
	PRNumber         int64 `gorm:"column:pr_number"`
	Head             string
	JobID            string
	RunnerID         string // the runner a pinned run names; "" for every other ask
	Priority         int
	// Requirement is the approval rule's requirement frozen at filing (the
	// canonical JSON of a proof.Requirement), nil when no rule covers the
	// ask. Every signature on the ask binds it; see RequirementOf.
	Requirement *string
	// EscalatedAt is when the ask escalated to its rule's escalation pool
	// (nil while it has not); from then on those people may sign too.
	EscalatedAt *time.Time
	// RemindedAt is when the ask was last pushed again as a reminder.
	RemindedAt *time.Time
	Version    int
	ExpiresAt  time.Time
	CreatedAt  time.Time
	UpdatedAt  time.Time

	written []TimelineEvent // see Written
}

// Written returns the events the Store call that returned a appended to its
// timeline, oldest first. For an ask CreateApproval or RequestAutoApprove just
// filed, that is its whole timeline as it committed.
func (a *Approval) Written() []TimelineEvent { return a.written }

// NoteWritten adds ev to the events this call wrote (Written).
func (a *Approval) NoteWritten(ev TimelineEvent) { a.written = append(a.written, ev) }

// RequirementOf returns the rule's requirement frozen into the ask, or nil
// when no rule covers it.
func (a *Approval) RequirementOf() *proof.Requirement {
	if a.Requirement == nil {
		return nil
	}
	r, err := proof.ParseRequirement([]byte(*a.Requirement))
	if err != nil {
		return nil
	}
	return r
}

// LinkList returns the ask's links.
func (a *Approval) LinkList() []string {
	var out []string
	if a.Links != nil {
		_ = json.Unmarshal([]byte(*a.Links), &out)
	}
	return out
}

// DecisionOptions returns the options of a decision ask, in order.
func (a *Approval) DecisionOptions() []string {
	var p struct {
		Decision struct {
			Options []string `json:"options"`
		} `json:"decision"`
	}
	if a.Kind != ask.KindDecision || json.Unmarshal([]byte(a.Payload), &p) != nil {
		return nil
	}
	return p.Decision.Options
}

// TimelineEvent is one line of an ask's timeline: who moved it, from where to where.
type TimelineEvent struct {
	Seq        int64 `gorm:"primaryKey;autoIncrement"`
	AccountID  string
	ApprovalID string
	At         time.Time
	ActorKind  string
	Actor      string
	Step       string
	FromStatus Status
	ToStatus   Status
	Note       string
	Data       *string
}

func SupersedeNote(earlier string) string {
	if earlier == "" {
		return ""
	}
	return "asks again for " + earlier
}

// GetApproval reads one approval of the account. An approval of another
// account is NOT_FOUND, exactly like one that does not exist.
func (s *Lifecycle) GetApproval(ctx context.Context, accountID, id string) (*Approval, error) {
	var a Approval
	err := s.DB().WithContext(ctx).Table("approvals").Where("id = ? AND account_id = ?", id, accountID).Take(&a).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, core.Refuse(core.NotFound, "approval_id", "no approval %q in this account", id)
	}
	if err != nil {
		return nil, fmt.Errorf("get approval: %w", err)
	}
	return &a, nil
}

// Timeline returns an approval's events, oldest first.
func (s *Lifecycle) Timeline(ctx context.Context, accountID, id string) ([]TimelineEvent, error) {
	var out []TimelineEvent
	err := s.DB().WithContext(ctx).Table("events").Where("approval_id = ? AND account_id = ?", id, accountID).Order("seq").Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("read timeline: %w", err)
	}
	return out, nil
}

// ListFilter narrows approvals_list. Empty and zero fields are no filter.
type ListFilter struct {
	Status        string
	Kind          string
	Repo          string
	Number        int64
	Head          string
	PayloadSHA256 string
	JobID         string
	RunnerID      string // only the runs that name this runner
	PageSize      int
	PageToken     string
}

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// OpenAsks and activeAsks are the predicates of the partial indexes
// approvals_open, approvals_expiry and approvals_active (like those of approvals_repo,
// approvals_head and approvals_job in ListApprovals), written out,
// not bound: SQLite uses a partial index only when the query's WHERE clause
// has its predicate's very terms, and PostgreSQL's generic plan of a
// prepared statement cannot prove a bound one implies it.
const (
	OpenAsks   = "status IN ('pending', 'question')"
	activeAsks = "status IN ('approved', 'in_progress')"
)

// ListApprovals returns the account's approvals that match f, newest first,
// and the token of the next page ("" on the last).
func (s *Lifecycle) ListApprovals(ctx context.Context, accountID string, f ListFilter) ([]Approval, string, error) {
	size, err := core.PageSize(f.PageSize)
	if err != nil {
		return nil, "", err
	}
	q := s.DB().WithContext(ctx).Table("approvals").Where("account_id = ?", accountID)
	switch st := f.Status; st {
	case "":
	case "open":
		q = q.Where(OpenAsks)
	case "active":
		q = q.Where(activeAsks)
	case "closed":
		q = q.Where("status IN ?", ClosedStatuses)
	default:
		if !slices.Contains(AllStatuses, Status(st)) {
			return nil, "", core.Invalid("status", "must be a state (%s) or open, active or closed, not %q", joinStatuses(AllStatuses), st)
		}
		// An open or active state is read through its partial index.
		switch {
		case slices.Contains(OpenStatuses, Status(st)):
			q = q.Where(OpenAsks)
		case slices.Contains(ActiveStatuses, Status(st)):
			q = q.Where(activeAsks)
		}
		q = q.Where("status = ?", st)
	}
	if f.Kind != "" {
		if !slices.Contains(ask.Kinds, f.Kind) && f.Kind != ask.KindAutoApprove && f.Kind != ask.KindRuleChange && f.Kind != ask.KindMemberChange && f.Kind != ask.KindAuthorization && !slices.Contains(ask.RequestKinds, f.Kind) {
			return nil, "", core.Invalid("kind", "must be one of %s, %s, %s, %s, %s or %s, not %q", strings.Join(ask.Kinds, ", "), ask.KindAutoApprove, ask.KindRuleChange, ask.KindMemberChange, ask.KindAuthorization, strings.Join(ask.RequestKinds, ", "), f.Kind)
		}
		q = q.Where("kind = ?", f.Kind)
	}
	if r := strings.TrimSpace(f.Repo); r != "" {
		q = q.Where("repo_key <> '' AND repo_key = ?", strings.ToLower(r)) // approvals_repo's predicate, spelled out
	}
	if f.Number < 0 {
		return nil, "", core.Invalid("number", "must be a pull request number, or 0 for no filter")
	}
	if f.Number > 0 {
		q = q.Where("pr_number = ?", f.Number)
	}
	if h := strings.TrimSpace(f.Head); h != "" {
		q = q.Where("head <> '' AND head = ?", h) // approvals_head's predicate, spelled out
	}
	if f.PayloadSHA256 != "" {
		if !sha256Hex.MatchString(f.PayloadSHA256) {
			return nil, "", core.Invalid("payload_sha256", "must be 64 lower-case hex characters")
		}
		q = q.Where("payload_sha256 = ?", f.PayloadSHA256)
	}
	if f.JobID != "" {
		q = q.Where("job_id <> '' AND job_id = ?", f.JobID) // approvals_job's predicate, spelled out
	}
	if f.RunnerID != "" {
		q = q.Where("runner_id = ?", f.RunnerID)
	}
	if f.PageToken != "" {
		after, ok := decodePageToken(f.PageToken)
		if !ok {
			return nil, "", core.Invalid("page_token", "not a next_page_token this list gave")
		}
		q = q.Where("seq < ?", after)
	}
	var out []Approval
	if err := q.Order("seq DESC").Limit(size + 1).Find(&out).Error; err != nil {
		return nil, "", fmt.Errorf("list approvals: %w", err)
	}
	next := ""
	if len(out) > size {
		out = out[:size]
		next = encodePageToken(out[size-1].Seq)
	}
	return out, next, nil
}

func encodePageToken(seq int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte("v1:" + strconv.FormatInt(seq, 10)))
}

func decodePageToken(tok string) (int64, bool) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || !strings.HasPrefix(string(b), "v1:") {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimPrefix(string(b), "v1:"), 10, 64)
	return n, err == nil && n > 0
}

func LinksJSON(links []string) *string {
	if len(links) == 0 {
		return nil
	}
	return core.JSONText(links)
}

// applySet mirrors, on the loaded approval, the columns a move wrote.
func applySet(a *Approval, set map[string]any) {
	for k, v := range set {
		switch k {
		case "note":
			a.Note = v.(string)
		case "decision":
			a.Decision = v.(string)
		case "decided_by":
			a.DecidedBy = v.(string)
		case "decided_at":
			t := v.(time.Time)
			a.DecidedAt = &t
		case "proof":
			a.Proof = v.(*string)
		case "superseded_by":
			a.SupersededBy = v.(string)
		case "escalated_at":
			t := v.(time.Time)
			a.EscalatedAt = &t
		case "reminded_at":
			t := v.(time.Time)
			a.RemindedAt = &t
		}
	}
}

// CountOpenAsksOf counts the agent's open asks in the account: what
// blocking it ("Not mine") would cancel. The approvals_open index serves it.
func (s *Lifecycle) CountOpenAsksOf(ctx context.Context, accountID, agentID string) (int, error) {
	var n int64
	if err := s.DB().WithContext(ctx).Table("approvals").Where("account_id = ? AND "+OpenAsks+" AND requester_id = ?", accountID, agentID).Count(&n).Error; err != nil {
		return 0, fmt.Errorf("count open asks: %w", err)
	}
	return int(n), nil
}
