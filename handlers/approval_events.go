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

// The live timeline: how often the store is read (a poll works across
// instances), how often an idle stream says it is alive, and how long one
// stream lasts before the browser reconnects with Last-Event-ID.
const (
	eventsPoll      = time.Second
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
}

// ApprovalEvents streams, as Server-Sent Events, the timeline events of one
// ask of the viewer's account with a seq greater than Last-Event-ID (or
// ?after=), as they land, for as long as the viewer's session lasts.
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
	poll, beat := time.NewTicker(eventsPoll), time.NewTicker(eventsHeartbeat)
	defer poll.Stop()
	defer beat.Stop()
	end := time.NewTimer(eventsLife)
	defer end.Stop()
	for {
		// A stream lives no longer than its session: signing out everywhere
		// or being removed from the account ends it within one poll.
		live, err := h.store.SessionLive(ctx, v.token)
		if err != nil || !live {
			if err != nil && ctx.Err() == nil {
				h.log.Error("live timeline: check the session", "approval", a.ID, "err", err)
			}
			return nil
		}
		events, err := h.store.TimelineAfter(ctx, v.account.ID, a.ID, after)
		if err != nil {
			if ctx.Err() == nil {
				h.log.Error("live timeline", "approval", a.ID, "err", err)
			}
			return nil
		}
		for _, e := range events {
			data, _ := json.Marshal(timelineData{Seq: e.Seq, At: e.At.UTC(), Actor: e.Actor, By: e.ActorKind, Step: e.Step,
				From: string(e.FromStatus), To: string(e.ToStatus), Note: e.Note})
			if err := write(fmt.Sprintf("id: %d\nevent: timeline\ndata: %s\n\n", e.Seq, data)); err != nil {
				return nil
			}
			after = e.Seq
		}
		select {
		case <-ctx.Done():
			return nil
		case <-end.C:
			return nil
		case <-beat.C:
			if err := write(": alive\n\n"); err != nil {
				return nil
			}
		case <-poll.C:
		}
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
