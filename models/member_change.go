package models

import (
	"context"
	"fmt"

	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
	"gorm.io/gorm"

	"github.com/countersign/countersign/models/grants"

	"encoding/json"

	"github.com/countersign/countersign/ask"

	"github.com/countersign/countersign/models/asks"
)

// Who decides is governed like the rules: where a rule covers member_change
// asks (built in: two owners or admins once the account has two), adding an
// owner or admin (an invite of those roles), changing a role and removing a
// member are asks of kind member_change, filed by the service's agent for
// the owner or admin who proposes them, signed by each approver with a
// passkey and applied in the transaction that records the approval
// completing the quorum. Where no rule covers them (one owner alone, or the
// rule removed), they happen at once, as before. So one person can neither
// add a second identity of theirs to the pool nor shrink the pool to
// themselves, where a two-person rule stands aside. The operator's paths on
// the host (countersign invite, SetRole, RemoveMember) apply at once.

// Actions of a member change.
const (
	MemberInvite  = "invite"   // an invite of an owner or admin, held until approved
	MemberSetRole = "set_role" // a member's new role
	MemberRemove  = "remove"   // a member taken out of the account
)

// MemberChange is what a member_change ask proposes: its payload's one member.
type MemberChange struct {
	Action string `json:"action"`
	// PersonID and Subject name the member changed or removed; Subject is,
	// for an invite, the person it names ("" when anyone with the link may
	// take it).
	PersonID string `json:"person_id,omitempty"`
	Subject  string `json:"subject,omitempty"`
	// Role is the role set or invited; From, the member's role before.
	Role core.Role `json:"role,omitempty"`
	From core.Role `json:"from,omitempty"`
	// Invite is the kind of invite (new_person or add_role).
	Invite people.InviteKind `json:"invite,omitempty"`
}

type memberChangePayload struct {
	MemberChange MemberChange `json:"member_change"`
}

// words says the change in a line, for the ask's title.
func (mc MemberChange) words() string {
	switch mc.Action {
	case MemberInvite:
		who := "a new person"
		if mc.Invite == people.InviteAddRole {
			who = mc.Subject
		} else if mc.Subject != "" {
			who = "a new person, " + mc.Subject
		}
		return fmt.Sprintf("Invite %s as %s", who, mc.Role)
	case MemberSetRole:
		return fmt.Sprintf("Make %s %s (now %s)", mc.Subject, article(mc.Role), mc.From)
	}
	return fmt.Sprintf("Remove %s (%s) from the account", mc.Subject, mc.From)
}

func article(r core.Role) string {
	if r == core.RoleOwner || r == core.RoleAdmin {
		return "an " + string(r)
	}
	return "a " + string(r)
}

// ChangeRole gives the member personID the role, for the owner or admin by:
// at once where no rule covers member changes, else as an ask it files and
// returns, applied once the rule's people have signed it. A role the member
// has already changes nothing.
func (s *Store) ChangeRole(ctx context.Context, by *people.Member, personID string, role core.Role) (*asks.Approval, error) {
	if _, err := core.ParseRole(string(role)); err != nil {
		return nil, err
	}
	target, err := s.MemberByID(ctx, by.AccountID, personID)
	if err != nil {
		return nil, err
	}
	if target.Role == role {
		return nil, nil
	}
	mc := MemberChange{Action: MemberSetRole, PersonID: personID, Subject: target.Subject, Role: role, From: target.Role}
	return s.changeWhoDecides(ctx, by, mc, func(tx *gorm.DB) error {
		if role != core.RoleOwner {
			return s.KeepAnOwner(tx, by.AccountID, personID)
		}
		return nil
	})
}

// RemoveMemberAs takes the member personID out of the account for the owner
// or admin by (themselves too): at once where no rule covers member
// changes, else as an ask it files and returns, applied once the rule's
// people have signed it. The last owner stays.
func (s *Store) RemoveMemberAs(ctx context.Context, by *people.Member, personID string) (*asks.Approval, error) {
	target, err := s.MemberByID(ctx, by.AccountID, personID)
	if err != nil {
		return nil, err
	}
	mc := MemberChange{Action: MemberRemove, PersonID: personID, Subject: target.Subject, From: target.Role}
	return s.changeWhoDecides(ctx, by, mc, func(tx *gorm.DB) error { return s.KeepAnOwner(tx, by.AccountID, personID) })
}

// changeWhoDecides makes the change mc in one transaction: check refuses
// what could never apply; then, where a rule covers the member_change ask
// of mc, the ask is filed and returned, else the change applies at once.
func (s *Store) changeWhoDecides(ctx context.Context, by *people.Member, mc MemberChange, check func(tx *gorm.DB) error) (*asks.Approval, error) {
	if by.Role != core.RoleOwner && by.Role != core.RoleAdmin {
		return nil, core.Refuse(core.PermissionDenied, "", "only an owner or admin changes who is a member and with which role")
	}
	agent, err := s.serviceAgent(ctx, by.AccountID)
	if err != nil {
		return nil, err
	}
	var filed *asks.Approval
	err = s.Write(ctx, func(tx *gorm.DB) error {
		if err := check(tx); err != nil {
			return err
		}
		a, err := s.governMemberChange(tx, agent, by.AccountID, by.Subject, mc)
		if err != nil || a != nil {
			filed = a
			return err
		}
		return s.makeMemberChange(tx, by.AccountID, mc)
	})
	if err != nil {
		return nil, err
	}
	return filed, nil
}

// governMemberChange files, inside tx, the member_change ask of mc for the
// proposer when a rule covers it, and returns it; nil, filing nothing, when
// none does (the change is then made at once). An ask whose rule could
// never be met is refused, and nothing changes.
func (s *Store) governMemberChange(tx *gorm.DB, agent *people.Agent, accountID, proposer string, mc MemberChange) (*asks.Approval, error) {
	a, err := s.serviceAsk(agent, accountID, proposer, ask.KindMemberChange, mc.words(), memberChangePayload{MemberChange: mc},
		proposer+" proposes this change to who is a member of the account and with which role.",
		"The change is made once the people the rules ask for member changes have signed.",
		"Nothing changes.")
	if err != nil {
		return nil, err
	}
	req, err := s.RequirementFor(tx, a)
	if err != nil || req == nil {
		return nil, err
	}
	return a, s.fileTx(tx, a)
}

// makeMemberChange makes, inside tx, a role change or a removal.
func (s *Store) makeMemberChange(tx *gorm.DB, accountID string, mc MemberChange) error {
	switch mc.Action {
	case MemberSetRole:
		return s.SetRoleTx(tx, accountID, mc.PersonID, mc.Role)
	case MemberRemove:
		return s.removeMember(tx, accountID, mc.PersonID)
	}
	return fmt.Errorf("member change: unknown action %q", mc.Action)
}

// applyMemberChange applies, inside the transaction that approves it, the
// change a member_change ask proposed: an invite is released (it works
// from now, for InviteTTL), a role set, a member removed.
func (s *Store) applyMemberChange(tx *gorm.DB, a *asks.Approval, by string) error {
	var p memberChangePayload
	if err := json.Unmarshal([]byte(a.Payload), &p); err != nil {
		return fmt.Errorf("member change payload: %w", err)
	}
	if p.MemberChange.Action == MemberInvite {
		now := s.Now()
		return tx.Table("invites").Where("account_id = ? AND approval_id = ? AND held", a.AccountID, a.ID).
			Updates(map[string]any{"held": false, "expires_at": now.Add(people.InviteTTL)}).Error
	}
	return s.makeMemberChange(tx, a.AccountID, p.MemberChange)
}

func (s *Store) removeMember(tx *gorm.DB, accountID, personID string) error {
	if err := s.KeepAnOwner(tx, accountID, personID); err != nil {
		return err
	}
	res := tx.Exec(`DELETE FROM memberships WHERE account_id = ? AND person_id = ?`, accountID, personID)
	if res.Error != nil {
		return fmt.Errorf("remove member: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return core.Refuse(core.NotFound, "person", "not a member of this account")
	}
	if err := tx.Exec(`DELETE FROM web_sessions WHERE account_id = ? AND person_id = ?`, accountID, personID).Error; err != nil {
		return err
	}
	if err := s.disableClientsOf(tx, accountID, personID); err != nil {
		return err
	}
	return s.SessionsEnded(tx, core.Change{AccountID: accountID, PersonID: personID})
}

// disableClientsOf disables, inside tx, the agents of the clients personID
// connected in accountID, as their person leaves it; one disabled before
// has its grants ended all the same.
func (s *Store) disableClientsOf(tx *gorm.DB, accountID, personID string) error {
	ids, err := grants.OAuthAgentsOf(tx, personID, accountID)
	if err != nil || len(ids) == 0 {
		return err
	}
	var agents []people.Agent
	if err := s.Lock(tx.Table("agents")).Where("id IN ?", ids).Order("id").Find(&agents).Error; err != nil {
		return fmt.Errorf("find connected clients: %w", err)
	}
	for _, a := range agents {
		if a.Disabled {
			err = s.EndGrants(tx, []string{a.ID})
		} else {
			err = s.disableAgent(tx, a.ID, "its person left the account", "countersign", "requesting client's person removed from the account")
		}
		if err != nil {
			return err
		}
	}
	return nil
}
