package handlers_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
)

// countRows counts the rows of table.
func countRows(t *testing.T, env *apptest.Env, table string) int64 {
	t.Helper()
	var n int64
	if err := env.Store.DB().Table(table).Count(&n).Error; err != nil {
		t.Fatalf("count %s: %v", table, err)
	}
	return n
}

// 2,000 passkey sign-ins started from one address: past a small burst they
// (and invite prompts from there) are refused with 429 and Retry-After, the ceremonies kept stay few, and
// the sweep deletes them, and expired decision challenges, once they expire.
func TestCeremonyStartsAreCappedPerAddressAndSwept(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		env := apptest.StartWeb(t, db, map[string]string{"COUNTERSIGN_SWEEP_EVERY": "100ms"})
		var skew atomic.Int64
		env.Store.SetClock(func() time.Time { return time.Now().Add(time.Duration(skew.Load())) })
		b := env.Browser()
		statuses := map[int]int{}
		for range 2000 {
			r := b.Post("/signin/begin", map[string]string{})
			statuses[r.Status]++
			if r.Status == http.StatusTooManyRequests {
				if r.Code() != "TOO_MANY_REQUESTS" {
					t.Fatalf("a refused start: %s", r)
				}
			}
		}
		if statuses[http.StatusOK] < 1 || statuses[http.StatusOK] > 40 || statuses[http.StatusTooManyRequests] < 1960 || len(statuses) != 2 {
			t.Fatalf("2,000 starts answered %v, want at most 40 begun and the rest refused with 429", statuses)
		}
		req, _ := http.NewRequest(http.MethodPost, env.URL+"/signin/begin", nil)
		req.Header.Set("X-CSRF-Token", b.CSRF)
		res, err := b.HTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if secs, err := strconv.Atoi(res.Header.Get("Retry-After")); res.StatusCode != http.StatusTooManyRequests || err != nil || secs < 1 || secs > 60 {
			t.Fatalf("a start past the cap: HTTP %d, Retry-After %q, want 429 with a wait of 1 to 60 s", res.StatusCode, res.Header.Get("Retry-After"))
		}
		if r := b.Post("/invite/some-invite/begin", map[string]string{"subject": "eve"}); r.Status != http.StatusTooManyRequests {
			t.Fatalf("an invite's passkey prompt from the same address: %s, want 429: the cap is shared", r)
		}
		if n := countRows(t, env, "ceremonies"); n != int64(statuses[http.StatusOK]) {
			t.Fatalf("%d ceremonies kept, want the %d begun", n, statuses[http.StatusOK])
		}

		// A decision challenge that will expire as well.
		agent, _ := env.Agent(env.Account.ID, "bot")
		ada := env.Member(env.Account.ID, "ada", core.RoleOwner)
		ask := fileAsk(t, env, agent, "Sweep", "ada")
		nonce := make([]byte, 32)
		_, _ = rand.Read(nonce)
		if err := env.Store.IssueChallenge(context.Background(), ada, ask, "approve", nonce); err != nil {
			t.Fatalf("issue challenge: %v", err)
		}
		time.Sleep(300 * time.Millisecond) // sweeps run: nothing has expired yet
		if c, d := countRows(t, env, "ceremonies"), countRows(t, env, "decision_challenges"); c == 0 || d != 1 {
			t.Fatalf("before expiry the sweep left %d ceremonies and %d challenges, want all", c, d)
		}
		skew.Store(int64(6 * time.Minute))
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			c, d := countRows(t, env, "ceremonies"), countRows(t, env, "decision_challenges")
			if c == 0 && d == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("10 s after expiry %d ceremonies and %d challenges are left, want none", c, d)
			}
		}
	})
}

// startFrom posts /signin/begin as the client at forwardedFor behind a
// proxy on this machine, and answers the status.
func startFrom(t *testing.T, b *apptest.Browser, forwardedFor string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, b.Origin+"/signin/begin", strings.NewReader("{}"))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", b.Origin)
	req.Header.Set("X-CSRF-Token", b.CSRF)
	req.Header.Set("X-Forwarded-For", forwardedFor)
	res, err := b.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// Behind a trusted proxy the cap counts each client by the address the proxy
// forwards; an untrusted connection's X-Forwarded-For is never read, so a
// client cannot escape the cap by writing one.
func TestTheCeremonyCapCountsClientsBehindATrustedProxy(t *testing.T) {
	cases := []struct {
		name    string
		trusted string
		// whether a second client, forwarded as another address, still gets
		// a prompt once the first has spent the cap
		secondGetsOne bool
	}{
		{"a trusted proxy: each forwarded client has a cap of its own", "127.0.0.1", true},
		{"no trusted proxy: X-Forwarded-For is ignored and the connection's address is capped", "", false},
		{"another proxy is trusted: the header of this connection is ignored", "10.0.0.0/8", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := apptest.StartWeb(t, apptest.SQLite, map[string]string{"COUNTERSIGN_TRUSTED_PROXIES": tc.trusted})
			b := env.Browser()
			refused := 0
			for range 60 {
				// The client writes its own X-Forwarded-For; the proxy appends the real one.
				if startFrom(t, b, "203.0.113.9, 198.51.100.1") == http.StatusTooManyRequests {
					refused++
				}
			}
			if refused < 20 {
				t.Fatalf("60 starts from one client: %d refused, want the cap to hold", refused)
			}
			got := startFrom(t, b, "203.0.113.9, 198.51.100.2") == http.StatusOK
			if got != tc.secondGetsOne {
				t.Fatalf("another client behind the proxy got a prompt: %t, want %t", got, tc.secondGetsOne)
			}
		})
	}
}

// The cap counts an IPv6 /64 as one client: a client that holds a /64 (one
// subscriber's usual share) cannot step past the cap by moving to another
// address in it, while the next /64 and any IPv4 client keep caps of their own.
func TestTheCeremonyCapCountsAnIPv6SlashSixtyFourAsOneClient(t *testing.T) {
	env := apptest.StartWeb(t, apptest.SQLite, map[string]string{"COUNTERSIGN_TRUSTED_PROXIES": "127.0.0.1"})
	b := env.Browser()
	refused := 0
	for i := range 60 {
		// A new address of the same /64 for every start.
		if startFrom(t, b, fmt.Sprintf("2001:db8:1:2::%x", i+1)) == http.StatusTooManyRequests {
			refused++
		}
	}
	if refused < 20 {
		t.Fatalf("60 starts from 60 addresses of one /64: %d refused, want the cap to hold", refused)
	}
	for _, tc := range []struct {
		name, addr string
		prompted   bool
	}{
		{"another address of the same /64, written long", "2001:0db8:0001:0002:ffff:ffff:ffff:ffff", false},
		{"the next /64", "2001:db8:1:3::1", true},
		{"an IPv4 client", "198.51.100.7", true},
		{"an IPv4-mapped IPv6 address", "::ffff:198.51.100.7", true},
	} {
		if got := startFrom(t, b, tc.addr) == http.StatusOK; got != tc.prompted {
			t.Errorf("%s (%s) got a prompt: %t, want %t", tc.name, tc.addr, got, tc.prompted)
		}
	}
}
