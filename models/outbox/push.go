package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"gorm.io/gorm"
)

// PushSubscription is one browser's Web Push subscription, held for a person.
type PushSubscription struct {
	ID            string
	PersonID      string
	Endpoint      string
	P256dh        string
	Auth          string
	UserAgent     string
	CreatedAt     time.Time
	LastSuccessAt *time.Time
	Failures      int
}

// PushCap limits how many ask pushes one person gets in a window; past it,
// one collapsed push says how many asks wait.
type PushCap struct {
	N      int
	Window time.Duration
}

// CollapseDelay is how long a collapsed push waits, gathering the asks that
// arrive meanwhile into its count.
const CollapseDelay = 30 * time.Second

// SetPushCap sets the push fatigue cap; N 0 lifts it.
func (s *Queue) SetPushCap(c PushCap) { s.PushCap = c }

// SavePushSubscription stores a browser's subscription for the person; a
// subscription with the same endpoint is replaced (the browser now belongs
// to whoever subscribed last).
func (s *Queue) SavePushSubscription(ctx context.Context, personID string, sub PushSubscription) (*PushSubscription, error) {
	if err := checkSubscription(sub); err != nil {
		return nil, err
	}
	sub.PersonID, sub.CreatedAt = personID, s.Now()
	if sub.ID == "" {
		sub.ID = core.NewID("psub")
	}
	err := s.Write(ctx, func(tx *gorm.DB) error {
		var old []string
		if err := tx.Table("push_subscriptions").Where("endpoint = ?", sub.Endpoint).Pluck("id", &old).Error; err != nil {
			return err
		}
		if err := deleteSubscriptions(tx, old); err != nil {
			return err
		}
		return tx.Table("push_subscriptions").Create(&sub).Error
	})
	if err != nil {
		return nil, fmt.Errorf("save push subscription: %w", err)
	}
	return &sub, nil
}

func checkSubscription(sub PushSubscription) error {
	u, err := url.Parse(sub.Endpoint)
	if err != nil || u.Scheme != "https" && u.Scheme != "http" || u.Host == "" || len(sub.Endpoint) > 2000 {
		return core.Invalid("endpoint", "a push subscription endpoint is an absolute https URL")
	}
	if sub.P256dh == "" || sub.Auth == "" || len(sub.P256dh) > 200 || len(sub.Auth) > 100 {
		return core.Invalid("keys", "a push subscription needs its p256dh and auth keys")
	}
	if len(sub.UserAgent) > 500 {
		return core.Invalid("user_agent", "at most 500 characters")
	}
	return nil
}

// RenewPushSubscription replaces a subscription the browser rotated
// (pushsubscriptionchange). The old endpoint and its auth secret, which only
// that browser and this server know, stand in for a session.
func (s *Queue) RenewPushSubscription(ctx context.Context, oldEndpoint, oldAuth string, sub PushSubscription) error {
	if err := checkSubscription(sub); err != nil {
		return err
	}
	return s.Write(ctx, func(tx *gorm.DB) error {
		var old PushSubscription
		err := tx.Table("push_subscriptions").Where("endpoint = ? AND auth = ?", oldEndpoint, oldAuth).Take(&old).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return core.Refuse(core.NotFound, "old_endpoint", "no such subscription")
		}
		if err != nil {
			return err
		}
		var other []string
		if err := tx.Table("push_subscriptions").Where("endpoint = ? AND id <> ?", sub.Endpoint, old.ID).Pluck("id", &other).Error; err != nil {
			return err
		}
		if err := deleteSubscriptions(tx, other); err != nil {
			return err
		}
		return tx.Table("push_subscriptions").Where("id = ?", old.ID).Updates(map[string]any{
			"endpoint": sub.Endpoint, "p256dh": sub.P256dh, "auth": sub.Auth, "failures": 0,
		}).Error
	})
}

// PushSubscriptions lists a person's subscriptions, oldest first.
func (s *Queue) PushSubscriptions(ctx context.Context, personID string) ([]PushSubscription, error) {
	var out []PushSubscription
	if err := s.DB().WithContext(ctx).Table("push_subscriptions").Where("person_id = ?", personID).Order("created_at").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list push subscriptions: %w", err)
	}
	return out, nil
}

// DeletePushSubscription turns push off for one browser of the person.
func (s *Queue) DeletePushSubscription(ctx context.Context, personID, endpoint string) error {
	return s.Write(ctx, func(tx *gorm.DB) error {
		var ids []string
		if err := tx.Table("push_subscriptions").Where("person_id = ? AND endpoint = ?", personID, endpoint).Pluck("id", &ids).Error; err != nil {
			return err
		}
		if len(ids) == 0 {
			return core.Refuse(core.NotFound, "endpoint", "this browser has no push subscription")
		}
		return deleteSubscriptions(tx, ids)
	})
}

func deleteSubscriptions(tx *gorm.DB, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	if err := tx.Exec(`DELETE FROM push_jobs WHERE subscription_id IN ? AND done_at IS NULL`, ids).Error; err != nil {
		return err
	}
	// A push link is bound to its subscription: push off on a device, or a
	// device gone, and the links its pushes carried open nothing.
	if err := tx.Exec(`DELETE FROM push_links WHERE subscription_id IN ?`, ids).Error; err != nil {
		return err
	}
	return tx.Exec(`DELETE FROM push_subscriptions WHERE id IN ?`, ids).Error
}

// Push events.
const (
	PushAsk       = "ask"       // a new ask, or one back to pending
	PushDecided   = "decided"   // an ask closed elsewhere: replaces its notification
	PushCollapsed = "collapsed" // past the fatigue cap: how many asks wait
	PushTest      = "test"      // from the devices page
)

// PushMessage is the JSON a push carries. The ask's title is the only ask
// text in it. The service worker reads event, title and url; the sender adds,
// as it sends, the declarative form (web_push and notification), which
// Safari 18.4+ shows without running the service worker.
type PushMessage struct {
	Event      string `json:"event"`
	ApprovalID string `json:"approval_id,omitempty"`
	Title      string `json:"title"`
	Status     string `json:"status,omitempty"`
	URL        string `json:"url"`
	Waiting    int    `json:"waiting,omitempty"`

	WebPush      int                      `json:"web_push,omitempty"` // DeclarativeWebPush when Notification is set
	Notification *DeclarativeNotification `json:"notification,omitempty"`
}

// DeclarativeWebPush is the web_push member's value that marks a push as
// declarative (WebKit's Declarative Web Push: the RFC's number, 8030).
const DeclarativeWebPush = 8030

// DeclarativeNotification is the notification a declarative push shows, the
// same the service worker shows for the push: its title and fixed words,
// the tag that lets a later push replace it, and the absolute URL a tap opens.
type DeclarativeNotification struct {
	Title    string `json:"title"`
	Body     string `json:"body,omitempty"`
	Tag      string `json:"tag,omitempty"`
	Navigate string `json:"navigate"`
}

// PushJob is one push to one subscription, in the durable outbox.
type PushJob struct {
	Seq            int64 `gorm:"primaryKey;autoIncrement"`
	SubscriptionID string
	PersonID       string
	ApprovalID     string
	Event          string
	Body           string
	Urgency        string
	Topic          string
	CreatedAt      time.Time
	NotBefore      time.Time
	ExpiresAt      time.Time
	Attempts       int
	LeasedUntil    *time.Time
	DoneAt         *time.Time
	Outcome        string
	LastError      string
}

// PushTarget is a job claimed for sending, with its subscription.
type PushTarget struct {
	PushJob
	Endpoint string
	P256dh   string
	Auth     string
}

// recipientDevices reads, in one query, the push subscriptions of the people
// an ask is asked of: the named member, or the account's owners and admins.
func recipientDevices(tx *gorm.DB, a *asks.Approval) ([]PushSubscription, error) {
	q, args := `SELECT s.* FROM push_subscriptions s JOIN memberships m ON m.person_id = s.person_id`, []any{a.AccountID}
	if req := a.RequirementOf(); req != nil {
		people := req.People
		if a.EscalatedAt != nil {
			people = append(slices.Clone(people), req.Escalation...)
		}
		q += ` JOIN persons p ON p.id = m.person_id WHERE m.account_id = ? AND p.subject IN ?`
		args = append(args, people)
	} else if a.AskedOf != "" {
		q += ` JOIN persons p ON p.id = m.person_id WHERE m.account_id = ? AND p.subject = ?`
		args = append(args, a.AskedOf)
	} else {
		q += ` WHERE m.account_id = ? AND m.role IN ?`
		args = append(args, []core.Role{core.RoleOwner, core.RoleAdmin})
	}
	var subs []PushSubscription
	// Find, not Scan: gorm's Scan renders the statement with its arguments on every call.
	err := tx.Raw(q+` ORDER BY s.person_id, s.id`, args...).Find(&subs).Error
	return subs, err
}

// QueueAsk tells, inside the ask's transaction, the people it is asked of:
// a push to each of their devices (QueueAskPushes) and a message to each of
// their channels, and to the shared channels that take every ask
// (QueueAskMessages). An ask asked again (after a question) is told again.
func (s *Queue) QueueAsk(tx *gorm.DB, a *asks.Approval) error {
	if err := s.QueueAskPushes(tx, a); err != nil {
		return err
	}
	return s.QueueAskMessages(tx, a, MessageAsk, a.Title, strconv.Itoa(a.Version), nil)
}

// QueueAskPushes writes, inside the ask's transaction, one push per device
// of every person the ask is asked of. Past a person's fatigue cap their
// devices get one collapsed push instead. The statements it runs do not grow
// with the recipients: one reads their devices, one their counts against the
// cap, one inserts every push.
func (s *Queue) QueueAskPushes(tx *gorm.DB, a *asks.Approval) error {
	subs, err := recipientDevices(tx, a)
	if err != nil {
		return fmt.Errorf("find the recipients' devices: %w", err)
	}
	return s.QueueAskPushesTo(tx, a, subs, a.Title)
}

// DevicesOfPeople reads, in one query, the push subscriptions of the
// account's members with these subjects.
func DevicesOfPeople(tx *gorm.DB, accountID string, subjects []string) ([]PushSubscription, error) {
	var subs []PushSubscription
	if len(subjects) == 0 {
		return nil, nil
	}
	err := tx.Raw(`SELECT s.* FROM push_subscriptions s JOIN memberships m ON m.person_id = s.person_id
		JOIN persons p ON p.id = m.person_id WHERE m.account_id = ? AND p.subject IN ? ORDER BY s.person_id, s.id`, accountID, subjects).Scan(&subs).Error
	if err != nil {
		return nil, fmt.Errorf("find the recipients' devices: %w", err)
	}
	return subs, nil
}

// QueueAskPushesTo queues an ask push titled title to each of subs, under
// the fatigue cap as QueueAskPushes does: reminders and escalations go
// through it too.
func (s *Queue) QueueAskPushesTo(tx *gorm.DB, a *asks.Approval, subs []PushSubscription, title string) error {
	if len(subs) == 0 {
		return nil
	}
	now := s.Now()
	capped, err := s.pastPushCap(tx, subs, now)
	if err != nil {
		return err
	}
	msg, _ := json.Marshal(PushMessage{Event: PushAsk, ApprovalID: a.ID, Title: title, URL: "/approvals/" + a.ID})
	jobs := make([]PushJob, 0, len(subs))
	for _, sub := range subs {
		job := PushJob{SubscriptionID: sub.ID, PersonID: sub.PersonID, ApprovalID: a.ID, Event: PushAsk, Body: string(msg),
			Urgency: "high", Topic: PushTopic(a.ID), CreatedAt: now, NotBefore: now, ExpiresAt: a.ExpiresAt}
		if pending, past := capped[sub.ID]; past {
			if pending {
				continue // one collapsed push is already on its way; it counts when it is sent
			}
			// It waits a little, so the asks that come in a burst are counted
			// together: past the cap, a person gets at most one push per delay.
			job.ApprovalID, job.Event, job.Body, job.Topic = "", PushCollapsed, "", "countersign-waiting"
			job.NotBefore, job.ExpiresAt = now.Add(CollapseDelay), now.Add(s.PushCap.Window)
		}
		jobs = append(jobs, job)
	}
	if len(jobs) == 0 {
		return nil
	}
	if err := tx.Table("push_jobs").Create(&jobs).Error; err != nil {
		return fmt.Errorf("queue pushes: %w", err)
	}
	return s.OutboxQueued(tx)
}

// pastPushCap finds the devices, among subs, of persons who were sent
// s.PushCap.N ask pushes or more within its window: for each, whether a
// collapsed push is already waiting for it. Two statements, the second only
// when someone is past the cap.
func (s *Queue) pastPushCap(tx *gorm.DB, subs []PushSubscription, now time.Time) (map[string]bool, error) {
	if s.PushCap.N <= 0 {
		return nil, nil
	}
	persons := make([]string, 0, len(subs))
	for _, sub := range subs {
		if !slices.Contains(persons, sub.PersonID) {
			persons = append(persons, sub.PersonID)
		}
	}
	over, err := s.overCap(tx, persons, now)
	if err != nil {
		return nil, err
	}
	if len(over) == 0 {
		return nil, nil
	}
	capped := map[string]bool{}
	var ids []string
	for _, sub := range subs {
		if slices.Contains(over, sub.PersonID) {
			capped[sub.ID] = false
			ids = append(ids, sub.ID)
		}
	}
	var waiting []string
	if err := tx.Table("push_jobs").Distinct("subscription_id").
		Where("subscription_id IN ? AND event = ? AND done_at IS NULL", ids, PushCollapsed).Pluck("subscription_id", &waiting).Error; err != nil {
		return nil, fmt.Errorf("find waiting collapsed pushes: %w", err)
	}
	for _, id := range waiting {
		capped[id] = true
	}
	return capped, nil
}

// overCap finds, among persons, those told of s.PushCap.N asks or more
// within its window, every channel counted together: a push to any of their
// devices and a message to any of their channels tell them of an ask once.
func (s *Queue) overCap(tx *gorm.DB, persons []string, now time.Time) ([]string, error) {
	since := now.Add(-s.PushCap.Window)
	var over []string
	err := tx.Raw(`SELECT person_id FROM (
		SELECT person_id, approval_id FROM push_jobs WHERE person_id IN ? AND event = ? AND created_at > ?
		UNION SELECT person_id, approval_id FROM channel_messages WHERE person_id IN ? AND event = ? AND created_at > ?
	) told GROUP BY person_id HAVING COUNT(DISTINCT approval_id) >= ?`,
		persons, PushAsk, since, persons, MessageAsk, since, s.PushCap.N).Pluck("person_id", &over).Error
	if err != nil {
		return nil, fmt.Errorf("count what people were told against the cap: %w", err)
	}
	return over, nil
}

// PushesOnMove is the outbox's MoveListener: an ask answered back to pending
// is pushed again, and an ask that closed replaces its push on every device.
func (s *Queue) PushesOnMove(tx *gorm.DB, a *asks.Approval, from asks.Status, ev asks.Event) error {
	switch {
	case ev == asks.EventAnswered:
		return s.QueueAsk(tx, a) // back to pending: the person is asked again
	case from.Open() && !a.Status.Open():
		if err := s.queueDecidedPushes(tx, a); err != nil {
			return err
		}
		return s.queueDecidedMessages(tx, a)
	}
	return nil
}

// queueDecidedPushes replaces, on every device that was told of the ask, its
// notification with one that says it was decided.
func (s *Queue) queueDecidedPushes(tx *gorm.DB, a *asks.Approval) error {
	var subs []struct{ SubscriptionID, PersonID string }
	if err := tx.Table("push_jobs").Select("DISTINCT subscription_id, person_id").
		Where("approval_id = ? AND event = ?", a.ID, PushAsk).Find(&subs).Error; err != nil {
		return err
	}
	if len(subs) == 0 {
		return nil
	}
	now := s.Now()
	msg, _ := json.Marshal(PushMessage{Event: PushDecided, ApprovalID: a.ID, Title: a.Title, Status: string(a.Status), URL: "/approvals/" + a.ID})
	for _, sub := range subs {
		// An ask push still waiting is pointless now.
		if err := tx.Table("push_jobs").Where("subscription_id = ? AND approval_id = ? AND done_at IS NULL", sub.SubscriptionID, a.ID).
			Updates(map[string]any{"done_at": now, "outcome": "superseded"}).Error; err != nil {
			return err
		}
		job := PushJob{SubscriptionID: sub.SubscriptionID, PersonID: sub.PersonID, ApprovalID: a.ID, Event: PushDecided, Body: string(msg),
			Urgency: "normal", Topic: PushTopic(a.ID), CreatedAt: now, NotBefore: now, ExpiresAt: now.Add(24 * time.Hour)}
		if err := tx.Table("push_jobs").Create(&job).Error; err != nil {
			return fmt.Errorf("queue push: %w", err)
		}
	}
	return s.OutboxQueued(tx)
}

// PushTopic is the Topic header of an ask's pushes, so a later push for the
// same ask replaces an undelivered one at the push service (at most 32
// URL-safe characters).
func PushTopic(approvalID string) string {
	t := strings.ReplaceAll(approvalID, "_", "-")
	if len(t) > 32 {
		t = t[:32]
	}
	return t
}

// QueueTestPush queues a test push to every device of the person.
func (s *Queue) QueueTestPush(ctx context.Context, personID string) (int, error) {
	subs, err := s.PushSubscriptions(ctx, personID)
	if err != nil {
		return 0, err
	}
	if len(subs) == 0 {
		return 0, core.Refuse(core.FailedPrecondition, "push", "turn notifications on first")
	}
	now := s.Now()
	msg, _ := json.Marshal(PushMessage{Event: PushTest, Title: "Countersign test: notifications work", URL: "/devices"})
	err = s.Write(ctx, func(tx *gorm.DB) error {
		for _, sub := range subs {
			job := PushJob{SubscriptionID: sub.ID, PersonID: personID, Event: PushTest, Body: string(msg), Urgency: "high",
				Topic: "countersign-test", CreatedAt: now, NotBefore: now, ExpiresAt: now.Add(time.Hour)}
			if err := tx.Table("push_jobs").Create(&job).Error; err != nil {
				return err
			}
		}
		return s.OutboxQueued(tx)
	})
	if err != nil {
		return 0, fmt.Errorf("queue test push: %w", err)
	}
	return len(subs), nil
}

// ClaimPushJobs leases up to n due jobs for sending. A lease that runs out
// (the sender died) makes the job due again, so a crash loses no push.
func (s *Queue) ClaimPushJobs(ctx context.Context, n int, lease time.Duration) ([]PushTarget, error) {
	var out []PushTarget
	err := s.claim(ctx, "push_jobs", n, lease, func(tx *gorm.DB, seqs []int64) error {
		return tx.Raw(`SELECT j.*, s.endpoint, s.p256dh, s.auth FROM push_jobs j JOIN push_subscriptions s ON s.id = j.subscription_id
			WHERE j.seq IN ? ORDER BY j.seq`, seqs).Scan(&out).Error
	})
	if err != nil {
		return nil, fmt.Errorf("claim pushes: %w", err)
	}
	return out, nil
}

// claimed is the job while this sender still holds it: not finished, and
// its attempts still the claim's. A sender whose lease ran out, and whose
// job another sender claimed since, finds no row and writes nothing over
// the other's.
func claimed(tx *gorm.DB, j *PushTarget) *gorm.DB {
	return tx.Table("push_jobs").Where("seq = ? AND done_at IS NULL AND attempts = ?", j.Seq, j.Attempts)
}

// finishPush writes set on the job this sender holds and, when it held it,
// then runs after (the subscription's own record); a claim it no longer
// holds changes nothing.
func (s *Queue) finishPush(ctx context.Context, j *PushTarget, set map[string]any, after func(tx *gorm.DB) error) error {
	return s.Write(ctx, func(tx *gorm.DB) error {
		res := claimed(tx, j).Updates(set)
		if res.Error != nil || res.RowsAffected == 0 || after == nil {
			return res.Error
		}
		return after(tx)
	})
}

// PushDelivered records that the push service took the push.
func (s *Queue) PushDelivered(ctx context.Context, j *PushTarget) error {
	now := s.Now()
	return s.finishPush(ctx, j, map[string]any{"done_at": now, "outcome": "delivered", "leased_until": nil}, func(tx *gorm.DB) error {
		return tx.Table("push_subscriptions").Where("id = ?", j.SubscriptionID).Updates(map[string]any{"last_success_at": now, "failures": 0}).Error
	})
}

// PushGone drops a subscription the push service says no longer exists
// (404 or 410), with its queued pushes.
func (s *Queue) PushGone(ctx context.Context, j *PushTarget) error {
	return s.finishPush(ctx, j, map[string]any{"done_at": s.Now(), "outcome": "gone", "leased_until": nil}, func(tx *gorm.DB) error {
		return deleteSubscriptions(tx, []string{j.SubscriptionID})
	})
}

// PushRetry schedules another try at notBefore, or gives the push up when
// that is past its expiry (the ask's life).
func (s *Queue) PushRetry(ctx context.Context, j *PushTarget, notBefore time.Time, reason string) error {
	set := map[string]any{"not_before": notBefore, "leased_until": nil, "last_error": truncate(reason, 500)}
	if !notBefore.Before(j.ExpiresAt) {
		set["done_at"], set["outcome"] = s.Now(), "expired"
	}
	return s.finishPush(ctx, j, set, func(tx *gorm.DB) error {
		return tx.Table("push_subscriptions").Where("id = ?", j.SubscriptionID).Update("failures", gorm.Expr("failures + 1")).Error
	})
}

// PushFailed gives a push up for good (a refusal that no retry can mend).
func (s *Queue) PushFailed(ctx context.Context, j *PushTarget, reason string) error {
	return s.finishPush(ctx, j, map[string]any{"done_at": s.Now(), "outcome": "failed", "leased_until": nil, "last_error": truncate(reason, 500)}, nil)
}

// WaitingFor counts the open asks a person could answer in an account of theirs.
func (s *Queue) WaitingFor(ctx context.Context, personID string) (int, error) {
	var n int64
	err := s.DB().WithContext(ctx).Raw(`SELECT count(*) FROM approvals a JOIN memberships m ON m.account_id = a.account_id
		JOIN persons p ON p.id = m.person_id
		WHERE m.person_id = ? AND a.`+asks.OpenAsks+` AND (a.asked_of = p.subject OR (a.asked_of = '' AND m.role IN ?))`,
		personID, []core.Role{core.RoleOwner, core.RoleAdmin}).Scan(&n).Error
	return int(n), err
}

// NextPushDue says when the earliest queued push is due, or zero when none is.
func (s *Queue) NextPushDue(ctx context.Context) (time.Time, error) {
	var next []time.Time
	err := s.DB().WithContext(ctx).Table("push_jobs").Where("done_at IS NULL").Order("not_before").Limit(1).Pluck("not_before", &next).Error
	if err != nil || len(next) == 0 {
		return time.Time{}, err
	}
	return next[0], nil
}

// Setting reads a value kept in the database, or "" when there is none.
func (s *Queue) Setting(ctx context.Context, name string) (string, error) {
	var v []string
	if err := s.DB().WithContext(ctx).Table("settings").Where("name = ?", name).Pluck("value", &v).Error; err != nil {
		return "", fmt.Errorf("read setting %s: %w", name, err)
	}
	if len(v) == 0 {
		return "", nil
	}
	return v[0], nil
}

// SettingOnce stores value under name unless a value is there already, and
// returns the value that is kept: instances starting together agree on one.
func (s *Queue) SettingOnce(ctx context.Context, name, value string) (string, error) {
	err := s.Write(ctx, func(tx *gorm.DB) error {
		return tx.Exec(`INSERT INTO settings (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING`, name, value).Error
	})
	if err != nil {
		return "", fmt.Errorf("store setting %s: %w", name, err)
	}
	return s.Setting(ctx, name)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
