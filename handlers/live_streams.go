package handlers

import (
	"slices"
	"sync"
)

// liveTimelinesPerSession is the most live timelines (ApprovalEvents) one web
// session holds open at once: each costs some 46 KB while it lasts, and 500
// on one cookie took 23 MB.
//
// Past it, the session's oldest stream ends, rather than the new one being
// refused. A browser's EventSource gives up for good on a refusal (a 429
// fails the connection), so the page just opened — the one the person looks
// at — would stay still while the oldest streams, most often of pages gone
// quiet (a phone asleep, a tab whose connection died unseen), kept their
// places. A stream that ends normally is reconnected by the EventSource of
// a page still open, after its retry delay, with Last-Event-ID, so that page
// loses no event; a page that is gone never reconnects.
const liveTimelinesPerSession = 20

// liveStreams holds the live timelines open per web session.
type liveStreams struct {
	mu sync.Mutex
	by map[string][]*liveStream // by session token, oldest first
}

// liveStream is one open live timeline; ended is closed when a newer
// stream of its session takes its place.
type liveStream struct {
	ended chan struct{}
}

func newLiveStreams() *liveStreams {
	return &liveStreams{by: map[string][]*liveStream{}}
}

// open holds a place for a new stream of the web session, ending the
// session's oldest stream first when it holds liveTimelinesPerSession.
// The stream must call done when it ends.
func (l *liveStreams) open(session string) (s *liveStream, done func()) {
	s = &liveStream{ended: make(chan struct{})}
	l.mu.Lock()
	defer l.mu.Unlock()
	open := l.by[session]
	if len(open) >= liveTimelinesPerSession {
		close(open[0].ended)
		open = slices.Delete(open, 0, 1)
	}
	l.by[session] = append(open, s)
	return s, func() { l.close(session, s) }
}

func (l *liveStreams) close(session string, s *liveStream) {
	l.mu.Lock()
	defer l.mu.Unlock()
	open := slices.DeleteFunc(l.by[session], func(o *liveStream) bool { return o == s })
	if len(open) == 0 {
		delete(l.by, session)
		return
	}
	l.by[session] = open
}
