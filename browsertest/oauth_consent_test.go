package browsertest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"golang.org/x/oauth2"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
	"github.com/countersign/countersign/oauth"
)

// consentRig is a signed-in owner (ada) in Chromium, a client registered by
// dynamic registration, and the client's redirect URI, which records where
// the browser lands.
type consentRig struct {
	s        *service
	client   string
	redirect string
	landed   chan url.Values
}

func newConsentRig(t *testing.T) *consentRig {
	t.Helper()
	s := start(t, apptest.SQLite)
	s.signUp("ada", core.RoleOwner)
	r := &consentRig{s: s, landed: make(chan url.Values, 4)}
	host := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/callback" {
			http.NotFound(w, req)
			return
		}
		r.landed <- req.URL.Query()
		// An icon of its own, so the browser asks the host for no /favicon.ico
		// (whose 404 the console would report).
		fmt.Fprint(w, `<!doctype html><title>Back at the host</title><link rel="icon" href="data:,"><h1>Back at the host</h1>`)
	}))
	t.Cleanup(host.Close)
	r.redirect = host.URL + "/callback"
	raw, _ := json.Marshal(map[string]any{"client_name": "Consent Host", "redirect_uris": []string{r.redirect}})
	res, err := http.Post(s.env.URL+oauth.RegisterPath, "application/json", strings.NewReader(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out struct {
		ClientID string `json:"client_id"`
	}
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil || out.ClientID == "" {
		t.Fatalf("register: HTTP %d %v", res.StatusCode, err)
	}
	r.client = out.ClientID
	return r
}

// authorizePath is an authorization request of the client for every scope,
// with extra appended to its query as a link may.
func (r *consentRig) authorizePath(verifier, extra string) string {
	q := url.Values{
		"response_type": {"code"}, "client_id": {r.client}, "redirect_uri": {r.redirect}, "state": {"st-9"},
		"code_challenge": {oauth2.S256ChallengeFromVerifier(verifier)}, "code_challenge_method": {"S256"},
		"resource": {r.s.env.URL + "/mcp"}, "scope": {strings.Join(people.AllScopes, " ")},
	}
	return oauth.AuthorizePath + "?" + q.Encode() + extra
}

// land waits for the browser to reach the client's redirect URI.
func (r *consentRig) land() url.Values {
	select {
	case q := <-r.landed:
		return q
	case <-time.After(StepTimeout):
		r.s.page.Fatalf("the browser never reached the client's redirect URI")
		return nil
	}
}

// exchange spends a code as the client does and returns the scope granted.
func (r *consentRig) exchange(verifier, code string) string {
	r.s.t.Helper()
	res, err := http.PostForm(r.s.env.URL+oauth.TokenPath, url.Values{"grant_type": {"authorization_code"}, "client_id": {r.client},
		"redirect_uri": {r.redirect}, "code_verifier": {verifier}, "code": {code}})
	if err != nil {
		r.s.t.Fatal(err)
	}
	defer res.Body.Close()
	var body map[string]any
	_ = json.NewDecoder(res.Body).Decode(&body)
	if res.StatusCode != http.StatusOK {
		r.s.t.Fatalf("exchange: HTTP %d %v", res.StatusCode, body)
	}
	scope, _ := body["scope"].(string)
	return scope
}

// connections counts the clients connected and the codes issued.
func (r *consentRig) connections() (connected, codes int64) {
	r.s.env.Store.DB().Table("oauth_connections").Count(&connected)
	r.s.env.Store.DB().Table("oauth_codes").Count(&codes)
	return connected, codes
}

// A link may carry decision=approve and grants of its own: the consent form
// carries only the authorization request, so Cancel denies and the grant
// holds only the boxes the person left ticked.
func TestALinkCannotChooseTheDecisionOrTheGrantsOnTheConsentPage(t *testing.T) {
	r := newConsentRig(t)
	p := r.s.page
	const smuggled = "&decision=approve&grant=mcp:write&grant=approvals:write"

	t.Run("Cancel sends access_denied and connects nothing", func(t *testing.T) {
		p.Go(r.authorizePath(oauth2.GenerateVerifier(), smuggled))
		p.WaitVisible("[data-testid=consent-deny]")
		p.Click("[data-testid=consent-deny]")
		q := r.land()
		if q.Get("error") != "access_denied" || q.Get("code") != "" || q.Get("state") != "st-9" {
			t.Errorf("the client got %v, want access_denied with its state and no code", q)
		}
		if connected, codes := r.connections(); connected != 0 || codes != 0 {
			t.Errorf("%d connections and %d codes after Cancel, want none", connected, codes)
		}
	})
	t.Run("the grant holds only the scopes left ticked", func(t *testing.T) {
		verifier := oauth2.GenerateVerifier()
		p.Go(r.authorizePath(verifier, smuggled))
		p.WaitVisible("[data-testid=consent-approve]")
		p.Click(`[data-testid="scope-mcp:write"]`)
		p.Click(`[data-testid="scope-approvals:write"]`)
		p.Click("[data-testid=consent-approve]")
		q := r.land()
		if q.Get("code") == "" {
			t.Fatalf("the client got %v, want a code", q)
		}
		if scope := r.exchange(verifier, q.Get("code")); scope != "mcp:read approvals:read" {
			t.Errorf("scope granted = %q, want only the ticked mcp:read approvals:read", scope)
		}
		a, err := r.s.env.Store.AgentByName(t.Context(), r.s.env.Account.ID, "Consent-Host")
		if err != nil || a.Scopes != "mcp:read approvals:read" {
			t.Errorf("the client's agent: %+v %v, want mcp:read approvals:read", a, err)
		}
	})
}

// A grant that opens no tool is refused at the field, which says why; the
// person's choice is kept and nothing is connected until they fix it.
func TestTheConsentPageRequiresAToolScope(t *testing.T) {
	r := newConsentRig(t)
	p := r.s.page
	r.s.expected = func(e string) bool { return strings.Contains(e, "status of 400") } // the refusal, on purpose
	verifier := oauth2.GenerateVerifier()
	p.Go(r.authorizePath(verifier, ""))
	p.WaitVisible("[data-testid=consent-approve]")
	if rule := p.Text("fieldset [data-testid=scope-rule]"); !strings.Contains(rule, "tools need") {
		t.Errorf("the scopes field does not say which scopes to keep and why: %q", rule)
	}
	// A scope's name is one token: on the narrowest phone at 200 % text it
	// never breaks inside ("approvals:wr" / "ite").
	p.Do("emulate a 320 px phone", chromedp.EmulateViewport(320, 640, chromedp.EmulateScale(2), chromedp.EmulateMobile, chromedp.EmulateTouch))
	Eval[bool](p, `document.documentElement.style.fontSize = "200%", true`)
	if broken := Eval[[]string](p, `[...document.querySelectorAll("fieldset label code")].filter(c => c.getClientRects().length > 1).map(c => c.textContent)`); len(broken) > 0 || p.Count("fieldset label code") != len(people.AllScopes) {
		t.Errorf("scope names broken across lines at 320 px: %q (of %d names)", broken, p.Count("fieldset label code"))
	}
	fitsThePhone(p, "the consent page")
	Eval[bool](p, `document.documentElement.style.fontSize = "", true`)
	p.Click(`[data-testid="scope-approvals:read"]`)
	p.Click(`[data-testid="scope-approvals:write"]`)
	p.ClickToLoad("[data-testid=consent-approve]", oauth.AuthorizePath, "fieldset [data-testid=refusal]")
	if msg := p.Text("fieldset [data-testid=refusal]"); !strings.Contains(msg, "without one it connects but can do nothing") {
		t.Errorf("the refusal at the field = %q, want it to say why", msg)
	}
	if Eval[string](p, `document.querySelector("fieldset").getAttribute("aria-describedby")`) != "scope-rule" {
		t.Error("the scopes field is not described by its rule")
	}
	for scope, ticked := range map[string]bool{"mcp:read": true, "mcp:write": true, "approvals:read": false, "approvals:write": false} {
		if got := Eval[bool](p, fmt.Sprintf(`document.querySelector('[data-testid="scope-%s"]').checked`, scope)); got != ticked {
			t.Errorf("%s ticked = %v after the refusal, want the person's choice (%v)", scope, got, ticked)
		}
	}
	if connected, codes := r.connections(); connected != 0 || codes != 0 {
		t.Errorf("%d connections and %d codes after the refusal, want none", connected, codes)
	}
	select {
	case q := <-r.landed:
		t.Fatalf("the browser went to the client with %v", q)
	default:
	}
	p.Click(`[data-testid="scope-approvals:read"]`)
	p.Click("[data-testid=consent-approve]")
	q := r.land()
	if scope := r.exchange(verifier, q.Get("code")); scope != "mcp:read mcp:write approvals:read" {
		t.Errorf("scope granted = %q, want mcp:read mcp:write approvals:read", scope)
	}
}
