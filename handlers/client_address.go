package handlers

import (
	"net"
	"net/http"
	"strings"
)

// TrustProxies names the reverse proxies in front of the service
// (COUNTERSIGN_TRUSTED_PROXIES): for a connection from one of them, the
// client's address is taken from X-Forwarded-For. Without it every client
// behind a proxy would share the proxy's address, and one bucket of the
// per-address limits.
func (h *Handlers) TrustProxies(nets []*net.IPNet) { h.proxies = nets }

// clientAddress is the address a request comes from: the connection's, or,
// when the connection is from a trusted proxy, the right-most address of
// X-Forwarded-For that is not itself a trusted proxy. Entries left of that
// one are the client's own word and are never read.
func (h *Handlers) clientAddress(r *http.Request) string {
	addr := r.RemoteAddr
	if host, _, err := net.SplitHostPort(addr); err == nil {
		addr = host
	}
	if !h.trusted(addr) {
		return addr
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		hop := strings.TrimSpace(hops[i])
		if net.ParseIP(hop) == nil {
			return addr // a hop that is not an address: keep the proxy's
		}
		if !h.trusted(hop) {
			return hop
		}
	}
	return addr
}

// clientKey is the key of the per-address limits for a request: its client
// address (clientAddress), with an IPv6 address cut to its /64. One
// subscriber usually holds a whole /64 and may use any address in it, so
// counting each /128 apart would give one client 2^64 buckets.
func (h *Handlers) clientKey(r *http.Request) string {
	return addressKey(h.clientAddress(r))
}

// addressKey is the limits' key for addr: an IPv4 address (also one
// written as IPv4-mapped IPv6) as it is, an IPv6 address as its /64
// prefix, and anything that is not an address as it is.
func addressKey(addr string) string {
	ip := net.ParseIP(addr)
	switch {
	case ip == nil:
		return addr
	case ip.To4() != nil:
		return ip.To4().String()
	}
	return (&net.IPNet{IP: ip.Mask(net.CIDRMask(64, 128)), Mask: net.CIDRMask(64, 128)}).String()
}

// trusted says whether addr is one of the trusted proxies.
func (h *Handlers) trusted(addr string) bool {
	ip := net.ParseIP(addr)
	for _, n := range h.proxies {
		if ip != nil && n.Contains(ip) {
			return true
		}
	}
	return false
}
