package mcp

import (
	"container/list"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The MCP sessions of the revisions before 2026-07-28 are held here, not
// by the go-sdk. A session is a small record: its id, its token, the
// resources it subscribed to and, while an agent waits, its standing
// stream. Each POST on it is served by the SDK's stateless handler with a
// session of the SDK's own for that request alone (session_requests.go),
// and the notices a waiting agent hears are written to its stream by
// Countersign (waiting.go). A session the SDK held cost some 30 KB while
// its agent waited (two goroutines, the initialize request kept whole:
// docs/perf.md §9); this record and its stream cost a tenth of that.
//
// openSessions bounds the sessions per token (an agent's or a runner's),
// per instance, and in idle time. A 2026-07-28 subscriptions/listen is an
// openSession too, with no id: what it costs while it waits is what a
// session with its stream costs, so it counts under the same caps.
//
// A session is idle while it has no request open: no POST in flight and no
// GET stream open. An agent waiting on its ask holds the session's GET stream,
// where the notice of its subscribed resource arrives; such a session is
// never idle, however long the person takes, because closing it would lose
// that notice without a word. A subscription alone does not keep a session
// busy: with no stream open, a notice has nowhere to go (it is dropped;
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
	// watchers are the sessions subscribed to each resource URI.
	watchers map[string]map[*openSession]struct{}
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

// maxSubscriptions bounds the resources one session subscribes to: the
// gate's sink subscribes to each ask it waits on, on one session.
const maxSubscriptions = 1000

// sessionRetryAfter is the Retry-After of a refused initialize: a slot frees
// the moment one of the busy sessions finishes its call or drops its stream.
const sessionRetryAfter = 5 * time.Second

// sessionOwner is one token's sessions.
type sessionOwner struct {
	count int       // sessions held or being opened
	idle  list.List // of *openSession, idle longest first
	// all are its sessions held or being opened, so that they end together
	// when the agent's access ends (dropOwner).
	all map[*openSession]struct{}
}

// openSession is one MCP session (or one 2026-07-28 listen).
type openSession struct {
	owner     string
	of        *sessionOwner
	id        string // "" for a listen
	held      bool   // in byID: its initialize was answered without error
	open      int    // requests open: POSTs in flight and GET streams
	idleSince time.Time
	inIdle    *list.Element // in openSessions.idle, while idle
	inOwner   *list.Element // in of.idle, while idle
	closed    bool

	client *sdk.InitializeParams // what its initialize said: revision and capabilities

	uris   []string        // the resources it is subscribed to
	stream *stream         // where its notices go; nil while no stream is open
	listen json.RawMessage // a listen's request id, which each of its notices carries
}

// sessionCapError is a refused initialize: which cap, and its value.
type sessionCapError struct {
	setting string
	limit   int
	whose   string
}

func (e *sessionCapError) Error() string {
	return fmt.Sprintf("RESOURCE_EXHAUSTED: %s %d open MCP sessions, the most allowed (%s=%d), and none is idle: each has a call in flight or a GET stream open. "+
		"End a session you no longer need (DELETE /mcp with its Mcp-Session-Id), or retry in %d s",
		e.whose, e.limit, e.setting, e.limit, int(sessionRetryAfter.Seconds()))
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
	return &openSessions{limits: l, byID: map[string]*openSession{}, owners: map[string]*sessionOwner{},
		watchers: map[string]map[*openSession]struct{}{}}
}

// Len is how many sessions are held or being opened.
func (r *openSessions) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.total
}

// admit takes a slot for a new session of owner, closing first the owner's
// session idle the longest when the owner is at its cap, or the instance's
// when the instance is; it refuses when the cap is reached and no session
// under it is idle. The new session has one request open: the one that
// opens it.
func (r *openSessions) admit(owner string) (*openSession, *sessionCapError) {
	r.mu.Lock()
	defer r.mu.Unlock()
	o := r.owners[owner]
	if o == nil {
		o = &sessionOwner{all: map[*openSession]struct{}{}}
	}
	if o.count >= r.limits.PerToken {
		front := o.idle.Front()
		if front == nil {
			return nil, &sessionCapError{setting: "COUNTERSIGN_MCP_SESSIONS_PER_TOKEN", limit: r.limits.PerToken, whose: "this token holds"}
		}
		r.dropLocked(front.Value.(*openSession))
	}
	if r.total >= r.limits.Total {
		front := r.idle.Front()
		if front == nil {
			return nil, &sessionCapError{setting: "COUNTERSIGN_MCP_SESSIONS", limit: r.limits.Total, whose: "this instance holds"}
		}
		r.dropLocked(front.Value.(*openSession))
	}
	o.count++
	r.total++
	r.owners[owner] = o
	s := &openSession{owner: owner, of: o, open: 1}
	o.all[s] = struct{}{}
	return s, nil
}

// ready holds s under its id: its initialize was answered without error.
func (r *openSessions) ready(s *openSession) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !s.closed {
		s.held = true
		r.byID[s.id] = s
	}
}

// settle ends the initialize that opened s: from now on the session is
// held, or, when the SDK answered it with an error, its slot is given back.
func (r *openSessions) settle(s *openSession) {
	r.mu.Lock()
	held := s.held
	r.mu.Unlock()
	if !held {
		r.drop(s)
		return
	}
	r.end(s)
}

// begin marks a request open on the session id of owner, and returns it:
// errSessionGone when this instance holds no such session, errNotYours
// when it is another token's.
func (r *openSessions) begin(id, owner string) (*openSession, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.byID[id]
	switch {
	case s == nil:
		return nil, errSessionGone
	case s.owner != owner:
		return nil, errNotYours
	}
	if s.open == 0 {
		r.idle.Remove(s.inIdle)
		s.of.idle.Remove(s.inOwner)
		s.inIdle, s.inOwner = nil, nil
	}
	s.open++
	return s, nil
}

// end marks a request of s closed; with none left open, s turns idle.
func (r *openSessions) end(s *openSession) {
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

// drop ends s: it is forgotten with its subscriptions, and its stream, if
// one is open, ends. Dropping it twice is harmless.
func (r *openSessions) drop(s *openSession) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dropLocked(s)
}

func (r *openSessions) dropLocked(s *openSession) {
	if s.closed {
		return
	}
	s.closed = true
	if s.inIdle != nil {
		r.idle.Remove(s.inIdle)
		s.of.idle.Remove(s.inOwner)
		s.inIdle, s.inOwner = nil, nil
	}
	if s.held {
		delete(r.byID, s.id)
	}
	for _, uri := range s.uris {
		r.unwatchLocked(s, uri)
	}
	s.uris = nil
	r.total--
	delete(s.of.all, s)
	if s.of.count--; s.of.count == 0 {
		delete(r.owners, s.owner)
	}
	if s.stream != nil {
		// Its end calls back into detach, which finds s closed; it must
		// not run under r.mu.
		go s.stream.end()
		s.stream = nil
	}
}

// dropOwner ends every session of owner, and the streams open on them:
// its access ended. A request of it still in flight ends as it would on
// a dropped session.
func (r *openSessions) dropOwner(owner string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if o := r.owners[owner]; o != nil {
		for s := range o.all {
			r.dropLocked(s)
		}
	}
}

// ownerIDs returns the owners that hold sessions now.
func (r *openSessions) ownerIDs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	ids := make([]string, 0, len(r.owners))
	for id := range r.owners {
		ids = append(ids, id)
	}
	return ids
}

func (r *openSessions) armLocked(d time.Duration) {
	r.armed = true
	if r.expiry == nil {
		r.expiry = time.AfterFunc(d, r.expire)
		return
	}
	r.expiry.Reset(d)
}

// expire ends the sessions idle for the idle life, and sets the timer for
// the next one. The idle list is in the order sessions turned idle, so its
// front is always the next to expire.
func (r *openSessions) expire() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.armed = false
	now := time.Now()
	for front := r.idle.Front(); front != nil; front = r.idle.Front() {
		s := front.Value.(*openSession)
		if left := r.limits.Idle - now.Sub(s.idleSince); left > 0 {
			r.armLocked(left)
			break
		}
		r.dropLocked(s)
	}
}

// watch subscribes s to uri; subscribing twice is harmless.
func (r *openSessions) watch(s *openSession, uri string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s.closed {
		return errSessionGone
	}
	if _, ok := r.watchers[uri][s]; ok {
		return nil
	}
	if len(s.uris) >= maxSubscriptions {
		return fmt.Errorf("RESOURCE_EXHAUSTED: this session is subscribed to %d resources, the most allowed; unsubscribe from asks that are decided", maxSubscriptions)
	}
	w := r.watchers[uri]
	if w == nil {
		w = map[*openSession]struct{}{}
		r.watchers[uri] = w
	}
	w[s] = struct{}{}
	s.uris = append(s.uris, uri)
	return nil
}

// unwatch unsubscribes s from uri.
func (r *openSessions) unwatch(s *openSession, uri string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.unwatchLocked(s, uri)
	for i, u := range s.uris {
		if u == uri {
			s.uris = append(s.uris[:i], s.uris[i+1:]...)
			break
		}
	}
}

func (r *openSessions) unwatchLocked(s *openSession, uri string) {
	if w := r.watchers[uri]; w != nil {
		delete(w, s)
		if len(w) == 0 {
			delete(r.watchers, uri)
		}
	}
}

// attach makes st the stream of s; a session has one at a time.
func (r *openSessions) attach(s *openSession, st *stream) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case s.closed:
		return errSessionGone
	case s.stream != nil:
		return errStreamOpen
	}
	s.stream = st
	return nil
}

// detach forgets st as the stream of s, once it ended.
func (r *openSessions) detach(s *openSession, st *stream) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s.stream == st {
		s.stream = nil
	}
}

// notice is one session's stream waiting for news of a resource, with what
// its notices carry.
type notice struct {
	stream *stream
	listen json.RawMessage
}

// watching is the open streams of the sessions subscribed to uri.
// introduce keeps what s's client said in its initialize.
func (r *openSessions) introduce(s *openSession, client *sdk.InitializeParams) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s.client = client
}

// clientOf is what s's client said in its initialize, or nil.
func (r *openSessions) clientOf(s *openSession) *sdk.InitializeParams {
	r.mu.Lock()
	defer r.mu.Unlock()
	return s.client
}

// streamOf is where s's notices go now, or nil.
func (r *openSessions) streamOf(s *openSession) *stream {
	r.mu.Lock()
	defer r.mu.Unlock()
	return s.stream
}

func (r *openSessions) watching(uri string) []notice {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []notice
	for s := range r.watchers[uri] {
		if s.stream != nil {
			out = append(out, notice{stream: s.stream, listen: s.listen})
		}
	}
	return out
}
