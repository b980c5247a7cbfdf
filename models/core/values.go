package core

import (
	"encoding/json"
	"unicode/utf8"
)

// Page sizes of approvals_list.
const (
	DefaultPageSize = 50
	MaxPageSize     = 200
)

// PageSize reads a list's page_size: 0 means DefaultPageSize, at most MaxPageSize.
func PageSize(n int) (int, error) {
	switch {
	case n == 0:
		return DefaultPageSize, nil
	case n < 0 || n > MaxPageSize:
		return 0, Invalid("page_size", "must be 0 (for %d) to %d, not %d", DefaultPageSize, MaxPageSize, n)
	}
	return n, nil
}

func RuneCount(s string) int { return utf8.RuneCountInString(s) }

func NullableJSON(b []byte) *string {
	if len(b) == 0 {
		return nil
	}
	s := string(b)
	return &s
}

func JSONText(v any) *string {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return NullableJSON(b)
}
