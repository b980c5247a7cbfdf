package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/countersign/countersign/app"
	"github.com/countersign/countersign/push"
	"gorm.io/gorm"
)

const doctorUsage = `usage: countersign doctor [--open URL]
  checks the configuration serve runs with (the same COUNTERSIGN_* environment and database) and
  says what to fix, one line a check, OK or FIX: the base URL is https (or localhost, for this
  machine); the RP ID is the host people open (--open URL: the URL they open, when it is not
  COUNTERSIGN_BASE_URL), which answers; the VAPID keys are there; the clock agrees with a push
  service's; the database takes a write (rolled back); the browsers' push services answer.
  Exit 0 when every check is OK, 1 when one is not.`

// browserPushServices are the push services doctor reaches: Chrome's,
// Firefox's and Safari's (push.KnownServices lists their other hosts).
var browserPushServices = []string{
	"https://fcm.googleapis.com/",
	"https://updates.push.services.mozilla.com/",
	"https://web.push.apple.com/",
}

// clockSkew is how far the clock may be from a push service's before doctor
// says to fix it: pushes carry a signed expiry, and asks expire on time.
const clockSkew = time.Minute

// doctor checks a configuration serve would run with. Its edges of the
// world are fields, so that tests put local push services there.
type doctor struct {
	cfg          app.Config
	open         string       // the URL people open; "" for the base URL
	pushServices []string     // the push services' URLs
	client       *http.Client // reaches the push services and the base URL
	now          func() time.Time
}

// doctorCheck is one line of doctor's report: OK, or FIX with what to do.
type doctorCheck struct {
	name string
	ok   bool
	text string
}

func newDoctor(cfg app.Config) *doctor {
	return &doctor{cfg: cfg, pushServices: browserPushServices, client: &http.Client{Timeout: 5 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}, now: time.Now}
}

// doctorCommand prints each check and fails when one says FIX.
func doctorCommand(ctx context.Context, cfg app.Config, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	open := fs.String("open", "", "the URL people open on their phone, when it is not COUNTERSIGN_BASE_URL")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		return usageError{doctorUsage}
	}
	d := newDoctor(cfg)
	d.open = *open
	return d.run(ctx, out)
}

// checks makes every check, in the order they are printed.
func (d *doctor) checks(ctx context.Context) []doctorCheck {
	answers := d.reachPushServices(ctx)
	checks := []doctorCheck{d.baseURL(), d.rpID(ctx)}
	checks = append(checks, d.database(ctx)...)
	return append(checks, d.clock(answers), d.pushReach(answers))
}

// run prints one line a check and returns an error when one failed.
func (d *doctor) run(ctx context.Context, out io.Writer) error {
	checks := d.checks(ctx)
	failed := 0
	for _, c := range checks {
		mark := "OK "
		if !c.ok {
			mark, failed = "FIX", failed+1
		}
		fmt.Fprintf(out, "%s  %-13s %s\n", mark, c.name, c.text)
	}
	if failed > 0 {
		return fmt.Errorf("doctor: %d of %d checks say what to fix", failed, len(checks))
	}
	return nil
}

func ok(name, format string, a ...any) doctorCheck {
	return doctorCheck{name: name, ok: true, text: fmt.Sprintf(format, a...)}
}

func fix(name, format string, a ...any) doctorCheck {
	return doctorCheck{name: name, text: fmt.Sprintf(format, a...)}
}

const httpsRecipes = "put https in front (tailscale serve, cloudflared, Caddy, or COUNTERSIGN_ACME_DOMAIN: README, Your phone in five minutes)"

// localName says whether host is this machine by name: localhost, which
// browsers hold a secure context over plain http.
func localName(host string) bool {
	return host == "localhost" || strings.HasSuffix(host, ".localhost")
}

func (d *doctor) baseURL() doctorCheck {
	const name = "base URL"
	u, err := url.Parse(d.cfg.BaseURL)
	if err != nil {
		return fix(name, "COUNTERSIGN_BASE_URL %q: %v", d.cfg.BaseURL, err)
	}
	from := ""
	if d.cfg.BaseURLFromAddr {
		from = " (made from COUNTERSIGN_ADDR: COUNTERSIGN_BASE_URL is unset)"
	}
	switch {
	case u.Scheme == "https":
		return ok(name, "%s is https%s", d.cfg.BaseURL, from)
	case localName(u.Hostname()):
		return ok(name, "%s is localhost%s: passkeys work in a browser on this machine only; for a phone, %s", d.cfg.BaseURL, from, httpsRecipes)
	}
	return fix(name, "%s%s is neither https nor localhost, and browsers refuse passkeys and push there: %s, and set COUNTERSIGN_BASE_URL to its https:// URL",
		d.cfg.BaseURL, from, httpsRecipes)
}

func (d *doctor) rpID(ctx context.Context) doctorCheck {
	const name = "RP ID"
	base, err := url.Parse(d.cfg.BaseURL)
	if err != nil {
		return fix(name, "no RP ID: COUNTERSIGN_BASE_URL does not parse")
	}
	rp := base.Hostname()
	if net.ParseIP(rp) != nil {
		return fix(name, "the RP ID would be the address %s, and passkeys refuse an IP address: set COUNTERSIGN_BASE_URL to a host name (http://localhost:%s on this machine)", rp, portOf(base))
	}
	opened := base
	if d.open != "" {
		if opened, err = url.Parse(d.open); err != nil || opened.Host == "" {
			return fix(name, "--open %q is no URL", d.open)
		}
		if origin(opened) != origin(base) {
			return fix(name, "people open %s, but the RP ID is %s (COUNTERSIGN_BASE_URL %s): passkeys made there fail; set COUNTERSIGN_BASE_URL=%s",
				origin(opened), rp, d.cfg.BaseURL, origin(opened))
		}
	}
	health := origin(opened) + "/healthz"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, health, nil)
	if err != nil {
		return fix(name, "%s: %v", health, err)
	}
	res, err := d.client.Do(req)
	if err != nil {
		return fix(name, "the RP ID is %s, but nothing answers at %s (%v): start countersign serve, or the tunnel or proxy in front of it, or set COUNTERSIGN_BASE_URL to the URL people open", rp, health, cause(err))
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fix(name, "the RP ID is %s, but %s answers HTTP %d, not the service's 200: point the tunnel or proxy at countersign serve", rp, health, res.StatusCode)
	}
	return ok(name, "%s, the host people open: %s answers", rp, health)
}

// database opens the database as serve does and makes a write that it
// rolls back; the VAPID keys are read from it too.
func (d *doctor) database(ctx context.Context) []doctorCheck {
	const name, vapid = "database", "VAPID keys"
	if err := app.CheckDatabase(d.cfg, false); err != nil {
		return []doctorCheck{fix(name, "%v", err), fix(vapid, "no database to read them from")}
	}
	store, err := app.OpenStore(ctx, d.cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		return []doctorCheck{fix(name, "%s does not open as serve opens it (and migrates it, which writes): %v: check COUNTERSIGN_DATABASE_URL and COUNTERSIGN_DATA, and that it takes writes from the user serve runs as", d.cfg.DatabaseName(), err),
			fix(vapid, "no database to read them from")}
	}
	defer func() {
		if sqlDB, err := store.DB().DB(); err == nil {
			sqlDB.Close()
		}
	}()
	var keys doctorCheck
	switch k, found, err := push.StoredKeys(ctx, store); {
	case err != nil:
		keys = fix(vapid, "%v: remove the vapid_keys setting and start serve, which makes a new pair (every phone then turns notifications on again)", err)
	case !found:
		keys = fix(vapid, "none yet: countersign serve makes them at its first start (or run countersign vapid)")
	default:
		keys = ok(vapid, "present (public key %s…)", k.Public[:min(12, len(k.Public))])
	}
	errRollback := errors.New("rolled back")
	err = store.DB().WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Exec("INSERT INTO settings (name, value) VALUES (?, ?)", "countersign_doctor", d.now().UTC().Format(time.RFC3339)).Error; err != nil {
			return err
		}
		return errRollback
	})
	if !errors.Is(err, errRollback) {
		return []doctorCheck{fix(name, "%s takes no write: %v: make it writable for the user serve runs as (the data folder's permissions; a PostgreSQL role with write rights, not a read-only replica)", d.cfg.DatabaseName(), err), keys}
	}
	return []doctorCheck{ok(name, "%s is writable (a write was made and rolled back)", d.cfg.DatabaseName()), keys}
}

// pushAnswer is what one push service answered to a HEAD request.
type pushAnswer struct {
	url  string
	date time.Time // its Date header; zero when it sent none
	at   time.Time // the local time at the answer
	err  error
}

func (d *doctor) reachPushServices(ctx context.Context) []pushAnswer {
	answers := make([]pushAnswer, len(d.pushServices))
	done := make(chan struct{})
	for i, u := range d.pushServices {
		go func() {
			defer func() { done <- struct{}{} }()
			a := pushAnswer{url: u}
			req, err := http.NewRequestWithContext(ctx, http.MethodHead, u, nil)
			if err == nil {
				var res *http.Response
				if res, err = d.client.Do(req); err == nil {
					res.Body.Close()
					a.at = d.now()
					a.date, _ = http.ParseTime(res.Header.Get("Date"))
				}
			}
			a.err = err
			answers[i] = a
		}()
	}
	for range d.pushServices {
		<-done
	}
	return answers
}

// clock compares this machine's clock with the Date a push service sent
// (another machine's clock, unlike the base URL's, which may be this one).
func (d *doctor) clock(answers []pushAnswer) doctorCheck {
	const name = "clock"
	for _, a := range answers {
		if a.err != nil || a.date.IsZero() {
			continue
		}
		skew := a.at.Sub(a.date).Round(time.Second)
		host := hostOf(a.url)
		switch {
		case skew > clockSkew:
			return fix(name, "%s ahead of %s's Date header: set the time (timedatectl set-ntp true)", skew, host)
		case skew < -clockSkew-time.Second: // a Date header is whole seconds
			return fix(name, "%s behind %s's Date header: set the time (timedatectl set-ntp true)", -skew, host)
		}
		return ok(name, "within %s of %s's Date header", max(skew, -skew), host)
	}
	return fix(name, "not compared: no push service answered with a Date header; check that the time is synchronised (timedatectl)")
}

func (d *doctor) pushReach(answers []pushAnswer) doctorCheck {
	const name = "push services"
	var reached, failed []string
	for _, a := range answers {
		if a.err != nil {
			failed = append(failed, fmt.Sprintf("%s (%v)", hostOf(a.url), cause(a.err)))
		} else {
			reached = append(reached, hostOf(a.url))
		}
	}
	if len(failed) > 0 {
		return fix(name, "cannot reach %s: no phone or browser on them gets a push; allow outbound HTTPS (port 443) to them", strings.Join(failed, ", "))
	}
	return ok(name, "%s answer", strings.Join(reached, ", "))
}

// cause is what went wrong under a request's error (the dial, the TLS
// handshake), without the method and URL it repeats.
func cause(err error) error {
	var u *url.Error
	if errors.As(err, &u) {
		return u.Err
	}
	return err
}

func origin(u *url.URL) string { return u.Scheme + "://" + u.Host }

func hostOf(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Host
	}
	return raw
}

func portOf(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	return "8080"
}
