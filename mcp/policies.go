package mcp

import (
	"context"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/models/people"
	"github.com/countersign/countersign/models/policy"
)

// ScopeArg is the scope of an auto-approve request.
type ScopeArg struct {
	AskKinds    []string `json:"ask_kinds,omitempty" jsonschema:"Kinds to approve without asking; empty for every kind a policy may cover. pull_request, roll, run, decision and auto_approve are refused: they always ask a person."`
	MaxPriority int      `json:"max_priority,omitempty" jsonschema:"0: every ask has priority 0 until asks carry a priority."`
	Requesters  []string `json:"requesters,omitempty" jsonschema:"Agent subjects (agent:<name>) whose asks it covers; empty for anyone."`
}

// RequestAutoApproveInput is the input of approvals_request_auto_approve.
type RequestAutoApproveInput struct {
	AccountArg
	Device string   `json:"device,omitempty" jsonschema:"The surface that asked (mac, ios, a desktop's id); at most 64 characters, kept on the timeline."`
	Scope  ScopeArg `json:"scope,omitzero" jsonschema:"What the policy covers."`
	Until  string   `json:"until" jsonschema:"RFC 3339; in the future, at most 24 hours from now."`
}

// GetPolicyInput is the input of approvals_get_auto_approve_policy: the
// account only, as seed 001 gives it.
type GetPolicyInput struct {
	AccountArg
}

// RevokePolicyInput is the input of approvals_revoke_auto_approve_policy.
type RevokePolicyInput struct {
	AccountArg
	Note string `json:"note,omitempty" jsonschema:"Why, optional; at most 500 characters, kept on the enabling ask's timeline."`
}

// PolicyOutput is the account's newest policy, or none.
type PolicyOutput struct {
	Policy *PolicyOut `json:"policy" jsonschema:"The newest auto-approve policy, active or not; null when there has never been one."`
}

// PolicyOut is an auto-approve policy as the tools return it.
type PolicyOut struct {
	PolicyID       string     `json:"policy_id"`
	ApprovalID     string     `json:"approval_id" jsonschema:"The auto_approve ask whose signed approval turned it on."`
	Scope          ScopeOut   `json:"scope"`
	ExpiresAt      time.Time  `json:"expires_at" jsonschema:"The until the person signed: it ends by itself then."`
	SignedBy       string     `json:"signed_by" jsonschema:"The subject of the person who signed it."`
	CredentialID   string     `json:"credential_id" jsonschema:"The device key (passkey credential id) that signed it."`
	SignedAt       time.Time  `json:"signed_at"`
	Active         bool       `json:"active" jsonschema:"Unrevoked, unexpired, its signing key still registered and its signer still a member."`
	Inactive       string     `json:"inactive_reason,omitempty" jsonschema:"Why it is not active: revoked, expired, the signing passkey was removed, or the signer left the account."`
	ApprovedCount  int        `json:"approved_count" jsonschema:"How many asks it approved."`
	LastApprovedAt *time.Time `json:"last_approved_at,omitempty"`
	RevokedAt      *time.Time `json:"revoked_at,omitempty"`
	RevokedBy      string     `json:"revoked_by,omitempty" jsonschema:"The subject of the person or agent that turned it off, or of the person whose newer policy replaced it."`
	Replaces       string     `json:"replaces,omitempty" jsonschema:"The older policy this one replaced."`
	ReplacedBy     string     `json:"replaced_by,omitempty" jsonschema:"The newer policy that replaced this one."`
}

// ScopeOut is a policy's scope.
type ScopeOut struct {
	AskKinds    []string `json:"ask_kinds"`
	MaxPriority int      `json:"max_priority"`
	Requesters  []string `json:"requesters"`
}

func policyOut(st *policy.PolicyState) *PolicyOutput {
	if st == nil {
		return &PolicyOutput{}
	}
	sc := st.ScopeOf()
	return &PolicyOutput{Policy: &PolicyOut{
		PolicyID: st.ID, ApprovalID: st.ApprovalID,
		Scope:     ScopeOut{AskKinds: nonNil(sc.AskKinds), MaxPriority: sc.MaxPriority, Requesters: nonNil(sc.Requesters)},
		ExpiresAt: st.ExpiresAt, SignedBy: st.SignerSubject, CredentialID: st.CredentialID, SignedAt: st.SignedAt,
		Active: st.Active, Inactive: st.Why, ApprovedCount: st.ApprovedCount, LastApprovedAt: st.LastApprovedAt,
		RevokedAt: st.RevokedAt, RevokedBy: st.RevokedBy, Replaces: st.Replaces, ReplacedBy: st.ReplacedBy,
	}}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (s *Server) requestAutoApproveTool() toolDef {
	tool := &sdk.Tool{
		Name:  "approvals_request_auto_approve",
		Title: "Ask to turn on auto-approve",
		Description: `Ask the person to turn on auto-approval of asks they could answer, until a time at most 24 hours ahead. It files an auto_approve ask that is pushed to their phone at once and returns its approval_id; nothing is on until they approve it with their device key (Face ID or Touch ID), and you cannot approve it.
scope: ask_kinds (empty for every kind a policy may cover; pull_request, roll, run, decision and auto_approve are refused), max_priority 0, requesters (agent subjects; empty for anyone). Even while on, merges, rolls, releases, runs, security, finance, legal, deletes, classified material, permission or policy changes and decision asks keep asking the person.
Do not use it to get one ask approved: file it with approvals_create. Next: read approvals_get on the returned approval_id, then approvals_get_auto_approve_policy.`,
		Annotations: &sdk.ToolAnnotations{Title: "Ask to turn on auto-approve", ReadOnlyHint: false, DestructiveHint: boolPtr(false), IdempotentHint: false, OpenWorldHint: boolPtr(false)},
	}
	return define(s, tool, writeScopes, func(ctx context.Context, agent *people.Agent, in RequestAutoApproveInput) (*ApprovalOut, error) {
		undo, err := s.limiter.allow(agent.ID)
		if err != nil {
			return nil, err
		}
		a, err := s.store.RequestAutoApprove(ctx, policy.AutoApproveRequest{
			Requester: agent, Device: in.Device, Until: in.Until,
			Scope: policy.PolicyScope{AskKinds: in.Scope.AskKinds, MaxPriority: in.Scope.MaxPriority, Requesters: in.Scope.Requesters},
		})
		if err != nil {
			undo()
			return nil, err
		}
		return filedApproval(a), nil
	})
}

func (s *Server) getPolicyTool() toolDef {
	tool := &sdk.Tool{
		Name:  "approvals_get_auto_approve_policy",
		Title: "Read the auto-approve policy",
		Description: `Read the account's newest auto-approve policy, active or not, or none: its id, scope, expires_at, the key and person that signed it and when, active (unrevoked, unexpired, key still registered), approved_count and last_approved_at, revoked_at and revoked_by.
Do not use it to learn whether one ask was approved: read approvals_get. While a policy is active, a matching new ask comes back from approvals_create already approved, attributed to the policy.`,
		Annotations: &sdk.ToolAnnotations{Title: "Read the auto-approve policy", ReadOnlyHint: true, OpenWorldHint: boolPtr(false)},
	}
	return define(s, tool, readScopes, func(ctx context.Context, agent *people.Agent, _ GetPolicyInput) (*PolicyOutput, error) {
		st, err := s.store.CurrentPolicy(ctx, agent.AccountID)
		if err != nil {
			return nil, err
		}
		return policyOut(st), nil
	})
}

func (s *Server) revokePolicyTool() toolDef {
	tool := &sdk.Tool{
		Name:  "approvals_revoke_auto_approve_policy",
		Title: "Turn auto-approve off",
		Description: `Turn the account's auto-approve policy off now; asks wait for the person again. No signature is needed and turning it off twice is harmless. note: why, at most 500 characters, kept on the enabling ask's timeline. Returns the policy as it now stands, or none.
Do not use it to withdraw one ask: report approvals_add_progress step stale.`,
		Annotations: &sdk.ToolAnnotations{Title: "Turn auto-approve off", ReadOnlyHint: false, DestructiveHint: boolPtr(false), IdempotentHint: true, OpenWorldHint: boolPtr(false)},
	}
	return define(s, tool, writeScopes, func(ctx context.Context, agent *people.Agent, in RevokePolicyInput) (*PolicyOutput, error) {
		st, err := s.store.RevokePolicy(ctx, agent.AccountID, agent.Subject, in.Note)
		if err != nil {
			return nil, err
		}
		return policyOut(st), nil
	})
}
