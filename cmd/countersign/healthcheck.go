package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	neturl "net/url"
	"time"

	"github.com/countersign/countersign/app"
)

const healthcheckUsage = "usage: countersign healthcheck   exit 0 when the service at COUNTERSIGN_ADDR answers /readyz, 1 when not"

// healthcheckCommand asks the service on this machine, at COUNTERSIGN_ADDR,
// whether it is ready (GET /readyz), for a container's HEALTHCHECK: the
// distroless image has no curl. It answers nil when ready; any other answer
// is an error, so the command exits 1.
func healthcheckCommand(ctx context.Context, cfg app.Config, args []string, out io.Writer) error {
	if len(args) > 0 {
		return usageError{healthcheckUsage}
	}
	url := readyURL(cfg)
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	// The probe asks its own process over loopback whether it is ready: the
	// certificate is for the public name, not for 127.0.0.1, and who answers
	// is not in doubt, so it is not verified. The name is sent all the same:
	// the ACME manager picks the certificate by it.
	var serverName string
	if u, err := neturl.Parse(cfg.BaseURL); err == nil {
		serverName = u.Hostname()
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{ServerName: serverName, InsecureSkipVerify: true}}}
	res, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 4096))
	if err != nil {
		return fmt.Errorf("healthcheck: read %s: %w", url, err)
	}
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: %s answered %s: %s", url, res.Status, body)
	}
	fmt.Fprintf(out, "ready: %s\n", url)
	return nil
}

// readyURL is /readyz on COUNTERSIGN_ADDR, reached over loopback when the
// address names no host or every host.
func readyURL(cfg app.Config) string {
	host, port, err := net.SplitHostPort(cfg.Addr)
	if err != nil { // LoadConfig has checked it
		host, port = "", "8080"
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	scheme := "http"
	if cfg.TLS() {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort(host, port) + "/readyz"
}
