package ask

import (
	"errors"
	"fmt"
)

// Code is a stable refusal code shared by the MCP tools and the web pages.
type Code string

// The refusal codes a caller can act on.
const (
	InvalidArgument    Code = "INVALID_ARGUMENT"
	NotFound           Code = "NOT_FOUND"
	PermissionDenied   Code = "PERMISSION_DENIED"
	FailedPrecondition Code = "FAILED_PRECONDITION"
	ResourceExhausted  Code = "RESOURCE_EXHAUSTED"
)

// Refusal is the error the whole service refuses a call with: a code, the
// field it is about (empty when it is about the whole call) and a message
// that says the rule, so a caller can fix its call. It is declared here, the
// lowest package of the house, because validating an ask is where most
// refusals start; models re-exports it as models.Error.
type Refusal struct {
	Code  Code
	Field string
	Msg   string
}

func (e *Refusal) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%s: %s", e.Code, e.Msg)
	}
	return fmt.Sprintf("%s: %s: %s", e.Code, e.Field, e.Msg)
}

// Is makes errors.Is match any *Refusal with the same code.
func (e *Refusal) Is(target error) bool {
	t, ok := target.(*Refusal)
	return ok && t.Field == "" && t.Msg == "" && t.Code == e.Code
}

// Sentinels for errors.Is(err, ask.ErrInvalidArgument) and friends.
var (
	ErrInvalidArgument    = &Refusal{Code: InvalidArgument}
	ErrNotFound           = &Refusal{Code: NotFound}
	ErrPermissionDenied   = &Refusal{Code: PermissionDenied}
	ErrFailedPrecondition = &Refusal{Code: FailedPrecondition}
	ErrResourceExhausted  = &Refusal{Code: ResourceExhausted}
)

// Invalid returns an INVALID_ARGUMENT refusal about field.
func Invalid(field, format string, args ...any) *Refusal {
	return &Refusal{Code: InvalidArgument, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Refuse returns a refusal with the given code about field.
func Refuse(code Code, field, format string, args ...any) *Refusal {
	return &Refusal{Code: code, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// CodeOf returns the refusal code of err, or "" when err is not a refusal.
func CodeOf(err error) Code {
	var e *Refusal
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// FieldOf returns the field a refusal is about, or "".
func FieldOf(err error) string {
	var e *Refusal
	if errors.As(err, &e) {
		return e.Field
	}
	return ""
}
