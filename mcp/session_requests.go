package mcp

import (
	"context"
	"crypto/rand"
	"errors"
	"net/http"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// sessionHeader names the MCP session a request of the revisions before
// 2026-07-28 is on.
const sessionHeader = "Mcp-Session-Id"

var (
	errSessionGone = errors.New("the session ended")
	errNotYours    = errors.New("the session is another token's")
	errStreamOpen  = errors.New("the session's GET stream is already open")
)

// sessionKey carries a request's openSession through the SDK to the
// subscribe handlers and to markInitialized: the SDK's session for one
// request is made with the request's context.
type sessionKey struct{}

func sessionFrom(ctx context.Context) *openSession {
	s, _ := ctx.Value(sessionKey{}).(*openSession)
	return s
}

// sessionRequests serves what a session is, for every request on /mcp of
// an authenticated token, and hands each JSON-RPC message on to the SDK
// (next: rpcErrors, then the SDK's stateless handler):
//   - an initialize (a POST without Mcp-Session-Id) is admitted under the
//     caps, or refused, and its answer carries the new session's id;
//   - a POST on a session keeps it busy while it is in flight, and the
//     SDK's handlers find the session in its context;
//   - a GET on a session is its standing stream (waiting.go), a DELETE ends it;
//   - a 2026-07-28 subscriptions/listen is admitted under the same caps and
//     served as a stream of its own (waiting.go).
func (s *Server) sessionRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		owner := ""
		if info := auth.TokenInfoFromContext(r.Context()); info != nil {
			owner = info.UserID
		}
		if id := r.Header.Get(sessionHeader); id != "" && !newProtocol(r) {
			sess, err := s.sessions.begin(id, owner)
			switch {
			case errors.Is(err, errNotYours):
				refuse(w, r, http.StatusForbidden, "Forbidden: the session was opened with another token")
				return
			case err != nil:
				refuse(w, r, http.StatusNotFound, "session not found")
				return
			}
			switch r.Method {
			case http.MethodDelete:
				s.sessions.drop(sess)
				w.WriteHeader(http.StatusNoContent)
				return
			case http.MethodGet:
				s.serveStream(w, r, sess)
				return
			}
			defer s.sessions.end(sess)
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), sessionKey{}, sess)))
			return
		}
		switch r.Method {
		case http.MethodGet, http.MethodDelete:
			if !newProtocol(r) {
				refuse(w, r, http.StatusBadRequest, "Bad Request: "+r.Method+" requires an Mcp-Session-Id header")
				return
			}
		case http.MethodPost:
			head, err := readRPCHead(r)
			listen := newProtocol(r) && head.Method == methodListen
			if err != nil || (!listen && (newProtocol(r) || head.Method != "initialize")) {
				break // a 2026-07-28 request holds nothing; rpcErrors refuses the rest
			}
			sess, refused := s.sessions.admit(owner)
			if refused != nil {
				w.Header().Set("Retry-After", strconv.Itoa(int(sessionRetryAfter.Seconds())))
				writeRPCErrorData(w, http.StatusTooManyRequests, head.id(), codeSessionCap, refused.Error(),
					map[string]any{"setting": refused.setting, "limit": refused.limit, "retryAfterSeconds": int(sessionRetryAfter.Seconds())})
				return
			}
			if listen {
				s.serveListen(w, r, sess, head)
				return
			}
			sess.id = s.newSessionID()
			w.Header().Set(sessionHeader, sess.id)
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), sessionKey{}, sess)))
			s.sessions.settle(sess)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// refuse answers r with a JSON-RPC error (rpcErrors makes one of the text,
// with the request's id).
func refuse(w http.ResponseWriter, r *http.Request, status int, text string) {
	rpcErrors(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, text, status) })).ServeHTTP(w, r)
}

// newSessionID makes a session id: with this instance's id in front when
// instances forward calls on each other's sessions (forward.go).
func (s *Server) newSessionID() string {
	if s.instanceID != "" {
		return s.instanceID + "-" + rand.Text()
	}
	return rand.Text()
}

// markInitialized holds the session an initialize opens once the SDK
// answered it without error, before the answer leaves: the client's next
// message may arrive before the initialize's handler has returned.
func (s *Server) markInitialized(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		res, err := next(ctx, method, req)
		if method == "initialize" && err == nil {
			if sess := sessionFrom(ctx); sess != nil {
				if init, ok := req.GetParams().(*sdk.InitializeParams); ok {
					s.sessions.introduce(sess, init)
				}
				s.sessions.ready(sess)
			}
		}
		return res, err
	}
}
