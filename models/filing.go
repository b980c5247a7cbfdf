package models

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/countersign/countersign/ask"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
	"github.com/countersign/countersign/models/rules"
	"gorm.io/gorm"
)

// NewAsk is what a requester sends to file an ask (approvals_create).
type NewAsk struct {
	Requester    *people.Agent
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
	// Editable marks members of the payload the person may change before
	// they sign (ask.ParseEditable reads it).
	Editable json.RawMessage
}

// CreateApproval validates and files an ask for the requesting agent. The
// payload is frozen as its canonical bytes and hashed; when the ask supersedes
// an earlier open one, that one goes stale in the same transaction.
func (s *Store) CreateApproval(ctx context.Context, in NewAsk) (*asks.Approval, error) {
	agent := in.Requester
	now := s.Now()
	if !slices.Contains(ask.Kinds, in.Kind) {
		if in.Kind == ask.KindAutoApprove {
			return nil, core.Invalid("kind", "auto_approve asks are filed with approvals_request_auto_approve")
		}
		return nil, core.Invalid("kind", "must be one of %s, not %q", strings.Join(ask.Kinds, ", "), in.Kind)
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
	payload, err := ask.ParsePayload(in.Kind, in.Payload, now)
	if err != nil {
		return nil, err
	}
	editable, err := ask.ParseEditable(in.Kind, in.Editable, payload.Canonical)
	if err != nil {
		return nil, err
	}
	editableJSON, err := asks.EditableJSON(editable)
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
	actx, err := ask.ParseContext(in.Kind, in.Context, in.Kind == ask.KindDocument, allowPrivateEvidence)
	if err != nil {
		return nil, err
	}
	askedOf := strings.TrimSpace(in.AskedOf)
	if payload.Run != nil {
		if askedOf != "" && askedOf != payload.Run.AskedOf {
			return nil, core.Invalid("asked_of", "must equal payload.run.asked_of (%q) for a run", payload.Run.AskedOf)
		}
		askedOf = payload.Run.AskedOf
	}
	if askedOf != "" {
		if _, err := s.MemberBySubject(ctx, agent.AccountID, askedOf); err != nil {
			if core.CodeOf(err) == core.NotFound {
				return nil, core.Invalid("asked_of", "no member of this account has subject %q; leave it empty to ask the owners and admins", askedOf)
			}
			return nil, err
		}
	}
	runnerID := ""
	if payload.Run != nil {
		if err := s.CheckRunner(ctx, agent.AccountID, payload.Run.RunnerID, payload.Run.RunnerPublicKey); err != nil {
			return nil, err
		}
		runnerID = payload.Run.RunnerID
	}
	expires := now.Add(s.askTTL)
	if !payload.ExpiresAt.IsZero() && payload.ExpiresAt.Before(expires) {
		expires = payload.ExpiresAt
	}
	a := &asks.Approval{
		ID: core.NewID("appr"), AccountID: agent.AccountID, Kind: in.Kind,
		Title: in.Title, Summary: in.Summary, ApproveMeans: in.ApproveMeans, DenyMeans: in.DenyMeans,
		Payload: string(payload.Canonical), PayloadSHA256: payload.SHA256,
		Context: core.NullableJSON(actx.Canonical), Links: asks.LinksJSON(in.Links),
		AgentLabel: in.AgentLabel, CheckCodeShownIn: strings.TrimSpace(in.CheckCodeShownIn), Editable: editableJSON, RequesterID: agent.ID, RequesterSubject: agent.Subject, AskedOf: askedOf,
		Status: asks.StatusPending, Supersedes: in.Supersedes,
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
func (s *Store) file(ctx context.Context, a *asks.Approval) error {
	if s.Dialect() == core.Postgres && a.Supersedes == "" && a.Kind != ask.KindAutoApprove && a.Requirement == nil {
		filed, err := s.fileUncovered(ctx, a)
		if err != nil || filed {
			return err
		}
	}
	return s.Write(ctx, func(tx *gorm.DB) error { return s.fileTx(tx, a) })
}

// fileUncovered files a on PostgreSQL in one statement when no approval rule
// covers it, and answers false, filing nothing, when one does or a policy
// looks on (then fileTx decides). An ask no built-in rule covers, of an
// account that keeps no rule of its own in force, is checked for rules
// inside that statement: one round trip. Otherwise the account's rules are
// read first, and a rule added between that read and the insert is as if
// added just after the ask.
func (s *Store) fileUncovered(ctx context.Context, a *asks.Approval) (bool, error) {
	f := rules.FactsOf(a)
	if !slices.ContainsFunc(rules.BuiltinRules(), func(r rules.Rule) bool { return r.Covers(f) }) {
		filed, ownRules, err := s.fileInOneStatement(ctx, a, true)
		if err != nil || filed || !ownRules {
			return filed, err
		}
	}
	own, err := s.RulesTx(s.DB().WithContext(ctx), a.AccountID, false)
	if err != nil {
		return false, err
	}
	if slices.ContainsFunc(own, func(r rules.Rule) bool { return r.Covers(f) }) {
		return false, nil
	}
	filed, _, err := s.fileInOneStatement(ctx, a, false)
	return filed, err
}

// fileTx is file inside a transaction the caller holds. On PostgreSQL,
// fileInOneStatement does the same in one statement for most asks: a step
// added here must be added there too, or file must send the asks it
// concerns here.
func (s *Store) fileTx(tx *gorm.DB, a *asks.Approval) error {
	if a.Supersedes != "" {
		if err := s.supersede(tx, a); err != nil {
			return err
		}
	}
	if a.Requirement == nil {
		req, err := s.RequirementFor(tx, a)
		if err != nil {
			return err
		}
		if req != nil {
			if err := s.DelegateRequirement(tx, a, req); err != nil {
				return err
			}
			c, err := req.Canonical()
			if err != nil {
				return err
			}
			a.Requirement = core.NullableJSON(c)
		}
	}
	if err := tx.Table("approvals").Create(a).Error; err != nil {
		return fmt.Errorf("insert approval: %w", err)
	}
	if err := s.AppendEvent(tx, a, &asks.TimelineEvent{
		AccountID: a.AccountID, ApprovalID: a.ID, At: a.CreatedAt, ActorKind: asks.ActorAgent, Actor: a.RequesterSubject,
		Step: "created", ToStatus: asks.StatusPending, Note: asks.SupersedeNote(a.Supersedes),
	}); err != nil {
		return err
	}
	approved, err := s.AutoApprove(tx, a)
	if err != nil || approved {
		return err // an auto-approved ask sends no push
	}
	return s.QueueAsk(tx, a)
}

// supersede links the new ask a to the earlier one it asks again for, and
// makes the earlier one stale when it was still open. The earlier ask may be
// any of the account's, another agent's too (seed 001: "an earlier approval
// of the same account"); one of another account is NOT_FOUND, as for an id
// that does not exist.
func (s *Store) supersede(tx *gorm.DB, a *asks.Approval) error {
	var earlier asks.Approval
	err := s.LoadForUpdate(tx, a.AccountID, a.Supersedes, &earlier)
	if core.CodeOf(err) == core.NotFound {
		return core.Refuse(core.NotFound, "supersedes", "no approval %q in this account", a.Supersedes)
	}
	if err != nil {
		return err
	}
	if earlier.SupersededBy != "" {
		return core.Refuse(core.FailedPrecondition, "supersedes", "approval %s was already superseded by %s", earlier.ID, earlier.SupersededBy)
	}
	if !earlier.Status.Open() {
		res := tx.Table("approvals").Where("id = ? AND version = ?", earlier.ID, earlier.Version).
			Updates(map[string]any{"superseded_by": a.ID, "version": earlier.Version + 1, "updated_at": s.Now()})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected != 1 {
			return core.Refuse(core.FailedPrecondition, "supersedes", "approval %s changed while this call ran; try again", earlier.ID)
		}
		return nil
	}
	note := "asked again as " + a.ID
	if earlier.RequesterID != a.RequesterID {
		note += " by " + a.RequesterSubject // its own agent learns who
	}
	return s.Move(tx, &earlier, asks.StatusChange{
		Event: asks.EventSupersede, ActorKind: asks.ActorSystem, Actor: "countersign",
		Note: note, Set: map[string]any{"superseded_by": a.ID},
	})
}
