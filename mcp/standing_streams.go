package mcp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// An agent that waits for a person holds its session's standing stream: the
// GET /mcp whose response stays open for the notices the server sends on its
// own (notifications/resources/updated above all). Served by net/http, each
// such stream keeps its connection's goroutine, parked deep in the handler
// chain with the stack it grew there, the connection's 4 KB read and 4 KB
// write buffers, the response's 2 KB buffer and a goroutine watching for the
// client to leave: some 30 KB per waiting agent (docs/perf.md has the profile).
//
// standingStreams takes such a request off net/http once it arrives over
// HTTP/1.x, authenticated and on a session this instance holds: it hijacks
// the connection, and serves the rest of the request (the SDK's part) from a
// goroutine of its own, which starts with a small stack, with only the
// headers the SDK reads, writing the response straight to the connection in
// chunks. A second goroutine reads the
// connection, so that the request's context ends when the client leaves, as
// net/http's would. Over HTTP/2 a connection cannot be hijacked, and the
// request is served as any other.
type standingStreams struct {
	mu     sync.Mutex
	open   map[*standingWriter]struct{}
	closed bool
}

// standingWriteTimeout bounds one write to a standing stream: a client that
// does not read its notices for that long is cut off, as a stuck
// connection would be, rather than holding the writer.
const standingWriteTimeout = 30 * time.Second

func newStandingStreams() *standingStreams {
	return &standingStreams{open: map[*standingWriter]struct{}{}}
}

// isStanding says whether r may open a session's standing stream: a GET on
// a session over HTTP/1.x.
func isStanding(r *http.Request) bool {
	return r.Method == http.MethodGet && r.ProtoMajor == 1 && r.Header.Get("Mcp-Session-Id") != ""
}

// standingHeaders are what the SDK reads of a standing stream's request;
// the rest of its headers (the bearer token among them) are let go.
var standingHeaders = []string{"Accept", "Mcp-Session-Id", "Mcp-Protocol-Version", "Last-Event-Id"}

// serve runs next for r: a standing stream of a session held here (its
// request's end handed over by openSessions.limit) on its hijacked
// connection, from a goroutine of its own; any other request as it is.
func (ss *standingStreams) serve(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isStanding(r) || r.Context().Value(handoffKey{}) == nil {
			next.ServeHTTP(w, r)
			return
		}
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			next.ServeHTTP(w, r)
			return
		}
		if rw.Reader.Buffered() > 0 {
			// The client sent more after the GET on this connection (no
			// client does while a stream is open): answer it no further.
			conn.Close()
			return
		}
		ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
		sw := &standingWriter{conn: conn, header: w.Header().Clone(), proto: r.Proto, cancel: cancel}
		if !ss.add(sw) {
			cancel()
			conn.Close()
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
		go sw.watch()
		go func() {
			defer finish()
			defer ss.remove(sw)
			defer cancel()
			next.ServeHTTP(sw, slim)
			sw.finish()
		}()
	})
}

func (ss *standingStreams) add(sw *standingWriter) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.closed {
		return false
	}
	ss.open[sw] = struct{}{}
	return true
}

func (ss *standingStreams) remove(sw *standingWriter) {
	ss.mu.Lock()
	delete(ss.open, sw)
	ss.mu.Unlock()
	sw.conn.Close()
}

// Len is how many standing streams are served off net/http now.
func (ss *standingStreams) Len() int {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return len(ss.open)
}

// close ends every standing stream, and refuses new ones: net/http's
// Shutdown does not see hijacked connections.
func (ss *standingStreams) close() {
	ss.mu.Lock()
	ss.closed = true
	open := make([]*standingWriter, 0, len(ss.open))
	for sw := range ss.open {
		open = append(open, sw)
	}
	ss.mu.Unlock()
	for _, sw := range open {
		sw.cancel()
	}
}

// standingWriter is the http.ResponseWriter of a standing stream on a
// hijacked HTTP/1.x connection: the status line and headers at the first
// write, then each write as one chunk of a chunked body, sent at once.
type standingWriter struct {
	conn   net.Conn
	header http.Header
	proto  string
	cancel context.CancelFunc

	mu          sync.Mutex
	wroteHeader bool
	err         error
}

// watch ends the request's context when the client closes the connection
// (or sends anything: a client sends nothing while it reads a stream).
func (sw *standingWriter) watch() {
	var b [1]byte
	_, _ = sw.conn.Read(b[:])
	sw.cancel()
}

func (sw *standingWriter) Header() http.Header { return sw.header }

func (sw *standingWriter) WriteHeader(status int) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	sw.writeHeaderLocked(status)
}

func (sw *standingWriter) writeHeaderLocked(status int) {
	if sw.wroteHeader {
		return
	}
	sw.wroteHeader = true
	text := http.StatusText(status)
	if text == "" {
		text = "status code " + strconv.Itoa(status)
	}
	proto := sw.proto
	if proto != "HTTP/1.0" {
		proto = "HTTP/1.1"
	}
	b := fmt.Appendf(nil, "%s %03d %s\r\n", proto, status, text)
	sw.header.Del("Content-Length")
	sw.header.Set("Transfer-Encoding", "chunked")
	sw.header.Set("Connection", "close")
	if sw.header.Get("Date") == "" {
		sw.header.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	}
	if sw.header.Get("Content-Type") == "" {
		sw.header.Set("Content-Type", "text/plain; charset=utf-8")
	}
	var hb headerBuffer
	_ = sw.header.Write(&hb)
	b = append(b, hb...)
	b = append(b, "\r\n"...)
	sw.send(b)
}

func (sw *standingWriter) Write(p []byte) (int, error) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	sw.writeHeaderLocked(http.StatusOK)
	if len(p) == 0 {
		return 0, sw.err
	}
	b := make([]byte, 0, len(p)+16)
	b = strconv.AppendInt(b, int64(len(p)), 16)
	b = append(b, "\r\n"...)
	b = append(b, p...)
	b = append(b, "\r\n"...)
	sw.send(b)
	if sw.err != nil {
		return 0, sw.err
	}
	return len(p), nil
}

// FlushError sends the header when nothing else has been: every write is
// sent at once.
func (sw *standingWriter) FlushError() error {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	sw.writeHeaderLocked(http.StatusOK)
	return sw.err
}

// finish ends the chunked body.
func (sw *standingWriter) finish() {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	sw.writeHeaderLocked(http.StatusOK)
	sw.send([]byte("0\r\n\r\n"))
}

// send writes b to the connection; after a failure nothing more is sent and
// the request's context ends.
func (sw *standingWriter) send(b []byte) {
	if sw.err != nil {
		return
	}
	_ = sw.conn.SetWriteDeadline(time.Now().Add(standingWriteTimeout))
	if _, err := sw.conn.Write(b); err != nil {
		sw.err = errors.Join(errStreamGone, err)
		sw.cancel()
	}
}

var errStreamGone = errors.New("the standing stream's client is gone")

// headerBuffer collects http.Header.Write.
type headerBuffer []byte

func (h *headerBuffer) Write(p []byte) (int, error) {
	*h = append(*h, p...)
	return len(p), nil
}
