package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"gorm.io/driver/postgres"
	"gorm.io/gorm"

	"github.com/countersign/countersign/app"
	"github.com/countersign/countersign/apptest"
)

// doctorWithPushServices starts n local push services over TLS, whose Date
// header is skew off the clock, and returns a doctor of cfg that reaches them.
func doctorWithPushServices(t *testing.T, cfg app.Config, skew time.Duration, n int) (*doctor, []*httptest.Server) {
	t.Helper()
	d := newDoctor(cfg)
	d.pushServices = nil
	var servers []*httptest.Server
	for range n {
		srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Date", time.Now().Add(skew).UTC().Format(http.TimeFormat))
			w.WriteHeader(http.StatusNotFound) // as the real ones answer HEAD /
		}))
		t.Cleanup(srv.Close)
		servers = append(servers, srv)
		d.pushServices = append(d.pushServices, srv.URL+"/")
	}
	d.client = servers[0].Client() // every httptest TLS server has the same certificate
	d.client.Timeout = 5 * time.Second
	return d, servers
}

// check is the check named name of d's report.
func check(t *testing.T, d *doctor, name string) doctorCheck {
	t.Helper()
	for _, c := range d.checks(context.Background()) {
		if c.name == name {
			return c
		}
	}
	t.Fatalf("doctor made no check %q", name)
	return doctorCheck{}
}

// On a running service whose push services answer with the time, doctor
// says OK on every line and exits 0; the binary, whose push services are
// the real ones this machine cannot reach, says FIX there and exits 1.
func TestDoctorSaysOKForARunningServiceAndExitsZero(t *testing.T) {
	env := apptest.StartWeb(t, apptest.SQLite, nil)
	d, _ := doctorWithPushServices(t, env.App.Config, 0, 3)
	var out bytes.Buffer
	if err := d.run(context.Background(), &out); err != nil {
		t.Fatalf("doctor: %v\n%s", err, &out)
	}
	for _, name := range []string{"base URL", "RP ID", "database", "VAPID keys", "clock", "push services"} {
		if !strings.Contains(out.String(), "OK   "+name) {
			t.Errorf("no OK line for %s:\n%s", name, &out)
		}
	}
	if strings.Contains(out.String(), "FIX") {
		t.Errorf("a FIX line for a service that is fine:\n%s", &out)
	}

	r := cli(t, cliEnv(env), "doctor")
	if r.code != 1 || !strings.Contains(r.stdout, "FIX  push services cannot reach fcm.googleapis.com") ||
		!strings.Contains(r.stdout, "OK   database") || !strings.Contains(r.stdout, "OK   RP ID") {
		t.Errorf("the binary without the internet: want exit 1, push services to fix, the database and RP ID OK; got\n%s", r)
	}
}

// Each check says FIX, and what to do, for what it is there to catch.
func TestDoctorSaysWhatToFix(t *testing.T) {
	env := apptest.StartWeb(t, apptest.SQLite, nil)
	ctx := context.Background()
	with := func(base string) app.Config {
		cfg := env.App.Config
		cfg.BaseURL = base
		return cfg
	}

	t.Run("the base URL: https and localhost pass, plain http elsewhere is to fix", func(t *testing.T) {
		for base, want := range map[string]bool{
			"https://approvals.example.com": true,
			"http://localhost:8080":         true,
			"http://approvals.example.com":  false,
			"http://192.168.1.5:8080":       false,
		} {
			c := newDoctor(with(base)).baseURL()
			if c.ok != want || (!want && !strings.Contains(c.text, "set COUNTERSIGN_BASE_URL")) {
				t.Errorf("%s: %+v, want ok %t and, when not, the variable to set", base, c, want)
			}
		}
	})

	t.Run("the RP ID: an address, another host people open, or nothing answering", func(t *testing.T) {
		if c := newDoctor(with("http://192.168.1.5:8080")).rpID(ctx); c.ok || !strings.Contains(c.text, "refuse an IP address") {
			t.Errorf("an IP address: %+v", c)
		}
		d := newDoctor(env.App.Config)
		d.open = "https://countersign.tail1234.ts.net"
		if c := d.rpID(ctx); c.ok || !strings.Contains(c.text, "set COUNTERSIGN_BASE_URL=https://countersign.tail1234.ts.net") {
			t.Errorf("another host opened: %+v", c)
		}
		d.open = env.URL
		if c := d.rpID(ctx); !c.ok {
			t.Errorf("the base URL opened: %+v", c)
		}
		closed := httptest.NewServer(http.NotFoundHandler())
		closed.Close()
		port := closed.Listener.Addr().String()[strings.LastIndex(closed.Listener.Addr().String(), ":"):]
		if c := newDoctor(with("http://localhost" + port)).rpID(ctx); c.ok || !strings.Contains(c.text, "nothing answers") {
			t.Errorf("nothing listening: %+v", c)
		}
	})

	t.Run("the VAPID keys: a database serve never started on has none", func(t *testing.T) {
		cfg := mustConfig(t, map[string]string{"COUNTERSIGN_DATA": t.TempDir()})
		if _, err := app.OpenStore(ctx, cfg, apptest.Logger()); err != nil { // migrated, never served
			t.Fatal(err)
		}
		if c := check(t, newDoctor(cfg), "VAPID keys"); c.ok || !strings.Contains(c.text, "countersign serve makes them") {
			t.Errorf("no keys: %+v", c)
		}
		if c := check(t, newDoctor(env.App.Config), "VAPID keys"); !c.ok {
			t.Errorf("a started service's keys: %+v", c)
		}
	})

	t.Run("the clock: ten minutes off a push service's Date is to fix", func(t *testing.T) {
		d, _ := doctorWithPushServices(t, env.App.Config, -10*time.Minute, 1)
		if c := check(t, d, "clock"); c.ok || !regexp.MustCompile(`^10m\d+s ahead of 127\.0\.0\.1:\d+'s Date header`).MatchString(c.text) {
			t.Errorf("a clock ten minutes ahead: %+v", c)
		}
		d, _ = doctorWithPushServices(t, env.App.Config, 10*time.Minute, 1)
		if c := check(t, d, "clock"); c.ok || !regexp.MustCompile(`^9m5\ds behind|^10m\d+s behind`).MatchString(c.text) {
			t.Errorf("a clock ten minutes behind: %+v", c)
		}
	})

	t.Run("the push services: one that does not answer is named", func(t *testing.T) {
		d, servers := doctorWithPushServices(t, env.App.Config, 0, 2)
		servers[1].Close()
		c := check(t, d, "push services")
		if c.ok || !strings.Contains(c.text, "cannot reach "+servers[1].Listener.Addr().String()) || strings.Contains(c.text, servers[0].Listener.Addr().String()) {
			t.Errorf("one push service down: %+v", c)
		}
	})

	t.Run("the database: one that takes no write is to fix, and nothing was written", func(t *testing.T) {
		pg := apptest.StartWeb(t, apptest.Postgres, nil)
		admin, err := gorm.Open(postgres.Open(pg.App.Config.DatabaseURL), &gorm.Config{})
		if err != nil {
			t.Fatal(err)
		}
		if c := check(t, newDoctor(pg.App.Config), "database"); !c.ok {
			t.Fatalf("a writable PostgreSQL database: %+v", c)
		}
		var name string
		admin.Raw("SELECT current_database()").Scan(&name)
		if err := admin.Exec(`ALTER DATABASE "` + name + `" SET default_transaction_read_only = on`).Error; err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { admin.Exec(`ALTER DATABASE "` + name + `" SET default_transaction_read_only = off`) })
		c := check(t, newDoctor(pg.App.Config), "database")
		if c.ok || !strings.Contains(c.text, "in a read-only transaction") || !strings.Contains(c.text, "takes writes") {
			t.Errorf("a read-only database: %+v", c)
		}
		var n int64
		admin.Raw("SELECT count(*) FROM settings WHERE name = 'countersign_doctor'").Scan(&n)
		if n != 0 {
			t.Errorf("doctor left %d rows behind", n)
		}
	})
}
