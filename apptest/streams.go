package apptest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Stream is a waiting MCP stream a test holds open: a session's GET stream
// or a 2026-07-28 subscriptions/listen.
type Stream struct {
	t    testing.TB
	what string
	body *bufio.Reader
	done chan error
}

// mcpPost posts one JSON-RPC message to endpoint with token and the given
// headers; the caller closes the body.
func mcpPost(ctx context.Context, t testing.TB, endpoint, token, body string, headers map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", endpoint, err)
	}
	return res
}

// OpenGETStream opens a 2025-06-18 session at endpoint with token and its
// GET stream, and returns once the server holds the stream.
func OpenGETStream(t testing.TB, endpoint, token string) *Stream {
	t.Helper()
	ctx := context.Background()
	res := mcpPost(ctx, t, endpoint, token, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, nil)
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	session := res.Header.Get("Mcp-Session-Id")
	if res.StatusCode != http.StatusOK || session == "" {
		t.Fatalf("initialize: HTTP %d, session %q", res.StatusCode, session)
	}
	headers := map[string]string{"Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-06-18"}
	res = mcpPost(ctx, t, endpoint, token, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, headers)
	res.Body.Close()
	if res.StatusCode != http.StatusAccepted {
		t.Fatalf("notifications/initialized: HTTP %d", res.StatusCode)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET stream: %v %v", res, err)
	}
	s := &Stream{t: t, what: "the GET stream of session " + session, body: bufio.NewReader(res.Body)}
	if line, err := s.body.ReadString('\n'); err != nil || line != ": ok\n" {
		t.Fatalf("GET stream: %q %v, want its first line", line, err)
	}
	s.watch(res.Body)
	return s
}

// OpenListen opens a 2026-07-28 subscriptions/listen for uri at endpoint
// with token, and returns once it is acknowledged.
func OpenListen(t testing.TB, endpoint, token, uri string) *Stream {
	t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":9,"method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"notifications":{"resourceSubscriptions":[%q]}}}`, uri)
	res := mcpPost(context.Background(), t, endpoint, token, body, map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "subscriptions/listen"})
	s := &Stream{t: t, what: "the subscriptions/listen of " + uri, body: bufio.NewReader(res.Body)}
	for {
		line, err := s.body.ReadString('\n')
		if err != nil {
			res.Body.Close()
			t.Fatalf("subscriptions/listen: HTTP %d, %v before an acknowledgement", res.StatusCode, err)
		}
		if strings.HasPrefix(line, "data:") && strings.Contains(line, "notifications/subscriptions/acknowledged") {
			break
		}
	}
	s.watch(res.Body)
	return s
}

// watch reads the rest of the stream in the background: what it carries
// is dropped, its end is kept for MustEnd.
func (s *Stream) watch(body io.ReadCloser) {
	s.done = make(chan error, 1)
	s.t.Cleanup(func() { body.Close() })
	go func() {
		var rest bytes.Buffer
		_, err := io.Copy(&rest, s.body)
		s.done <- err
	}()
}

// MustEnd fails the test unless the server ends the stream (within 10 s,
// a bound for a hang, never a measure).
func (s *Stream) MustEnd(why string) {
	s.t.Helper()
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		s.t.Errorf("%s is still open after %s", s.what, why)
	}
}

// MustBeOpen fails the test if the server has ended the stream.
func (s *Stream) MustBeOpen() {
	s.t.Helper()
	select {
	case err := <-s.done:
		s.t.Errorf("%s ended (%v), want it open", s.what, err)
	default:
	}
}
