package mcp

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/countersign/countersign/standing"
)

// An agent that waits for a person holds its session's standing stream: the
// GET /mcp whose response stays open for the notices the server sends on its
// own (notifications/resources/updated above all). Once such a request is
// authenticated and found to be on a session this instance holds,
// serveStanding takes its connection off net/http (package standing) and
// serves the SDK's part of it from a goroutine of its own, with only the
// headers the SDK reads; the end of the request, for the session limits, is
// handed over by openSessions.limit.

// standingHeartbeat is how often a quiet standing stream gets a comment
// line: it finds clients that left, and keeps proxies (nginx's 60 s
// proxy_read_timeout) from closing a stream that waits.
const standingHeartbeat = 25 * time.Second

// standingHeaders are what the SDK reads of a standing stream's request;
// the rest of its headers (the bearer token among them) are let go.
var standingHeaders = []string{"Accept", "Mcp-Session-Id", "Mcp-Protocol-Version", "Last-Event-Id"}

// serveStanding runs next for r: a standing stream of a session held here
// on its hijacked connection, from a goroutine of its own; any other request
// (or one whose connection cannot be taken) as it is.
func serveStanding(streams *standing.Set, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.Header.Get("Mcp-Session-Id") == "" || r.Context().Value(handoffKey{}) == nil {
			next.ServeHTTP(w, r)
			return
		}
		sw, ctx, err := streams.Take(w, r, context.WithoutCancel(r.Context()))
		switch {
		case errors.Is(err, standing.ErrClosed):
			writeRPCError(w, http.StatusServiceUnavailable, nil, codeInvalidRequest, "this instance is shutting down; open the stream again")
			return
		case errors.Is(err, standing.ErrRefused):
			return
		case err != nil:
			next.ServeHTTP(w, r)
			return
		}
		finish := takeHandoff(r.Context())
		slim := &http.Request{Method: r.Method, URL: r.URL, Proto: r.Proto, ProtoMajor: r.ProtoMajor, ProtoMinor: r.ProtoMinor,
			Header: make(http.Header, len(standingHeaders)), Body: http.NoBody, Host: r.Host, RemoteAddr: r.RemoteAddr, RequestURI: r.RequestURI}
		for _, k := range standingHeaders {
			if v, ok := r.Header[k]; ok {
				slim.Header[k] = v
			}
		}
		slim = slim.WithContext(ctx)
		go func() {
			defer finish()
			defer sw.Close()
			next.ServeHTTP(sw, slim)
		}()
	})
}
