// Package metrics owns Countersign's Prometheus registry: the series an
// operator watches, fed through the small observer methods the HTTP layer,
// the MCP endpoint and the push sender call, and through the store's change
// feed. Nothing else imports Prometheus.
package metrics

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
)

// Metrics is the registry and its series.
type Metrics struct {
	reg          *prometheus.Registry
	asksFiled    *prometheus.CounterVec
	transitions  *prometheus.CounterVec
	decided      *prometheus.HistogramVec
	pushes       *prometheus.CounterVec
	messages     *prometheus.CounterVec
	mcpCalls     *prometheus.CounterVec
	httpRequests *prometheus.CounterVec
	writeWait    prometheus.Histogram

	store       *models.Store
	log         *slog.Logger
	moves       chan move
	unsubscribe func()
}

// decisionSteps are the timeline steps that decide an ask: the wait up to
// one of them is the filed-to-decided time.
var decisionSteps = map[string]bool{
	string(asks.EventApprove): true, string(asks.EventDeny): true, string(asks.EventAutoApprove): true,
}

// New makes the registry with every series, reading the outbox depth from
// store at each scrape; Run counts the transitions store's change feed
// announces.
func New(store *models.Store, log *slog.Logger) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		asksFiled: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "countersign_asks_filed_total",
			Help: "Asks filed through this instance, by kind."}, []string{"kind"}),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "countersign_transitions_total",
			Help: "Asks that moved to a status, by that status (on PostgreSQL every instance hears every instance's)."}, []string{"status"}),
		decided: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "countersign_filed_to_decided_seconds",
			Help:    "Time from filing an ask to its decision, by kind.",
			Buckets: []float64{1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 4 * 3600, 12 * 3600, 24 * 3600, 7 * 24 * 3600}}, []string{"kind"}),
		pushes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "countersign_pushes_total",
			Help: "Web Push attempts by outcome: delivered, gone, retry, failed."}, []string{"outcome"}),
		messages: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "countersign_channel_messages_total",
			Help: "Channel message attempts by channel (email, slack, teams, ntfy, webhook) and outcome: sent, retry, dead, skipped."}, []string{"channel", "outcome"}),
		mcpCalls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "countersign_mcp_calls_total",
			Help: "MCP tool calls by tool and result code (OK or the refusal's code)."}, []string{"tool", "code"}),
		httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "countersign_http_requests_total",
			Help: "HTTP requests by route (the pattern, not the path) and status."}, []string{"route", "status"}),
		writeWait: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "countersign_sqlite_write_queue_wait_seconds",
			Help:    "Time an SQLite write waited in the queue for the one writer before its transaction began.",
			Buckets: []float64{0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}}),
	}
	outbox := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "countersign_push_outbox_depth",
		Help: "Pushes waiting in the outbox (queued or to be retried)."}, func() float64 {
		c, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		n, err := store.OutboxDepth(c)
		if err != nil {
			log.Warn("metrics: outbox depth", "err", err)
			return -1
		}
		return float64(n)
	})
	m.reg.MustRegister(m.asksFiled, m.transitions, m.decided, m.pushes, m.messages, m.mcpCalls, m.httpRequests, m.writeWait, outbox,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.store, m.log = store, log
	m.moves = make(chan move, 1024)
	m.unsubscribe = store.Changes().Subscribe(func(c core.Change) {
		if c.Kind != core.ApprovalChanged || c.Seq == 0 {
			return
		}
		select {
		case m.moves <- move{c.ApprovalID, c.From, c.Seq}:
		default: // full: dropped from the counts, never waited for
		}
	})
	return m
}

// move is an approval change to count: the timeline events from from to seq.
type move struct {
	id        string
	from, seq int64
}

// Run reads, off the publisher's goroutine, the timeline events each
// approval change stands for (a write that approves a command request and
// executes it appends two), and counts their statuses and decision waits,
// until ctx ends.
func (m *Metrics) Run(ctx context.Context) {
	defer m.unsubscribe()
	for {
		select {
		case <-ctx.Done():
			return
		case mv := <-m.moves:
			evs, err := m.store.MovesIn(ctx, mv.id, mv.from, mv.seq)
			if err != nil {
				if ctx.Err() == nil {
					m.log.Warn("metrics: read a move", "approval", mv.id, "err", err)
				}
				continue
			}
			for _, ev := range evs {
				if ev.ToStatus != "" && ev.ToStatus != ev.FromStatus {
					m.transitions.WithLabelValues(string(ev.ToStatus)).Inc()
				}
				if decisionSteps[ev.Step] {
					m.decided.WithLabelValues(ev.Kind).Observe(ev.Waited.Seconds())
				}
			}
		}
	}
}

// Count adds a gauge read from count at each scrape: what an instance
// holds now, such as its open MCP sessions.
func (m *Metrics) Count(name, help string, count func() int) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 { return float64(count()) }))
}

// WriteWaited records how long an SQLite write waited for the writer.
func (m *Metrics) WriteWaited(d time.Duration) { m.writeWait.Observe(d.Seconds()) }

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// HTTPRequest counts one answered request.
func (m *Metrics) HTTPRequest(route string, status int) {
	m.httpRequests.WithLabelValues(route, strconv.Itoa(status)).Inc()
}

// ToolCalled counts one MCP tool call with its result code.
func (m *Metrics) ToolCalled(tool, code string) { m.mcpCalls.WithLabelValues(tool, code).Inc() }

// AskFiled counts one ask filed, by kind.
func (m *Metrics) AskFiled(kind string) { m.asksFiled.WithLabelValues(kind).Inc() }

// PushSent counts one push attempt's outcome.
func (m *Metrics) PushSent(outcome string) { m.pushes.WithLabelValues(outcome).Inc() }

// MessageSent counts one attempt of a channel message, by channel and outcome.
func (m *Metrics) MessageSent(channel, outcome string) {
	m.messages.WithLabelValues(channel, outcome).Inc()
}
