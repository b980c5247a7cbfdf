package channels

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"time"
)

// The hosts a shared channel may post to, by kind: Teams' Workflows
// webhooks live on Microsoft's hosts; ntfy and a generic webhook on any
// public https host (ntfy's is the server configured for the channel).
var teamsHosts = []string{"logic.azure.com", "powerplatform.com", "webhook.office.com"}

// Guard keeps the service's outgoing posts to public hosts: a private,
// loopback or link-local address is refused at connection time (after the
// name is resolved, so a name that points inside is refused too), unless
// its host:port is allowed (COUNTERSIGN_CHANNEL_PRIVATE_HOSTS).
type Guard struct {
	AllowPrivate []string // host:port pairs, or hosts, a post may reach though private
}

// Client is an HTTP client whose connections pass the guard.
func (g Guard) Client(timeout time.Duration) *http.Client {
	d := &net.Dialer{Timeout: 10 * time.Second, Control: g.control}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = d.DialContext
	t.Proxy = nil // a proxy would connect for us, past the guard
	return &http.Client{Transport: t, Timeout: timeout, CheckRedirect: func(*http.Request, []*http.Request) error {
		return errNoRedirects
	}}
}

// errNoRedirects is the guard's refusal of a redirect, which could lead a
// post anywhere.
var errNoRedirects = errors.New("a channel does not follow redirects")

// privateAddress is the guard's refusal of a connection to a private
// address that is not allowed.
type privateAddress struct{ address string }

func (e *privateAddress) Error() string {
	return e.address + " is a private address: a channel posts to public hosts only (allow it with COUNTERSIGN_CHANNEL_PRIVATE_HOSTS)"
}

// refusedByGuard says whether err is the guard's refusal: the same post
// would meet it again, so no retry mends it.
func refusedByGuard(err error) bool {
	var private *privateAddress
	return errors.As(err, &private) || errors.Is(err, errNoRedirects)
}

// control refuses a connection to a private address that is not allowed.
func (g Guard) control(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	ip := net.ParseIP(host)
	if ip == nil || !private(ip) || g.allowed(address) {
		return nil
	}
	return &privateAddress{address: address}
}

func (g Guard) allowed(address string) bool {
	host, _, _ := net.SplitHostPort(address)
	return slices.Contains(g.AllowPrivate, address) || slices.Contains(g.AllowPrivate, host)
}

func private(ip net.IP) bool {
	return ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsUnspecified() || ip.IsMulticast()
}

// CheckURL checks the URL a shared channel of kind posts to: https (http
// only to an allowed private host), no user info, and for Teams one of
// Microsoft's Workflows hosts. It resolves nothing: the guard checks the
// address when the post connects.
func (g Guard) CheckURL(kind, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil || u.Fragment != "" {
		return fmt.Errorf("%q is not an absolute URL without a user or a fragment", clipURL(raw))
	}
	allowedPrivate := g.allowed(u.Host) || slices.Contains(g.AllowPrivate, u.Hostname())
	if u.Scheme != "https" && !(u.Scheme == "http" && allowedPrivate) {
		return fmt.Errorf("%s must be https", clipURL(raw))
	}
	host := strings.ToLower(u.Hostname())
	if kind == "teams" && !allowedPrivate && !slices.ContainsFunc(teamsHosts, func(h string) bool { return host == h || strings.HasSuffix(host, "."+h) }) {
		return fmt.Errorf("%s is not a Teams Workflows webhook (a host under %s)", host, strings.Join(teamsHosts, ", "))
	}
	if ip := net.ParseIP(host); ip != nil && private(ip) && !allowedPrivate {
		return fmt.Errorf("%s is a private address: a channel posts to public hosts only (allow it with COUNTERSIGN_CHANNEL_PRIVATE_HOSTS)", host)
	}
	return nil
}

// clipURL shows a URL without its path and query, which may hold a secret.
func clipURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "the URL"
	}
	return u.Scheme + "://" + u.Host + "/…"
}

// post sends body to raw with headers through c, and sorts the answer.
func post(ctx context.Context, c *http.Client, raw string, body []byte, headers map[string]string, what string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, raw, strings.NewReader(string(body)))
	if err != nil {
		return nil, &Permanent{Err: err}
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := c.Do(req)
	if err != nil {
		if refusedByGuard(err) {
			return nil, &Permanent{Err: fmt.Errorf("%s: %w", what, err)}
		}
		return nil, &RetryAfter{Err: fmt.Errorf("%s: %w", what, err)}
	}
	if res.StatusCode < 200 || res.StatusCode > 299 {
		res.Body.Close()
		return nil, httpRefusal(res, what)
	}
	return res, nil
}
