package handlers_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/countersign/countersign/apptest"
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
