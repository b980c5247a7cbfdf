package models

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
	"sync"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/countersign/countersign/ask"
	"github.com/countersign/countersign/proof"
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
	if a.Kind != KindDecision || json.Unmarshal([]byte(a.Payload), &p) != nil {
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

// NewAsk is what a requester sends to file an ask (approvals_create).
type NewAsk struct {
	Requester    *Agent
	Kind         string
	Title        string
	Summary      string
	ApproveMeans string
	DenyMeans    string
	AgentLabel   string
	AskedOf      string
	Supersedes   string
	Payload      json.RawMessage
	Context      json.RawMessage
	Links        []string
	// CheckCodeShownIn is where the requester shows the check code (see Approval).
	CheckCodeShownIn string
}

// CreateApproval validates and files an ask for the requesting agent. The
// payload is frozen as its canonical bytes and hashed; when the ask supersedes
// an earlier open one, that one goes stale in the same transaction.
func (s *Store) CreateApproval(ctx context.Context, in NewAsk) (*Approval, error) {
	agent := in.Requester
	now := s.now()
	if !slices.Contains(AskKinds, in.Kind) {
		if in.Kind == KindAutoApprove {
			return nil, Invalid("kind", "auto_approve asks are filed with approvals_request_auto_approve")
		}
		return nil, Invalid("kind", "must be one of %s, not %q", strings.Join(AskKinds, ", "), in.Kind)
	}
	if err := ask.ValidateAskText(in.Title, in.Summary, in.ApproveMeans, in.DenyMeans, in.AgentLabel); err != nil {
		return nil, err
	}
	if err := ask.ValidateLinks(in.Links); err != nil {
		return nil, err
	}
	if err := ask.ValidateCheckCodeShownIn(in.CheckCodeShownIn); err != nil {
		return nil, err
	}
	payload, err := ParsePayload(in.Kind, in.Payload, now)
	if err != nil {
		return nil, err
	}
	// The account is read only for what needs it: private evidence.
	allowPrivateEvidence := sync.OnceValues(func() (bool, error) {
		account, err := s.AccountByID(ctx, agent.AccountID)
		if err != nil {
			return false, err
		}
		return account.AllowPrivateEvidence, nil
	})
	actx, err := ask.ParseContext(in.Kind, in.Context, in.Kind == KindDocument, allowPrivateEvidence)
	if err != nil {
		return nil, err
	}
	askedOf := strings.TrimSpace(in.AskedOf)
	if payload.Run != nil {
		if askedOf != "" && askedOf != payload.Run.AskedOf {
			return nil, Invalid("asked_of", "must equal payload.run.asked_of (%q) for a run", payload.Run.AskedOf)
		}
		askedOf = payload.Run.AskedOf
	}
	if askedOf != "" {
		if _, err := s.MemberBySubject(ctx, agent.AccountID, askedOf); err != nil {
			if CodeOf(err) == NotFound {
				return nil, Invalid("asked_of", "no member of this account has subject %q; leave it empty to ask the owners and admins", askedOf)
			}
			return nil, err
		}
	}
	runnerID := ""
	if payload.Run != nil {
		if err := s.checkRunner(ctx, agent.AccountID, payload.Run.RunnerID, payload.Run.RunnerPublicKey); err != nil {
			return nil, err
		}
		runnerID = payload.Run.RunnerID
	}
	expires := now.Add(s.askTTL)
	if !payload.ExpiresAt.IsZero() && payload.ExpiresAt.Before(expires) {
		expires = payload.ExpiresAt
	}
	a := &Approval{
		ID: newID("appr"), AccountID: agent.AccountID, Kind: in.Kind,
		Title: in.Title, Summary: in.Summary, ApproveMeans: in.ApproveMeans, DenyMeans: in.DenyMeans,
		Payload: string(payload.Canonical), PayloadSHA256: payload.SHA256,
		Context: nullableJSON(actx.Canonical), Links: linksJSON(in.Links),
		AgentLabel: in.AgentLabel, CheckCodeShownIn: strings.TrimSpace(in.CheckCodeShownIn), RequesterID: agent.ID, RequesterSubject: agent.Subject, AskedOf: askedOf,
		Status: StatusPending, Supersedes: in.Supersedes,
		RepoKey: strings.ToLower(payload.Repo), PRNumber: payload.Number, Head: payload.Head, JobID: actx.JobID,
		RunnerID: runnerID, Version: 1, ExpiresAt: expires, CreatedAt: now, UpdatedAt: now,
	}
	if err := s.file(ctx, a); err != nil {
		return nil, err
	}
	return a, nil
}

// file stores a new ask in one transaction: it supersedes the earlier ask it
// names, appends the "created" event, lets an active auto-approve policy
// approve it at once, and otherwise queues its pushes. On PostgreSQL an ask
// that supersedes nothing, while no policy looks on, is filed in one
// statement (fileUncovered), unless an approval rule covers it: then fileTx
// freezes the rule's requirement and pushes the rule's people.
func (s *Store) file(ctx context.Context, a *Approval) error {
	if s.dialect == Postgres && a.Supersedes == "" && a.Kind != KindAutoApprove && a.Requirement == nil {
		filed, err := s.fileUncovered(ctx, a)
		if err != nil || filed {
			return err
		}
	}
	return s.write(ctx, func(tx *gorm.DB) error { return s.fileTx(tx, a) })
}

// fileUncovered files a on PostgreSQL in one statement when no approval rule
// covers it, and answers false, filing nothing, when one does or a policy
// looks on (then fileTx decides). An ask no built-in rule covers, of an
// account that keeps no rule of its own in force, is checked for rules
// inside that statement: one round trip. Otherwise the account's rules are
// read first, and a rule added between that read and the insert is as if
// added just after the ask.
func (s *Store) fileUncovered(ctx context.Context, a *Approval) (bool, error) {
	f := factsOf(a)
	if !slices.ContainsFunc(BuiltinRules(), func(r Rule) bool { return r.covers(f) }) {
		filed, ownRules, err := s.fileInOneStatement(ctx, a, true)
		if err != nil || filed || !ownRules {
			return filed, err
		}
	}
	rules, err := s.rules(s.db.WithContext(ctx), a.AccountID, false)
	if err != nil {
		return false, err
	}
	if slices.ContainsFunc(rules, func(r Rule) bool { return r.covers(f) }) {
		return false, nil
	}
	filed, _, err := s.fileInOneStatement(ctx, a, false)
	return filed, err
}

// fileTx is file inside a transaction the caller holds. On PostgreSQL,
// fileInOneStatement does the same in one statement for most asks: a step
// added here must be added there too, or file must send the asks it
// concerns here.
func (s *Store) fileTx(tx *gorm.DB, a *Approval) error {
	if a.Supersedes != "" {
		if err := s.supersede(tx, a); err != nil {
			return err
		}
	}
	if a.Requirement == nil {
		req, err := s.requirementFor(tx, a)
		if err != nil {
			return err
		}
		if req != nil {
			if err := s.delegateRequirement(tx, a, req); err != nil {
				return err
			}
			c, err := req.Canonical()
			if err != nil {
				return err
			}
			a.Requirement = nullableJSON(c)
		}
	}
	if err := tx.Table("approvals").Create(a).Error; err != nil {
		return fmt.Errorf("insert approval: %w", err)
	}
	if err := s.appendEvent(tx, a, &TimelineEvent{
		AccountID: a.AccountID, ApprovalID: a.ID, At: a.CreatedAt, ActorKind: ActorAgent, Actor: a.RequesterSubject,
		Step: "created", ToStatus: StatusPending, Note: supersedeNote(a.Supersedes),
	}); err != nil {
		return err
	}
	approved, err := s.autoApprove(tx, a)
	if err != nil || approved {
		return err // an auto-approved ask sends no push
	}
	return s.queueAskPushes(tx, a)
}

func supersedeNote(earlier string) string {
	if earlier == "" {
		return ""
	}
	return "asks again for " + earlier
}

// supersede links the new ask a to the earlier one it asks again for, and
// makes the earlier one stale when it was still open. The earlier ask may be
// any of the account's, another agent's too (seed 001: "an earlier approval
// of the same account"); one of another account is NOT_FOUND, as for an id
// that does not exist.
func (s *Store) supersede(tx *gorm.DB, a *Approval) error {
	var earlier Approval
	err := s.loadForUpdate(tx, a.AccountID, a.Supersedes, &earlier)
	if CodeOf(err) == NotFound {
		return Refuse(NotFound, "supersedes", "no approval %q in this account", a.Supersedes)
	}
	if err != nil {
		return err
	}
	if earlier.SupersededBy != "" {
		return Refuse(FailedPrecondition, "supersedes", "approval %s was already superseded by %s", earlier.ID, earlier.SupersededBy)
	}
	if !earlier.Status.Open() {
		res := tx.Table("approvals").Where("id = ? AND version = ?", earlier.ID, earlier.Version).
			Updates(map[string]any{"superseded_by": a.ID, "version": earlier.Version + 1, "updated_at": s.now()})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected != 1 {
			return Refuse(FailedPrecondition, "supersedes", "approval %s changed while this call ran; try again", earlier.ID)
		}
		return nil
	}
	note := "asked again as " + a.ID
	if earlier.RequesterID != a.RequesterID {
		note += " by " + a.RequesterSubject // its own agent learns who
	}
	return s.move(tx, &earlier, change{
		event: EventSupersede, actorKind: ActorSystem, actor: "countersign",
		note: note, set: map[string]any{"superseded_by": a.ID},
	})
}

// GetApproval reads one approval of the account. An approval of another
// account is NOT_FOUND, exactly like one that does not exist.
func (s *Store) GetApproval(ctx context.Context, accountID, id string) (*Approval, error) {
	var a Approval
	err := s.db.WithContext(ctx).Table("approvals").Where("id = ? AND account_id = ?", id, accountID).Take(&a).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, Refuse(NotFound, "approval_id", "no approval %q in this account", id)
	}
	if err != nil {
		return nil, fmt.Errorf("get approval: %w", err)
	}
	return &a, nil
}

// Timeline returns an approval's events, oldest first.
func (s *Store) Timeline(ctx context.Context, accountID, id string) ([]TimelineEvent, error) {
	var out []TimelineEvent
	err := s.db.WithContext(ctx).Table("events").Where("approval_id = ? AND account_id = ?", id, accountID).Order("seq").Find(&out).Error
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

// Page sizes of approvals_list.
const (
	DefaultPageSize = 50
	MaxPageSize     = 200
)

// pageSize reads a list's page_size: 0 means DefaultPageSize, at most MaxPageSize.
func pageSize(n int) (int, error) {
	switch {
	case n == 0:
		return DefaultPageSize, nil
	case n < 0 || n > MaxPageSize:
		return 0, Invalid("page_size", "must be 0 (for %d) to %d, not %d", DefaultPageSize, MaxPageSize, n)
	}
	return n, nil
}

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// openAsks and activeAsks are the predicates of the partial indexes
// approvals_open, approvals_expiry and approvals_active (like those of approvals_repo,
// approvals_head and approvals_job in ListApprovals), written out,
// not bound: SQLite uses a partial index only when the query's WHERE clause
// has its predicate's very terms, and PostgreSQL's generic plan of a
// prepared statement cannot prove a bound one implies it.
const (
	openAsks   = "status IN ('pending', 'question')"
	activeAsks = "status IN ('approved', 'in_progress')"
)

// ListApprovals returns the account's approvals that match f, newest first,
// and the token of the next page ("" on the last).
func (s *Store) ListApprovals(ctx context.Context, accountID string, f ListFilter) ([]Approval, string, error) {
	size, err := pageSize(f.PageSize)
	if err != nil {
		return nil, "", err
	}
	q := s.db.WithContext(ctx).Table("approvals").Where("account_id = ?", accountID)
	switch st := f.Status; st {
	case "":
	case "open":
		q = q.Where(openAsks)
	case "active":
		q = q.Where(activeAsks)
	case "closed":
		q = q.Where("status IN ?", ClosedStatuses)
	default:
		if !slices.Contains(AllStatuses, Status(st)) {
			return nil, "", Invalid("status", "must be a state (%s) or open, active or closed, not %q", joinStatuses(AllStatuses), st)
		}
		// An open or active state is read through its partial index.
		switch {
		case slices.Contains(OpenStatuses, Status(st)):
			q = q.Where(openAsks)
		case slices.Contains(ActiveStatuses, Status(st)):
			q = q.Where(activeAsks)
		}
		q = q.Where("status = ?", st)
	}
	if f.Kind != "" {
		if !slices.Contains(AskKinds, f.Kind) && f.Kind != KindAutoApprove && f.Kind != KindRuleChange && f.Kind != KindMemberChange && !slices.Contains(RequestKinds, f.Kind) {
			return nil, "", Invalid("kind", "must be one of %s, %s, %s, %s or %s, not %q", strings.Join(AskKinds, ", "), KindAutoApprove, KindRuleChange, KindMemberChange, strings.Join(RequestKinds, ", "), f.Kind)
		}
		q = q.Where("kind = ?", f.Kind)
	}
	if r := strings.TrimSpace(f.Repo); r != "" {
		q = q.Where("repo_key <> '' AND repo_key = ?", strings.ToLower(r)) // approvals_repo's predicate, spelled out
	}
	if f.Number < 0 {
		return nil, "", Invalid("number", "must be a pull request number, or 0 for no filter")
	}
	if f.Number > 0 {
		q = q.Where("pr_number = ?", f.Number)
	}
	if h := strings.TrimSpace(f.Head); h != "" {
		q = q.Where("head <> '' AND head = ?", h) // approvals_head's predicate, spelled out
	}
	if f.PayloadSHA256 != "" {
		if !sha256Hex.MatchString(f.PayloadSHA256) {
			return nil, "", Invalid("payload_sha256", "must be 64 lower-case hex characters")
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
			return nil, "", Invalid("page_token", "not a next_page_token this list gave")
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

func runeCount(s string) int { return utf8.RuneCountInString(s) }

func nullableJSON(b []byte) *string {
	if len(b) == 0 {
		return nil
	}
	s := string(b)
	return &s
}

func jsonText(v any) *string {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return nullableJSON(b)
}

func linksJSON(links []string) *string {
	if len(links) == 0 {
		return nil
	}
	return jsonText(links)
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
func (s *Store) CountOpenAsksOf(ctx context.Context, accountID, agentID string) (int, error) {
	var n int64
	if err := s.db.WithContext(ctx).Table("approvals").Where("account_id = ? AND "+openAsks+" AND requester_id = ?", accountID, agentID).Count(&n).Error; err != nil {
		return 0, fmt.Errorf("count open asks: %w", err)
	}
	return int(n), nil
}
