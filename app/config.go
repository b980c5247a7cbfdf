// Package app assembles Countersign from its configuration: the database,
// the store, the MCP endpoint and the HTTP routes. cmd and the tests both
// start the service through it.
package app

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/mcp"
	"github.com/countersign/countersign/models"
)

// Config is every setting, read from COUNTERSIGN_* environment variables.
type Config struct {
	Addr        string        // COUNTERSIGN_ADDR
	Data        string        // COUNTERSIGN_DATA
	DatabaseURL string        // COUNTERSIGN_DATABASE_URL
	BaseURL     string        // COUNTERSIGN_BASE_URL
	AskTTL      time.Duration // COUNTERSIGN_ASK_TTL
	AskRate     mcp.AskRate   // COUNTERSIGN_ASK_RATE
	AskBurst    int           // COUNTERSIGN_ASK_BURST
	SweepEvery  time.Duration // COUNTERSIGN_SWEEP_EVERY
	PushContact string        // COUNTERSIGN_PUSH_CONTACT
	PushCap     models.PushCap
	PushHosts   []string      // COUNTERSIGN_PUSH_ALLOWED_HOSTS
	PushWorkers int           // COUNTERSIGN_PUSH_WORKERS
	PushRetry   time.Duration // COUNTERSIGN_PUSH_RETRY
	SessionIdle time.Duration // COUNTERSIGN_SESSION_IDLE_WEB
	AgentIdle   time.Duration // COUNTERSIGN_SESSION_IDLE
	MetricsAddr string        // COUNTERSIGN_METRICS_ADDR
}

// Setting documents one environment variable. Meaning is Markdown (code in
// backquotes): the README's table and `countersign help` are both made from
// it (MarkdownTable, TextTable), and a test holds the README to it.
type Setting struct {
	Name, Default, Meaning string
}

// Settings lists every variable with its default, for the README and help;
// LoadConfig reads the defaults from here. GOGC is the Go runtime's, listed
// because serve changes its default (TuneGC).
var Settings = []Setting{
	{"COUNTERSIGN_ADDR", ":8080", "Listen address."},
	{"COUNTERSIGN_DATA", "./data", "Data folder: the SQLite file `countersign.db` lives here."},
	{"COUNTERSIGN_DATABASE_URL", "", "Empty for the embedded SQLite file; `postgres://user:pass@host/db` for PostgreSQL."},
	{"COUNTERSIGN_BASE_URL", "http://localhost:8080", "The public origin people open. Passkeys are bound to its host (the WebAuthn RP ID): use `https://` in production, and `localhost`, not `127.0.0.1`, on your machine."},
	{"COUNTERSIGN_ASK_TTL", "168h", "An ask's life unless its kind sets a shorter one (a run's `expires_at`)."},
	{"COUNTERSIGN_ASK_RATE", "60/m", "Asks one requester may file per second (`s`), minute (`m`) or hour (`h`)."},
	{"COUNTERSIGN_ASK_BURST", "20", "Asks one requester may file at once before the rate applies."},
	{"COUNTERSIGN_SWEEP_EVERY", "15s", "How often open asks past their life are expired."},
	{"COUNTERSIGN_PUSH_CONTACT", "", "VAPID contact, `mailto:you@example.com` or an https URL; empty: the base URL when https, else `mailto:countersign@localhost`."},
	{"COUNTERSIGN_PUSH_CAP", "20/10m", "Ask pushes per person per window; past it one collapsed push says how many wait. `off` lifts it."},
	{"COUNTERSIGN_PUSH_ALLOWED_HOSTS", "", "Comma-separated push service hosts allowed beside the browsers' own (tests use a local one)."},
	{"COUNTERSIGN_PUSH_WORKERS", "8", "Pushes in flight at once."},
	{"COUNTERSIGN_PUSH_RETRY", "1s", "Wait before the first retry of a push the service refused for now; it doubles up to 10 minutes."},
	{"COUNTERSIGN_SESSION_IDLE_WEB", "12h", "A web session unused this long ends; it ends 30 days after sign-in in any case. From `2m` to `720h`."},
	{"COUNTERSIGN_SESSION_IDLE", "30m", "An agent session (`session_start`) that has not heartbeated this long ends by itself. Any Go duration of `1s` or more."},
	{"COUNTERSIGN_METRICS_ADDR", "", "Empty: no metrics. Else the listen address (like `127.0.0.1:9090`) of a listener of its own that serves Prometheus metrics at `/metrics`; keep it off the public network."},
	{"GOGC", "400", "Not Countersign's own: Go's garbage collector target. When it is unset `serve` uses 400, where the collector costs about a third of the CPU it does at Go's 100, for a heap of a few tens of MB (`docs/perf.md`)."},
}

// MarkdownTable is the README's configuration table, made from Settings.
func MarkdownTable() string {
	var b strings.Builder
	b.WriteString("| Variable | Default | Meaning |\n|---|---|---|\n")
	for _, s := range Settings {
		def := "empty"
		if s.Default != "" {
			def = "`" + s.Default + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", s.Name, def, s.Meaning)
	}
	return b.String()
}

// TextTable is the configuration table for a terminal, made from Settings:
// names and defaults in aligned columns, each meaning wrapped to width
// under its own column, backquotes dropped.
func TextTable(width int) string {
	nameW, defW := len("VARIABLE"), len("DEFAULT")
	for _, s := range Settings {
		nameW, defW = max(nameW, len(s.Name)), max(defW, len(s.Default))
	}
	indent := 2 + nameW + 2 + defW + 2
	var b strings.Builder
	row := func(name, def, meaning string) {
		line := fmt.Sprintf("  %-*s  %-*s  ", nameW, name, defW, def)
		for i, word := range strings.Fields(meaning) {
			if i > 0 && len(line)+1+len(word) > width {
				b.WriteString(strings.TrimRight(line, " ") + "\n")
				line = strings.Repeat(" ", indent-1)
			}
			if i > 0 {
				line += " "
			}
			line += word
		}
		b.WriteString(line + "\n")
	}
	row("VARIABLE", "DEFAULT", "MEANING")
	for _, s := range Settings {
		row(s.Name, s.Default, strings.ReplaceAll(s.Meaning, "`", ""))
	}
	return b.String()
}

// LoadConfig reads the configuration through getenv and checks every value;
// an error names the variable and what is wrong with it.
func LoadConfig(getenv func(string) string) (Config, error) {
	get := func(name string) string {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			return v
		}
		for _, s := range Settings {
			if s.Name == name {
				return s.Default
			}
		}
		return ""
	}
	var (
		c    Config
		errs []error
		err  error
	)
	bad := func(name string, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", name, fmt.Sprintf(format, args...)))
	}
	c.Addr = get("COUNTERSIGN_ADDR")
	if _, port, err := net.SplitHostPort(c.Addr); err != nil {
		bad("COUNTERSIGN_ADDR", "%q is not host:port (like :8080 or 127.0.0.1:8080)", c.Addr)
	} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		bad("COUNTERSIGN_ADDR", "port %q is not a number from 0 to 65535", port)
	}
	c.Data = get("COUNTERSIGN_DATA")
	c.DatabaseURL = get("COUNTERSIGN_DATABASE_URL")
	if c.DatabaseURL != "" {
		u, err := url.Parse(c.DatabaseURL)
		if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
			bad("COUNTERSIGN_DATABASE_URL", "must be a postgres://user:password@host/db URL, or empty for the embedded SQLite file")
		}
	}
	c.BaseURL = strings.TrimRight(get("COUNTERSIGN_BASE_URL"), "/")
	if u, err := url.Parse(c.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
		bad("COUNTERSIGN_BASE_URL", "%q must be an origin like https://approvals.example.com (scheme and host, no path)", c.BaseURL)
	}
	if c.AskTTL, err = time.ParseDuration(get("COUNTERSIGN_ASK_TTL")); err != nil || c.AskTTL < time.Minute || c.AskTTL > 31*24*time.Hour {
		bad("COUNTERSIGN_ASK_TTL", "must be a duration from 1m to 744h, like 168h")
	}
	if c.AskRate, err = mcp.ParseAskRate(get("COUNTERSIGN_ASK_RATE")); err != nil {
		bad("COUNTERSIGN_ASK_RATE", "%v", err)
	}
	if c.AskBurst, err = strconv.Atoi(get("COUNTERSIGN_ASK_BURST")); err != nil || c.AskBurst < 1 {
		bad("COUNTERSIGN_ASK_BURST", "must be a whole number of at least 1")
	}
	if c.SweepEvery, err = time.ParseDuration(get("COUNTERSIGN_SWEEP_EVERY")); err != nil || c.SweepEvery < 100*time.Millisecond {
		bad("COUNTERSIGN_SWEEP_EVERY", "must be a duration of at least 100ms, like 15s")
	}
	c.PushContact = get("COUNTERSIGN_PUSH_CONTACT")
	switch {
	case c.PushContact == "" && strings.HasPrefix(c.BaseURL, "https://"):
		c.PushContact = c.BaseURL
	case c.PushContact == "":
		c.PushContact = "mailto:countersign@localhost"
	case !strings.HasPrefix(c.PushContact, "mailto:") && !strings.HasPrefix(c.PushContact, "https://"):
		bad("COUNTERSIGN_PUSH_CONTACT", "%q must start with mailto: or https://", c.PushContact)
	}
	if c.PushCap, err = parsePushCap(get("COUNTERSIGN_PUSH_CAP")); err != nil {
		bad("COUNTERSIGN_PUSH_CAP", "%v", err)
	}
	for _, h := range strings.Split(get("COUNTERSIGN_PUSH_ALLOWED_HOSTS"), ",") {
		if h = strings.TrimSpace(h); h != "" {
			if strings.ContainsAny(h, "/ @") {
				bad("COUNTERSIGN_PUSH_ALLOWED_HOSTS", "%q is not a host or host:port", h)
			}
			c.PushHosts = append(c.PushHosts, h)
		}
	}
	if c.PushWorkers, err = strconv.Atoi(get("COUNTERSIGN_PUSH_WORKERS")); err != nil || c.PushWorkers < 1 || c.PushWorkers > 256 {
		bad("COUNTERSIGN_PUSH_WORKERS", "must be a whole number from 1 to 256")
	}
	if c.PushRetry, err = time.ParseDuration(get("COUNTERSIGN_PUSH_RETRY")); err != nil || c.PushRetry < time.Millisecond || c.PushRetry > 10*time.Minute {
		bad("COUNTERSIGN_PUSH_RETRY", "must be a duration from 1ms to 10m, like 1s")
	}
	if c.SessionIdle, err = time.ParseDuration(get("COUNTERSIGN_SESSION_IDLE_WEB")); err != nil || c.SessionIdle < 2*time.Minute || c.SessionIdle > models.SessionAbsolute {
		bad("COUNTERSIGN_SESSION_IDLE_WEB", "must be a duration from 2m to 720h, like 12h")
	}
	if c.AgentIdle, err = time.ParseDuration(get("COUNTERSIGN_SESSION_IDLE")); err != nil || c.AgentIdle < time.Second {
		bad("COUNTERSIGN_SESSION_IDLE", "must be a duration of at least 1s, like 30m")
	}
	if c.MetricsAddr = get("COUNTERSIGN_METRICS_ADDR"); c.MetricsAddr != "" {
		if _, _, err := net.SplitHostPort(c.MetricsAddr); err != nil {
			bad("COUNTERSIGN_METRICS_ADDR", "%q is not host:port (like 127.0.0.1:9090)", c.MetricsAddr)
		} else if c.MetricsAddr == c.Addr {
			bad("COUNTERSIGN_METRICS_ADDR", "must differ from COUNTERSIGN_ADDR: metrics have a listener of their own")
		}
	}
	return c, errors.Join(errs...)
}

// parsePushCap reads "20/10m" (20 pushes per 10 minutes) or "off".
func parsePushCap(s string) (models.PushCap, error) {
	if s == "off" {
		return models.PushCap{}, nil
	}
	n, window, ok := strings.Cut(s, "/")
	count, err := strconv.Atoi(n)
	if !ok || err != nil || count < 1 {
		return models.PushCap{}, fmt.Errorf("%q is not a cap like 20/10m (pushes per window) or off", s)
	}
	d, err := time.ParseDuration(window)
	if err != nil || d < time.Second {
		return models.PushCap{}, fmt.Errorf("%q is not a cap like 20/10m: the window is a duration of at least 1s", s)
	}
	return models.PushCap{N: count, Window: d}, nil
}
