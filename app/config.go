// Package app assembles Countersign from its configuration: the database,
// the store, the MCP endpoint and the HTTP routes. cmd and the tests both
// start the service through it.
package app

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/channels"
	"github.com/countersign/countersign/mcp"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/outbox"
	"github.com/countersign/countersign/models/people"
	"github.com/countersign/countersign/oauth"
)

// Config is every setting, read from COUNTERSIGN_* environment variables.
type Config struct {
	Addr         string // COUNTERSIGN_ADDR
	Data         string // COUNTERSIGN_DATA
	DatabaseURL  string // COUNTERSIGN_DATABASE_URL
	DatabasePool int    // COUNTERSIGN_DATABASE_POOL
	InstanceURL  string // COUNTERSIGN_INSTANCE_URL
	// InstanceSecret is COUNTERSIGN_INSTANCE_SECRET: the key forwarded calls are signed with.
	InstanceSecret string
	BaseURL        string        // COUNTERSIGN_BASE_URL
	AskTTL         time.Duration // COUNTERSIGN_ASK_TTL
	AskRate        mcp.AskRate   // COUNTERSIGN_ASK_RATE
	AskBurst       int           // COUNTERSIGN_ASK_BURST
	SweepEvery     time.Duration // COUNTERSIGN_SWEEP_EVERY
	PushContact    string        // COUNTERSIGN_PUSH_CONTACT
	PushCap        outbox.PushCap
	PushHosts      []string       // COUNTERSIGN_PUSH_ALLOWED_HOSTS
	PushWorkers    int            // COUNTERSIGN_PUSH_WORKERS
	PushRetry      time.Duration  // COUNTERSIGN_PUSH_RETRY
	SMTP           *channels.SMTP // COUNTERSIGN_SMTP_URL, COUNTERSIGN_SMTP_FROM; nil: no email
	SlackToken     string         // COUNTERSIGN_SLACK_BOT_TOKEN
	SlackAPIURL    string         // COUNTERSIGN_SLACK_API_URL
	ChannelPrivate []string       // COUNTERSIGN_CHANNEL_PRIVATE_HOSTS
	ChannelRetry   time.Duration  // COUNTERSIGN_CHANNEL_RETRY
	// CIBA bounds CIBA requests: COUNTERSIGN_CIBA_MAX_EXPIRY,
	// COUNTERSIGN_CIBA_PER_PERSON, COUNTERSIGN_CIBA_PER_CLIENT.
	CIBA oauth.CIBALimits
	// EnvChannels are the default account's shared channels the
	// environment sets (COUNTERSIGN_TEAMS_WEBHOOK_URL, COUNTERSIGN_NTFY_URL,
	// COUNTERSIGN_WEBHOOK_URL, COUNTERSIGN_SLACK_CHANNEL).
	EnvChannels []EnvChannel
	SessionIdle time.Duration     // COUNTERSIGN_SESSION_IDLE_WEB
	AgentIdle   time.Duration     // COUNTERSIGN_SESSION_IDLE
	MCPSessions mcp.SessionLimits // COUNTERSIGN_MCP_SESSIONS, COUNTERSIGN_MCP_SESSIONS_PER_TOKEN, COUNTERSIGN_MCP_SESSION_IDLE
	MetricsAddr string            // COUNTERSIGN_METRICS_ADDR
	Proxies     []*net.IPNet      // COUNTERSIGN_TRUSTED_PROXIES
	TLSCert     string            // COUNTERSIGN_TLS_CERT
	TLSKey      string            // COUNTERSIGN_TLS_KEY
	ACMEDomain  string            // COUNTERSIGN_ACME_DOMAIN
	HTTPAddr    string            // COUNTERSIGN_HTTP_ADDR; "" when there is no redirect listener
	Rules       *RulesFile        // COUNTERSIGN_RULES, read and checked; nil when unset

	// Version is the build's version (countersign version), which MCP
	// clients read as serverInfo.version; the binary sets it, no variable does.
	Version string

	// NoStartSweep makes the sweeper wait a whole SweepEvery before its
	// first pass instead of making one at start. Tests that expire asks
	// themselves set it (apptest.StartUnswept), so that no pass of the
	// sweeper races theirs; no variable does.
	NoStartSweep bool

	// BaseURLFromAddr says BaseURL was made from Addr (BaseURLFor), the
	// variable being unset; serve makes it again from the port it listens
	// on when Addr's port is 0.
	BaseURLFromAddr bool
}

// TLS says whether serve ends TLS itself, with its own certificate or ACME.
func (c Config) TLS() bool { return c.TLSCert != "" || c.ACMEDomain != "" }

// Setting documents one environment variable. Meaning is Markdown (code in
// backquotes): the table of docs/configuration.md and `countersign help` are
// both made from it (MarkdownTable, TextTable), and a test holds the page to it.
type Setting struct {
	Name, Default, Meaning string
}

// Settings lists every variable with its default, for docs/configuration.md and help;
// LoadConfig reads the defaults from here. GOGC is the Go runtime's, listed
// because serve changes its default (TuneGC).
var Settings = []Setting{
	{"COUNTERSIGN_ADDR", ":8080", "Listen address."},
	{"COUNTERSIGN_DATA", "./data", "Data folder: the SQLite file `countersign.db` lives here."},
	{"COUNTERSIGN_DATABASE_URL", "", "Empty for the embedded SQLite file; `postgres://user:pass@host/db` for PostgreSQL."},
	{"COUNTERSIGN_DATABASE_POOL", strconv.Itoa(core.PoolSize(core.Postgres)), "PostgreSQL only: the most connections one instance opens, besides one for its change listener; open ones stay while idle (up to 5 minutes). Instances × (this + 1) must stay below the server's `max_connections` (100 by default, 3 of them reserved): set it lower for three instances or more. From `8` to `1000`. SQLite keeps 8."},
	{"COUNTERSIGN_INSTANCE_URL", "", "PostgreSQL only, for several instances behind one address: the base URL the other instances reach this one at (like `http://10.0.0.5:8080`; in Kubernetes `http://$(POD_IP):8080`). An MCP call that lands on an instance that does not hold its session is forwarded to the one that does, so the proxy in front needs no affinity (docs/deploy.md). Empty: no forwarding, for one instance or a proxy that keeps each session on its instance."},
	{"COUNTERSIGN_INSTANCE_SECRET", "", "Needed with `COUNTERSIGN_INSTANCE_URL`, and the same on every instance: a random secret of at least 32 characters (like the output of `openssl rand -hex 32`), kept out of the database. A forwarded call carries no bearer token: it is signed with a key made from this secret and names the caller's token by its hash, and an instance accepts a forwarded call only when the signature holds. Whoever can write the database but does not hold this secret can neither collect tokens by pointing an instance's address elsewhere nor forge a forwarded call."},
	{"COUNTERSIGN_BASE_URL", "", "The public origin people open. Passkeys are bound to its host (the WebAuthn RP ID): use `https://` in production, and `localhost`, not `127.0.0.1`, on your machine. Empty: made from `COUNTERSIGN_ADDR`, `http://localhost:PORT` with its port (its host when it names one), and `serve` says so at start."},
	{"COUNTERSIGN_ASK_TTL", "168h", "An ask's life unless its kind sets a shorter one (a run's `expires_at`)."},
	{"COUNTERSIGN_ASK_RATE", "60/m", "Asks one requester may file per second (`s`), minute (`m`) or hour (`h`)."},
	{"COUNTERSIGN_ASK_BURST", "20", "Asks one requester may file at once before the rate applies."},
	{"COUNTERSIGN_SWEEP_EVERY", "15s", "How often open asks past their life are expired, and the asks approval rules cover reminded and escalated (on PostgreSQL, by one instance at a time)."},
	{"COUNTERSIGN_PUSH_CONTACT", "", "VAPID contact, `mailto:you@example.com` or an https URL; empty: the base URL when https, else `mailto:countersign@localhost`."},
	{"COUNTERSIGN_PUSH_CAP", "20/10m", "Ask pushes per person per window; past it one collapsed push says how many wait. `off` lifts it."},
	{"COUNTERSIGN_PUSH_ALLOWED_HOSTS", "", "Comma-separated push service hosts allowed beside the browsers' own (tests use a local one)."},
	{"COUNTERSIGN_PUSH_WORKERS", "8", "Pushes in flight at once."},
	{"COUNTERSIGN_PUSH_RETRY", "1s", "Wait before the first retry of a push the service refused for now; it doubles up to 10 minutes."},
	{"COUNTERSIGN_SMTP_URL", "", "Empty: no email. Else the SMTP server email goes through: `smtp://user:password@host:587` (STARTTLS, required), `smtps://user:password@host:465` (TLS), or `smtp://localhost:1025?security=none` for a server on this machine only. People turn email on on Devices."},
	{"COUNTERSIGN_SMTP_FROM", "", "The From address of email, like `Countersign <approvals@example.com>`; required with `COUNTERSIGN_SMTP_URL`."},
	{"COUNTERSIGN_SMTP_CA_FILE", "", "Empty: the server's certificate must chain to the system's authorities. Else a PEM file of the only authorities it may chain to (a mail server with a private CA)."},
	{"COUNTERSIGN_SLACK_BOT_TOKEN", "", "Empty: no Slack. Else a Slack app's bot token (`xoxb-…`, scopes `chat:write`, `im:write`, `users:read.email`): direct messages to people who turn Slack on on Devices, and posts to shared Slack channels."},
	{"COUNTERSIGN_SLACK_API_URL", "", "Slack's Web API base; empty: Slack's own. Tests point it at a local server."},
	{"COUNTERSIGN_SLACK_CHANNEL", "", "A Slack channel (`C…` or `#name`) the default account posts every ask to, with `COUNTERSIGN_SLACK_BOT_TOKEN`; set at every start as the shared channel `slack` (Admin → Channels holds more)."},
	{"COUNTERSIGN_TEAMS_WEBHOOK_URL", "", "A Microsoft Teams channel's Workflows webhook URL the default account posts every ask to, as an Adaptive Card; set at every start as the shared channel `teams`."},
	{"COUNTERSIGN_NTFY_URL", "", "An ntfy topic's URL (`https://ntfy.sh/your-topic`, or your own server) the default account posts every ask to; set at every start as the shared channel `ntfy`."},
	{"COUNTERSIGN_NTFY_TOKEN", "", "The access token of `COUNTERSIGN_NTFY_URL`'s topic, when it needs one."},
	{"COUNTERSIGN_WEBHOOK_URL", "", "A URL the default account posts every ask to as a JSON event signed as Standard Webhooks sign (PagerDuty, Opsgenie, anything); set at every start as the shared channel `webhook`."},
	{"COUNTERSIGN_WEBHOOK_SECRET", "", "The signing secret of `COUNTERSIGN_WEBHOOK_URL`: `whsec_` and at least 24 random bytes in base64 (`whsec_$(openssl rand -base64 32)`); the receiver verifies with it."},
	{"COUNTERSIGN_CHANNEL_PRIVATE_HOSTS", "", "Comma-separated `host:port` (or hosts) on private or loopback addresses that shared channels (webhooks, ntfy, Teams) may post to, and that a CIBA client's ping notification endpoint may name (over http too); every other private address is refused, after the name is resolved."},
	{"COUNTERSIGN_CHANNEL_RETRY", "1s", "Wait before the first retry of a channel message refused for now (a channel's own `Retry-After` is honoured when longer); it doubles up to 10 minutes, and a message tried 8 times is dead (Admin → Channels)."},
	{"COUNTERSIGN_CIBA_MAX_EXPIRY", "10m", "The longest a CIBA request waits for its person: a client's `requested_expiry` is cut to it, and a request naming none gets it. From `1m` to `24h`."},
	{"COUNTERSIGN_CIBA_PER_PERSON", "5", "The most CIBA requests a minute for one person, from every client together; past it a request is refused with 429 `slow_down` and `Retry-After`. From `1` to `1000`."},
	{"COUNTERSIGN_CIBA_PER_CLIENT", "60", "The most CIBA requests a minute from one client, whoever they ask; past it as above. From `1` to `100000`."},
	{"COUNTERSIGN_SESSION_IDLE_WEB", "12h", "A web session unused this long ends; it ends 30 days after sign-in in any case. From `2m` to `720h`."},
	{"COUNTERSIGN_SESSION_IDLE", "30m", "An agent session (`session_start`) that has not heartbeated this long ends by itself. Any Go duration of `1s` or more."},
	{"COUNTERSIGN_MCP_SESSIONS", strconv.Itoa(mcp.DefaultSessions), "The most MCP sessions one instance holds open (an agent waiting on its GET stream costs some 5 KB, `docs/perf.md` §9). Past it, a new session first closes the instance's session idle the longest (idle: no call in flight and no GET stream open); when none is idle, `initialize` is refused with 429 and `Retry-After`, naming this setting. From `1` to `1000000`."},
	{"COUNTERSIGN_MCP_SESSIONS_PER_TOKEN", strconv.Itoa(mcp.DefaultSessionsPerToken), "The most MCP sessions one agent's or runner's token holds open. Past it, a new session first closes that token's session idle the longest; when none is idle, `initialize` is refused with 429 and `Retry-After`, naming this setting. From `1` to `COUNTERSIGN_MCP_SESSIONS`; unset, it is lowered to that when that is smaller."},
	{"COUNTERSIGN_MCP_SESSION_IDLE", "10m", "An MCP session with no call in flight and no GET stream open ends after this long. An agent waiting on its ask's notice holds its GET stream, so its session lasts as long as the stream. From `1s` to `24h`."},
	{"COUNTERSIGN_TRUSTED_PROXIES", "", "Comma-separated addresses or CIDR ranges of the reverse proxies in front of the service (like `127.0.0.1,10.0.0.0/8`). For a connection from one of them the client's address is read from `X-Forwarded-For`, so the per-address limits count clients, not the proxy. Empty: only the connection's address counts."},
	{"COUNTERSIGN_METRICS_ADDR", "", "Empty: no metrics. Else the listen address (like `127.0.0.1:9090`) of a listener of its own that serves Prometheus metrics at `/metrics`. A bare port (`:9090`) listens on loopback only; an address other machines can reach logs a warning at start: keep it off the public network."},
	{"COUNTERSIGN_TLS_CERT", "", "Empty: plain HTTP, for a TLS proxy in front (docs/deploy.md). Else a PEM certificate chain: `serve` answers HTTPS on `COUNTERSIGN_ADDR` with it and `COUNTERSIGN_TLS_KEY`, both or neither, and reads them again when they change (a renewal needs no restart)."},
	{"COUNTERSIGN_TLS_KEY", "", "The PEM private key of `COUNTERSIGN_TLS_CERT`."},
	{"COUNTERSIGN_ACME_DOMAIN", "", "Empty: no automatic certificates. Else the host name `serve` gets and renews a certificate for by itself (Let's Encrypt, ACME; its terms accepted), cached in `COUNTERSIGN_DATA/acme` on SQLite and in the database on PostgreSQL (shared by the instances). `COUNTERSIGN_BASE_URL` must be `https://` that name, and `COUNTERSIGN_ADDR` should be `:443`. Not with `COUNTERSIGN_TLS_CERT`."},
	{"COUNTERSIGN_HTTP_ADDR", "", "With TLS on: the listen address of a plain-HTTP listener that redirects (301) every request to `COUNTERSIGN_BASE_URL`. With `COUNTERSIGN_ACME_DOMAIN` it also answers ACME HTTP-01 challenges, and empty means `:80` (`off`: none); with `COUNTERSIGN_TLS_CERT` empty means none. Without TLS it must stay empty."},
	{"COUNTERSIGN_RULES", "", "Empty: approval rules are kept with `countersign rule` and the Admin → Rules page only. Else a YAML file of rules (`rules: [{id, account, kinds, effects, servers, tools, requesters, min_priority, count, pool, apply_from, escalate_to, escalate_after, remind_every}]`, or `{id, remove: true}`) checked at start, where a bad file fails the start, and set in their accounts: for operators who keep policy in git (`docs/security.md`)."},
	{"GOGC", "400", "Not Countersign's own: Go's garbage collector target. When it is unset `serve` uses 400, where the collector costs about a third of the CPU it does at Go's 100, for a heap of a few tens of MB (`docs/perf.md`)."},
}

// MarkdownTable is the table of docs/configuration.md, made from Settings.
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
	if path := get("COUNTERSIGN_RULES"); path != "" {
		if c.Rules, err = ReadRulesFile(path); err != nil {
			bad("COUNTERSIGN_RULES", "%v", err)
		}
	}
	c.DatabaseURL = get("COUNTERSIGN_DATABASE_URL")
	if c.DatabaseURL != "" {
		u, err := url.Parse(c.DatabaseURL)
		if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
			bad("COUNTERSIGN_DATABASE_URL", "must be a postgres://user:password@host/db URL, or empty for the embedded SQLite file")
		}
	}
	if c.InstanceURL = strings.TrimRight(get("COUNTERSIGN_INSTANCE_URL"), "/"); c.InstanceURL != "" {
		u, err := url.Parse(c.InstanceURL)
		switch {
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/"):
			bad("COUNTERSIGN_INSTANCE_URL", "must be a base URL like http://10.0.0.5:8080, the address the other instances reach this one at")
		case c.DatabaseURL == "":
			bad("COUNTERSIGN_INSTANCE_URL", "needs COUNTERSIGN_DATABASE_URL: several instances share one PostgreSQL, never a SQLite file")
		}
		switch c.InstanceSecret = get("COUNTERSIGN_INSTANCE_SECRET"); {
		case c.InstanceSecret == "":
			bad("COUNTERSIGN_INSTANCE_SECRET", "is needed with COUNTERSIGN_INSTANCE_URL: the same random secret on every instance (like the output of openssl rand -hex 32), which signs the calls they forward to each other")
		case len(c.InstanceSecret) < 32:
			bad("COUNTERSIGN_INSTANCE_SECRET", "must be at least 32 characters (like the output of openssl rand -hex 32)")
		}
	}
	if c.DatabasePool, err = strconv.Atoi(get("COUNTERSIGN_DATABASE_POOL")); err != nil || c.DatabasePool < 8 || c.DatabasePool > 1000 {
		bad("COUNTERSIGN_DATABASE_POOL", "must be a whole number from 8 to 1000")
	}
	if c.BaseURL = strings.TrimRight(get("COUNTERSIGN_BASE_URL"), "/"); c.BaseURL == "" {
		c.BaseURL, c.BaseURLFromAddr = BaseURLFor(c.Addr), true
	}
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
	if raw := get("COUNTERSIGN_SMTP_URL"); raw != "" {
		if c.SMTP, err = channels.ParseSMTP(raw, get("COUNTERSIGN_SMTP_FROM")); err != nil {
			bad("COUNTERSIGN_SMTP_URL", "%v", err)
		} else if ca := get("COUNTERSIGN_SMTP_CA_FILE"); ca != "" {
			if c.SMTP.RootCAs, err = channels.ReadCA(ca); err != nil {
				bad("COUNTERSIGN_SMTP_CA_FILE", "%v", err)
			}
		}
	} else if get("COUNTERSIGN_SMTP_FROM") != "" {
		bad("COUNTERSIGN_SMTP_FROM", "is set but COUNTERSIGN_SMTP_URL is not: set the server too, or neither")
	}
	c.SlackToken, c.SlackAPIURL = get("COUNTERSIGN_SLACK_BOT_TOKEN"), get("COUNTERSIGN_SLACK_API_URL")
	if c.SlackToken != "" && !strings.HasPrefix(c.SlackToken, "xoxb-") {
		bad("COUNTERSIGN_SLACK_BOT_TOKEN", "must be a bot token, xoxb-…")
	}
	for _, h := range strings.Split(get("COUNTERSIGN_CHANNEL_PRIVATE_HOSTS"), ",") {
		if h = strings.TrimSpace(h); h != "" {
			if strings.ContainsAny(h, "/ @") {
				bad("COUNTERSIGN_CHANNEL_PRIVATE_HOSTS", "%q is not a host or host:port", h)
			}
			c.ChannelPrivate = append(c.ChannelPrivate, h)
		}
	}
	if c.ChannelRetry, err = time.ParseDuration(get("COUNTERSIGN_CHANNEL_RETRY")); err != nil || c.ChannelRetry < time.Millisecond || c.ChannelRetry > 10*time.Minute {
		bad("COUNTERSIGN_CHANNEL_RETRY", "must be a duration from 1ms to 10m, like 1s")
	}
	c.CIBA = oauth.DefaultCIBALimits
	if c.CIBA.MaxExpiry, err = time.ParseDuration(get("COUNTERSIGN_CIBA_MAX_EXPIRY")); err != nil || c.CIBA.MaxExpiry < time.Minute || c.CIBA.MaxExpiry > oauth.MaxCIBAExpiry {
		bad("COUNTERSIGN_CIBA_MAX_EXPIRY", "must be a duration from 1m to 24h, like 10m")
	}
	if c.CIBA.PerPerson, err = strconv.Atoi(get("COUNTERSIGN_CIBA_PER_PERSON")); err != nil || c.CIBA.PerPerson < 1 || c.CIBA.PerPerson > 1000 {
		bad("COUNTERSIGN_CIBA_PER_PERSON", "must be a whole number from 1 to 1000")
	}
	if c.CIBA.PerClient, err = strconv.Atoi(get("COUNTERSIGN_CIBA_PER_CLIENT")); err != nil || c.CIBA.PerClient < 1 || c.CIBA.PerClient > 100000 {
		bad("COUNTERSIGN_CIBA_PER_CLIENT", "must be a whole number from 1 to 100000")
	}
	var refused map[string]string
	c.EnvChannels, refused = envChannels(get, channels.Guard{AllowPrivate: c.ChannelPrivate}, c.SlackToken)
	for _, name := range slices.Sorted(maps.Keys(refused)) {
		bad(name, "%s", refused[name])
	}
	if c.SessionIdle, err = time.ParseDuration(get("COUNTERSIGN_SESSION_IDLE_WEB")); err != nil || c.SessionIdle < 2*time.Minute || c.SessionIdle > people.SessionAbsolute {
		bad("COUNTERSIGN_SESSION_IDLE_WEB", "must be a duration from 2m to 720h, like 12h")
	}
	if c.AgentIdle, err = time.ParseDuration(get("COUNTERSIGN_SESSION_IDLE")); err != nil || c.AgentIdle < time.Second {
		bad("COUNTERSIGN_SESSION_IDLE", "must be a duration of at least 1s, like 30m")
	}
	if c.MCPSessions.Total, err = strconv.Atoi(get("COUNTERSIGN_MCP_SESSIONS")); err != nil || c.MCPSessions.Total < 1 || c.MCPSessions.Total > 1000000 {
		bad("COUNTERSIGN_MCP_SESSIONS", "must be a whole number from 1 to 1000000")
	} else if c.MCPSessions.PerToken, err = strconv.Atoi(get("COUNTERSIGN_MCP_SESSIONS_PER_TOKEN")); err != nil || c.MCPSessions.PerToken < 1 {
		bad("COUNTERSIGN_MCP_SESSIONS_PER_TOKEN", "must be a whole number from 1 to COUNTERSIGN_MCP_SESSIONS (%d)", c.MCPSessions.Total)
	} else if c.MCPSessions.PerToken > c.MCPSessions.Total {
		if strings.TrimSpace(getenv("COUNTERSIGN_MCP_SESSIONS_PER_TOKEN")) != "" {
			bad("COUNTERSIGN_MCP_SESSIONS_PER_TOKEN", "must be a whole number from 1 to COUNTERSIGN_MCP_SESSIONS (%d)", c.MCPSessions.Total)
		}
		c.MCPSessions.PerToken = c.MCPSessions.Total // the default follows a smaller instance cap
	}
	if c.MCPSessions.Idle, err = time.ParseDuration(get("COUNTERSIGN_MCP_SESSION_IDLE")); err != nil || c.MCPSessions.Idle < time.Second || c.MCPSessions.Idle > 24*time.Hour {
		bad("COUNTERSIGN_MCP_SESSION_IDLE", "must be a duration from 1s to 24h, like 10m")
	}
	for _, p := range strings.Split(get("COUNTERSIGN_TRUSTED_PROXIES"), ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		cidr := p
		if !strings.Contains(p, "/") {
			if ip := net.ParseIP(p); ip != nil && ip.To4() != nil {
				cidr += "/32"
			} else {
				cidr += "/128"
			}
		}
		_, n, err := net.ParseCIDR(cidr)
		if err != nil {
			bad("COUNTERSIGN_TRUSTED_PROXIES", "%q is not an address or a CIDR range (like 10.0.0.0/8)", p)
			continue
		}
		c.Proxies = append(c.Proxies, n)
	}
	if c.MetricsAddr = get("COUNTERSIGN_METRICS_ADDR"); c.MetricsAddr != "" {
		host, port, err := net.SplitHostPort(c.MetricsAddr)
		switch {
		case err != nil:
			bad("COUNTERSIGN_METRICS_ADDR", "%q is not host:port (like 127.0.0.1:9090)", c.MetricsAddr)
		case c.MetricsAddr == c.Addr && port != "0": // port 0: the system picks
			bad("COUNTERSIGN_METRICS_ADDR", "must differ from COUNTERSIGN_ADDR: metrics have a listener of their own")
		case host == "":
			c.MetricsAddr = net.JoinHostPort("127.0.0.1", port) // a bare port: this machine only
		}
	}
	c.TLSCert, c.TLSKey = get("COUNTERSIGN_TLS_CERT"), get("COUNTERSIGN_TLS_KEY")
	if (c.TLSCert == "") != (c.TLSKey == "") {
		bad("COUNTERSIGN_TLS_CERT", "COUNTERSIGN_TLS_CERT and COUNTERSIGN_TLS_KEY go together: set both (PEM files) or neither")
	}
	if c.ACMEDomain = strings.ToLower(get("COUNTERSIGN_ACME_DOMAIN")); c.ACMEDomain != "" {
		u, _ := url.Parse(c.BaseURL)
		switch {
		case c.TLSCert != "" || c.TLSKey != "":
			bad("COUNTERSIGN_ACME_DOMAIN", "not together with COUNTERSIGN_TLS_CERT and COUNTERSIGN_TLS_KEY: choose automatic certificates or your own")
		case !isHostName(c.ACMEDomain):
			bad("COUNTERSIGN_ACME_DOMAIN", "%q is not a host name like approvals.example.com", c.ACMEDomain)
		case u == nil || u.Scheme != "https" || u.Hostname() != c.ACMEDomain || (u.Port() != "" && u.Port() != "443"):
			bad("COUNTERSIGN_ACME_DOMAIN", "COUNTERSIGN_BASE_URL must be https://%s (it is %q): the certificate is for that name", c.ACMEDomain, c.BaseURL)
		}
	}
	if c.TLSCert != "" && !strings.HasPrefix(c.BaseURL, "https://") {
		bad("COUNTERSIGN_BASE_URL", "%q must be an https:// origin when serve answers HTTPS itself (COUNTERSIGN_TLS_CERT)", c.BaseURL)
	}
	switch c.HTTPAddr = get("COUNTERSIGN_HTTP_ADDR"); {
	case c.HTTPAddr == "off":
		c.HTTPAddr = ""
	case c.HTTPAddr != "" && !c.TLS():
		bad("COUNTERSIGN_HTTP_ADDR", "is the listener that redirects plain HTTP to HTTPS, so it needs TLS on (COUNTERSIGN_TLS_CERT or COUNTERSIGN_ACME_DOMAIN); leave it empty")
	case c.HTTPAddr == "" && c.ACMEDomain != "":
		c.HTTPAddr = ":80"
	case c.HTTPAddr != "":
		if _, port, err := net.SplitHostPort(c.HTTPAddr); err != nil {
			bad("COUNTERSIGN_HTTP_ADDR", "%q is not host:port (like :80), or off", c.HTTPAddr)
		} else if port != "0" && (c.HTTPAddr == c.Addr || c.HTTPAddr == c.MetricsAddr) { // port 0: the system picks
			bad("COUNTERSIGN_HTTP_ADDR", "must differ from COUNTERSIGN_ADDR and COUNTERSIGN_METRICS_ADDR")
		}
	}
	return c, errors.Join(errs...)
}

// BaseURLFor is the base URL of a service listening on addr, for when
// COUNTERSIGN_BASE_URL is unset: http://localhost:PORT when addr names no
// host, every host or a loopback address, else http://HOST:PORT.
func BaseURLFor(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil { // LoadConfig refuses it by name
		return "http://localhost:8080"
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && (ip.IsUnspecified() || ip.IsLoopback())) {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// isHostName accepts a DNS name of two or more labels (letters, digits,
// inner hyphens), not an IP address: what an ACME certificate is issued for.
func isHostName(s string) bool {
	labels := strings.Split(s, ".")
	if len(s) > 253 || len(labels) < 2 || net.ParseIP(s) != nil {
		return false
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for _, r := range l {
			if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' {
				return false
			}
		}
	}
	return true
}

// parsePushCap reads "20/10m" (20 pushes per 10 minutes) or "off".
func parsePushCap(s string) (outbox.PushCap, error) {
	if s == "off" {
		return outbox.PushCap{}, nil
	}
	n, window, ok := strings.Cut(s, "/")
	count, err := strconv.Atoi(n)
	if !ok || err != nil || count < 1 {
		return outbox.PushCap{}, fmt.Errorf("%q is not a cap like 20/10m (pushes per window) or off", s)
	}
	d, err := time.ParseDuration(window)
	if err != nil || d < time.Second {
		return outbox.PushCap{}, fmt.Errorf("%q is not a cap like 20/10m: the window is a duration of at least 1s", s)
	}
	return outbox.PushCap{N: count, Window: d}, nil
}
