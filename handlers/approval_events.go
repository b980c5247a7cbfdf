package handlers

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models"
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
// ?after=), as they land. It reads the timeline when the store's change feed
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
	defer done()
	// Subscribe before the first read, so that no change falls between them.
	changed, ended := make(chan struct{}, 1), make(chan struct{}, 1)
	cancel := h.store.Changes().Subscribe(func(ch models.Change) {
		switch {
		case ch.Kind == models.ApprovalChanged && ch.ApprovalID == a.ID && ch.AccountID == a.AccountID,
			ch.Kind == models.ChangesMissed:
			signal(changed)
		case ch.EndsSession(v.token, v.member.ID, v.account.ID):
			signal(ended)
		}
	})
	defer cancel()

	res := c.Response()
	res.Header().Set(echo.HeaderContentType, "text/event-stream")
	res.Header().Set("Cache-Control", "no-store")
	res.Header().Set("X-Accel-Buffering", "no")
	res.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(res)
	write := func(s string) error {
		if _, err := res.Write([]byte(s)); err != nil {
			return err
		}
		return rc.Flush()
	}
	if err := write("retry: 3000\n\n"); err != nil {
		return nil
	}
	beat := time.NewTicker(eventsHeartbeat)
	defer beat.Stop()
	end := time.NewTimer(eventsLife)
	defer end.Stop()
	for {
		events, err := h.store.TimelineAfter(ctx, v.account.ID, a.ID, after)
		if err != nil {
			if ctx.Err() == nil {
				h.log.Error("live timeline", "approval", a.ID, "err", err)
			}
			return nil
		}
		for _, e := range events {
			data, err := json.Marshal(timelineData{Seq: e.Seq, At: e.At.UTC(), Actor: e.Actor, By: e.ActorKind, Step: e.Step,
				From: string(e.FromStatus), To: string(e.ToStatus), Note: e.Note, Signed: e.RunnerSignature() != nil})
			if err != nil {
				h.log.Error("live timeline", "approval", a.ID, "err", err)
				return nil
			}
			if err := write(fmt.Sprintf("id: %d\nevent: timeline\ndata: %s\n\n", e.Seq, data)); err != nil {
				return nil
			}
			after = e.Seq
		}
		if len(events) == models.MaxPageSize {
			continue // more than one page landed: read on before waiting
		}
	waiting:
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-end.C:
				return nil
			case <-ended:
				return nil
			case <-stream.ended:
				return nil
			case <-beat.C:
				if err := write(": alive\n\n"); err != nil {
					return nil
				}
			case <-changed:
				break waiting
			}
		}
	}
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
			return 0, models.Invalid("after", "must be the seq of a timeline event, not %q", s)
		}
		after = max(after, n)
	}
	return after, nil
}
