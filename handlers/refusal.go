package handlers

import (
	"errors"

	"github.com/countersign/countersign/models/core"
)

// refusalOf returns the message and HTTP status of a refusal, so a page can
// show it where the person acted; ok is false for any other error, which the
// error handler answers.
func refusalOf(err error) (msg string, status int, ok bool) {
	var r *core.Error
	if !errors.As(err, &r) {
		return "", 0, false
	}
	return r.Msg, statusOf[r.Code], true
}
