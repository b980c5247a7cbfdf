package mcp

import (
	"fmt"
	"net"
	"net/http"
	"strings"
)

// guardRebinding keeps the SDK's DNS-rebinding protection — a request that
// reached a loopback address with a Host that is not loopback is refused
// (403) — but also lets through the Host of the public base URL. A TLS
// proxy on the same machine (Caddy, nginx) forwards to 127.0.0.1 with the
// public Host, which the SDK's own check refuses; a rebinding attacker's
// page cannot send the public Host from its own name.
func guardRebinding(publicHost string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && local != nil &&
			isLoopback(local.String()) && !isLoopback(r.Host) && !strings.EqualFold(r.Host, publicHost) {
			http.Error(w, fmt.Sprintf("Forbidden: invalid Host header %q", r.Host), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// isLoopback says whether a host or host:port is localhost or a loopback IP.
func isLoopback(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
