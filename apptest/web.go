package apptest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/countersign/countersign/ask"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
)

// StartWeb runs the service on db for browser-like tests: it listens first,
// then sets COUNTERSIGN_BASE_URL to http://localhost:<port> so that WebAuthn
// origins and the RP ID ("localhost": an RP ID cannot be an IP address) are
// those of the running server. Env.URL is that base URL.
func StartWeb(t testing.TB, db Database, overrides map[string]string) *Env {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	o := maps.Clone(overrides)
	if o == nil {
		o = map[string]string{}
	}
	o["COUNTERSIGN_BASE_URL"] = fmt.Sprintf("http://localhost:%d", port)
	cfg := Config(t, db, o)

	return serve(t, cfg, srv, Logger(), nil)
}

// Browser is one person's browser on the service: a cookie jar, the CSRF
// token its pages carry, and a software passkey.
type Browser struct {
	t       testing.TB
	Origin  string // the service's base URL: the page origin WebAuthn sees
	HTTP    *http.Client
	CSRF    string
	Passkey *Authenticator
	// CheckCode, when set, is the check code of an ask as its agent shows
	// it: Challenge picks it to approve. The browsers an Env makes read it
	// from the store, as a person who looks at both screens does; a test
	// sets another to pick a wrong one.
	CheckCode func(approvalID string) string
}

// Browser opens a new browser on the service, with a new passkey, and reads
// its CSRF token from the sign-in page.
func (e *Env) Browser() *Browser {
	b := NewBrowser(e.t, e.URL)
	b.CheckCode = e.CheckCode
	return b
}

// Owner is a browser of a new owner of the default account, named subject,
// who joined through an invite with a software passkey and is signed in.
func (e *Env) Owner(subject string) *Browser {
	e.t.Helper()
	invite, _, err := e.Store.CreateInvite(context.Background(), people.NewInvite{AccountID: e.Account.ID, Role: core.RoleOwner, By: people.OperatorInviter("test")})
	if err != nil {
		e.t.Fatal(err)
	}
	b := e.Browser()
	if r := b.AcceptInvite(invite, subject); r.Status != http.StatusOK {
		e.t.Fatalf("%s accepts the invite: %s", subject, r)
	}
	return b
}

// CheckCode is the check code the agent of ask id was answered, or "" for
// an ask that needs none.
func (e *Env) CheckCode(id string) string {
	e.t.Helper()
	var a asks.Approval
	if err := e.Store.DB().Where("id = ?", id).Take(&a).Error; err != nil {
		return "" // no such ask: the service refuses it by itself
	}
	if !ask.NeedsCheckCode(a.Kind, a.Payload) {
		return ""
	}
	return ask.CheckCode(a.PayloadSHA256)
}

// NewBrowser opens a new browser on the service at origin.
func NewBrowser(t testing.TB, origin string) *Browser {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	b := &Browser{
		t:      t,
		Origin: origin,
		HTTP: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		}},
		Passkey: NewAuthenticator(),
	}
	b.LoadCSRF()
	return b
}

// For returns the browser reporting to t (a subtest): same cookies, same passkey.
func (b *Browser) For(t testing.TB) *Browser {
	c := *b
	c.t = t
	return &c
}

var csrfMeta = regexp.MustCompile(`<meta name="csrf-token" content="([^"]+)"`)

// LoadCSRF reads the CSRF token from <meta name="csrf-token"> of the sign-in page.
func (b *Browser) LoadCSRF() {
	b.t.Helper()
	res, err := b.HTTP.Get(b.Origin + "/signin")
	if err != nil {
		b.t.Fatalf("GET /signin: %v", err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	m := csrfMeta.FindSubmatch(body)
	if res.StatusCode != http.StatusOK || m == nil {
		b.t.Fatalf("GET /signin: HTTP %d without a csrf-token meta tag:\n%s", res.StatusCode, body)
	}
	b.CSRF = string(m[1])
}

// Cookie returns the value of the browser's cookie name ("" when it has none).
func (b *Browser) Cookie(name string) string {
	u, _ := url.Parse(b.Origin + "/")
	for _, c := range b.HTTP.Jar.Cookies(u) {
		if c.Name == name {
			return c.Value
		}
	}
	return ""
}

// Session is the session cookie's value.
func (b *Browser) Session() string { return b.Cookie("cs_session") }

// Response is an HTTP answer, read.
type Response struct {
	Status int
	Raw    []byte
	Body   map[string]any // the JSON object answered, when it was one
	Header http.Header
}

// Code is the error code of a refusal ({"error": CODE}).
func (r Response) Code() string { s, _ := r.Body["error"].(string); return s }

// Field is the field a refusal names.
func (r Response) Field() string { s, _ := r.Body["field"].(string); return s }

// String renders the response for failure messages.
func (r Response) String() string {
	const max = 2000
	raw := r.Raw
	if len(raw) > max {
		raw = raw[:max]
	}
	return fmt.Sprintf("HTTP %d %s", r.Status, raw)
}

// Ceremony reads the {ceremony, options} answer that starts a passkey ceremony.
func (r Response) Ceremony() (id string, options json.RawMessage) {
	var v struct {
		Ceremony string          `json:"ceremony"`
		Options  json.RawMessage `json:"options"`
	}
	_ = json.Unmarshal(r.Raw, &v)
	return v.Ceremony, v.Options
}

// Get fetches path as a script would (Accept: application/json).
func (b *Browser) Get(path string) Response {
	b.t.Helper()
	req, err := http.NewRequest(http.MethodGet, b.Origin+path, nil)
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	return b.do(req)
}

// Post sends body as JSON with the browser's CSRF token.
func (b *Browser) Post(path string, body any) Response {
	b.t.Helper()
	return b.PostWithToken(path, body, b.CSRF)
}

// PostWithToken sends body as JSON with csrf in X-CSRF-Token ("" sends none).
func (b *Browser) PostWithToken(path string, body any, csrf string) Response {
	b.t.Helper()
	raw, ok := body.([]byte)
	if !ok {
		var err error
		if raw, err = json.Marshal(body); err != nil {
			b.t.Fatal(err)
		}
	}
	req, err := http.NewRequest(http.MethodPost, b.Origin+path, bytes.NewReader(raw))
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Origin", b.Origin)
	if csrf != "" {
		req.Header.Set("X-CSRF-Token", csrf)
	}
	return b.do(req)
}

// Page fetches path as a person's browser would (Accept: text/html).
func (b *Browser) Page(path string) Response {
	b.t.Helper()
	req, err := http.NewRequest(http.MethodGet, b.Origin+path, nil)
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Accept", "text/html")
	return b.do(req)
}

// PostForm submits form as a page's form would: urlencoded, from the
// service's origin, with the browser's CSRF token in _csrf. Redirects are
// not followed: the answer's Location header says where it sends the browser.
func (b *Browser) PostForm(path string, form url.Values) Response {
	b.t.Helper()
	f := url.Values{"_csrf": {b.CSRF}}
	for k, v := range form {
		f[k] = v
	}
	req, err := http.NewRequest(http.MethodPost, b.Origin+path, strings.NewReader(f.Encode()))
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "text/html")
	req.Header.Set("Origin", b.Origin)
	return b.do(req)
}

func (b *Browser) do(req *http.Request) Response {
	b.t.Helper()
	res, err := b.HTTP.Do(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		b.t.Fatalf("%s %s: read: %v", req.Method, req.URL.Path, err)
	}
	if token := res.Header.Get("X-CSRF-Token"); token != "" {
		b.CSRF = token // a new session: the CSRF token is bound to it
	}
	r := Response{Status: res.StatusCode, Raw: raw, Header: res.Header}
	_ = json.Unmarshal(raw, &r.Body)
	return r
}

// ceremonyReply is what a page posts to finish a passkey ceremony.
type ceremonyReply struct {
	Ceremony   string          `json:"ceremony"`
	Credential json.RawMessage `json:"credential"`
}

// AcceptInvite opens the invite with token, makes a passkey for subject and
// finishes the registration; the answer is that of the finish call, or of
// the begin call when it refused.
func (b *Browser) AcceptInvite(token, subject string) Response {
	b.t.Helper()
	begin := b.Post("/invite/"+token+"/begin", map[string]string{
		"subject": subject, "display_name": subject, "device_name": "test passkey",
	})
	if begin.Status != http.StatusOK {
		return begin
	}
	id, options := begin.Ceremony()
	credential, err := b.Passkey.Register(b.Origin, options)
	if err != nil {
		b.t.Fatalf("register a passkey: %v", err)
	}
	return b.Post("/invite/"+token+"/finish", ceremonyReply{Ceremony: id, Credential: credential})
}

// AcceptRoleInvite accepts an add-role invite by signing in with the
// browser's passkey; the answer is that of the finish call, or of the begin
// call when it refused.
func (b *Browser) AcceptRoleInvite(token string) Response {
	b.t.Helper()
	begin := b.Post("/invite/"+token+"/accept/begin", map[string]string{})
	if begin.Status != http.StatusOK {
		return begin
	}
	id, options := begin.Ceremony()
	return b.Post("/invite/"+token+"/accept/finish", ceremonyReply{Ceremony: id, Credential: b.Sign(options)})
}

// SignIn signs in with the browser's passkey (discoverable login).
func (b *Browser) SignIn() Response {
	b.t.Helper()
	begin := b.Post("/signin/begin", map[string]string{})
	if begin.Status != http.StatusOK {
		return begin
	}
	id, options := begin.Ceremony()
	return b.Post("/signin/finish", ceremonyReply{Ceremony: id, Credential: b.Sign(options)})
}

// Challenge asks for the signature prompt of one decision on an ask.
func (b *Browser) Challenge(approvalID, decision, question string) Response {
	b.t.Helper()
	body := map[string]string{"decision": decision, "question": question}
	if decision == string(asks.VerdictReply) { // the text is the reply's
		body = map[string]string{"decision": decision, "reply": question}
	}
	if decision == string(asks.VerdictApprove) && b.CheckCode != nil {
		if code := b.CheckCode(approvalID); code != "" {
			body["check_code"] = code
		}
	}
	return b.Post("/approvals/"+approvalID+"/challenge", body)
}

// ChallengeEdited asks for the signature prompt of an approve of the ask's
// payload as the person edited it.
func (b *Browser) ChallengeEdited(approvalID string, edited any) Response {
	b.t.Helper()
	body := map[string]any{"decision": string(asks.VerdictApproveEdited), "edited_payload": edited}
	if b.CheckCode != nil {
		if code := b.CheckCode(approvalID); code != "" {
			body["check_code"] = code
		}
	}
	return b.Post("/approvals/"+approvalID+"/challenge", body)
}

// DecideEdited approves the ask's payload as edited: challenge, signature,
// decide. The answer is that of the decide call, or of the challenge when
// it refused.
func (b *Browser) DecideEdited(approvalID string, edited any) Response {
	b.t.Helper()
	ch := b.ChallengeEdited(approvalID, edited)
	if ch.Status != http.StatusOK {
		return ch
	}
	id, options := ch.Ceremony()
	return b.DecideWith(approvalID, id, b.Sign(options))
}

// Sign answers request options with the browser's passkey.
func (b *Browser) Sign(options json.RawMessage) json.RawMessage {
	b.t.Helper()
	credential, err := b.Passkey.Assert(b.Origin, options)
	if err != nil {
		b.t.Fatalf("sign with the passkey: %v", err)
	}
	return credential
}

// DecideWith posts a signed decision for the ask under ceremony.
func (b *Browser) DecideWith(approvalID, ceremony string, credential []byte) Response {
	b.t.Helper()
	return b.Post("/approvals/"+approvalID+"/decide", ceremonyReply{Ceremony: ceremony, Credential: credential})
}

// Decide answers an ask: challenge, signature, decide. The answer is that
// of the decide call, or of the challenge when it refused.
func (b *Browser) Decide(approvalID, decision, question string) Response {
	b.t.Helper()
	ch := b.Challenge(approvalID, decision, question)
	if ch.Status != http.StatusOK {
		return ch
	}
	id, options := ch.Ceremony()
	return b.DecideWith(approvalID, id, b.Sign(options))
}
