package apptest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// SlackAPI is Slack's Web API on loopback for tests: the methods the Slack
// channel calls (chat.postMessage, chat.update, users.lookupByEmail), taken
// as slack-go sends them (form-encoded POSTs, the token in the form or as a
// bearer) and answered as Slack answers: HTTP 200 with {"ok":true,…} or
// {"ok":false,"error":"…"}, and 429 with Retry-After when rate limited.
//
// It knows the workspace a test sets up: members by email (AddUser) and
// channels (AddChannel). A post to a member id lands in the bot's DM with
// them, a D… channel, as on Slack; a post to a channel it does not know is
// answered channel_not_found, an update of a message it does not hold
// message_not_found.
type SlackAPI struct {
	t      testing.TB
	Server *httptest.Server
	Token  string // the bot token it accepts (xoxb-…)

	mu       sync.Mutex
	calls    []SlackCall
	changed  chan struct{}       // closed and replaced on every call
	users    map[string]string   // email → member id
	members  map[string]bool     // member ids
	channels map[string]string   // channel id → name
	dms      map[string]string   // member id → the bot's DM channel with them
	messages map[string]SlackMsg // "<channel> <ts>" → the message as it stands
	limited  map[string][]int    // method → Retry-After seconds of its next answers
	ts       int
}

// SlackCall is one call the API took, whatever it answered.
type SlackCall struct {
	Method  string // chat.postMessage, chat.update, users.lookupByEmail
	Channel string // the channel asked for: a channel id, a #name or a member id
	Posted  string // the channel the message is in (D… for a DM), once answered ok
	TS      string // the message's ts: answered by a post, asked for by an update
	Text    string
	Blocks  string // the blocks as sent (JSON)
	Email   string // of a lookup
	Status  int    // the HTTP status answered
	Error   string // the error answered ("" when ok)
	At      time.Time
}

// SlackMsg is a message as it stands in a channel.
type SlackMsg struct {
	Channel, TS, Text, Blocks string
}

// NewSlackAPI starts the API on loopback, accepting the bot token
// xoxb-test-countersign.
func NewSlackAPI(t testing.TB) *SlackAPI {
	s := &SlackAPI{t: t, Token: "xoxb-test-countersign", changed: make(chan struct{}), users: map[string]string{}, members: map[string]bool{},
		channels: map[string]string{}, dms: map[string]string{}, messages: map[string]SlackMsg{}, limited: map[string][]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Server.Close)
	return s
}

// Host is the API's host:port, for COUNTERSIGN_CHANNEL_PRIVATE_HOSTS.
func (s *SlackAPI) Host() string { return strings.TrimPrefix(s.Server.URL, "http://") }

// Config is the service's configuration to use this API.
func (s *SlackAPI) Config() map[string]string {
	return map[string]string{"COUNTERSIGN_SLACK_BOT_TOKEN": s.Token, "COUNTERSIGN_SLACK_API_URL": s.Server.URL, "COUNTERSIGN_CHANNEL_PRIVATE_HOSTS": s.Host()}
}

// AddUser makes a member of the workspace, found by email.
func (s *SlackAPI) AddUser(email, memberID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users[strings.ToLower(email)] = memberID
	s.members[memberID] = true
}

// AddChannel makes a channel the bot is in, by id (C…) and name (oncall).
func (s *SlackAPI) AddChannel(id, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.channels[id] = name
}

// RateLimit answers the next n calls of method with HTTP 429 and
// Retry-After: seconds.
func (s *SlackAPI) RateLimit(method string, n, seconds int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.limited[method] = append(s.limited[method], seconds)
	}
}

// Calls are the calls taken so far, in order.
func (s *SlackAPI) Calls() []SlackCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]SlackCall(nil), s.calls...)
}

// Message is the message at ts in channel as it stands, and whether there is one.
func (s *SlackAPI) Message(channel, ts string) (SlackMsg, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.messages[channel+" "+ts]
	return m, ok
}

// Wait waits up to timeout for a call that match accepts, among those taken
// so far and those to come.
func (s *SlackAPI) Wait(timeout time.Duration, match func(SlackCall) bool) (SlackCall, bool) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		for _, c := range s.calls {
			if match(c) {
				s.mu.Unlock()
				return c, true
			}
		}
		changed := s.changed
		s.mu.Unlock()
		select {
		case <-changed:
		case <-deadline.C:
			return SlackCall{}, false
		}
	}
}

func (s *SlackAPI) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "the Web API takes POST", http.StatusMethodNotAllowed)
		return
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c := SlackCall{Method: strings.TrimPrefix(r.URL.Path, "/"), Channel: r.PostForm.Get("channel"), TS: r.PostForm.Get("ts"),
		Text: r.PostForm.Get("text"), Blocks: r.PostForm.Get("blocks"), Email: r.PostForm.Get("email"), Status: http.StatusOK, At: time.Now()}
	s.mu.Lock()
	defer s.mu.Unlock()
	defer func() {
		s.calls = append(s.calls, c)
		close(s.changed)
		s.changed = make(chan struct{})
	}()
	if wait := s.limited[c.Method]; len(wait) > 0 {
		s.limited[c.Method] = wait[1:]
		c.Status, c.Error = http.StatusTooManyRequests, "ratelimited"
		w.Header().Set("Retry-After", strconv.Itoa(wait[0]))
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = fmt.Fprint(w, `{"ok":false,"error":"ratelimited"}`)
		return
	}
	var answer map[string]any
	switch token := bearerOrForm(r); {
	case token == "":
		c.Error = "not_authed"
	case token != s.Token:
		c.Error = "invalid_auth"
	default:
		answer, c.Error = s.answer(&c, r.PostForm.Get("blocks") != "")
	}
	if c.Error != "" {
		answer = map[string]any{"ok": false, "error": c.Error}
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_ = json.NewEncoder(w).Encode(answer)
}

// bearerOrForm is the token of a call: Slack takes it as a bearer or as
// the form's token (slack-go sends the latter).
func bearerOrForm(r *http.Request) string {
	if bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return bearer
	}
	return r.PostForm.Get("token")
}

// answer does what c asks and says what Slack would answer, or the error
// it would answer. The caller holds s.mu.
func (s *SlackAPI) answer(c *SlackCall, hasBlocks bool) (map[string]any, string) {
	switch c.Method {
	case "users.lookupByEmail":
		id, ok := s.users[strings.ToLower(c.Email)]
		if !ok {
			return nil, "users_not_found"
		}
		return map[string]any{"ok": true, "user": map[string]any{"id": id, "name": strings.ToLower(id), "profile": map[string]any{"email": c.Email}}}, ""
	case "chat.postMessage":
		if c.Text == "" && !hasBlocks {
			return nil, "no_text"
		}
		if hasBlocks && !json.Valid([]byte(c.Blocks)) {
			return nil, "invalid_blocks"
		}
		channel, ok := s.resolve(c.Channel)
		if !ok {
			return nil, "channel_not_found"
		}
		s.ts++
		c.Posted, c.TS = channel, fmt.Sprintf("%d.%06d", time.Now().Unix(), s.ts)
		s.messages[channel+" "+c.TS] = SlackMsg{Channel: channel, TS: c.TS, Text: c.Text, Blocks: c.Blocks}
		return map[string]any{"ok": true, "channel": channel, "ts": c.TS,
			"message": map[string]any{"type": "message", "bot_id": "B0COUNTERSIGN", "text": c.Text, "ts": c.TS}}, ""
	case "chat.update":
		if _, known := s.channels[c.Channel]; !known && !strings.HasPrefix(c.Channel, "D") {
			return nil, "channel_not_found" // an update names the channel by id: a member id is refused
		}
		m, ok := s.messages[c.Channel+" "+c.TS]
		if !ok {
			return nil, "message_not_found"
		}
		m.Text, m.Blocks = c.Text, c.Blocks
		s.messages[c.Channel+" "+c.TS] = m
		c.Posted = c.Channel
		return map[string]any{"ok": true, "channel": c.Channel, "ts": c.TS, "text": c.Text}, ""
	}
	return nil, "unknown_method"
}

// resolve is the channel a post to to lands in: a known channel by id or
// name, or the bot's DM with a member (opened on the first post).
func (s *SlackAPI) resolve(to string) (string, bool) {
	if _, ok := s.channels[to]; ok {
		return to, true
	}
	for id, name := range s.channels {
		if strings.TrimPrefix(to, "#") == name {
			return id, true
		}
	}
	if !s.members[to] {
		return "", false
	}
	if s.dms[to] == "" {
		s.dms[to] = fmt.Sprintf("D%08d", len(s.dms)+1)
	}
	return s.dms[to], true
}
