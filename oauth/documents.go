package oauth

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Limits of a Client ID Metadata Document fetch.
const (
	// DocumentMaxBytes is the largest metadata document read (the CIMD
	// draft suggests 5 KB).
	DocumentMaxBytes = 5 << 10
	// DocumentTimeout bounds one fetch, connection and body together.
	DocumentTimeout = 5 * time.Second
	// DocumentCacheLife is how long a document is kept when its answer sets
	// no max-age; documentCacheMax caps a max-age it sets.
	DocumentCacheLife = 5 * time.Minute
	documentCacheMax  = 24 * time.Hour
	documentCacheSize = 1000
)

// ErrPrivateAddress refuses a client_id whose host is, or resolves to, an
// address that is not public (loopback, private, link-local, CGNAT, …): the
// service must not be made to fetch from its own network.
var ErrPrivateAddress = errors.New("the client_id's host is not a public address")

// Documents fetches Client ID Metadata Documents: an https client_id is the
// URL of the client's metadata, which is fetched with an SSRF guard (https
// only, no redirects, public addresses only, checked at dial time so DNS
// cannot swap in a private one), a size and a time limit, and cached.
type Documents struct {
	guarded *http.Client

	mu      sync.Mutex
	allowed map[string]*http.Client // host:port → client, the explicit allowances
	cache   map[string]cachedDocument
	now     func() time.Time
}

type cachedDocument struct {
	client *Client
	until  time.Time
}

// NewDocuments makes the fetcher, with nothing allowed beyond public addresses.
func NewDocuments() *Documents {
	dialer := &net.Dialer{Timeout: DocumentTimeout, Control: refusePrivate}
	return &Documents{
		guarded: &http.Client{
			Timeout:       DocumentTimeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
			Transport: &http.Transport{
				DialContext: dialer.DialContext, TLSHandshakeTimeout: DocumentTimeout, ResponseHeaderTimeout: DocumentTimeout,
				MaxResponseHeaderBytes: 16 << 10, ForceAttemptHTTP2: true,
			},
		},
		allowed: map[string]*http.Client{},
		cache:   map[string]cachedDocument{},
		now:     time.Now,
	}
}

// Allow lets documents be fetched from hostPort (exactly that host and
// port) although it is not a public address, trusting roots for its
// certificate. It exists for tests, which serve documents from a local TLS
// server; the service itself never calls it, and nothing else is loosened.
func (d *Documents) Allow(hostPort string, roots *x509.CertPool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.allowed[strings.ToLower(hostPort)] = &http.Client{
		Timeout:       DocumentTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Transport:     &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}},
	}
}

// refusePrivate is the dialer's guard: it runs on the address actually
// dialled, after DNS.
func refusePrivate(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrPrivateAddress, address)
	}
	if !publicAddr(ap.Addr()) {
		return fmt.Errorf("%w: %s", ErrPrivateAddress, ap.Addr())
	}
	return nil
}

// notPublic are the ranges refused beside those netip classifies as
// private, loopback, link-local, multicast or unspecified.
var notPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // this network
	netip.MustParsePrefix("100.64.0.0/10"),   // shared address space (CGNAT)
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // documentation
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, and broadcast
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use NAT64 (RFC 8215)
	netip.MustParsePrefix("100::/64"),        // discard
	netip.MustParsePrefix("2001::/23"),       // IETF protocol assignments: Teredo, benchmarking, ORCHID
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("fec0::/10"),       // site-local (deprecated)
}

// IPv6 ranges whose last 32 bits, or bits 16 to 47 for 6to4, are an IPv4
// address that is reached through them.
var (
	ipv4Compatible = netip.MustParsePrefix("::/96")           // ::a.b.c.d (deprecated)
	ipv4Translated = netip.MustParsePrefix("::ffff:0:0:0/96") // ::ffff:0:a.b.c.d (SIIT)
	nat64          = netip.MustParsePrefix("64:ff9b::/96")    // well-known NAT64 prefix (RFC 6052)
	sixToFour      = netip.MustParsePrefix("2002::/16")       // 6to4 (RFC 3056)
)

// publicAddr says whether a may be fetched from: a global unicast address
// outside the private, shared (CGNAT), documentation and other special
// ranges. An IPv6 address that embeds an IPv4 address (IPv4-mapped,
// IPv4-compatible, SIIT, NAT64, 6to4) is judged by the IPv4 address it
// reaches, so ::ffff:0:10.0.0.1 or 64:ff9b::7f00:1 cannot name the
// service's own network.
func publicAddr(a netip.Addr) bool {
	a = a.Unmap()
	if a.Is6() {
		b := a.As16()
		switch {
		case ipv4Compatible.Contains(a), ipv4Translated.Contains(a), nat64.Contains(a):
			return publicAddr(netip.AddrFrom4([4]byte(b[12:16])))
		case sixToFour.Contains(a):
			return publicAddr(netip.AddrFrom4([4]byte(b[2:6])))
		}
	}
	if !a.IsGlobalUnicast() || a.IsPrivate() {
		return false
	}
	for _, p := range notPublic {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// IsDocumentURL says whether a client_id names a metadata document: an
// https URL with a path, as the CIMD draft requires.
func IsDocumentURL(clientID string) bool {
	u, err := url.Parse(clientID)
	return err == nil && u.Scheme == "https" && u.Host != "" && u.Path != "" && u.Path != "/"
}

// documentMetadata is the part of a client's metadata document read here.
type documentMetadata struct {
	ClientID                string   `json:"client_id"`
	ClientName              string   `json:"client_name"`
	RedirectURIs            []string `json:"redirect_uris"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	ClientSecret            string   `json:"client_secret"`
}

// Fetch returns the client a metadata document URL describes, from the
// cache while it lives.
func (d *Documents) Fetch(ctx context.Context, clientID string) (*Client, error) {
	u, err := url.Parse(clientID)
	if err != nil || !IsDocumentURL(clientID) || u.User != nil || u.Fragment != "" {
		return nil, fmt.Errorf("a client_id URL is https, with a path, and no user or fragment")
	}
	now := d.now()
	d.mu.Lock()
	cached, ok := d.cache[clientID]
	client := d.allowed[strings.ToLower(u.Host)]
	d.mu.Unlock()
	if ok && now.Before(cached.until) {
		return cached.client, nil
	}
	if client == nil {
		if ip, err := netip.ParseAddr(strings.Trim(u.Hostname(), "[]")); err == nil && !publicAddr(ip) {
			return nil, fmt.Errorf("%w: %s", ErrPrivateAddress, ip)
		}
		if h := strings.ToLower(u.Hostname()); h == "localhost" || strings.HasSuffix(h, ".localhost") {
			return nil, fmt.Errorf("%w: %s", ErrPrivateAddress, h)
		}
		client = d.guarded
	}
	ctx, cancel := context.WithTimeout(ctx, DocumentTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, clientID, nil)
	if err != nil {
		return nil, fmt.Errorf("fetch client metadata: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	res, err := client.Do(req)
	if err != nil {
		if errors.Is(err, ErrPrivateAddress) {
			return nil, fmt.Errorf("fetch client metadata: %w", ErrPrivateAddress)
		}
		return nil, fmt.Errorf("fetch client metadata: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetch client metadata: HTTP %d", res.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(res.Body, DocumentMaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("fetch client metadata: %w", err)
	}
	if len(body) > DocumentMaxBytes {
		return nil, fmt.Errorf("the client metadata document is over %d bytes", DocumentMaxBytes)
	}
	var m documentMetadata
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("the client metadata document is not JSON: %w", err)
	}
	switch {
	case m.ClientID != clientID:
		return nil, fmt.Errorf("the client metadata document names client_id %q, not its own URL", m.ClientID)
	case len(m.RedirectURIs) == 0:
		return nil, fmt.Errorf("the client metadata document lists no redirect_uris")
	case m.ClientSecret != "" || (m.TokenEndpointAuthMethod != "" && m.TokenEndpointAuthMethod != "none"):
		return nil, fmt.Errorf("a client metadata document client is public: token_endpoint_auth_method none, no secret")
	}
	for _, r := range m.RedirectURIs {
		if err := checkRedirectURI(r); err != nil {
			return nil, err
		}
	}
	name := cleanName(m.ClientName)
	if name == "" {
		name = u.Host
	}
	c := &Client{ID: clientID, Name: name, RedirectURIs: m.RedirectURIs, Verified: true, Host: u.Host}
	d.mu.Lock()
	if len(d.cache) >= documentCacheSize {
		clear(d.cache)
	}
	d.cache[clientID] = cachedDocument{client: c, until: now.Add(cacheLife(res.Header.Get("Cache-Control")))}
	d.mu.Unlock()
	return c, nil
}

// cacheLife reads max-age from Cache-Control (no-store: not kept), capped.
func cacheLife(cc string) time.Duration {
	for _, part := range strings.Split(cc, ",") {
		part = strings.ToLower(strings.TrimSpace(part))
		if part == "no-store" || part == "no-cache" {
			return 0
		}
		if v, ok := strings.CutPrefix(part, "max-age="); ok {
			if n, err := strconv.Atoi(v); err == nil && n >= 0 {
				return min(time.Duration(n)*time.Second, documentCacheMax)
			}
		}
	}
	return DocumentCacheLife
}
