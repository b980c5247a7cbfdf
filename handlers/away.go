package handlers

import (
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models/core"
)

// awayForm is the devices page's away form: until when, and to whom the
// person's asks go meanwhile.
type awayForm struct {
	Until    string `form:"until"`    // datetime-local (read as UTC) or RFC 3339
	Delegate string `form:"delegate"` // a member's subject
}

// untilTime reads the form's time: the browser's datetime-local value,
// which the form labels as UTC, or an RFC 3339 time.
func (f awayForm) untilTime() (time.Time, error) {
	v := strings.TrimSpace(f.Until)
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02T15:04:05", time.RFC3339} {
		if t, err := time.ParseInLocation(layout, v, time.UTC); err == nil {
			return t, nil
		}
	}
	return time.Time{}, core.Invalid("until", "give the time you are away until as a date and time, like 2026-12-24T18:00 (UTC), not %q", v)
}

// AwaySet marks the signed-in person away until a time, their asks going
// to a delegate meanwhile (models.Store.SetAway says whom it accepts).
func (h *Handlers) AwaySet(c echo.Context) error {
	var f awayForm
	if err := c.Bind(&f); err != nil {
		return h.devicesPage(c, http.StatusBadRequest, "The away form did not read; try again.")
	}
	until, err := f.untilTime()
	if err == nil {
		_, err = h.store.SetAway(c.Request().Context(), viewerOf(c).member, until, strings.TrimSpace(f.Delegate))
	}
	if msg, status, ok := refusalOf(err); ok {
		return h.devicesPage(c, status, msg)
	}
	if err != nil {
		return err
	}
	return h.redirectWithFlash(c, "/devices", "away-set")
}

// AwayEnd brings the signed-in person back: their asks come to them again.
func (h *Handlers) AwayEnd(c echo.Context) error {
	if err := h.store.ComeBack(c.Request().Context(), viewerOf(c).member); err != nil {
		return err
	}
	return h.redirectWithFlash(c, "/devices", "away-ended")
}
