package core

import (
	"github.com/countersign/countersign/ask"
)

// The error model is package ask's refusal, under the names the rest of the
// house uses: one type, so errors.Is, errors.As and CodeOf agree whether a
// refusal came from validating an ask or from the store.
type (
	// Code is a stable refusal code shared by the MCP tools and the web pages.
	Code = ask.Code
	// Error is a refusal: a code, the field it is about (empty when it is
	// about the whole call) and a message that says the rule.
	Error = ask.Refusal
)

// The refusal codes a caller can act on.
const (
	InvalidArgument    = ask.InvalidArgument
	NotFound           = ask.NotFound
	PermissionDenied   = ask.PermissionDenied
	FailedPrecondition = ask.FailedPrecondition
	ResourceExhausted  = ask.ResourceExhausted
)

// Sentinels for errors.Is(err, models.ErrNotFound) and friends.
var (
	ErrInvalidArgument    = ask.ErrInvalidArgument
	ErrNotFound           = ask.ErrNotFound
	ErrPermissionDenied   = ask.ErrPermissionDenied
	ErrFailedPrecondition = ask.ErrFailedPrecondition
	ErrResourceExhausted  = ask.ErrResourceExhausted
)

// Invalid returns an INVALID_ARGUMENT refusal about field.
func Invalid(field, format string, args ...any) *Error {
	return ask.Invalid(field, format, args...)
}

// Refuse returns a refusal with the given code about field.
func Refuse(code Code, field, format string, args ...any) *Error {
	return ask.Refuse(code, field, format, args...)
}

// CodeOf returns the refusal code of err, or "" when err is not a refusal.
func CodeOf(err error) Code { return ask.CodeOf(err) }

// FieldOf returns the field a refusal is about, or "".
func FieldOf(err error) string { return ask.FieldOf(err) }
