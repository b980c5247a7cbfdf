package models

import (
	"context"
	"fmt"
	"strings"

	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
	"gorm.io/gorm"

	"time"

	"github.com/countersign/countersign/models/grants"
)

// CreateInvite makes a one-time invite and returns its secret token. It
// refuses a role above the inviter's own, a new-person invite that names a
// subject some person already has (in any account), and an add-role invite
// for someone who is no person yet or already a member here. An owner or
// admin invite a member makes where a rule covers member changes is held
// (Invite.Held) by the member_change ask filed with it, until that ask is
// approved; the operator's invites are never held.
func (s *Store) CreateInvite(ctx context.Context, in people.NewInvite) (string, *people.Invite, error) {
	kind, err := people.ParseInviteKind(string(in.Kind))
	if err != nil {
		return "", nil, err
	}
	if _, err := core.ParseRole(string(in.Role)); err != nil {
		return "", nil, err
	}
	in.Subject = strings.TrimSpace(in.Subject)
	if kind == people.InviteAddRole && in.Subject == "" {
		return "", nil, core.Invalid("subject", "an add-role invite names the existing person who accepts it")
	}
	if in.Subject != "" {
		if err := people.CheckSubject(in.Subject); err != nil {
			return "", nil, err
		}
	}
	if in.By.Name == "" || (!in.By.Operator && in.By.PersonID == "") {
		return "", nil, core.Invalid("created_by", "an invite is made by a member of the account or by the operator")
	}
	token := core.RandomToken("inv_")
	now := s.Now()
	inv := &people.Invite{TokenHash: core.HashToken(token), AccountID: in.AccountID, Kind: kind, Role: in.Role, Subject: in.Subject,
		CreatedBy: in.By.Name, CreatedAt: now, ExpiresAt: now.Add(people.InviteTTL)}
	var agent *people.Agent
	governed := !in.By.Operator && (in.Role == core.RoleOwner || in.Role == core.RoleAdmin)
	if governed {
		if agent, err = s.serviceAgent(ctx, in.AccountID); err != nil {
			return "", nil, err
		}
	}
	err = s.Write(ctx, func(tx *gorm.DB) error {
		if err := people.MayGrant(tx, in.AccountID, in.By, in.Role); err != nil {
			return err
		}
		subject, err := people.InviteeFits(tx, in.AccountID, kind, in.Subject)
		if err != nil {
			return err
		}
		inv.Subject = subject
		if governed {
			a, err := s.governMemberChange(tx, agent, in.AccountID, in.By.Name,
				MemberChange{Action: MemberInvite, Subject: subject, Role: in.Role, Invite: kind})
			if err != nil {
				return err
			}
			if a != nil {
				inv.ApprovalID, inv.Held = a.ID, true
			}
		}
		return tx.Table("invites").Create(inv).Error
	})
	if err != nil {
		return "", nil, fmt.Errorf("create invite: %w", err)
	}
	return token, inv, nil
}

// RemoveMember takes a person out of the account at once and ends their
// sessions in it, in one transaction: the clients they connected there are
// disabled (their OAuth tokens revoked, their open asks cancelled, their MCP
// streams closed on every instance). The last owner cannot be removed. A removal made on the
// Members page goes through RemoveMemberAs, which asks the people a rule
// names first and, approved, applies it here (removeMember): everything a
// removal ends belongs in removeMember, so that both paths end it.
func (s *Store) RemoveMember(ctx context.Context, accountID, personID string) error {
	return s.Write(ctx, func(tx *gorm.DB) error { return s.removeMember(tx, accountID, personID) })
}

// EndSessionsOf signs a person out of every browser, in every account, and
// ends, in the same transaction, the OAuth grants of every client they
// connected (tokens revoked, open MCP streams closed on every instance).
func (s *Store) EndSessionsOf(ctx context.Context, personID string) error {
	err := s.Write(ctx, func(tx *gorm.DB) error {
		if err := tx.Exec(`DELETE FROM web_sessions WHERE person_id = ?`, personID).Error; err != nil {
			return err
		}
		// A push link reads an ask without a session: it ends with them.
		if err := tx.Exec(`DELETE FROM push_links WHERE person_id = ?`, personID).Error; err != nil {
			return err
		}
		// So do the OAuth grants of the clients they connected (a client
		// connects on a session alone): each must be connected again.
		clients, err := grants.OAuthAgentsOf(tx, personID, "")
		if err != nil {
			return err
		}
		if err := s.EndGrants(tx, clients); err != nil {
			return err
		}
		return s.SessionsEnded(tx, core.Change{PersonID: personID})
	})
	if err != nil {
		return fmt.Errorf("end sessions: %w", err)
	}
	return nil
}

// SweepExpired deletes what has outlived its use: passkey ceremonies,
// decision challenges and push links past their expiry, web sessions past
// their absolute life or idle for longer than the idle time, and the
// signatures of runner reports too old to be sent again, OAuth tokens and
// codes past their life. It answers how many
// rows went.
func (s *Store) SweepExpired(ctx context.Context) (int64, error) {
	now := s.Now()
	var n int64
	err := s.Write(ctx, func(tx *gorm.DB) error {
		for _, q := range []struct {
			sql  string
			args []any
		}{
			{`DELETE FROM ceremonies WHERE expires_at <= ?`, []any{now}},
			{`DELETE FROM decision_challenges WHERE expires_at <= ?`, []any{now}},
			{`DELETE FROM push_links WHERE expires_at <= ?`, []any{now}},
			{`DELETE FROM web_sessions WHERE expires_at <= ? OR last_seen_at < ?`, []any{now, now.Add(-s.SessionIdle())}},
			{`DELETE FROM runner_report_signatures WHERE expires_at <= ?`, []any{now}},
			// OAuth tokens past their life, and codes a day past theirs
			// (kept that long so a late second use is still seen as one).
			{`DELETE FROM oauth_tokens WHERE expires_at <= ?`, []any{now}},
			{`DELETE FROM oauth_codes WHERE expires_at <= ?`, []any{now.Add(-24 * time.Hour)}},
			// Registered OAuth clients no person connected, past their life.
			{`DELETE FROM oauth_clients WHERE created_at <= ? AND ` + grants.UnconnectedClient, []any{now.Add(-grants.OAuthClientUnusedLife)}},
		} {
			res := tx.Exec(q.sql, q.args...)
			if res.Error != nil {
				return res.Error
			}
			n += res.RowsAffected
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("sweep expired: %w", err)
	}
	return n, nil
}
