package handlers_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/static"
)

func TestTheFrontEndIsServedFromTheBinary(t *testing.T) {
	env := apptest.Start(t, apptest.SQLite, nil)
	for _, tc := range []struct {
		method, path, ctype string
		status              int
	}{
		{http.MethodGet, "/sw.js", "text/javascript", http.StatusOK},
		{http.MethodHead, "/sw.js", "text/javascript", http.StatusOK},
		{http.MethodGet, "/manifest.webmanifest", "application/manifest+json", http.StatusOK},
		{http.MethodGet, "/static/app.js", "text/javascript", http.StatusOK},
		{http.MethodGet, "/static/app.css", "text/css", http.StatusOK},
		{http.MethodGet, "/static/icons/icon-512.png", "image/png", http.StatusOK},
		{http.MethodGet, "/offline.html", "text/html", http.StatusOK},
		{http.MethodGet, "/favicon.ico", "image/png", http.StatusOK},
		{http.MethodGet, "/static/static.go", "", http.StatusNotFound},
		{http.MethodGet, "/static/../go.mod", "", http.StatusNotFound},
		{http.MethodGet, "/static/nothing.js", "", http.StatusNotFound},
	} {
		req, _ := http.NewRequest(tc.method, env.URL+tc.path, nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != tc.status || !strings.HasPrefix(res.Header.Get("Content-Type"), tc.ctype) {
			t.Errorf("%s %s: %d %q, want %d %q", tc.method, tc.path, res.StatusCode, res.Header.Get("Content-Type"), tc.status, tc.ctype)
		}
		if tc.path == "/sw.js" && res.Header.Get("Service-Worker-Allowed") != "/" {
			t.Errorf("%s /sw.js lacks Service-Worker-Allowed: /", tc.method)
		}
		if tc.status == http.StatusOK && !strings.Contains(res.Header.Get("Content-Security-Policy"), "script-src 'self'") {
			t.Errorf("%s %s has no strict Content-Security-Policy", tc.method, tc.path)
		}
	}
}

var hashedAsset = regexp.MustCompile(`^/static/[a-z0-9/-]+\.([0-9a-f]{12})\.[a-z]+$`)

// Pages name their style sheet, script and icons by a hash of the content,
// and those names are kept by browsers for a year without asking again; a
// new content is a new name. The plain names, the service worker, the
// manifest and the offline page keep stable URLs and are asked for again
// each time (304 while unchanged). The worker's offline shell and the
// offline page name the same hashed files the pages do.
func TestAssetsAreNamedByTheirContentAndKeptForGood(t *testing.T) {
	env := apptest.Start(t, apptest.SQLite, nil)
	get := func(t *testing.T, path string, header ...string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, env.URL+path, nil)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res, body
	}
	_, page := get(t, "/signin")
	doc := parseHTML(t, string(page))
	var refs []string
	for _, n := range elements(doc, func(n *html.Node) bool { return n.Data == "link" || n.Data == "script" }) {
		if ref := attrOf(n, "href") + attrOf(n, "src"); strings.HasPrefix(ref, "/static/") {
			refs = append(refs, ref)
		}
	}
	for _, want := range []string{"app.css", "app.js", "icons/icon-192.png", "icons/apple-touch-icon.png"} {
		if !slices.Contains(refs, static.Path(want)) {
			t.Errorf("the page does not reference %s as %s: %q", want, static.Path(want), refs)
		}
	}
	for _, ref := range refs {
		t.Run(ref+" is named by its content and kept for a year", func(t *testing.T) {
			m := hashedAsset.FindStringSubmatch(ref)
			if m == nil {
				t.Fatalf("%s has no hashed name", ref)
			}
			res, body := get(t, ref)
			sum := sha256.Sum256(body)
			if res.StatusCode != http.StatusOK || hex.EncodeToString(sum[:])[:static.HashLength] != m[1] {
				t.Fatalf("HTTP %d, content hash %x, named %s", res.StatusCode, sum[:6], m[1])
			}
			if cc := res.Header.Get("Cache-Control"); cc != "public, max-age=31536000, immutable" {
				t.Errorf("Cache-Control %q, want a year, immutable", cc)
			}
		})
	}

	_, script := get(t, static.Path("app.js"))
	for _, tc := range []struct {
		name, path string
		status     int
	}{ // 200s are asked for again each time
		{"the plain name of the script", "/static/app.js", http.StatusOK},
		{"a hashed name of an earlier script (a page from before a deploy)", "/static/app.0123456789ab.js", http.StatusOK},
		{"the service worker", "/sw.js", http.StatusOK},
		{"the manifest", "/manifest.webmanifest", http.StatusOK},
		{"the offline page", "/offline.html", http.StatusOK},
		{"a hashed name of no asset", "/static/nothing.0123456789ab.js", http.StatusNotFound},
		{"a hashed name of the service worker", "/static/sw.0123456789ab.js", http.StatusNotFound},
		{"a name whose hash is not one", "/static/app.0123456789zz.js", http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, body := get(t, tc.path)
			if res.StatusCode != tc.status {
				t.Fatalf("HTTP %d, want %d", res.StatusCode, tc.status)
			}
			if tc.status != http.StatusOK {
				return
			}
			tag := res.Header.Get("ETag")
			if cc := res.Header.Get("Cache-Control"); cc != "no-cache" || tag == "" {
				t.Errorf("Cache-Control %q, ETag %q; want no-cache and an ETag", cc, tag)
			}
			if strings.HasPrefix(tc.path, "/static/app.") && !bytes.Equal(body, script) {
				t.Errorf("%s is not the current script", tc.path)
			}
			again, _ := get(t, tc.path, "If-None-Match", tag)
			if again.StatusCode != http.StatusNotModified {
				t.Errorf("asked again with its ETag: HTTP %d, want 304", again.StatusCode)
			}
		})
	}

	_, worker := get(t, "/sw.js")
	_, offline := get(t, "/offline.html")
	for _, name := range []string{"app.css", "app.js"} {
		if !bytes.Contains(worker, []byte(`"`+static.Path(name)+`"`)) {
			t.Errorf("the service worker's offline shell does not name %s (%s): run npm run build", name, static.Path(name))
		}
	}
	if !bytes.Contains(offline, []byte(`href="`+static.Path("app.css")+`"`)) {
		t.Errorf("the offline page does not use the style sheet the worker caches (%s):\n%s", static.Path("app.css"), offline)
	}
}
