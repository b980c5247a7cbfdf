package models

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

// Error is a refusal: a code, the field it is about (empty when it is about the
// whole call) and a message that says the rule, so a caller can fix its call.
type Error struct {
	Code  Code
	Field string
	Msg   string
}

func (e *Error) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%s: %s", e.Code, e.Msg)
	}
	return fmt.Sprintf("%s: %s: %s", e.Code, e.Field, e.Msg)
}

// Is makes errors.Is match any *Error with the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Field == "" && t.Msg == "" && t.Code == e.Code
}

// Sentinels for errors.Is(err, models.ErrNotFound) and friends.
var (
	ErrInvalidArgument    = &Error{Code: InvalidArgument}
	ErrNotFound           = &Error{Code: NotFound}
	ErrPermissionDenied   = &Error{Code: PermissionDenied}
	ErrFailedPrecondition = &Error{Code: FailedPrecondition}
	ErrResourceExhausted  = &Error{Code: ResourceExhausted}
)

// Invalid returns an INVALID_ARGUMENT refusal about field.
func Invalid(field, format string, args ...any) *Error {
	return &Error{Code: InvalidArgument, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Refuse returns a refusal with the given code about field.
func Refuse(code Code, field, format string, args ...any) *Error {
	return &Error{Code: code, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// CodeOf returns the refusal code of err, or "" when err is not a refusal.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// FieldOf returns the field a refusal is about, or "".
func FieldOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Field
	}
	return ""
}
