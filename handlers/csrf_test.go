package handlers_test

import (
	"bytes"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/countersign/countersign/apptest"
)

// postGuarded posts {} to path as a page script would, with token in
// X-CSRF-Token and the headers given.
func (b *browser) postGuarded(path, token string, header http.Header) *http.Response {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, b.env.URL+path, strings.NewReader("{}"))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if token != "" {
		req.Header.Set("X-CSRF-Token", token)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	res, _ := b.do(req)
	return res
}

// A CSRF token works only in the session it was shown to, and only from a
// page of this service's own origin.
func TestTheCSRFTokenIsBoundToTheSessionAndTheOrigin(t *testing.T) {
	f := newFixture(t, apptest.SQLite)
	ada := signIn(t, f.env, f.owner)
	bob := signIn(t, f.env, f.member)
	ours := f.env.App.Config.BaseURL
	// POST /push/test passes the guard and then refuses with 409: nobody
	// here has notifications on. A 403 is the guard.
	const passed = http.StatusConflict
	cases := []struct {
		name   string
		token  string
		header http.Header
		want   int
	}{
		{"the session's own token, no Origin (not a browser)", ada.csrf, nil, passed},
		{"the session's own token from our origin", ada.csrf, http.Header{"Origin": {ours}}, passed},
		{"the session's own token, Sec-Fetch-Site same-origin", ada.csrf, http.Header{"Sec-Fetch-Site": {"same-origin"}}, passed},
		{"another session's token", bob.csrf, nil, http.StatusForbidden},
		{"another session's token from our origin", bob.csrf, http.Header{"Origin": {ours}}, http.StatusForbidden},
		{"the token this browser had before it signed in", ada.anonymousCSRF(), nil, http.StatusForbidden},
		{"no token", "", http.Header{"Origin": {ours}}, http.StatusForbidden},
		{"the own token from another origin", ada.csrf, http.Header{"Origin": {"https://evil.example"}}, http.StatusForbidden},
		{"the own token from another port of our host", ada.csrf, http.Header{"Origin": {"http://localhost:8081"}}, http.StatusForbidden},
		{"the own token from an https origin of our host", ada.csrf, http.Header{"Origin": {"https://localhost:8080"}}, http.StatusForbidden},
		{"the own token from an opaque origin", ada.csrf, http.Header{"Origin": {"null"}}, http.StatusForbidden},
		{"the own token, no Origin, Sec-Fetch-Site cross-site", ada.csrf, http.Header{"Sec-Fetch-Site": {"cross-site"}}, http.StatusForbidden},
		{"the own token, no Origin, Sec-Fetch-Site same-site (a sibling host)", ada.csrf, http.Header{"Sec-Fetch-Site": {"same-site"}}, http.StatusForbidden},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if res := ada.postGuarded("/push/test", c.token, c.header); res.StatusCode != c.want {
				t.Fatalf("POST /push/test: HTTP %d, want %d", res.StatusCode, c.want)
			}
		})
	}
	t.Run("a urlencoded form carries the token in _csrf", func(t *testing.T) {
		res, _ := ada.post("/policies/revoke", nil, true)
		if res.StatusCode != http.StatusSeeOther {
			t.Fatalf("POST /policies/revoke with the form's token: HTTP %d, want 303", res.StatusCode)
		}
	})
	t.Run("the pages of a session show its token", func(t *testing.T) {
		_, body := ada.get("/devices")
		if m := csrfMeta.FindStringSubmatch(body); m == nil || m[1] != ada.csrf || ada.csrf == bob.csrf {
			t.Fatalf("the devices page shows %v, want the session's token %q (bob's is %q)", m, ada.csrf, bob.csrf)
		}
	})
}

// anonymousCSRF is the token of the browser's cs_csrf cookie: what its pages
// showed before it signed in.
func (b *browser) anonymousCSRF() string {
	u, _ := url.Parse(b.env.URL)
	for _, c := range b.client.Jar.Cookies(u) {
		if c.Name == "cs_csrf" {
			return c.Value
		}
	}
	b.t.Fatal("no cs_csrf cookie")
	return ""
}

// No state-changing request is parsed as multipart: before any sign-in
// check it is refused with 415, and nothing else reads the body.
func TestAMultipartPostIsRefusedUnread(t *testing.T) {
	f := newFixture(t, apptest.SQLite)
	visitor := signIn(t, f.env, f.member)
	body := "--x\r\nContent-Disposition: form-data; name=\"_csrf\"\r\n\r\n" + visitor.csrf + "\r\n--x--\r\n"
	for _, path := range []string{"/signin/begin", "/signin/finish", "/policies/revoke", "/admin/invites", "/push/subscribe"} {
		req, _ := http.NewRequest(http.MethodPost, f.env.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "multipart/form-data; boundary=x")
		req.Header.Set("X-CSRF-Token", visitor.csrf)
		res, text := visitor.do(req)
		if res.StatusCode != http.StatusUnsupportedMediaType || !strings.Contains(text, "multipart") {
			t.Errorf("POST %s multipart: HTTP %d %.200s, want 415 naming multipart", path, res.StatusCode, text)
		}
	}
}

// Every web request's body stops at 64 KiB, declared or not.
func TestAWebBodyOver64KiBIsRefused(t *testing.T) {
	f := newFixture(t, apptest.SQLite)
	b := signIn(t, f.env, f.member)
	big := `{"pad":"` + strings.Repeat("x", 70<<10) + `"}`
	for _, chunked := range []bool{false, true} {
		req, _ := http.NewRequest(http.MethodPost, f.env.URL+"/signin/finish", bytes.NewBufferString(big))
		if chunked {
			req, _ = http.NewRequest(http.MethodPost, f.env.URL+"/signin/finish", struct{ *strings.Reader }{strings.NewReader(big)})
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		req.Header.Set("X-CSRF-Token", b.csrf)
		res, text := b.do(req)
		if want := map[bool]int{false: http.StatusRequestEntityTooLarge, true: http.StatusBadRequest}[chunked]; res.StatusCode != want || !strings.Contains(text, "65536 bytes") {
			t.Errorf("chunked=%t: HTTP %d %.200s, want %d naming the limit", chunked, res.StatusCode, text, want)
		}
	}
}

// Over https every answer carries Strict-Transport-Security; over plain
// http (a machine of one's own) none does.
func TestHSTSWhenTheBaseURLIsHTTPS(t *testing.T) {
	for _, c := range []struct {
		base string
		want string
	}{
		{"https://countersign.example", "max-age=63072000"},
		{"http://localhost:8080", ""},
	} {
		t.Run(c.base, func(t *testing.T) {
			env := apptest.Start(t, apptest.SQLite, map[string]string{"COUNTERSIGN_BASE_URL": c.base})
			for _, path := range []string{"/healthz", "/signin"} {
				res, err := http.Get(env.URL + path)
				if err != nil {
					t.Fatal(err)
				}
				res.Body.Close()
				if got := res.Header.Get("Strict-Transport-Security"); got != c.want {
					t.Errorf("GET %s: Strict-Transport-Security %q, want %q", path, got, c.want)
				}
			}
		})
	}
}
