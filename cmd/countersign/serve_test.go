package main

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
)

// waitLog polls the server's log until re matches it, for up to 20 s.
func waitLog(s *server, re *regexp.Regexp) []string {
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := re.FindStringSubmatch(s.log.String()); m != nil {
			return m
		}
	}
	return nil
}

// With COUNTERSIGN_ADDR on a port of its own and no COUNTERSIGN_BASE_URL,
// the setup link leads to that port, where it opens the setup page, and the
// start says the base URL was made from the address.
func TestServeMakesItsBaseURLFromItsAddressWhenUnset(t *testing.T) {
	s := startServer(t, apptest.SQLite) // COUNTERSIGN_ADDR=127.0.0.1:0, no base URL
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	m := waitLog(s, setupLink)
	if m == nil {
		t.Fatalf("no setup link in the log:\n%s", s.log)
	}
	want := "http://localhost:" + u.Port() + "/invite/"
	if !strings.HasPrefix(m[1], want) {
		t.Fatalf("the setup link is %s, want it under %s", m[1], want)
	}
	if !regexp.MustCompile(`msg="countersign listening" .*base_url=http://localhost:` + u.Port() + ` base_url_from="COUNTERSIGN_ADDR`).MatchString(s.log.String()) {
		t.Errorf("the listening line does not say the base URL was made from COUNTERSIGN_ADDR:\n%s", s.log)
	}
	res, err := http.Get(m[1])
	if err != nil {
		t.Fatalf("open the setup link: %v", err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Errorf("the setup link answers HTTP %d, want the setup page", res.StatusCode)
	}

	given := startServer(t, apptest.SQLite, map[string]string{"COUNTERSIGN_BASE_URL": "https://approvals.example.com"})
	if m := waitLog(given, setupLink); m == nil || !strings.HasPrefix(m[1], "https://approvals.example.com/invite/") {
		t.Errorf("with a base URL given the setup link is %v, want it under that URL", m)
	}
	if strings.Contains(given.log.String(), "base_url_from") {
		t.Errorf("a base URL given is said to be made from the address:\n%s", given.log)
	}
}

var (
	metricsListening = regexp.MustCompile(`msg="metrics listening" addr=(\S+)`)
	metricsWarning   = regexp.MustCompile(`level=WARN msg="metrics are served to other machines`)
)

// A bare COUNTERSIGN_METRICS_ADDR port listens on loopback only and warns of
// nothing; an address every interface answers on is kept, with a warning.
func TestMetricsListenOnLoopbackUnlessAnAddressSaysOtherwise(t *testing.T) {
	for _, tc := range []struct {
		addr     string
		loopback bool
	}{
		{":0", true},
		{"127.0.0.1:0", true},
		{"0.0.0.0:0", false},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			s := startServer(t, apptest.SQLite, map[string]string{"COUNTERSIGN_METRICS_ADDR": tc.addr})
			m := metricsListening.FindStringSubmatch(s.log.String())
			if m == nil {
				t.Fatalf("no metrics listener in the log:\n%s", s.log)
			}
			if got := strings.HasPrefix(m[1], "127.0.0.1:"); got != tc.loopback {
				t.Errorf("metrics listen on %s, want loopback only: %t", m[1], tc.loopback)
			}
			if warned := metricsWarning.MatchString(s.log.String()); warned == tc.loopback {
				t.Errorf("warned that others reach the metrics: %t, want %t\n%s", warned, !tc.loopback, s.log)
			}
			res, err := http.Get("http://" + m[1] + "/metrics")
			if err != nil {
				t.Fatalf("scrape: %v", err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				t.Errorf("/metrics answers HTTP %d", res.StatusCode)
			}
		})
	}
}
