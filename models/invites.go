package models

import (
	"context"
	"fmt"
	"strings"

	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
	"gorm.io/gorm"
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
