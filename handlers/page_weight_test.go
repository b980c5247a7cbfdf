package handlers_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/net/html"

	"github.com/countersign/countersign/apptest"
)

// The page-weight budgets of an ask page (issue 19), in bytes as they
// cross the network: status lines, headers and bodies as sent.
const (
	askPageColdBudget   = 30_000 // the page and everything it references, nothing cached
	askPageRepeatBudget = 15_000 // the page again, with what the first visit let the browser keep
)

// wireCounter counts the bytes a client reads from its connections.
type wireCounter struct{ read atomic.Int64 }

type countedConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.n.Add(int64(n))
	return n, err
}

// client is an HTTP client with jar's cookies whose reads are counted,
// that decompresses nothing itself (the bytes counted are the bytes sent).
func (w *wireCounter) client(jar http.CookieJar) *http.Client {
	var d net.Dialer
	return &http.Client{Jar: jar, Transport: &http.Transport{
		DisableCompression: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return countedConn{Conn: c, n: &w.read}, nil
		},
	}}
}

// visit is one response of a page visit as a browser would have it.
type visit struct {
	path, cacheControl, etag string
	status                   int
	bytes                    int64
}

// fetchCounted gets path as Chromium would (its Accept-Encoding, and
// If-None-Match when etag is set) and says how many bytes came over the wire.
func fetchCounted(t *testing.T, w *wireCounter, client *http.Client, base, path, etag string) (visit, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+path, nil)
	req.Header.Set("Accept-Encoding", chromeAcceptEncoding)
	if etag != "" {
		req.Header.Set("If-None-Match", etag)
	}
	before := w.read.Load()
	res, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	if res.Header.Get("Content-Encoding") == "gzip" {
		body = gunzip(t, body)
	}
	return visit{path: path, status: res.StatusCode, cacheControl: res.Header.Get("Cache-Control"), etag: res.Header.Get("ETag"),
		bytes: w.read.Load() - before}, body
}

// pageReferences is what a page makes a browser fetch: its style sheets,
// icons, manifest and scripts.
func pageReferences(t *testing.T, page []byte) []string {
	t.Helper()
	var refs []string
	for _, n := range elements(parseHTML(t, string(page)), func(n *html.Node) bool { return n.Data == "link" || n.Data == "script" }) {
		if ref := attrOf(n, "href") + attrOf(n, "src"); strings.HasPrefix(ref, "/") {
			refs = append(refs, ref)
		}
	}
	return refs
}

// keptForGood reports whether a browser keeps a response without asking again.
func keptForGood(cacheControl string) bool {
	return strings.Contains(cacheControl, "immutable") && strings.Contains(cacheControl, "max-age=31536000")
}

// An ask page with an explanation and evidence costs at most 30 KB over the
// wire on a first visit (the page, its style sheet, script, icons and
// manifest, and the service worker the script registers, all as Chromium
// asks for them) and at most 15 KB on a repeat visit (the page again; what
// the first visit's answers let the browser keep is not asked for, the
// rest is revalidated). The figures are logged for docs/perf.md.
func TestAnAskPageFitsItsPageWeightBudget(t *testing.T) {
	s := newScene(t, apptest.SQLite, nil)
	if err := s.env.Store.SetAllowPrivateEvidence(context.Background(), s.env.Account.ID, true); err != nil {
		t.Fatal(err)
	}
	out := s.agent.OK("approvals_create", apptest.ExplainedPullRequestAsk())
	id, _ := out["approval_id"].(string)
	if id == "" {
		t.Fatalf("approvals_create answered %v", out)
	}
	var w wireCounter
	client := w.client(s.owner.HTTP.Jar)
	path := "/approvals/" + id

	page, body := fetchCounted(t, &w, client, s.env.URL, path, "")
	if page.status != http.StatusOK || !strings.Contains(string(body), "Merge acme/web#900") {
		t.Fatalf("the ask page: HTTP %d\n%.500s", page.status, body)
	}
	// The page script registers the service worker: a first visit fetches it.
	refs := append(pageReferences(t, body), "/sw.js")
	cold := []visit{page}
	for _, ref := range refs {
		v, _ := fetchCounted(t, &w, client, s.env.URL, ref, "")
		if v.status != http.StatusOK {
			t.Fatalf("the page references %s, which answers HTTP %d", ref, v.status)
		}
		cold = append(cold, v)
	}

	again, _ := fetchCounted(t, &w, client, s.env.URL, path, "")
	repeat := []visit{again}
	for _, v := range cold[1:] {
		if keptForGood(v.cacheControl) {
			continue
		}
		r, _ := fetchCounted(t, &w, client, s.env.URL, v.path, v.etag)
		if r.status != http.StatusNotModified {
			t.Errorf("%s asked for again with its ETag: HTTP %d, want 304", v.path, r.status)
		}
		repeat = append(repeat, r)
	}

	total := func(vs []visit) (n int64, lines []string) {
		for _, v := range vs {
			n += v.bytes
			lines = append(lines, v.path+": "+itoa(v.bytes)+" B ("+itoa(int64(v.status))+", "+v.cacheControl+")")
		}
		return n, lines
	}
	coldBytes, coldLines := total(cold)
	repeatBytes, repeatLines := total(repeat)
	t.Logf("first visit: %d bytes\n  %s", coldBytes, strings.Join(coldLines, "\n  "))
	t.Logf("repeat visit: %d bytes\n  %s", repeatBytes, strings.Join(repeatLines, "\n  "))
	if coldBytes > askPageColdBudget {
		t.Errorf("a first visit of the ask page costs %d bytes over the wire, over the budget of %d:\n  %s", coldBytes, askPageColdBudget, strings.Join(coldLines, "\n  "))
	}
	if repeatBytes > askPageRepeatBudget {
		t.Errorf("a repeat visit of the ask page costs %d bytes over the wire, over the budget of %d:\n  %s", repeatBytes, askPageRepeatBudget, strings.Join(repeatLines, "\n  "))
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
