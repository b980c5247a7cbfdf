package gate

import (
	"bytes"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
)

// tokenRefusal passes requests to next and keeps the reason the service
// gave the last time it refused the token (401 or 403): the
// error_description of its WWW-Authenticate challenge, else the first line
// of its body. The SDK's error says only the status ("Unauthorized"), which
// does not tell a bad token from a disabled agent.
type tokenRefusal struct {
	next http.RoundTripper

	mu     sync.Mutex
	reason string
}

// errorDescription is the error_description parameter of a Bearer challenge (RFC 6750).
var errorDescription = regexp.MustCompile(`error_description="((?:[^"\\]|\\.)*)"`)

func (t *tokenRefusal) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := t.next.RoundTrip(r)
	if err != nil || (res.StatusCode != http.StatusUnauthorized && res.StatusCode != http.StatusForbidden) {
		return res, err
	}
	reason := ""
	if m := errorDescription.FindStringSubmatch(res.Header.Get("WWW-Authenticate")); m != nil {
		reason = strings.ReplaceAll(m[1], `\"`, `"`)
	} else {
		// The start of the body, given back whole to the caller.
		head, _ := io.ReadAll(io.LimitReader(res.Body, 512))
		res.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(head), res.Body), res.Body}
		reason, _, _ = strings.Cut(strings.TrimSpace(string(head)), "\n")
	}
	t.mu.Lock()
	t.reason = reason
	t.mu.Unlock()
	return res, nil
}

// last is the reason of the last refusal, or "".
func (t *tokenRefusal) last() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.reason
}
