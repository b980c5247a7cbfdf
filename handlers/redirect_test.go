package handlers_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"testing"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/handlers"
)

// redirectCase is one spelling of ?next= and where it may lead; the page
// script's test (web/test/redirect.test.mjs) reads the same file.
type redirectCase struct {
	Name string `json:"name"`
	Next string `json:"next"` // the value, as the query string decodes it
	Want string `json:"want"`
}

func redirectCases(t *testing.T) []redirectCase {
	t.Helper()
	raw, err := os.ReadFile("testdata/redirects.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []redirectCase
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatalf("read testdata/redirects.json: %v", err)
	}
	refused := 0
	for _, c := range cases {
		if c.Want == "/" && c.Next != "/" {
			refused++
		}
	}
	if refused < 20 {
		t.Fatalf("testdata/redirects.json has %d bypass spellings, want at least 20", refused)
	}
	return cases
}

// Every known spelling of a redirect off the site is turned into "/", and a
// path of the site is kept as it is.
func TestARedirectStaysOnTheSite(t *testing.T) {
	for _, c := range redirectCases(t) {
		t.Run(c.Name, func(t *testing.T) {
			if got := handlers.LocalPath(c.Next); got != c.Want {
				t.Fatalf("localPath(%q) = %q, want %q", c.Next, got, c.Want)
			}
		})
	}
}

// Through the real route: /signin?next= sends a signed-in browser to a
// path of the site only, and hands the page script of a visitor who is not
// signed in nothing else to go to after signing in.
func TestSignInNextRefusesEverySpellingOfAnotherSite(t *testing.T) {
	cases := redirectCases(t)
	f := newFixture(t, apptest.SQLite)
	signedIn := signIn(t, f.env, f.owner)
	visitor := f.env.Browser()
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			path := "/signin?next=" + url.QueryEscape(c.Next)
			res, _ := signedIn.get(path)
			if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != c.Want {
				t.Fatalf("signed in, GET %s: HTTP %d to %q, want 303 to %q", path, res.StatusCode, res.Header.Get("Location"), c.Want)
			}
			r, err := visitor.HTTP.Get(f.env.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			body := readAll(t, r)
			next := one(t, parseHTML(t, body), "signin-next")
			if r.StatusCode != http.StatusOK || attrOf(next, "value") != c.Want {
				t.Fatalf("GET %s: HTTP %d, the page goes to %q after sign-in, want %q", path, r.StatusCode, attrOf(next, "value"), c.Want)
			}
		})
	}
}

// The page script's check (web/redirect.js) agrees with the server's on
// every case of testdata/redirects.json. Without Node the test fails: it
// must run in CI.
func TestThePageScriptRedirectCheck(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not installed: the page script tests need Node 20 (%v)", err)
	}
	cmd := exec.Command(node, "--test", "--test-reporter=spec", "web/test/redirect.test.mjs")
	cmd.Dir = ".."
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test web/test/redirect.test.mjs: %v\n%s", err, out)
	}
	if testing.Verbose() {
		t.Logf("%s", out)
	}
}
