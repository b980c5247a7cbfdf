// Package bearer sends an agent's or a runner's bearer token with every
// request of an HTTP client: how Countersign's own MCP clients (the gate's
// sink, the runner, the load command and the tests) present their tokens.
// It depends on the standard library alone, so the gate package, which other
// servers import, may use it.
package bearer

import "net/http"

// Transport sets Authorization: Bearer Token on every request and sends it
// through Base (http.DefaultTransport when nil).
type Transport struct {
	Token string
	Base  http.RoundTripper
}

// RoundTrip sends a copy of r with the token.
func (t Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+t.Token)
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	return base.RoundTrip(r)
}
