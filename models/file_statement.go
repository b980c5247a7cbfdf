package models

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/outbox"
)

// fileInOneStatement files a new ask on PostgreSQL in one statement, one
// round trip and one implicit transaction: the approval, its created event,
// its pushes (the recipients' devices and the fatigue cap read in the same
// statement, as QueueAskPushes reads them) and the NOTIFY that wakes the
// other instances' senders. A transaction at READ COMMITTED made five round
// trips for the same reads and writes, which see one snapshot here.
//
// It files nothing and answers false when a policy of the account looks on
// (its auto-approve policy or a window, not revoked and not expired): then
// the ask goes through fileTx, which locks the policy and decides; likewise
// when a person of the account chose a channel besides Web Push, or a shared
// channel takes every ask (fileTx queues the messages). With checkRules it also files nothing when the account keeps
// an approval rule of its own in force (a row of approval_rules not removed),
// and then says so (ownRules): the caller has made sure that no built-in
// rule covers the ask, so with no such row no rule does. It handles neither
// supersedes nor auto_approve asks (file sends those to fileTx).
func (s *Store) fileInOneStatement(ctx context.Context, a *asks.Approval, checkRules bool) (filed, ownRules bool, err error) {
	now := s.Now()
	ev := asks.TimelineEvent{
		AccountID: a.AccountID, ApprovalID: a.ID, At: a.CreatedAt, ActorKind: asks.ActorAgent, Actor: a.RequesterSubject,
		Step: "created", ToStatus: asks.StatusPending,
	}
	approvalShape, err := s.approvalShape()
	if err != nil {
		return false, false, err
	}
	eventShape, err := s.eventShape()
	if err != nil {
		return false, false, err
	}
	// The statement is written with PostgreSQL's own placeholders and run on
	// the connection pool, not through gorm's Raw and Scan, which rewrite
	// and re-render the statement on every call.
	var args []any
	arg := func(v any, cast string) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args)) + "::" + cast
	}
	approvalVals := approvalShape.Values(a, arg)
	var guards []string
	if a.PolicyMayCover() { // a policy could approve it: see policy.AutoApprove
		guards = append(guards, `NOT EXISTS (SELECT 1 FROM policies WHERE account_id = `+arg(a.AccountID, "text")+`
		AND revoked_at IS NULL AND expires_at > `+arg(now, "timestamptz")+`)`)
	}
	// People who chose channels besides Web Push, and shared channels that
	// take every ask, are told through fileTx (QueueAsk).
	guards = append(guards, `NOT EXISTS (SELECT 1 FROM person_channels WHERE account_id = `+arg(a.AccountID, "text")+`)`,
		`NOT EXISTS (SELECT 1 FROM shared_channels WHERE account_id = `+arg(a.AccountID, "text")+` AND every_ask)`)
	rules := "FALSE"
	if checkRules {
		rules = `EXISTS (SELECT 1 FROM approval_rules WHERE account_id = ` + arg(a.AccountID, "text") + ` AND NOT removed)`
		guards = append(guards, "NOT "+rules)
	}
	guard := ""
	if len(guards) > 0 {
		guard = " WHERE " + strings.Join(guards, " AND ")
	}
	eventVals := eventShape.Values(&ev, arg)
	recipients := `m.account_id = ` + arg(a.AccountID, "text")
	if a.AskedOf != "" {
		recipients += ` AND m.person_id IN (SELECT id FROM persons WHERE subject = ` + arg(a.AskedOf, "text") + `)`
	} else {
		recipients += ` AND m.role IN ('` + string(core.RoleOwner) + `', '` + string(core.RoleAdmin) + `')`
	}
	capN := arg(s.PushCap.N, "integer")
	msg, _ := json.Marshal(outbox.PushMessage{Event: outbox.PushAsk, ApprovalID: a.ID, Title: a.Title, URL: "/approvals/" + a.ID})
	note, err := json.Marshal(core.Notification{Instance: s.Changes().Instance, Change: core.Change{Kind: core.OutboxQueued}})
	if err != nil {
		return false, false, fmt.Errorf("notify change: %w", err)
	}
	// Each device gets an ask push or, past its person's cap, a collapsed
	// one, unless one already waits (see outbox.QueueAskPushes and pastPushCap).
	query := `WITH a AS (
	INSERT INTO approvals (` + approvalShape.Columns + `) SELECT ` + approvalVals + guard + `
	RETURNING seq
), e AS (
	INSERT INTO events (` + eventShape.Columns + `) SELECT ` + eventVals + ` FROM a
	RETURNING seq
), subs AS (
	SELECT s.id, s.person_id FROM push_subscriptions s JOIN memberships m ON m.person_id = s.person_id
	WHERE EXISTS (SELECT 1 FROM a) AND ` + recipients + `
), over AS (
	SELECT person_id FROM push_jobs
	WHERE ` + capN + ` > 0 AND person_id IN (SELECT person_id FROM subs) AND event = '` + outbox.PushAsk + `' AND created_at > ` + arg(now.Add(-s.PushCap.Window), "timestamptz") + `
	GROUP BY person_id HAVING COUNT(DISTINCT approval_id) >= ` + capN + `
), waiting AS (
	SELECT DISTINCT subscription_id FROM push_jobs
	WHERE subscription_id IN (SELECT id FROM subs WHERE person_id IN (SELECT person_id FROM over)) AND event = '` + outbox.PushCollapsed + `' AND done_at IS NULL
), j AS (
	INSERT INTO push_jobs (subscription_id, person_id, approval_id, event, body, urgency, topic, created_at, not_before, expires_at)
	SELECT subs.id, subs.person_id,
		CASE WHEN over.person_id IS NULL THEN ` + arg(a.ID, "text") + ` ELSE '' END,
		CASE WHEN over.person_id IS NULL THEN '` + outbox.PushAsk + `' ELSE '` + outbox.PushCollapsed + `' END,
		CASE WHEN over.person_id IS NULL THEN ` + arg(string(msg), "text") + ` ELSE '' END,
		'high',
		CASE WHEN over.person_id IS NULL THEN ` + arg(outbox.PushTopic(a.ID), "text") + ` ELSE 'countersign-waiting' END,
		` + arg(now, "timestamptz") + `,
		CASE WHEN over.person_id IS NULL THEN ` + arg(now, "timestamptz") + ` ELSE ` + arg(now.Add(outbox.CollapseDelay), "timestamptz") + ` END,
		CASE WHEN over.person_id IS NULL THEN ` + arg(a.ExpiresAt, "timestamptz") + ` ELSE ` + arg(now.Add(s.PushCap.Window), "timestamptz") + ` END
	FROM subs LEFT JOIN over ON over.person_id = subs.person_id
	WHERE over.person_id IS NULL OR subs.id NOT IN (SELECT subscription_id FROM waiting)
	ORDER BY subs.person_id, subs.id
	RETURNING seq
)
SELECT (SELECT seq FROM a), (SELECT seq FROM e), (SELECT count(*) FROM j),
	(SELECT count(*) FROM (SELECT pg_notify(` + arg(core.ChangeChannel, "text") + `, ` + arg(string(note), "text") + `) FROM (SELECT 1 FROM j LIMIT 1) one) n),
	` + rules
	var (
		approvalSeq, eventSeq sql.NullInt64
		pushes, notified      int64
	)
	err = s.DB().Statement.ConnPool.QueryRowContext(ctx, query, args...).Scan(&approvalSeq, &eventSeq, &pushes, &notified, &ownRules)
	if err != nil {
		return false, false, fmt.Errorf("file ask: %w", err)
	}
	if !approvalSeq.Valid || !eventSeq.Valid {
		return false, ownRules, nil // a rule may cover it, or a policy looks on
	}
	a.Seq, ev.Seq = approvalSeq.Int64, eventSeq.Int64
	a.NoteWritten(ev)
	if pushes > 0 {
		s.Changes().Publish([]core.Change{{Kind: core.OutboxQueued}})
	}
	return true, false, nil
}
