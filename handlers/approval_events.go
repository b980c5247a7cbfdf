package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/standing"
)

// The live timeline: how often an idle stream says it is alive, and how long
// one stream lasts before the browser reconnects with Last-Event-ID.
const (
	eventsHeartbeat = 15 * time.Second
	eventsLife      = 10 * time.Minute
)

// timelineData is one timeline event as the page script reads it.
type timelineData struct {
	Seq   int64     `json:"seq"`
	At    time.Time `json:"at"`
	Actor string    `json:"actor"`
	By    string    `json:"by"`
	Step  string    `json:"step"`
	From  string    `json:"from"`
	To    string    `json:"to"`
	Note  string    `json:"note"`
	// Signed: a runner's report that carries its signature.
	Signed bool `json:"signed,omitempty"`
}

// ApprovalEvents streams, as Server-Sent Events, the timeline events of one
// ask of the viewer's account with a seq greater than Last-Event-ID (or
// ?after=), as they land, off net/http when the connection allows (package
// standing). It reads the timeline when the store's change feed
// says the ask changed, and only then: an idle stream costs no query. The
// stream ends the moment the viewer's sessions in the account end, and when
// a newer stream of the same web session takes its place (see
// liveTimelinesPerSession).
func (h *Handlers) ApprovalEvents(c echo.Context) error {
	ctx := c.Request().Context()
	v := viewerOf(c)
	a, err := h.store.GetApproval(ctx, v.account.ID, c.Param("id"))
	if err != nil {
		return err
	}
	after, err := resumeAfter(c)
	if err != nil {
		return err
	}
	stream, done := h.live.open(v.token)
	// Subscribe before the first read, so that no change falls between them.
	// The closure keeps the ids alone, not the ask or the viewer: it lives
	// as long as the stream.
	changed, ended := make(chan struct{}, 1), make(chan struct{}, 1)
	approvalID, accountID, token, memberID := a.ID, a.AccountID, v.token, v.member.ID
	cancel := h.store.Changes().Subscribe(func(ch core.Change) {
		switch {
		case ch.Kind == core.ApprovalChanged && ch.ApprovalID == approvalID && ch.AccountID == accountID,
			ch.Kind == core.ChangesMissed:
			signal(changed)
		case ch.EndsSession(token, memberID, accountID):
			signal(ended)
		}
	})
	t := timeline{h: h, accountID: accountID, approvalID: approvalID, after: after, changed: changed, ended: ended, replaced: stream.ended}
	res := c.Response()
	res.Header().Set(echo.HeaderContentType, "text/event-stream")
	res.Header().Set("Cache-Control", "no-store")
	res.Header().Set("X-Accel-Buffering", "no")
	// Off net/http when the connection allows: the stream then costs a
	// goroutine of its own and no buffers while it waits (package standing).
	sw, ctx, err := h.streams.Take(res, c.Request(), context.Background())
	if err == nil {
		go func() {
			defer done()
			defer cancel()
			defer sw.Close()
			t.serve(ctx, sw, nil)
		}()
		return nil
	}
	defer done()
	defer cancel()
	if errors.Is(err, standing.ErrRefused) {
		return nil
	}
	if errors.Is(err, standing.ErrClosed) {
		return echo.NewHTTPError(http.StatusServiceUnavailable, "shutting down")
	}
	beat := time.NewTicker(eventsHeartbeat)
	defer beat.Stop()
	t.serve(c.Request().Context(), res, beat.C)
	return nil
}

// timeline is one live timeline being served.
type timeline struct {
	h                     *Handlers
	accountID, approvalID string
	after                 int64
	changed, ended        <-chan struct{}
	replaced              <-chan struct{}
}

// serve writes the timeline's events to w as they land, until ctx ends, the
// stream's life is over, the viewer's session ends or a newer stream of the
// session takes its place. beat says when to write a heartbeat; nil when w
// gets one from its standing.Set.
func (t *timeline) serve(ctx context.Context, w http.ResponseWriter, beat <-chan time.Time) {
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	write := func(s string) error {
		if _, err := io.WriteString(w, s); err != nil {
			return err
		}
		return rc.Flush()
	}
	if err := write("retry: 3000\n\n"); err != nil {
		return
	}
	end := time.NewTimer(eventsLife)
	defer end.Stop()
	for {
		n, err := t.send(ctx, write)
		if err != nil {
			return
		}
		if n == core.MaxPageSize {
			continue // more than one page landed: read on before waiting
		}
	waiting:
		for {
			select {
			case <-ctx.Done():
				return
			case <-end.C:
				return
			case <-t.ended:
				return
			case <-t.replaced:
				return
			case <-beat:
				if err := write(": alive\n\n"); err != nil {
					return
				}
			case <-t.changed:
				break waiting
			}
		}
	}
}

// send writes the events that landed since the last one sent, and says how
// many. It is a function of its own so that the deep stack of the read
// and the writes is not the stack a waiting stream parks on: the runtime
// gives back the stack a parked goroutine does not use (docs/perf.md §9).
func (t *timeline) send(ctx context.Context, write func(string) error) (int, error) {
	events, err := t.h.store.TimelineAfter(ctx, t.accountID, t.approvalID, t.after)
	if err != nil {
		if ctx.Err() == nil {
			t.h.log.Error("live timeline", "approval", t.approvalID, "err", err)
		}
		return 0, err
	}
	for _, e := range events {
		data, err := json.Marshal(timelineData{Seq: e.Seq, At: e.At.UTC(), Actor: e.Actor, By: e.ActorKind, Step: e.Step,
			From: string(e.FromStatus), To: string(e.ToStatus), Note: e.Note, Signed: e.RunnerSignature() != nil})
		if err != nil {
			t.h.log.Error("live timeline", "approval", t.approvalID, "err", err)
			return 0, err
		}
		if err := write(fmt.Sprintf("id: %d\nevent: timeline\ndata: %s\n\n", e.Seq, data)); err != nil {
			return 0, err
		}
		t.after = e.Seq
	}
	return len(events), nil
}

// signal wakes whoever waits on ch, once, without blocking.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// resumeAfter is the seq a stream resumes after: the browser's Last-Event-ID
// when it reconnects, else ?after=, else 0 for the whole timeline.
func resumeAfter(c echo.Context) (int64, error) {
	var after int64
	for _, s := range []string{c.Request().Header.Get("Last-Event-ID"), c.QueryParam("after")} {
		if s == "" {
			continue
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return 0, core.Invalid("after", "must be the seq of a timeline event, not %q", s)
		}
		after = max(after, n)
	}
	return after, nil
}
