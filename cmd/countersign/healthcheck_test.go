package main

import (
	"maps"
	"net"
	"net/url"
	"strings"
	"testing"

	"github.com/countersign/countersign/apptest"
)

// withAddr is s's environment with COUNTERSIGN_ADDR set to addr.
func withAddr(s *server, addr string) map[string]string {
	env := maps.Clone(s.env)
	env["COUNTERSIGN_ADDR"] = addr
	return env
}

func TestHealthcheckSaysWhetherTheServiceIsReady(t *testing.T) {
	s := startServer(t, apptest.SQLite)
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(u.Host)
	for _, addr := range []string{u.Host, ":" + port, "0.0.0.0:" + port} {
		if r := cli(t, withAddr(s, addr), "healthcheck"); r.code != 0 || !strings.Contains(r.stdout, "ready: http://127.0.0.1:"+port+"/readyz") {
			t.Errorf("healthcheck with COUNTERSIGN_ADDR=%s:\n%s\nwant exit 0, ready", addr, r)
		}
	}
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
	if r := cli(t, withAddr(s, u.Host), "healthcheck"); r.code != 1 || !strings.Contains(r.stderr, "healthcheck:") {
		t.Errorf("healthcheck of a stopped service:\n%s\nwant exit 1", r)
	}
	if r := cli(t, withAddr(s, u.Host), "healthcheck", "now"); r.code != 2 {
		t.Errorf("healthcheck now:\n%s\nwant exit 2 (usage)", r)
	}
}

func TestHealthcheckReachesAServiceOnTLS(t *testing.T) {
	certFile, keyFile := selfSigned(t, t.TempDir(), "countersign-test")
	s := startServer(t, apptest.SQLite, map[string]string{
		"COUNTERSIGN_TLS_CERT": certFile, "COUNTERSIGN_TLS_KEY": keyFile, "COUNTERSIGN_BASE_URL": "https://localhost",
	})
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	if r := cli(t, withAddr(s, u.Host), "healthcheck"); r.code != 0 || !strings.Contains(r.stdout, "ready: https://") {
		t.Errorf("healthcheck of the service on TLS:\n%s\nwant exit 0, ready over https", r)
	}
}
