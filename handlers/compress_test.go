package handlers_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/static"
)

// chromeAcceptEncoding is what Chromium sends with every request.
const chromeAcceptEncoding = "gzip, deflate, br, zstd"

// fetchRaw gets url with client, with acceptEncoding ("" sends none), and
// returns the response and its body as it came over the wire: setting
// Accept-Encoding by hand keeps Go's transport from decompressing it.
func fetchRaw(t *testing.T, client *http.Client, url, acceptEncoding string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if acceptEncoding != "" {
		req.Header.Set("Accept-Encoding", acceptEncoding)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DisableCompression = true // without a header of ours, ask for no encoding at all
	c := *client
	c.Transport = tr
	res, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("read %s: %v", url, err)
	}
	return res, body
}

// gunzip decompresses a gzip body, failing the test when it is not one.
func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	r, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("the body is not gzip: %v", err)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("the gzip body does not decompress: %v", err)
	}
	return out
}

// Pages, scripts, styles and JSON go out gzipped to a browser that accepts
// gzip, and as they are to one that does not (or refuses gzip with q=0);
// either way the answer says it varies with Accept-Encoding. Images, which
// are compressed already, and bodies under a kilobyte go out as they are.
func TestTextGoesOutGzippedWhenTheClientAcceptsIt(t *testing.T) {
	s := newScene(t, apptest.SQLite, nil)
	owner := s.owner
	decided := s.prAsk(t, "")
	if r := owner.Decide(decided, "approve", ""); r.Status != http.StatusOK {
		t.Fatalf("decide: %s", r)
	}
	pending := s.prAsk(t, "")
	cases := []struct {
		name, path, ctype string
		gzipped           bool
		// same: the decompressed body is byte for byte the plain one (a
		// page is rendered again and may say a minute less is left).
		same bool
	}{
		{"the ask page", "/approvals/" + pending, "text/html", true, false},
		{"the inbox", "/", "text/html", true, false},
		{"the page script", static.Path("app.js"), "text/javascript", true, true},
		{"the style sheet", static.Path("app.css"), "text/css", true, true},
		{"the page script under its plain name", "/static/app.js", "text/javascript", true, true},
		{"the web app manifest", "/manifest.webmanifest", "application/manifest+json", true, true},
		{"the service worker", "/sw.js", "text/javascript", true, true},
		{"a decision's proof", "/approvals/" + decided + "/proof.json", "application/json", true, true},
		{"an icon", static.Path("icons/icon-512.png"), "image/png", false, true},
		{"a body under a kilobyte", "/healthz", "", false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name+" is gzipped only when the client accepts gzip", func(t *testing.T) {
			plainRes, plain := fetchRaw(t, owner.HTTP, s.env.URL+tc.path, "")
			if plainRes.StatusCode != http.StatusOK || !strings.HasPrefix(plainRes.Header.Get("Content-Type"), tc.ctype) {
				t.Fatalf("without Accept-Encoding: HTTP %d %s", plainRes.StatusCode, plainRes.Header.Get("Content-Type"))
			}
			if enc := plainRes.Header.Get("Content-Encoding"); enc != "" {
				t.Errorf("without Accept-Encoding the answer is encoded %q", enc)
			}
			if !strings.Contains(plainRes.Header.Get("Vary"), "Accept-Encoding") {
				t.Errorf("the plain answer lacks Vary: Accept-Encoding (Vary %q)", plainRes.Header.Get("Vary"))
			}
			refusedRes, refused := fetchRaw(t, owner.HTTP, s.env.URL+tc.path, "gzip;q=0, identity")
			if enc := refusedRes.Header.Get("Content-Encoding"); enc != "" || (tc.same && !bytes.Equal(refused, plain)) {
				t.Errorf("with gzip;q=0 the answer is encoded %q (%d bytes, plain %d)", enc, len(refused), len(plain))
			}

			res, body := fetchRaw(t, owner.HTTP, s.env.URL+tc.path, chromeAcceptEncoding)
			if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), tc.ctype) {
				t.Fatalf("with Accept-Encoding: HTTP %d %s", res.StatusCode, res.Header.Get("Content-Type"))
			}
			if !strings.Contains(res.Header.Get("Vary"), "Accept-Encoding") {
				t.Errorf("the answer lacks Vary: Accept-Encoding (Vary %q)", res.Header.Get("Vary"))
			}
			if !tc.gzipped {
				if enc := res.Header.Get("Content-Encoding"); enc != "" || (tc.same && !bytes.Equal(body, plain)) {
					t.Errorf("encoded %q (%d bytes, plain %d), want it as it is", enc, len(body), len(plain))
				}
				return
			}
			if enc := res.Header.Get("Content-Encoding"); enc != "gzip" {
				t.Fatalf("Content-Encoding %q, want gzip (%d bytes, plain %d)", enc, len(body), len(plain))
			}
			got := gunzip(t, body)
			if tc.same && !bytes.Equal(got, plain) {
				t.Fatalf("the gzipped body decompresses to %d bytes that differ from the plain %d", len(got), len(plain))
			}
			if !tc.same && (!bytes.HasPrefix(bytes.ToLower(got), []byte("<!doctype html>")) || !bytes.Contains(got, []byte("</html>")) || len(got) < len(plain)*9/10) {
				t.Fatalf("the gzipped page decompresses to %d bytes, not the page of %d:\n%.300s", len(got), len(plain), got)
			}
			if len(body) >= len(plain) {
				t.Errorf("gzipped %d bytes of %d: nothing saved", len(body), len(plain))
			}
			t.Logf("%s: %d bytes plain, %d gzipped", tc.path, len(plain), len(body))
		})
	}
}

// The live timeline's Server-Sent Events pass the compressor untouched
// when the browser accepts gzip: each event is flushed as it is written,
// so the retry hint and then a decision's event arrive while the stream
// stays open, not when a compressor's buffer fills.
func TestTheLiveTimelineIsNotHeldByTheCompressor(t *testing.T) {
	s := newScene(t, apptest.SQLite, nil)
	id := s.prAsk(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.env.URL+"/approvals/"+id+"/events", nil)
	req.Header.Set("Accept-Encoding", chromeAcceptEncoding)
	req.Header.Set("Accept", "text/event-stream")
	res, err := s.owner.HTTP.Do(req)
	if err != nil {
		t.Fatalf("open stream: %v", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	if enc := res.Header.Get("Content-Encoding"); enc != "" {
		t.Fatalf("the event stream is encoded %q", enc)
	}
	events := make(chan sseEvent, 16)
	go readEvents(bufio.NewReader(res.Body), events)
	next := func(what string) sseEvent {
		t.Helper()
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatalf("the stream ended before %s", what)
			}
			return ev
		case <-ctx.Done():
			t.Fatalf("%s did not arrive: the stream is held", what)
		}
		return sseEvent{}
	}
	if ev := next("the retry hint"); ev.event != "retry" {
		t.Fatalf("first = %+v, want the retry hint", ev)
	}
	if ev := next("the created event"); !strings.Contains(ev.data, `"step":"created"`) {
		t.Fatalf("second = %+v, want the created event", ev)
	}
	if r := s.owner.Decide(id, "deny", ""); r.Status != http.StatusOK {
		t.Fatalf("decide: %s", r)
	}
	if ev := next("the denial"); !strings.Contains(ev.data, `"to":"denied"`) {
		t.Fatalf("after the denial = %+v, want the denied event", ev)
	}
}

// The MCP endpoint's answers, event streams, go out as written when the
// agent accepts gzip: a list of every tool arrives whole and unencoded.
func TestTheMCPEndpointsStreamsAreNotCompressed(t *testing.T) {
	s := newScene(t, apptest.SQLite, nil)
	post := func(body, session string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, s.env.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+s.agentToken)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Accept-Encoding", chromeAcceptEncoding)
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, "")
	res.Body.Close()
	session := res.Header.Get("Mcp-Session-Id")
	if res.StatusCode != http.StatusOK || session == "" {
		t.Fatalf("initialize: %d, session %q", res.StatusCode, session)
	}
	post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, session).Body.Close()
	res = post(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, session)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !bytes.Contains(body, []byte("approvals_create")) {
		t.Fatalf("tools/list: %d %.300s", res.StatusCode, body)
	}
	if enc := res.Header.Get("Content-Encoding"); enc != "" || len(body) < 1024 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("tools/list answered %d bytes of %s encoded %q, want the plain event stream", len(body), res.Header.Get("Content-Type"), enc)
	}
}

// A page another site makes the browser fetch goes out uncompressed, so
// that its size says nothing about how a guess planted in its query string
// compares with the session's CSRF token beside it (BREACH); the service's
// own pages and a typed address or a bookmark get it gzipped.
func TestACrossSiteRequestGetsNoCompressedPage(t *testing.T) {
	s := newScene(t, apptest.SQLite, nil)
	for _, tc := range []struct {
		site    string
		gzipped bool
	}{{"same-origin", true}, {"none", true}, {"cross-site", false}, {"same-site", false}} {
		t.Run("Sec-Fetch-Site "+tc.site, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, s.env.URL+"/admin/audit?actor=guess", nil)
			req.Header.Set("Accept-Encoding", chromeAcceptEncoding)
			req.Header.Set("Sec-Fetch-Site", tc.site)
			res, err := s.owner.HTTP.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				t.Fatalf("HTTP %d", res.StatusCode)
			}
			if got := res.Header.Get("Content-Encoding") == "gzip"; got != tc.gzipped {
				t.Fatalf("gzipped %t, want %t (%d bytes)", got, tc.gzipped, len(body))
			}
			if !strings.Contains(res.Header.Get("Vary"), "Sec-Fetch-Site") {
				t.Errorf("the answer lacks Vary: Sec-Fetch-Site (Vary %q)", res.Header.Get("Vary"))
			}
			if !tc.gzipped && !bytes.Contains(body, []byte("</html>")) {
				t.Errorf("the plain page is not a page:\n%.300s", body)
			}
		})
	}
}
