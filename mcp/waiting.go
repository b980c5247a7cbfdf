package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/standing"
)

// An agent waiting for a person holds a stream open: its session's GET
// stream (2025-11-25 and before), or the response of a 2026-07-28
// subscriptions/listen. Either is taken off net/http (package standing)
// and no goroutine serves it while it waits: when a resource it subscribed
// to changes, the notice is written to its connection by whoever tells of
// the change (ApprovalChanged, RunsChanged, from the change feed), and the
// Set's one goroutine writes the heartbeat and notices a client that left.

// standingHeartbeat is how often a quiet standing stream gets a comment
// line: it finds clients that left, and keeps proxies (nginx's 60 s
// proxy_read_timeout) from closing a stream that waits.
const standingHeartbeat = 25 * time.Second

// noticeWriteTimeout bounds a notice's write to one stream: a client that
// does not take a few hundred bytes in that time has stopped reading, and
// its stream ends rather than hold up the notices of others.
const noticeWriteTimeout = 2 * time.Second

// stream is where a waiting session's notices go.
type stream struct {
	mu    sync.Mutex
	w     io.Writer // nil until the stream is open, and once it ended
	stop  func()    // ends it; its owner then detaches it
	ended bool
}

// open makes w the stream's writer, and stop how it ends; false when the
// stream was ended before it opened (its session dropped meanwhile).
func (st *stream) open(w io.Writer, stop func()) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.ended {
		return false
	}
	st.w, st.stop = w, stop
	return true
}

// end ends the stream; ending it twice is harmless.
func (st *stream) end() {
	st.mu.Lock()
	st.ended, st.w = true, nil
	stop := st.stop
	st.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// send writes one SSE event to the stream; a failed write ends it.
func (st *stream) send(event []byte) {
	st.mu.Lock()
	var err error
	switch w := st.w.(type) {
	case nil:
	case *standing.Writer:
		err = w.WriteWithin(event, noticeWriteTimeout)
	default:
		_, err = w.Write(event)
	}
	st.mu.Unlock()
	if err != nil {
		st.end()
	}
}

// serveStream serves the GET stream of sess, whose request is open until
// the stream ends.
func (s *Server) serveStream(w http.ResponseWriter, r *http.Request, sess *openSession) {
	ended := func() { s.sessions.end(sess) }
	if !strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		ended()
		refuse(w, r, http.StatusBadRequest, "Accept must contain 'text/event-stream' for GET requests")
		return
	}
	if r.Header.Get("Last-Event-Id") != "" {
		ended()
		refuse(w, r, http.StatusBadRequest, "stream replay unsupported: notices are not kept; open the stream without Last-Event-ID and read the resources again")
		return
	}
	st := &stream{}
	if err := s.sessions.attach(sess, st); err != nil {
		ended()
		if errors.Is(err, errStreamOpen) {
			refuse(w, r, http.StatusConflict, "Conflict: "+err.Error())
			return
		}
		refuse(w, r, http.StatusNotFound, "session not found")
		return
	}
	// The SDK's own first line, which makes proxies pass the headers on.
	s.hold(w, r, st, []byte(": ok\n\n"), func() {
		s.sessions.detach(sess, st)
		ended()
	})
}

// serveListen serves a 2026-07-28 subscriptions/listen, admitted as sess:
// the resources it names are subscribed to for as long as its response is
// open. Each is checked as resources/subscribe checks it; one the caller
// may not read refuses the whole listen.
func (s *Server) serveListen(w http.ResponseWriter, r *http.Request, sess *openSession, head rpcHead) {
	var msg struct {
		Params *sdk.SubscriptionsListenParams `json:"params"`
	}
	body, _ := io.ReadAll(r.Body)
	fail := func(err error) {
		s.sessions.drop(sess)
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) {
			s.log.Error("subscriptions/listen failed", "err", err)
			rpcErr = &jsonrpc.Error{Code: codeInternalError, Message: "INTERNAL: subscriptions/listen failed inside Countersign; nothing you sent was wrong, try again shortly"}
		}
		writeRPCErrorData(w, http.StatusOK, head.id(), int(rpcErr.Code), rpcErr.Message, rpcErr.Data)
	}
	if err := json.Unmarshal(body, &msg); err != nil || msg.Params == nil || msg.Params.Notifications == nil || len(head.ID) == 0 {
		fail(&jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "subscriptions/listen needs an id and params.notifications"})
		return
	}
	agent, runner := principalOf(r.Context())
	if runner == nil {
		if err := resourcesDenied(agent); err != nil {
			fail(err)
			return
		}
	}
	want := msg.Params.Notifications
	sess.listen = head.ID
	// What the server has: tools and resources whose lists never change
	// while it runs, and resources one may subscribe to.
	agreed := sdk.NotificationSubscriptions{ToolsListChanged: want.ToolsListChanged, ResourcesListChanged: want.ResourcesListChanged}
	for _, uri := range want.ResourceSubscriptions {
		if err := s.mayWatch(r.Context(), agent, runner, uri); err != nil {
			fail(err)
			return
		}
		if err := s.sessions.watch(sess, uri); err != nil {
			fail(&jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()})
			return
		}
		agreed.ResourceSubscriptions = append(agreed.ResourceSubscriptions, uri)
	}
	meta := sdk.Meta{sdk.MetaKeySubscriptionID: head.ID}
	ack := sseEvent(&jsonrpc.Request{Method: "notifications/subscriptions/acknowledged"}, &sdk.SubscriptionsAcknowledgedParams{Meta: meta, Notifications: agreed})
	if len(agreed.ResourceSubscriptions) == 0 && !agreed.ToolsListChanged && !agreed.ResourcesListChanged {
		// Nothing to wait for: the SDK answers at once.
		s.sessions.drop(sess)
		eventStream(w)
		_, _ = w.Write(ack)
		_, _ = w.Write(sseEvent(&jsonrpc.Response{ID: mustID(head.ID)}, &sdk.SubscriptionsListenResult{Meta: meta}))
		return
	}
	st := &stream{}
	if err := s.sessions.attach(sess, st); err != nil {
		fail(err)
		return
	}
	s.hold(w, r, st, ack, func() { s.sessions.drop(sess) })
}

// hold keeps r's response open as st, sends first, and calls ended once
// the stream has ended: its client gone, a write failed, its session
// dropped, or the instance shutting down. Over HTTP/1.x the connection is
// taken off net/http and hold returns at once; over HTTP/2, net/http holds
// it and hold returns when it ends.
func (s *Server) hold(w http.ResponseWriter, r *http.Request, st *stream, first []byte, ended func()) {
	eventStream(w)
	sw, ctx, err := s.standing.Take(w, r, context.Background())
	switch {
	case err == nil:
		context.AfterFunc(ctx, func() {
			sw.Close()
			ended()
		})
		if st.open(sw, sw.Close) {
			st.send(first)
		} else {
			sw.Close()
		}
		return
	case errors.Is(err, standing.ErrClosed):
		ended()
		writeRPCError(w, http.StatusServiceUnavailable, nil, codeInvalidRequest, "this instance is shutting down; open the stream again")
		return
	case errors.Is(err, standing.ErrRefused):
		ended()
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	if st.open(flushWriter{w}, cancel) {
		w.WriteHeader(http.StatusOK)
		st.send(first)
		<-ctx.Done()
		st.end()
	}
	ended()
}

// eventStream sets the headers of an event stream, as the SDK's own.
func eventStream(w http.ResponseWriter) {
	w.Header().Set("Cache-Control", "no-cache, no-transform")
	w.Header().Set("Content-Type", "text/event-stream")
}

// flushWriter sends each write at once, for a stream net/http holds.
type flushWriter struct{ w http.ResponseWriter }

func (f flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if err == nil {
		err = http.NewResponseController(f.w).Flush()
	}
	return n, err
}

// tell sends notifications/resources/updated of uri to every stream
// waiting on it, on this instance. The writes run on a goroutine of their
// own: the change feed, which calls tell, never waits on a client.
func (s *Server) tell(uri string) {
	waiting := s.sessions.watching(uri)
	if len(waiting) == 0 {
		return
	}
	go deliver(uri, waiting)
}

func deliver(uri string, waiting []notice) {
	var plain []byte // the same for every session's GET stream
	for _, n := range waiting {
		if n.listen == nil {
			if plain == nil {
				plain = sseEvent(&jsonrpc.Request{Method: "notifications/resources/updated"}, &sdk.ResourceUpdatedNotificationParams{URI: uri})
			}
			n.stream.send(plain)
			continue
		}
		n.stream.send(sseEvent(&jsonrpc.Request{Method: "notifications/resources/updated"},
			&sdk.ResourceUpdatedNotificationParams{URI: uri, Meta: sdk.Meta{sdk.MetaKeySubscriptionID: n.listen}}))
	}
}

// sseEvent is msg with params (or, for a response, result) as the SSE
// event the SDK writes: "event: message" and the JSON-RPC message.
func sseEvent(msg jsonrpc.Message, params any) []byte {
	raw, err := json.Marshal(params)
	if err != nil {
		panic("encode an MCP notice: " + err.Error()) // our own types: cannot fail
	}
	switch m := msg.(type) {
	case *jsonrpc.Request:
		m.Params = raw
	case *jsonrpc.Response:
		m.Result = raw
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		panic("encode an MCP notice: " + err.Error())
	}
	b := make([]byte, 0, len(data)+24)
	b = append(b, "event: message\ndata: "...)
	b = append(b, data...)
	return append(b, "\n\n"...)
}

// mustID reads a request id already read as JSON.
func mustID(raw json.RawMessage) jsonrpc.ID {
	var v any
	_ = json.Unmarshal(raw, &v)
	id, _ := jsonrpc.MakeID(v)
	return id
}
