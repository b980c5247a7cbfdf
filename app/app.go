package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/countersign/countersign/channels"
	"github.com/countersign/countersign/handlers"
	"github.com/countersign/countersign/mcp"
	"github.com/countersign/countersign/metrics"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/ops"
	"github.com/countersign/countersign/models/outbox"
	"github.com/countersign/countersign/models/people"
	"github.com/countersign/countersign/oauth"
	"github.com/countersign/countersign/passkey"
	"github.com/countersign/countersign/push"
)

// App is a running Countersign, short of its listener.
type App struct {
	Config Config
	Store  *models.Store
	MCP    *mcp.Server
	Push   *push.Sender
	// Messages sends the channel outbox: email, Slack, Teams, ntfy, webhooks.
	Messages *channels.Sender
	// OAuth is the authorization server of the MCP endpoint and the
	// OpenID CIBA provider.
	OAuth *oauth.Server
	// Pings tell ping-mode CIBA clients their requests ended.
	Pings   *oauth.Pinger
	Keys    push.Keys
	Handler http.Handler
	// Metrics serves /metrics when COUNTERSIGN_METRICS_ADDR is set; else nil.
	Metrics http.Handler
	metrics *metrics.Metrics
	log     *slog.Logger
	pages   *handlers.Handlers
	// instance is this instance's id among several (COUNTERSIGN_INSTANCE_URL); "" alone.
	instance string
}

// EndStreams ends the MCP standing streams and the live timelines, which are
// served off net/http (package standing): call it when the HTTP server shuts
// down (http.Server.RegisterOnShutdown), whose Shutdown neither waits for
// nor closes them. Their clients reconnect, to another instance if need be.
func (a *App) EndStreams() {
	a.MCP.EndStreams()
	if a.pages != nil {
		a.pages.EndStreams()
	}
}

// Open connects to the database, migrates it, makes the default account on
// first start and builds the HTTP handler.
func Open(ctx context.Context, cfg Config, log *slog.Logger) (*App, error) {
	store, err := OpenStore(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	if err := store.CheckSubjects(ctx); err != nil {
		return nil, err
	}
	if err := store.EnsureDefaultAccount(ctx); err != nil {
		return nil, err
	}
	if err := ApplyEnvChannels(ctx, store, cfg.EnvChannels); err != nil {
		return nil, fmt.Errorf("the channels the environment sets: %w", err)
	}
	if cfg.Rules != nil {
		if err := ApplyRulesFile(ctx, store, cfg.Rules); err != nil {
			return nil, fmt.Errorf("COUNTERSIGN_RULES: %w", err)
		}
	}
	rp, err := passkey.New(cfg.BaseURL)
	if err != nil {
		return nil, err
	}
	keys, err := push.LoadKeys(ctx, store)
	if err != nil {
		return nil, err
	}
	store.SetPushCap(cfg.PushCap)
	store.SetSessionIdle(cfg.SessionIdle)
	store.SetAgentSessionIdle(cfg.AgentIdle)
	var (
		observe    *metrics.Metrics
		mcpObserve mcp.Observer
		pushed     func(string)
		messaged   func(string, string)
	)
	if cfg.MetricsAddr != "" {
		observe = metrics.New(store, log)
		mcpObserve, pushed, messaged = observe, observe.PushSent, observe.MessageSent
		if store.Dialect() == core.SQLite {
			store.SetWriteObserver(observe.WriteWaited)
		}
	}
	sender := push.NewSender(store, keys, push.Options{BaseURL: cfg.BaseURL, Contact: cfg.PushContact, AllowedHosts: cfg.PushHosts, Workers: cfg.PushWorkers, RetryBase: cfg.PushRetry, Logger: log, Outcome: pushed})
	messenger := channels.NewSender(store, channels.Options{BaseURL: cfg.BaseURL, Channels: channelsOf(cfg), RetryBase: cfg.ChannelRetry, Logger: log, Outcome: messaged})
	authz := oauth.New(store, cfg.BaseURL, cfg.BaseURL+"/mcp")
	authz.CIBA = cfg.CIBA
	pinger := oauth.NewPinger(store, channels.Guard{AllowPrivate: cfg.ChannelPrivate}.Client(20*time.Second), cfg.ChannelRetry, log)
	authz.NotificationPrivateHosts = cfg.ChannelPrivate
	var instance mcp.Instance
	if cfg.InstanceURL != "" {
		instance = mcp.Instance{ID: mcp.NewInstanceID(), Address: store.InstanceAddress, Secret: cfg.InstanceSecret}
		if err := store.RegisterInstance(ctx, instance.ID, cfg.InstanceURL); err != nil {
			return nil, err
		}
	}
	endpoint := mcp.New(store, mcp.Options{Version: cfg.Version, BaseURL: cfg.BaseURL, AskRate: cfg.AskRate, AskBurst: cfg.AskBurst, Logger: log, Observer: mcpObserve, Sessions: cfg.MCPSessions, Instance: instance,
		ResourceMetadataURL: cfg.BaseURL + handlers.ProtectedResourcePath + "/mcp", PublicHost: publicHost(cfg.BaseURL),
		Resource: authz.Resource(), AuthorizationServer: authz.Issuer()})
	a := &App{Config: cfg, Store: store, MCP: endpoint, Push: sender, Messages: messenger, OAuth: authz, Pings: pinger, Keys: keys, metrics: observe, log: log, instance: instance.ID}
	store.Changes().Subscribe(func(c core.Change) {
		switch c.Kind {
		case core.OutboxQueued:
			sender.Wake()
			messenger.Wake()
		case core.ChangesMissed:
			sender.Wake()
			messenger.Wake()
			endpoint.RecheckAccess()
		case core.AgentsChanged:
			if c.AgentID != "" {
				endpoint.AccessEnded(c.AgentID)
			}
		case core.ApprovalChanged:
			endpoint.ApprovalChanged(c.ApprovalID)
			pinger.Wake()
		case core.RunsChanged:
			endpoint.RunsChanged(c.RunnerID)
		}
	})
	h := handlers.New(store, rp, cfg.BaseURL, handlers.PushConfig{PublicKey: keys.Public, AllowedHosts: cfg.PushHosts}, log)
	h.TrustProxies(cfg.Proxies)
	h.OfferChannels(handlers.ChannelConfig{Email: cfg.SMTP != nil, Slack: cfg.SlackToken != "", Guard: channels.Guard{AllowPrivate: cfg.ChannelPrivate}})
	h.ServeOAuth(authz)
	if store.Dialect() == core.Postgres {
		h.CheckReady(a.listenerReady)
	}
	if observe != nil {
		observe.Count("countersign_mcp_sessions", "MCP sessions this instance holds, 2026-07-28 subscriptions/listen streams included (COUNTERSIGN_MCP_SESSIONS caps them).", endpoint.OpenSessions)
		observe.Count("countersign_waiting_streams", "Waiting streams this instance serves off net/http: MCP GET and listen streams, and live timelines.",
			func() int { return endpoint.StandingStreams() + h.LiveTimelines() })
		h.Observe(observe)
		a.Metrics = observe.Handler()
	}
	a.Handler, a.pages = h.Routes(endpoint), h
	return a, nil
}

// publicHost is the host[:port] of the base URL, as a Host header carries it.
func publicHost(baseURL string) string {
	u, err := url.Parse(baseURL)
	if err != nil { // LoadConfig has checked it
		return ""
	}
	return u.Host
}

// listenerReady refuses while the PostgreSQL change listener is not
// connected: this instance would not hear the others' changes.
func (a *App) listenerReady(context.Context) error {
	if !a.Store.Changes().Listening() {
		return errors.New("the change listener is not connected")
	}
	return nil
}

// SetupURL returns, while nobody has registered yet, a fresh owner invite
// of the default account for the first person; "" once someone has. The
// link printed by an earlier start stops working: there is one setup link.
func (a *App) SetupURL(ctx context.Context) (string, error) {
	n, err := a.Store.CountPersons(ctx)
	if err != nil || n > 0 {
		return "", err
	}
	acct, err := a.Store.AccountByName(ctx, people.DefaultAccountName)
	if err != nil {
		return "", err
	}
	if n, err := a.Store.RevokeOpenInvites(ctx, acct.ID, people.SetupInviter); err != nil {
		return "", err
	} else if n > 0 {
		a.log.Info("the setup link printed before this start no longer works", "revoked", n)
	}
	token, _, err := a.Store.CreateInvite(ctx, people.NewInvite{AccountID: acct.ID, Role: core.RoleOwner, By: people.OperatorInviter(people.SetupInviter)})
	if err != nil {
		return "", err
	}
	return InviteURL(a.Config.BaseURL, token), nil
}

// InviteURL is the page where an invite is accepted.
func InviteURL(baseURL, token string) string { return baseURL + "/invite/" + token }

// SQLitePath is the SQLite file cfg opens (when it names no PostgreSQL
// URL), absolute when the working folder can be read.
func (c Config) SQLitePath() string {
	p := filepath.Join(c.Data, core.SQLiteFile)
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

// DatabaseName says which database cfg opens, for logs and the CLI: the
// SQLite file's absolute path, or the PostgreSQL host and database (never
// the password).
func (c Config) DatabaseName() string {
	if c.DatabaseURL == "" {
		return "sqlite " + c.SQLitePath()
	}
	u, err := url.Parse(c.DatabaseURL)
	if err != nil {
		return "postgres (an unreadable URL)"
	}
	return "postgres " + u.Host + u.Path
}

// ErrNoDatabase is returned by CheckDatabase when the SQLite file is missing.
var ErrNoDatabase = errors.New("no database")

// CheckDatabase refuses a missing SQLite file unless create: an admin
// command on a data folder where serve never ran is most likely a mistyped
// COUNTERSIGN_DATA, and would otherwise make an empty database there.
func CheckDatabase(c Config, create bool) error {
	if c.DatabaseURL != "" || create {
		return nil
	}
	_, err := os.Stat(c.SQLitePath())
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%w at %s: countersign serve has never run with COUNTERSIGN_DATA=%s; check COUNTERSIGN_DATA, or pass --init to make a new database there", ErrNoDatabase, c.SQLitePath(), c.Data)
	case err != nil:
		return fmt.Errorf("look for the database: %w", err)
	}
	return nil
}

// OpenStore opens the configured database, for the service and the CLI; log
// hears of the migrations it applies.
func OpenStore(ctx context.Context, cfg Config, log *slog.Logger) (*models.Store, error) {
	db, dialect, err := core.Open(ctx, cfg.DatabaseURL, cfg.Data, cfg.DatabasePool, log)
	if err != nil {
		return nil, err
	}
	return models.NewStore(db, dialect, cfg.AskTTL), nil
}

// Background runs the service's workers until ctx ends: the expiry sweeper,
// the audit sealer, the push, channel and CIBA ping senders and, on PostgreSQL, the listener that
// feeds other instances' changes into the store's change feed.
func (a *App) Background(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { a.Sweep(ctx) })
	wg.Go(func() { a.SealAudit(ctx) })
	wg.Go(func() { a.FlushHeartbeats(ctx) })
	wg.Go(func() { a.Push.Run(ctx) })
	wg.Go(func() { a.Messages.Run(ctx) })
	wg.Go(func() { a.Pings.Run(ctx) })
	if a.metrics != nil {
		wg.Go(func() { a.metrics.Run(ctx) })
	}
	if a.Store.Dialect() == core.Postgres {
		wg.Go(func() { a.Store.ListenPostgres(ctx, a.Config.DatabaseURL, a.log) })
	}
	if a.instance != "" {
		wg.Go(func() { a.RenewInstance(ctx) })
	}
	wg.Wait()
}

// RenewInstance renews this instance's record (its internal address, for
// the others' forwarding of MCP calls) every models.InstanceRenewEvery
// until ctx ends, then deletes it.
func (a *App) RenewInstance(ctx context.Context) {
	t := time.NewTicker(ops.InstanceRenewEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			last, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := a.Store.ForgetInstance(last, a.instance); err != nil {
				a.log.Warn("forget this instance at shutdown", "err", err)
			}
			return
		case <-t.C:
		}
		if err := a.Store.RegisterInstance(ctx, a.instance, a.Config.InstanceURL); err != nil && ctx.Err() == nil {
			a.log.Error("renew this instance's record: the others cannot forward its sessions' calls", "err", err)
		}
	}
}

// SealEvery is how often the audit log's new events are sealed into its hash chain.
const SealEvery = time.Second

// SealAudit seals new audit events into the hash chain every SealEvery until
// ctx ends (see models.AuditSealer).
func (a *App) SealAudit(ctx context.Context) {
	sealer := a.Store.NewAuditSealer()
	t := time.NewTicker(SealEvery)
	defer t.Stop()
	for {
		if _, err := sealer.Seal(ctx); err != nil && ctx.Err() == nil {
			a.log.Error("seal the audit log", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Sweep expires open asks past their life, reminds and escalates the asks
// approval rules cover (models.Store.RemindAndEscalate), deletes expired passkey
// ceremonies, decision challenges and web sessions, and ends idle agent
// sessions, every cfg.SweepEvery until ctx ends. On PostgreSQL one instance
// at a time makes the pass (models.SweepTurn): an instance that finds
// another one at it skips its own, and tries again at its next tick. The
// first pass is at start, unless cfg.NoStartSweep puts it one tick later.
func (a *App) Sweep(ctx context.Context) {
	t := time.NewTicker(a.Config.SweepEvery)
	defer t.Stop()
	if !a.Config.NoStartSweep {
		a.sweepTurn(ctx)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		a.sweepTurn(ctx)
	}
}

// sweepTurn makes this instance's pass of the sweeper, unless another
// instance is making one.
func (a *App) sweepTurn(ctx context.Context) {
	ran, err := a.Store.TakeTurn(ctx, core.SweepTurn, a.sweepOnce)
	switch {
	case err != nil && ctx.Err() == nil:
		a.log.Error("sweep", "err", err)
	case !ran && err == nil:
		a.log.Debug("another instance is sweeping: this one skips its pass")
	}
}

// sweepOnce makes one pass of the sweeper. Each step runs even when one
// before it failed; the error names every step that failed.
func (a *App) sweepOnce(ctx context.Context) error {
	var errs []error
	if n, err := a.Store.ExpireDue(ctx); err != nil {
		errs = append(errs, fmt.Errorf("expire asks: %w", err))
	} else if n > 0 {
		a.log.Info("expired asks", "count", n)
	}
	if reminded, escalated, err := a.Store.RemindAndEscalate(ctx); err != nil {
		errs = append(errs, fmt.Errorf("remind and escalate asks: %w", err))
	} else if reminded+escalated > 0 {
		a.log.Info("reminded and escalated asks", "reminded", reminded, "escalated", escalated)
	}
	if _, err := a.Store.SweepExpired(ctx); err != nil {
		errs = append(errs, fmt.Errorf("sweep expired ceremonies, challenges and sessions: %w", err))
	}
	if _, err := a.Store.EndIdleSessions(ctx); err != nil {
		errs = append(errs, fmt.Errorf("end idle agent sessions: %w", err))
	}
	return errors.Join(errs...)
}

// FlushHeartbeats writes the agent sessions' heartbeat times noted in
// memory every Store.HeartbeatFlushEvery until ctx ends, and once more then,
// so that a heartbeat answered from reads keeps its session alive on every
// instance (see models.Store.FlushHeartbeats).
func (a *App) FlushHeartbeats(ctx context.Context) {
	t := time.NewTicker(a.Store.HeartbeatFlushEvery())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			last, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if _, err := a.Store.FlushHeartbeats(last); err != nil {
				a.log.Error("write heartbeat times at shutdown", "err", err)
			}
			return
		case <-t.C:
		}
		if _, err := a.Store.FlushHeartbeats(ctx); err != nil && ctx.Err() == nil {
			a.log.Error("write heartbeat times", "err", err)
		}
	}
}

// Close releases the database.
func (a *App) Close() error {
	db, err := a.Store.DB().DB()
	if err != nil {
		return fmt.Errorf("close: %w", err)
	}
	return db.Close()
}

// channelsOf are the channels the configuration turns on: email and Slack
// when their settings are there; Teams, ntfy and webhooks always, each
// through the guard that keeps posts off private addresses.
func channelsOf(cfg Config) map[string]channels.Channel {
	guard := channels.Guard{AllowPrivate: cfg.ChannelPrivate}
	client := guard.Client(15 * time.Second)
	out := map[string]channels.Channel{
		outbox.ChannelTeams:   &channels.Teams{Client: client},
		outbox.ChannelNtfy:    &channels.Ntfy{Client: client},
		outbox.ChannelWebhook: &channels.Webhook{Client: client, Now: time.Now},
	}
	if cfg.SMTP != nil {
		out[outbox.ChannelEmail] = &channels.Email{SMTP: cfg.SMTP}
	}
	if cfg.SlackToken != "" {
		slackClient := &http.Client{Timeout: 15 * time.Second}
		if cfg.SlackAPIURL != "" {
			slackClient = guard.Client(15 * time.Second)
		}
		out[outbox.ChannelSlack] = channels.NewSlack(cfg.SlackToken, cfg.SlackAPIURL, slackClient)
	}
	return out
}
