package mcp

import (
	"container/list"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// An MCP session costs this instance some 30 KB of memory until it ends
// (its agent waiting on its GET stream: docs/perf.md, section 8), and one
// initialize call makes one. openSessions bounds them per token (an
// agent's or a runner's), per instance, and in idle time.
//
// A session is idle while it has no request open: no POST in flight and no
// GET stream open. An agent waiting on its ask holds the session's GET stream,
// where the notice of its subscribed resource arrives; such a session is
// never idle, however long the person takes, because closing it would lose
// that notice without a word. A subscription alone does not keep a session
// busy: with no stream open, a notice has nowhere to go (the SDK drops it;
// there is no event store), so that agent is not listening. Idle is counted
// from the end of the session's last request; "the session idle the
// longest" is the one whose last request ended first. An idle session ends after the idle life. A new
// session past a cap first closes the session of that token (or, for the
// instance cap, of any token) that has been idle the longest; when none is
// idle, initialize is refused with 429 and Retry-After, naming the cap.
type openSessions struct {
	limits SessionLimits
	mu     sync.Mutex
	byID   map[string]*openSession
	owners map[string]*sessionOwner // by agent or runner id
	total  int                      // sessions held or being opened
	idle   list.List                // of *openSession, idle longest first
	expiry *time.Timer              // for the front of idle; nil until first needed
	armed  bool                     // expiry will fire
}

// SessionLimits bound the MCP sessions of an instance.
type SessionLimits struct {
	PerToken int           // COUNTERSIGN_MCP_SESSIONS_PER_TOKEN
	Total    int           // COUNTERSIGN_MCP_SESSIONS
	Idle     time.Duration // COUNTERSIGN_MCP_SESSION_IDLE
}

// The limits' defaults.
const (
	DefaultSessionsPerToken = 100
	DefaultSessions         = 20000
	DefaultSessionIdle      = 10 * time.Minute
)

// sessionRetryAfter is the Retry-After of a refused initialize: a slot frees
// the moment one of the busy sessions finishes its call or drops its stream.
const sessionRetryAfter = 5 * time.Second

// sessionOwner is one token's sessions.
type sessionOwner struct {
	count int       // sessions held or being opened
	idle  list.List // of *openSession, idle longest first
}

// openSession is one MCP session as the limits see it.
type openSession struct {
	owner     string
	of        *sessionOwner
	session   *sdk.ServerSession // nil until initialize reaches the server
	id        string
	open      int // requests open: POSTs in flight and GET streams
	idleSince time.Time
	inIdle    *list.Element // in openSessions.idle, while idle
	inOwner   *list.Element // in of.idle, while idle
	closed    bool
}

// sessionCapError is a refused initialize: which cap, and its value.
type sessionCapError struct {
	setting string
	limit   int
	whose   string
}

func newOpenSessions(l SessionLimits) *openSessions {
	if l.PerToken <= 0 {
		l.PerToken = DefaultSessionsPerToken
	}
	if l.Total <= 0 {
		l.Total = DefaultSessions
	}
	if l.Idle <= 0 {
		l.Idle = DefaultSessionIdle
	}
	return &openSessions{limits: l, byID: map[string]*openSession{}, owners: map[string]*sessionOwner{}}
}

// Len is how many sessions are held or being opened.
func (r *openSessions) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.total
}

// openingKey carries an initialize call's openSession through the SDK to
// bind: the SDK keeps the initialize request's context values for every
// handler of the session it makes.
type openingKey struct{}

// limit applies the limits to every request on /mcp of an authenticated
// token: an initialize (a POST without Mcp-Session-Id) and a 2026-07-28
// subscriptions/listen are admitted or refused, and every request on a
// session keeps it busy while it is open.
func (r *openSessions) limit(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		owner := ""
		if info := auth.TokenInfoFromContext(req.Context()); info != nil {
			owner = info.UserID
		}
		if id := req.Header.Get("Mcp-Session-Id"); id != "" {
			s := r.begin(id, owner)
			deleting := req.Method == http.MethodDelete
			finish := func() { // holds no request: it may outlive its handler
				if deleting {
					r.drop(s) // the SDK closed it
				} else {
					r.end(s)
				}
			}
			if s == nil || req.Method != http.MethodGet {
				defer finish()
				next.ServeHTTP(w, req)
				return
			}
			// A GET on a session this instance holds may go on after
			// this handler returns (standingStreams): whoever takes it
			// on ends it.
			h := &handoff{finish: finish}
			next.ServeHTTP(w, req.WithContext(context.WithValue(req.Context(), handoffKey{}, h)))
			if !h.taken {
				finish()
			}
			return
		}
		if req.Method != http.MethodPost {
			next.ServeHTTP(w, req)
			return
		}
		head, err := readRPCHead(req)
		listen := newProtocol(req) && head.Method == methodListen
		if err != nil || (head.Method != "initialize" && !listen) || (newProtocol(req) && !listen) {
			next.ServeHTTP(w, req) // rpcErrors answers it, or it is a 2026-07-28 request that holds nothing
			return
		}
		s, victims, refused := r.admit(owner)
		closeSessions(victims)
		if refused != nil {
			w.Header().Set("Retry-After", strconv.Itoa(int(sessionRetryAfter.Seconds())))
			writeRPCErrorData(w, http.StatusTooManyRequests, head.id(), codeSessionCap, refused.Error(),
				map[string]any{"setting": refused.setting, "limit": refused.limit, "retryAfterSeconds": int(sessionRetryAfter.Seconds())})
			return
		}
		if listen {
			// A 2026-07-28 subscriptions/listen is what a session with its
			// GET stream is in the revisions before: it costs the instance
			// while it is open, so it counts as a busy session under the
			// same caps, and gives its slot back when it ends.
			defer r.drop(s)
			next.ServeHTTP(w, req)
			return
		}
		defer r.settle(s)
		next.ServeHTTP(w, req.WithContext(context.WithValue(req.Context(), openingKey{}, s)))
	})
}

// handoff is how a request on a session goes on after its handler returns:
// takeHandoff hands the one who serves it on the function that marks the
// request ended, and the handler no longer calls it.
type handoff struct {
	finish func()
	taken  bool
}

type handoffKey struct{}

// takeHandoff takes over the end of the request of ctx; nil when it cannot
// go on after its handler returns (not a request on a session held here).
func takeHandoff(ctx context.Context) func() {
	h, ok := ctx.Value(handoffKey{}).(*handoff)
	if !ok || h.taken {
		return nil
	}
	h.taken = true
	return h.finish
}

func (e *sessionCapError) Error() string {
	return fmt.Sprintf("RESOURCE_EXHAUSTED: %s %d open MCP sessions, the most allowed (%s=%d), and none is idle: each has a call in flight or a GET stream open. "+
		"End a session you no longer need (DELETE /mcp with its Mcp-Session-Id), or retry in %d s",
		e.whose, e.limit, e.setting, e.limit, int(sessionRetryAfter.Seconds()))
}

// bindOnInitialize ties the session the SDK made for an initialize call to
// its openSession, before the answer carries the session's id to the client.
func (r *openSessions) bindOnInitialize(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if method == "initialize" {
			s, ok := ctx.Value(openingKey{}).(*openSession)
			ss, isServer := req.GetSession().(*sdk.ServerSession)
			if ok && isServer {
				r.bind(s, ss)
			}
		}
		return next(ctx, method, req)
	}
}

// admit takes a slot for a new session of owner, closing first the owner's
// session idle the longest when the owner is at its cap, or the instance's
// when the instance is; it refuses when the cap is reached and no session
// under it is idle. The victims are to be closed by the caller, unlocked.
func (r *openSessions) admit(owner string) (*openSession, []*sdk.ServerSession, *sessionCapError) {
	r.mu.Lock()
	defer r.mu.Unlock()
	o := r.owners[owner]
	if o == nil {
		o = &sessionOwner{}
	}
	var victims []*sdk.ServerSession
	if o.count >= r.limits.PerToken {
		front := o.idle.Front()
		if front == nil {
			return nil, nil, &sessionCapError{setting: "COUNTERSIGN_MCP_SESSIONS_PER_TOKEN", limit: r.limits.PerToken, whose: "this token holds"}
		}
		victims = append(victims, r.dropLocked(front.Value.(*openSession)))
	}
	if r.total >= r.limits.Total {
		front := r.idle.Front()
		if front == nil {
			return nil, victims, &sessionCapError{setting: "COUNTERSIGN_MCP_SESSIONS", limit: r.limits.Total, whose: "this instance holds"}
		}
		victims = append(victims, r.dropLocked(front.Value.(*openSession)))
	}
	o.count++
	r.total++
	r.owners[owner] = o
	return &openSession{owner: owner, of: o, open: 1}, victims, nil
}

// bind records the SDK's session of an admitted initialize.
func (r *openSessions) bind(s *openSession, ss *sdk.ServerSession) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s.closed || s.session != nil {
		return
	}
	s.session, s.id = ss, ss.ID()
	r.byID[s.id] = s
}

// settle ends an admitted initialize: the session is held from now on, or,
// when the call made none (the SDK closes a session whose initialize
// failed), its slot is given back.
func (r *openSessions) settle(s *openSession) {
	r.mu.Lock()
	ss := s.session
	r.mu.Unlock()
	if ss == nil || ss.InitializeParams() == nil {
		r.drop(s)
		return
	}
	r.end(s)
}

// begin marks a request open on the session id of owner, and returns it;
// nil when this instance holds no such session of owner (the SDK answers).
func (r *openSessions) begin(id, owner string) *openSession {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.byID[id]
	if s == nil || s.owner != owner {
		return nil
	}
	if s.open == 0 {
		r.idle.Remove(s.inIdle)
		s.of.idle.Remove(s.inOwner)
		s.inIdle, s.inOwner = nil, nil
	}
	s.open++
	return s
}

// end marks a request of s closed; with none left open, s turns idle.
func (r *openSessions) end(s *openSession) {
	if s == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if s.closed {
		return
	}
	if s.open--; s.open > 0 {
		return
	}
	s.idleSince = time.Now()
	s.inIdle, s.inOwner = r.idle.PushBack(s), s.of.idle.PushBack(s)
	if !r.armed {
		r.armLocked(r.limits.Idle)
	}
}

// drop forgets s, whose session the SDK closed or never made.
func (r *openSessions) drop(s *openSession) {
	if s == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dropLocked(s)
}

// dropLocked forgets s and returns its SDK session, for the caller to close.
func (r *openSessions) dropLocked(s *openSession) *sdk.ServerSession {
	if s.closed {
		return nil
	}
	s.closed = true
	if s.inIdle != nil {
		r.idle.Remove(s.inIdle)
		s.of.idle.Remove(s.inOwner)
		s.inIdle, s.inOwner = nil, nil
	}
	if s.id != "" {
		delete(r.byID, s.id)
	}
	r.total--
	if s.of.count--; s.of.count == 0 {
		delete(r.owners, s.owner)
	}
	return s.session
}

func (r *openSessions) armLocked(d time.Duration) {
	r.armed = true
	if r.expiry == nil {
		r.expiry = time.AfterFunc(d, r.expire)
		return
	}
	r.expiry.Reset(d)
}

// expire closes the sessions idle for the idle life, and sets the timer
// for the next one. The idle list is in the order sessions turned idle, so
// its front is always the next to expire.
func (r *openSessions) expire() {
	var victims []*sdk.ServerSession
	r.mu.Lock()
	r.armed = false
	now := time.Now()
	for front := r.idle.Front(); front != nil; front = r.idle.Front() {
		s := front.Value.(*openSession)
		if left := r.limits.Idle - now.Sub(s.idleSince); left > 0 {
			r.armLocked(left)
			break
		}
		victims = append(victims, r.dropLocked(s))
	}
	r.mu.Unlock()
	closeSessions(victims)
}

// closeSessions closes the SDK sessions given; a later request on one is
// answered 404, session not found.
func closeSessions(sessions []*sdk.ServerSession) {
	for _, ss := range sessions {
		if ss != nil {
			_ = ss.Close()
		}
	}
}
