package models

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/countersign/countersign/ask"

	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/policy"
)

// RequestAutoApprove files an auto_approve ask of the owners and admins.
// Nothing turns on until a person approves it with their device key.
func (s *Store) RequestAutoApprove(ctx context.Context, in policy.AutoApproveRequest) (*asks.Approval, error) {
	agent := in.Requester
	now := s.Now()
	// RFC 3339 (5.6) lets T and Z be written in lower case; the instant is
	// kept in UTC, as the store keeps every time, whatever offset it came with.
	until, err := time.Parse(time.RFC3339, strings.ToUpper(strings.TrimSpace(in.Until)))
	until = until.UTC()
	switch {
	case err != nil:
		return nil, core.Invalid("until", "must be an RFC 3339 time such as %s", now.Add(8*time.Hour).Format(time.RFC3339))
	case !until.After(now):
		return nil, core.Invalid("until", "must be in the future (now is %s)", now.Format(time.RFC3339))
	case until.Sub(now) > policy.MaxPolicyLife:
		return nil, core.Invalid("until", "at most 24 hours from now (%s)", now.Add(policy.MaxPolicyLife).Format(time.RFC3339))
	}
	if n := core.RuneCount(in.Device); n > 64 {
		return nil, core.Invalid("device", "at most 64 characters (got %d)", n)
	}
	if strings.ContainsAny(in.Device, "\r\n\t") {
		return nil, core.Invalid("device", "one line")
	}
	scope, err := s.CheckScope(ctx, agent.AccountID, in.Scope)
	if err != nil {
		return nil, err
	}
	var p policy.AutoApprovePayload
	p.AutoApprove.Scope, p.AutoApprove.Until, p.AutoApprove.Requester, p.AutoApprove.Device = scope, until.UTC().Format(time.RFC3339), agent.Subject, in.Device
	raw, _ := json.Marshal(p)
	canonical, sum, err := ask.CanonicalHash(raw)
	if err != nil {
		return nil, err
	}
	kinds, whom := "every kind a policy may cover", "any agent"
	if len(scope.AskKinds) > 0 {
		kinds = "kind " + strings.Join(scope.AskKinds, ", ")
	}
	if len(scope.Requesters) > 0 {
		whom = strings.Join(scope.Requesters, ", ")
	}
	expires := now.Add(s.askTTL)
	if until.Before(expires) {
		expires = until // a request not answered before its until is moot
	}
	a := &asks.Approval{
		ID: core.NewID("appr"), AccountID: agent.AccountID, Kind: ask.KindAutoApprove,
		Title:        "Turn on auto-approve until " + until.UTC().Format("Jan 2 15:04 MST"),
		Summary:      fmt.Sprintf("%s asks that new asks of %s, filed by %s, be approved without asking you until %s.", agent.Subject, kinds, whom, until.UTC().Format(time.RFC3339)),
		ApproveMeans: "Matching asks are approved at once in your name until then; merges, rolls, releases, runs, security, finance, legal, deletes, classified material and permission or policy changes still ask you. You can turn it off at any time.",
		DenyMeans:    "Nothing turns on; every ask keeps asking you.",
		Payload:      string(canonical), PayloadSHA256: sum,
		AgentLabel: in.Device, RequesterID: agent.ID, RequesterSubject: agent.Subject,
		Status: asks.StatusPending, Version: 1, ExpiresAt: expires, CreatedAt: now, UpdatedAt: now,
	}
	if err := s.file(ctx, a); err != nil {
		return nil, err
	}
	return a, nil
}
