package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/countersign/countersign/ask"

	"golang.org/x/net/html"

	"github.com/countersign/countersign/app"
	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
)

// browser is a person's browser: a cookie jar signed in to the service, and
// the CSRF token its pages carry.
type browser struct {
	t      *testing.T
	env    *apptest.Env
	client *http.Client
	csrf   string
}

var csrfMeta = regexp.MustCompile(`<meta name="csrf-token" content="([^"]+)"`)

// signIn opens a browser for m: it fetches the sign-in page for the CSRF
// cookie and token, then holds a session made in the store.
func signIn(t *testing.T, env *apptest.Env, m *people.Member) *browser {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	b := &browser{t: t, env: env, client: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
	res, body := b.get("/signin")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /signin: %d", res.StatusCode)
	}
	match := csrfMeta.FindStringSubmatch(body)
	if match == nil {
		t.Fatalf("no csrf-token meta on /signin")
	}
	b.csrf = match[1]
	token, err := env.Store.CreateSession(context.Background(), m.ID, m.AccountID)
	if err != nil {
		t.Fatalf("create session: %v", err)
	}
	u, _ := url.Parse(env.URL)
	jar.SetCookies(u, []*http.Cookie{{Name: "cs_session", Value: token, Path: "/"}})
	b.loadCSRF() // the token is bound to the session
	return b
}

// loadCSRF reads the CSRF token of the browser's session from the inbox page.
func (b *browser) loadCSRF() {
	b.t.Helper()
	res, body := b.get("/")
	match := csrfMeta.FindStringSubmatch(body)
	if res.StatusCode != http.StatusOK || match == nil {
		b.t.Fatalf("GET /: HTTP %d without a csrf-token meta tag", res.StatusCode)
	}
	b.csrf = match[1]
}

func (b *browser) do(req *http.Request) (*http.Response, string) {
	b.t.Helper()
	res, err := b.client.Do(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		b.t.Fatalf("read %s: %v", req.URL.Path, err)
	}
	return res, string(body)
}

func (b *browser) get(path string) (*http.Response, string) {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, b.env.URL+path, nil)
	return b.do(req)
}

// post sends a form, with the page's CSRF token unless withCSRF is false.
func (b *browser) post(path string, form url.Values, withCSRF bool) (*http.Response, string) {
	b.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	if withCSRF {
		form.Set("_csrf", b.csrf)
	}
	req, _ := http.NewRequest(http.MethodPost, b.env.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return b.do(req)
}

// fixture is an account with an agent and people of each role.
type fixture struct {
	env    *apptest.Env
	agent  *people.Agent
	token  string
	owner  *people.Member // ada
	admin  *people.Member // ali
	member *people.Member // bob
	other  *people.Member // cy, a member too
}

func newFixture(t *testing.T, db apptest.Database) *fixture {
	return newFixtureOpened(t, db, nil)
}

// newFixtureOpened is newFixture that hands the opened app to opened before
// it serves (see apptest.StartOpened).
func newFixtureOpened(t *testing.T, db apptest.Database, opened func(*app.App)) *fixture {
	env := apptest.StartOpened(t, db, nil, opened)
	agent, token := env.Agent(env.Account.ID, "bot")
	return &fixture{
		env: env, agent: agent, token: token,
		owner:  env.Member(env.Account.ID, "ada", core.RoleOwner),
		admin:  env.Member(env.Account.ID, "ali", core.RoleAdmin),
		member: env.Member(env.Account.ID, "bob", core.RoleMember),
		other:  env.Member(env.Account.ID, "cy", core.RoleMember),
	}
}

// ask files a review ask of the fixture's agent, asked of askedOf.
func (f *fixture) ask(t *testing.T, title, askedOf string) *asks.Approval {
	t.Helper()
	return fileAsk(t, f.env, f.agent, title, askedOf)
}

func fileAsk(t *testing.T, env *apptest.Env, agent *people.Agent, title, askedOf string) *asks.Approval {
	t.Helper()
	a, err := env.Store.CreateApproval(context.Background(), models.NewAsk{
		Requester: agent, Kind: ask.KindReview, Title: title, Summary: "Read the design review.",
		ApproveMeans: "I merge the design", DenyMeans: "The design waits", AgentLabel: "design bot", AskedOf: askedOf,
		Payload: json.RawMessage(`{"review":{"url":"https://review.example.com/r/1"}}`),
	})
	if err != nil {
		t.Fatalf("create ask: %v", err)
	}
	return a
}

func parseHTML(t *testing.T, body string) *html.Node {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse page: %v", err)
	}
	return doc
}

// elements returns the elements of the page for which match is true.
func elements(n *html.Node, match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && match(n) {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return out
}

func attrOf(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func byAttr(key, val string) func(*html.Node) bool {
	return func(n *html.Node) bool { return attrOf(n, key) == val }
}

func textOf(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

// askLinks returns the ask ids a list page links to, in order.
func askLinks(t *testing.T, body string) []string {
	t.Helper()
	var ids []string
	for _, a := range elements(parseHTML(t, body), func(n *html.Node) bool {
		return n.Data == "a" && strings.HasPrefix(attrOf(n, "href"), "/approvals/")
	}) {
		ids = append(ids, strings.TrimPrefix(attrOf(a, "href"), "/approvals/"))
	}
	return ids
}

func sameIDs(got, want []string) bool {
	return fmt.Sprint(got) == fmt.Sprint(want)
}
