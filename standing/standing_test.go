package standing_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/standing"
)

// streamServer serves a stream taken off net/http that writes each string
// sent on events as an SSE event, and reports on ended when its context ends.
func streamServer(t *testing.T, set *standing.Set, events <-chan string, ended chan<- struct{}) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("X-Kept", "yes")
		sw, ctx, err := set.Take(w, r, context.Background())
		if err != nil {
			t.Errorf("take: %v", err)
			return
		}
		go func() {
			defer sw.Close()
			sw.WriteHeader(http.StatusOK)
			for {
				select {
				case <-ctx.Done():
					ended <- struct{}{}
					return
				case e := <-events:
					io.WriteString(sw, "data: "+e+"\n\n")
				}
			}
		}()
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A stream taken off net/http reads as an ordinary chunked response with
// the handler's headers, gets heartbeats while quiet, and ends its context
// when the client goes away, with no goroutine reading the connection.
func TestAStreamOffNetHTTPReadsAsAResponseAndEndsWhenItsClientLeaves(t *testing.T) {
	set := standing.NewSet(200*time.Millisecond, ": alive\n\n")
	defer set.Close()
	events, ended := make(chan string), make(chan struct{}, 1)
	srv := streamServer(t, set, events, ended)

	res, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" || res.Header.Get("X-Kept") != "yes" ||
		len(res.TransferEncoding) != 1 || res.TransferEncoding[0] != "chunked" {
		t.Fatalf("response %d %v %v, want 200, the handler's headers and a chunked body", res.StatusCode, res.Header, res.TransferEncoding)
	}
	lines := bufio.NewScanner(res.Body)
	next := func() string {
		if !lines.Scan() {
			t.Fatalf("the stream ended: %v", lines.Err())
		}
		return lines.Text()
	}
	events <- "one"
	if got := next(); got != "data: one" {
		t.Fatalf("first line %q, want the event", got)
	}
	next() // the event's blank line
	if got := next(); got != ": alive" {
		t.Fatalf("line while quiet %q, want the heartbeat", got)
	}
	if set.Len() != 1 {
		t.Fatalf("%d streams open, want 1", set.Len())
	}
	res.Body.Close()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the stream's context did not end after its client left")
	}
	for deadline := time.Now().Add(5 * time.Second); set.Len() != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d streams open after their client left, want 0", set.Len())
		}
	}
}

// Closing the Set ends every stream, whose client reads the end of the
// body, and refuses new ones without taking their connection.
func TestClosingTheSetEndsItsStreamsAndRefusesNewOnes(t *testing.T) {
	set := standing.NewSet(time.Minute, ": alive\n\n")
	events, ended := make(chan string), make(chan struct{}, 1)
	srv := streamServer(t, set, events, ended)
	res, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	set.Close()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the stream did not end when the set closed")
	}
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("the body did not end cleanly: %v", err)
	}
	if strings.TrimSpace(string(body)) != "" {
		t.Errorf("body %q, want nothing", body)
	}

	refused := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, _, err := set.Take(w, r, context.Background()); err != standing.ErrClosed {
			t.Errorf("take after close: %v, want ErrClosed", err)
		}
		http.Error(w, "closed", http.StatusServiceUnavailable)
	}))
	defer refused.Close()
	r2, err := http.Get(refused.URL)
	if err != nil {
		t.Fatal(err)
	}
	r2.Body.Close()
	if r2.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("after close: %d, want the handler's own 503", r2.StatusCode)
	}
}
