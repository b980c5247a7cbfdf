// Package standing serves long-lived event streams (an MCP session's GET
// stream, an ask page's live timeline) off net/http, so that a client that
// only waits costs little.
//
// Served by net/http, a waiting stream keeps its connection's goroutine,
// parked deep in the handler chain with the stack it grew there, the
// connection's 4 KB read and 4 KB write buffers, the response's 2 KB buffer,
// and a second goroutine that watches for the client to leave: some 30 KB
// a stream (docs/perf.md has the profile). Take hijacks the connection of
// an HTTP/1.x request instead, and the stream is served from a goroutine of
// the caller's, which starts small, writing each write straight to the
// connection as one chunk of a chunked body. No goroutine reads the
// connection: one goroutine of the Set, every CheckEvery (or half the
// heartbeat interval, when that is shorter), peeks at each connection
// without waiting (ending the stream of a client that closed it, so what
// it held, a session's slot under a cap above all, is free within seconds) and writes a comment line to every stream quiet for the
// interval; a write that fails ends the stream too. The heartbeat also keeps
// proxies from closing a quiet stream.
//
// A connection that cannot be hijacked (HTTP/2) is served by net/http as
// any other: Take says so and the caller goes on with the ResponseWriter.
package standing

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

// CheckEvery is how often the Set looks for streams whose client left: a
// non-blocking peek per connection, some microseconds each.
const CheckEvery = 2 * time.Second

// WriteTimeout bounds one write to a stream: a client that does not read
// for that long is cut off rather than holding the writer.
const WriteTimeout = 30 * time.Second

// ErrNotHijackable is returned by Take for a request whose connection cannot
// be taken (HTTP/2, or a ResponseWriter that cannot hijack).
var ErrNotHijackable = errors.New("the connection cannot be taken off net/http")

// ErrClosed is returned by Take once the Set is closed; nothing was taken.
var ErrClosed = errors.New("the server is shutting down")

// ErrRefused is returned by Take when the client sent more bytes behind its
// request, which no client of a stream does: the connection was taken and
// closed, and nothing more can be said on it.
var ErrRefused = errors.New("the client sent more after its request")

// errGone ends a stream whose client stopped reading or left.
var errGone = errors.New("the stream's client is gone")

// Set is the streams taken off net/http by one service, with their
// heartbeat. Its zero value is not usable: make one with NewSet.
type Set struct {
	every     time.Duration
	heartbeat []byte // the chunk written to a quiet stream

	mu      sync.Mutex
	open    map[*Writer]struct{}
	closed  bool
	beating bool
}

// NewSet makes a Set whose quiet streams get comment (an SSE comment line,
// such as ": alive\n\n") every interval.
func NewSet(every time.Duration, comment string) *Set {
	return &Set{every: every, heartbeat: chunk([]byte(comment)), open: map[*Writer]struct{}{}}
}

// Len is how many streams are open.
func (s *Set) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.open)
}

// Take hijacks r's connection for a stream and returns its writer, with a
// context made from parent (which must not end with r: context.Background,
// or context.WithoutCancel of r's when the stream needs its values) that
// ends when the stream does: its client
// gone, a write failed, Close or the Set's Close. header is sent at the
// first write with the status. The caller serves the stream from a
// goroutine of its own and calls Close when it ends; its handler returns at
// once. With ErrNotHijackable or ErrClosed nothing was taken and the caller
// answers through w; with ErrRefused the connection is closed.
func (s *Set) Take(w http.ResponseWriter, r *http.Request, parent context.Context) (*Writer, context.Context, error) {
	if r.ProtoMajor != 1 {
		return nil, nil, ErrNotHijackable
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return nil, nil, ErrClosed
	}
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrNotHijackable, err)
	}
	if rw.Reader.Buffered() > 0 {
		// No client sends more on a connection whose stream it reads.
		conn.Close()
		return nil, nil, ErrRefused
	}
	ctx, cancel := context.WithCancel(parent)
	sw := &Writer{set: s, conn: conn, header: w.Header().Clone(), http10: r.ProtoMinor == 0, cancel: cancel, last: time.Now()}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		cancel()
		conn.Close()
		return nil, nil, ErrRefused
	}
	s.open[sw] = struct{}{}
	if !s.beating {
		s.beating = true
		go s.beat()
	}
	s.mu.Unlock()
	return sw, ctx, nil
}

// beat ends the streams whose client left and writes the heartbeat to
// every quiet stream, until the Set is closed. One goroutine serves every
// stream.
func (s *Set) beat() {
	t := time.NewTicker(min(s.every/2, CheckEvery))
	defer t.Stop()
	var quiet []*Writer
	for range t.C {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return
		}
		quiet = quiet[:0]
		for sw := range s.open {
			quiet = append(quiet, sw)
		}
		s.mu.Unlock()
		now := time.Now()
		for _, sw := range quiet {
			if gone(sw.conn) {
				sw.cancel()
				continue
			}
			sw.beat(now, s.every, s.heartbeat)
		}
		clear(quiet)
	}
}

// Close ends every stream and refuses new ones: net/http's Shutdown neither
// waits for nor closes hijacked connections.
func (s *Set) Close() {
	s.mu.Lock()
	s.closed = true
	open := make([]*Writer, 0, len(s.open))
	for sw := range s.open {
		open = append(open, sw)
	}
	s.mu.Unlock()
	for _, sw := range open {
		sw.cancel()
	}
}

// Writer is the http.ResponseWriter of a stream on a hijacked HTTP/1.x
// connection: the status line and headers at the first write, then each
// write as one chunk, sent at once.
type Writer struct {
	set    *Set
	conn   net.Conn
	header http.Header
	http10 bool
	cancel context.CancelFunc

	mu          sync.Mutex
	wroteHeader bool
	last        time.Time // of the last write
	err         error
	closed      bool
}

// Header is the header sent with the status.
func (sw *Writer) Header() http.Header { return sw.header }

// WriteHeader sends the status line and the header.
func (sw *Writer) WriteHeader(status int) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	sw.writeHeaderLocked(status)
}

func (sw *Writer) writeHeaderLocked(status int) {
	if sw.wroteHeader {
		return
	}
	sw.wroteHeader = true
	text := http.StatusText(status)
	if text == "" {
		text = "status code " + strconv.Itoa(status)
	}
	proto := "HTTP/1.1"
	if sw.http10 {
		proto = "HTTP/1.0"
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
	var hb appender
	_ = sw.header.Write(&hb)
	b = append(b, hb...)
	b = append(b, "\r\n"...)
	sw.send(b)
	sw.header = http.Header{} // sent: what is set from now on goes nowhere, and the sent one need not be kept
}

// Write sends p as one chunk.
func (sw *Writer) Write(p []byte) (int, error) {
	if err := sw.WriteWithin(p, WriteTimeout); err != nil || len(p) == 0 {
		return 0, err
	}
	return len(p), nil
}

// WriteWithin sends p as one chunk, failing (and ending the stream) when
// the client does not take it within d: for a notice that must not wait
// on one slow client.
func (sw *Writer) WriteWithin(p []byte, d time.Duration) error {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	sw.writeHeaderLocked(http.StatusOK)
	if len(p) == 0 {
		return sw.err
	}
	sw.sendWithin(chunk(p), d)
	return sw.err
}

// FlushError sends the header if nothing else has been: every write is sent at once.
func (sw *Writer) FlushError() error {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	sw.writeHeaderLocked(http.StatusOK)
	return sw.err
}

// Close ends the chunked body, closes the connection and leaves the Set.
func (sw *Writer) Close() {
	sw.mu.Lock()
	if !sw.closed {
		sw.writeHeaderLocked(http.StatusOK)
		sw.send([]byte("0\r\n\r\n"))
		sw.closed = true
	}
	sw.mu.Unlock()
	sw.cancel()
	sw.set.mu.Lock()
	delete(sw.set.open, sw)
	sw.set.mu.Unlock()
	sw.conn.Close()
}

// beat writes the heartbeat when the stream has been quiet for every.
func (sw *Writer) beat(now time.Time, every time.Duration, heartbeat []byte) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sw.closed || !sw.wroteHeader || now.Sub(sw.last) < every {
		return
	}
	sw.send(heartbeat)
}

// send writes b to the connection; after a failure nothing more is sent and
// the stream's context ends.
func (sw *Writer) send(b []byte) { sw.sendWithin(b, WriteTimeout) }

func (sw *Writer) sendWithin(b []byte, d time.Duration) {
	if sw.err != nil {
		return
	}
	sw.last = time.Now()
	_ = sw.conn.SetWriteDeadline(sw.last.Add(d))
	if _, err := sw.conn.Write(b); err != nil {
		sw.err = errors.Join(errGone, err)
		sw.cancel()
	}
}

// chunk frames p as one chunk of a chunked body.
func chunk(p []byte) []byte {
	b := make([]byte, 0, len(p)+16)
	b = strconv.AppendInt(b, int64(len(p)), 16)
	b = append(b, "\r\n"...)
	b = append(b, p...)
	return append(b, "\r\n"...)
}

// appender collects http.Header.Write.
type appender []byte

func (a *appender) Write(p []byte) (int, error) {
	*a = append(*a, p...)
	return len(p), nil
}
