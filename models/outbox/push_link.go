package outbox

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"gorm.io/gorm"
)

// A push link is what an ask's push opens: one ask, for the person whose
// device got the push, without a session (SPEC, "one-time push link"). It
// is random and single use, bound to the ask, the push subscription and the
// person, and lives PushLinkLife at most and never past the ask's expiry.
// Only hashes of its secrets are stored.
//
// It is used in two steps. The token in the push's URL opens the link once:
// the first open swaps it for a second secret that only that browser holds
// (an HttpOnly cookie), so the URL left in a notification, the history or a
// screenshot opens nothing afterwards. With that secret the browser reads the
// ask and may begin a decision on it; the decision's own passkey assertion
// says who decides, and must be the link's person. The link is spent in the
// transaction that records the decision: a failed or cancelled Face ID, or a
// reload, does not use it up, and nothing can be decided with it twice.

// PushLinkLife is the longest a push link lives.
const PushLinkLife = 15 * time.Minute

// PushLink is a one-time link an ask's push carries.
type PushLink struct {
	ID             string
	TokenHash      string
	AccountID      string
	ApprovalID     string
	PersonID       string
	SubscriptionID string
	CreatedAt      time.Time
	ExpiresAt      time.Time
	OpenedAt       *time.Time
	SpentAt        *time.Time
}

// pushLinkApproval is what an approval id must look like to name a push
// link's ask (and its cookie): lower-case letters, digits and underscores.
var pushLinkApproval = regexp.MustCompile(`^[a-z0-9_]{1,64}$`)

// ValidPushLinkApproval says whether id can be the ask of a push link.
func ValidPushLinkApproval(id string) bool { return pushLinkApproval.MatchString(id) }

// IssuePushLink makes the one-time link of an ask's push to one device,
// just before it is sent, and returns its token. It returns "" when the ask
// is no longer open (the push then opens the ask page as before). A link the
// device's earlier try of the same push carried, never opened, goes: only
// the link of the push that arrives opens the ask.
func (s *Queue) IssuePushLink(ctx context.Context, j *PushTarget) (string, error) {
	if j.ApprovalID == "" || j.Event != PushAsk {
		return "", nil
	}
	return s.issueLink(ctx, j.ApprovalID, j.PersonID, j.SubscriptionID)
}

// issueLink makes the one-time link of the ask approvalID for the person,
// sent to via (a push subscription, or "channel:<kind>").
func (s *Queue) issueLink(ctx context.Context, approvalID, personID, via string) (string, error) {
	now := s.Now()
	token := core.RandomToken("pl_")
	issued := false
	err := s.Write(ctx, func(tx *gorm.DB) error {
		var a asks.Approval
		if err := tx.Table("approvals").Where("id = ?", approvalID).Take(&a).Error; err != nil {
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return nil
			}
			return err
		}
		if !a.Status.Open() || !now.Before(a.ExpiresAt) {
			return nil
		}
		if err := tx.Exec(`DELETE FROM push_links WHERE subscription_id = ? AND approval_id = ? AND person_id = ? AND opened_at IS NULL`,
			via, a.ID, personID).Error; err != nil {
			return err
		}
		issued = true
		return tx.Table("push_links").Create(&PushLink{
			ID: core.NewID("plink"), TokenHash: core.HashToken(token), AccountID: a.AccountID, ApprovalID: a.ID,
			PersonID: personID, SubscriptionID: via, CreatedAt: now, ExpiresAt: earliest(now.Add(PushLinkLife), a.ExpiresAt),
		}).Error
	})
	if err != nil {
		return "", fmt.Errorf("issue push link: %w", err)
	}
	if !issued {
		return "", nil
	}
	return token, nil
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// OpenPushLink opens the push link whose token a push carried, for the ask
// approvalID, once: the token stops working and the secret returned takes
// its place, for the browser that opened it. The link is refused when it is
// unknown, for another ask, opened or spent already, or expired.
func (s *Queue) OpenPushLink(ctx context.Context, approvalID, token string) (string, *PushLink, error) {
	secret := core.RandomToken("pls_")
	var l PushLink
	err := s.Write(ctx, func(tx *gorm.DB) error {
		if err := s.livePushLink(tx, approvalID, token, &l); err != nil {
			return err
		}
		if l.OpenedAt != nil {
			return core.Refuse(core.FailedPrecondition, "link", "this link from a notification was opened already, and opens only once")
		}
		now := s.Now()
		res := tx.Exec(`UPDATE push_links SET token_hash = ?, opened_at = ? WHERE id = ? AND opened_at IS NULL AND spent_at IS NULL`,
			core.HashToken(secret), now, l.ID)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected != 1 {
			return core.Refuse(core.FailedPrecondition, "link", "this link from a notification was opened already, and opens only once")
		}
		l.TokenHash, l.OpenedAt = core.HashToken(secret), &now
		return nil
	})
	if err != nil {
		return "", nil, err
	}
	return secret, &l, nil
}

// PushLinkFor reads the opened push link whose secret a browser holds, for
// the ask approvalID; it is refused as OpenPushLink refuses, and when it was
// never opened (the token of a push is not the secret of its link).
func (s *Queue) PushLinkFor(ctx context.Context, approvalID, secret string) (*PushLink, error) {
	var l PushLink
	if err := s.livePushLink(s.DB().WithContext(ctx), approvalID, secret, &l); err != nil {
		return nil, err
	}
	if l.OpenedAt == nil {
		return nil, core.Refuse(core.NotFound, "link", "this link opens nothing: open the ask from its notification again, or sign in")
	}
	return &l, nil
}

// livePushLink reads into l the unspent, unexpired link whose current
// secret hashes from secret, for the ask approvalID.
func (s *Queue) livePushLink(tx *gorm.DB, approvalID, secret string, l *PushLink) error {
	err := tx.Table("push_links").Where("token_hash = ?", core.HashToken(secret)).Take(l).Error
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return core.Refuse(core.NotFound, "link", "this link opens nothing: it is not known, or it was opened already; sign in to answer")
	case err != nil:
		return fmt.Errorf("read push link: %w", err)
	case l.ApprovalID != approvalID:
		return core.Refuse(core.PermissionDenied, "link", "this link opens another ask, not this one")
	case l.SpentAt != nil:
		return core.Refuse(core.FailedPrecondition, "link", "this link was used: an answer was signed with it")
	case !s.Now().Before(l.ExpiresAt):
		return core.Refuse(core.FailedPrecondition, "link", "this link expired at %s: a link from a notification lasts %s at most", l.ExpiresAt.UTC().Format(time.RFC3339), PushLinkLife)
	}
	return nil
}

// SpendPushLink uses up, inside the decision's transaction, the opened push
// link the decision was made with, which must be this ask's and this
// person's, unspent and alive: nothing is decided with a link twice.
func (s *Queue) SpendPushLink(tx *gorm.DB, linkID string, a *asks.Approval, personID string) error {
	now := s.Now()
	res := tx.Exec(`UPDATE push_links SET spent_at = ? WHERE id = ? AND approval_id = ? AND person_id = ?
		AND opened_at IS NOT NULL AND spent_at IS NULL AND expires_at > ?`, now, linkID, a.ID, personID, now)
	if res.Error != nil {
		return fmt.Errorf("spend push link: %w", res.Error)
	}
	if res.RowsAffected != 1 {
		return core.Refuse(core.FailedPrecondition, "link", "this link was used or expired, or is another person's; nothing was recorded")
	}
	return nil
}

// PushLinkReceiptLife is how long after an answer signed through a push
// link the browser that signed it may read that answer's receipt.
const PushLinkReceiptLife = 10 * time.Minute

// SpentPushLinkReceipt reads the ask that the push link whose secret a
// browser holds was spent on, within PushLinkReceiptLife of its spending:
// the done page shows that browser the receipt of its answer, and nothing
// to anyone else.
func (s *Queue) SpentPushLinkReceipt(ctx context.Context, approvalID, secret string) (*asks.Approval, *PushLink, error) {
	var l PushLink
	err := s.DB().WithContext(ctx).Table("push_links").Where("token_hash = ?", core.HashToken(secret)).Take(&l).Error
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return nil, nil, core.Refuse(core.NotFound, "link", "this browser signed no answer through a link to this ask")
	case err != nil:
		return nil, nil, fmt.Errorf("read push link: %w", err)
	case l.ApprovalID != approvalID || l.SpentAt == nil || !s.Now().Before(l.SpentAt.Add(PushLinkReceiptLife)):
		return nil, nil, core.Refuse(core.NotFound, "link", "this browser signed no answer through a link to this ask lately")
	}
	a, err := s.GetApproval(ctx, l.AccountID, approvalID)
	if err != nil {
		return nil, nil, err
	}
	return a, &l, nil
}

// IssueChannelLink makes the one-time link a message to a person carries,
// just before it is sent, as IssuePushLink does for a push: bound to the
// ask, the person and the channel (in place of a device), living
// PushLinkLife at most and never past the ask's expiry, spent by the
// decision. It returns "" when the message is not an ask to a person, or the
// ask is no longer open. A link an earlier try of the same message carried,
// never opened, goes.
func (s *Queue) IssueChannelLink(ctx context.Context, m *ChannelMessage) (string, error) {
	if m.ApprovalID == "" || m.Shared() || m.Event == MessageDecided || m.Event == MessageTest {
		return "", nil
	}
	return s.issueLink(ctx, m.ApprovalID, m.PersonID, "channel:"+m.Kind)
}
