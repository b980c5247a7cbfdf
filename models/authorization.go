package models

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/countersign/countersign/ask"

	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
	"gorm.io/gorm"
)

// An authorization ask is how a CIBA client (OpenID Client-Initiated
// Backchannel Authentication) asks one person for consent: the provider
// files it through the client's own agent, asked of that person, and it
// takes the path every ask takes (file): the rules, the pushes to every
// channel of the person and the fatigue cap. No policy, window or batch
// answers it (ask.NeverAutoApproved). Its binding message is in the signed
// payload; the page shows it where the check code goes, for the person to
// compare with what the client shows.

// AuthorizationFiling is what the CIBA provider files for one request.
type AuthorizationFiling struct {
	AccountID string
	AgentID   string // the CIBA client's own agent
	PersonID  string // the person asked
	Payload   ask.AuthorizationPayload
	ExpiresAt time.Time // when the request expires (requested_expiry, capped by the provider)
}

// FileAuthorization files an authorization ask of the person by the
// client's agent, expiring at f.ExpiresAt, and tells the person by every
// channel they have. The payload is checked as ask.ParsePayload checks it.
func (s *Store) FileAuthorization(ctx context.Context, f AuthorizationFiling) (*asks.Approval, error) {
	a, err := s.authorizationAsk(ctx, f)
	if err != nil {
		return nil, err
	}
	if err := s.file(ctx, a); err != nil {
		return nil, err
	}
	return a, nil
}

// authorizationAsk checks a filing and builds its ask, filing nothing.
func (s *Store) authorizationAsk(ctx context.Context, f AuthorizationFiling) (*asks.Approval, error) {
	now := s.Now()
	if !f.ExpiresAt.After(now) {
		return nil, core.Invalid("expires_at", "must be in the future (now is %s)", now.Format(time.RFC3339))
	}
	if len(f.Payload.AuthorizationDetails) > 0 {
		// Checked first, so that bytes that are not JSON are refused by
		// name rather than failing to marshal.
		canonical, r := ask.ParseAuthorizationDetails(f.Payload.AuthorizationDetails)
		if r != nil {
			return nil, core.Invalid("payload.authorization."+r.Field, "%s", r.Msg)
		}
		f.Payload.AuthorizationDetails = canonical
	}
	raw, err := json.Marshal(map[string]ask.AuthorizationPayload{ask.KindAuthorization: f.Payload})
	if err != nil {
		return nil, fmt.Errorf("authorization payload: %w", err)
	}
	payload, err := ask.ParsePayload(ask.KindAuthorization, raw, now)
	if err != nil {
		return nil, err
	}
	var agent people.Agent
	err = s.DB().WithContext(ctx).Table("agents").Where("account_id = ? AND id = ?", f.AccountID, f.AgentID).Take(&agent).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, core.Refuse(core.NotFound, "agent", "no agent %q in this account", f.AgentID)
	}
	if err != nil {
		return nil, fmt.Errorf("find the client's agent: %w", err)
	}
	if agent.Disabled {
		return nil, core.Refuse(core.FailedPrecondition, "agent", "the agent %s is disabled (%s): it files no asks until an admin enables it again", agent.Name, agent.DisabledReason)
	}
	person, err := s.MemberByID(ctx, f.AccountID, f.PersonID)
	if err != nil {
		return nil, err
	}
	name := f.Payload.Client.Name
	summary := name + " asks you to authorize it, with the scope " + f.Payload.Scope + "."
	if f.Payload.BindingMessage != "" {
		summary += " Check that " + name + " shows this message: " + f.Payload.BindingMessage
	}
	a := &asks.Approval{
		ID: core.NewID("appr"), AccountID: f.AccountID, Kind: ask.KindAuthorization,
		Title:        clipTitle(name + " asks you to authorize"),
		Summary:      summary,
		ApproveMeans: name + " gets the tokens for what is shown, with your signature over it.",
		DenyMeans:    name + " is told you refused; it gets no tokens.",
		Payload:      string(payload.Canonical), PayloadSHA256: payload.SHA256,
		AgentLabel: strings.TrimSpace(name), RequesterID: agent.ID, RequesterSubject: agent.Subject, AskedOf: person.Subject,
		Status: asks.StatusPending, Version: 1, ExpiresAt: f.ExpiresAt.UTC(), CreatedAt: now, UpdatedAt: now,
	}
	return a, nil
}

// clipTitle keeps a title the store builds within the 200 characters of every title.
func clipTitle(t string) string {
	if core.RuneCount(t) > 200 {
		return string([]rune(t)[:199]) + "…"
	}
	return t
}
