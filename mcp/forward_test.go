package mcp_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
)

// seenCall is a request a listener received: its headers and its body.
type seenCall struct {
	method, path string
	header       http.Header
	body         []byte
}

// spy records every request it gets, then serves it with next (or answers
// 200 with an empty JSON object when next is nil).
type spy struct {
	mu   sync.Mutex
	seen []seenCall
	next atomic.Pointer[http.Handler]
}

func (s *spy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.seen = append(s.seen, seenCall{method: r.Method, path: r.URL.RequestURI(), header: r.Header.Clone(), body: body})
	s.mu.Unlock()
	r.Body = io.NopCloser(bytes.NewReader(body))
	if next := s.next.Load(); next != nil {
		(*next).ServeHTTP(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{}`))
}

func (s *spy) calls() []seenCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seenCall(nil), s.seen...)
}

// mustCarryNoToken fails the test when a call carries an Authorization
// header or the token anywhere in its headers or body, or names the
// caller by anything but the token's kind and hash.
func mustCarryNoToken(t *testing.T, where string, calls []seenCall, token string) {
	t.Helper()
	if len(calls) == 0 {
		t.Fatalf("%s received no forwarded call", where)
	}
	for _, c := range calls {
		if auth := c.header.Get("Authorization"); auth != "" {
			t.Errorf("%s received %s %s with Authorization %q, want none", where, c.method, c.path, auth)
		}
		for name, values := range c.header {
			if strings.Contains(strings.Join(values, " "), token) {
				t.Errorf("%s received the agent's token in header %s", where, name)
			}
		}
		if bytes.Contains(c.body, []byte(token)) {
			t.Errorf("%s received the agent's token in the body of %s %s", where, c.method, c.path)
		}
		if got := c.header.Get("X-Countersign-Forwarded-Principal"); got != "agent:"+core.HashToken(token) {
			t.Errorf("%s received %s %s naming the caller %q, want the token's kind and hash", where, c.method, c.path, got)
		}
	}
}

// Forwarding between instances carries no bearer token. Instance B
// forwards calls on a session of instance A, through a listener that sees
// every forwarded call on its way: the calls and the GET stream work, and
// none carries the agent's token. A listener a database writer registers
// as an instance gets no token either. A's forwarded calls are signed with
// the instances' secret: one whose body or caller is changed, or that
// carries no signature, is refused.
func TestAForwardedCallCarriesNoBearerTokenAndIsSigned(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		if db == apptest.SQLite {
			t.Skip("several instances need PostgreSQL")
		}
		relay := &spy{}
		relaySrv := httptest.NewServer(relay)
		defer relaySrv.Close()
		a := apptest.Start(t, db, map[string]string{
			"COUNTERSIGN_INSTANCE_URL": relaySrv.URL, "COUNTERSIGN_INSTANCE_SECRET": "a-secret-only-the-instances-hold-0123456789",
		})
		aURL, _ := url.Parse(a.URL)
		toA := http.Handler(httputil.NewSingleHostReverseProxy(aURL))
		relay.next.Store(&toA)
		cfg := a.App.Config
		cfg.Data, cfg.InstanceURL = t.TempDir(), "http://127.0.0.1:1" // nobody forwards to B here
		b := apptest.StartWith(t, cfg)
		_, token := a.Agent(a.Account.ID, "bot")
		_, other := a.Agent(a.Account.ID, "other")

		session := rawSession(t, a, token)
		if r := rawPost(t, b, token, session, "2025-06-18", toolCallBody(t, "approvals_list", map[string]any{})); r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"approvals"`) {
			t.Fatalf("approvals_list on A's session through B: %d %s", r.Status, r.Body)
		}
		stream := getStream(t, b, token, session, nil)
		if line, err := bufio.NewReader(stream.Body).ReadString('\n'); stream.StatusCode != http.StatusOK || err != nil || line != ": ok\n" {
			t.Fatalf("the GET stream of A's session through B: %d %q %v", stream.StatusCode, line, err)
		}
		stream.Body.Close()
		mustCarryNoToken(t, "the listener between B and A", relay.calls(), token)

		fake := &spy{}
		fakeSrv := httptest.NewServer(fake)
		defer fakeSrv.Close()
		if err := a.Store.RegisterInstance(context.Background(), "fakeinst", fakeSrv.URL); err != nil {
			t.Fatal(err)
		}
		rawPost(t, a, token, "fakeinst-1", "2025-06-18", toolCallBody(t, "approvals_list", map[string]any{}))
		getStream(t, a, token, "fakeinst-2", nil).Body.Close()
		mustCarryNoToken(t, "a listener registered as an instance", fake.calls(), token)

		signed := relay.calls()[0] // approvals_list, as B signed it
		for name, forge := range map[string]func(h http.Header, body []byte) []byte{
			"its body changed": func(_ http.Header, body []byte) []byte {
				return bytes.Replace(body, []byte("approvals_list"), []byte("approvals_get"), 1)
			},
			"another caller named": func(h http.Header, body []byte) []byte {
				h.Set("X-Countersign-Forwarded-Principal", "agent:"+core.HashToken(other))
				return body
			},
			"no signature": func(h http.Header, body []byte) []byte {
				h.Del("X-Countersign-Forwarded-Signature")
				return body
			},
		} {
			t.Run("a forwarded call with "+name+" is refused", func(t *testing.T) {
				h := signed.header.Clone()
				body := forge(h, signed.body)
				req, _ := http.NewRequest(signed.method, a.URL+signed.path, bytes.NewReader(body))
				req.Header = h
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer res.Body.Close()
				reply, _ := io.ReadAll(res.Body)
				if res.StatusCode != http.StatusForbidden || !strings.Contains(string(reply), "signature does not hold") {
					t.Errorf("HTTP %d %s, want 403 saying the signature does not hold", res.StatusCode, reply)
				}
			})
		}
	})
}
