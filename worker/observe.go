package worker

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpq/mcpq/internal/queue"
	"github.com/mcpq/mcpq/proto"
)

// What an operator sees of a worker: Prometheus metrics, /healthz and
// /readyz (Handler), and OpenTelemetry spans of each run and step.
// Everything is counted in process (the run wrapper), watch (heartbeats),
// the takeover scan and the reaper: counters and histograms only, labelled
// by catalog key, queue or terminal status, never by task id or principal.

// durationBuckets are the buckets of task-scale times: from a fast tool's
// milliseconds to a long GPU job's hour.
var durationBuckets = []float64{.005, .025, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600}

// metrics are a worker's collectors.
type metrics struct {
	reg        *prometheus.Registry
	ended      *prometheus.CounterVec   // tool, status
	pickup     prometheus.Histogram     // createdAt → first claim
	duration   *prometheus.HistogramVec // tool: createdAt → outcome written
	inputWaits *prometheus.CounterVec   // tool
	cancel     prometheus.Histogram     // cancel seen → cancelled outcome written
	heartbeats prometheus.Counter
	takeovers  *prometheus.CounterVec // action
	expired    prometheus.Counter
	running    prometheus.Gauge
	holding    prometheus.Gauge       // asynq servers holding a dequeue for a wake-up (internal/queue)
	woken      prometheus.Counter     // jobs a wake-up delivered
	handBacks  *prometheus.CounterVec // outcome (handback.go)
}

// Outcomes of a job for a tool this worker does not serve (label
// "outcome" of mcpq_worker_handbacks_total).
const (
	handBackRequeued = "requeued" // back in the queue, for a worker that serves the tool
	handBackFailed   = "failed"   // no live worker serves the tool: the task failed
)

// Takeover actions (label "action" of mcpq_worker_takeovers_total).
const (
	takeoverRerun     = "rerun"     // a lost delivery's task was enqueued again
	takeoverFailed    = "failed"    // ended failed after too many lost deliveries
	takeoverCancelled = "cancelled" // an overdue cancel ended cancelled
)

func newMetrics(reg *prometheus.Registry, w *Worker) *metrics {
	m := &metrics{
		reg: reg,
		ended: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpq_tasks_ended_total",
			Help: "Tasks a worker run ended, by catalog entry and terminal status (completed, failed, cancelled).",
		}, []string{"tool", "status"}),
		pickup: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "mcpq_task_pickup_seconds",
			Help:    "Time from a task's creation to its first delivery's claim by a worker.",
			Buckets: durationBuckets,
		}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mcpq_task_duration_seconds",
			Help:    "Time from a task's creation to the terminal outcome a worker wrote, by catalog entry.",
			Buckets: durationBuckets,
		}, []string{"tool"}),
		inputWaits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpq_task_input_waits_total",
			Help: "Times a run parked its task in input_required, by catalog entry.",
		}, []string{"tool"}),
		cancel: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "mcpq_task_cancel_seconds",
			Help:    "Time from a running delivery learning of a cancel to the cancelled outcome written.",
			Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}),
		heartbeats: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mcpq_worker_heartbeats_total",
			Help: "Heartbeats running deliveries wrote into their task records (timer and between steps).",
		}),
		takeovers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpq_worker_takeovers_total",
			Help: "What this worker's takeover scans did: rerun (a lost worker's task enqueued again), failed (too many lost deliveries), cancelled (an overdue cancel).",
		}, []string{"action"}),
		expired: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mcpq_tasks_expired_total",
			Help: "Expired tasks this worker's reaper finalized.",
		}),
		running: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mcpq_worker_running_jobs",
			Help: "Deliveries running on this worker now.",
		}),
		holding: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mcpq_worker_idle_holds",
			Help: "asynq servers of this worker whose queues are empty, waiting for a wake-up (docs/reliability.md, \"Job pickup\").",
		}),
		woken: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mcpq_worker_woken_jobs_total",
			Help: "Jobs an idle worker dequeued on a wake-up rather than on its poll.",
		}),
		handBacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpq_worker_handbacks_total",
			Help: "Jobs for a tool this worker does not serve: requeued (for a worker that serves it) or failed (no live worker serves it).",
		}, []string{"outcome"}),
	}
	for _, a := range []string{takeoverRerun, takeoverFailed, takeoverCancelled} {
		m.takeovers.WithLabelValues(a) // shown at 0 from the start
	}
	for _, o := range []string{handBackRequeued, handBackFailed} {
		m.handBacks.WithLabelValues(o)
	}
	reg.MustRegister(m.ended, m.pickup, m.duration, m.inputWaits, m.cancel, m.heartbeats,
		m.takeovers, m.expired, m.running, m.holding, m.woken, m.handBacks, &queueCollector{w: w})
	return m
}

// finished counts a terminal outcome written by a run of tool for a task
// created at created (storeNow: now on the store's clock); cancelSeen is
// when the run learned of a cancel (wall clock, as now).
func (m *metrics) finished(tool string, status proto.TaskStatus, created, storeNow, cancelSeen, now time.Time) {
	m.ended.WithLabelValues(tool, string(status)).Inc()
	if !created.IsZero() {
		m.duration.WithLabelValues(tool).Observe(storeNow.Sub(created).Seconds())
	}
	if status == proto.StatusCancelled && !cancelSeen.IsZero() {
		m.cancel.Observe(now.Sub(cancelSeen).Seconds())
	}
}

// Queue gauges, read from the queues at scrape time.
var (
	queueDepthDesc = prometheus.NewDesc("mcpq_queue_jobs",
		"Jobs in a queue this worker serves, by state (pending, active, scheduled, retry, archived).",
		[]string{"queue", "state"}, nil)
	queueLatencyDesc = prometheus.NewDesc("mcpq_queue_oldest_pending_seconds",
		"Age of the oldest pending job of a queue this worker serves (0 when none waits).",
		[]string{"queue"}, nil)
)

// queueScrapeTimeout bounds the Redis reads of one scrape's queue gauges.
const queueScrapeTimeout = 2 * time.Second

// queueCollector reports each served queue's depth and oldest pending job
// when scraped (a few Redis round trips per queue; nothing on the job path).
type queueCollector struct{ w *Worker }

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- queueDepthDesc
	ch <- queueLatencyDesc
}

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	w := c.w
	w.mu.Lock()
	queues := map[string]bool{}
	for q := range w.cfg.Queues {
		queues[q] = true
	}
	if len(queues) == 0 {
		for _, e := range w.entries {
			if w.serves(e) {
				queues[e.queue] = true
			}
		}
	}
	w.mu.Unlock()
	known, err := w.enq.Queues()
	if err != nil {
		w.log.Warn("metrics: queues unreadable", "err", err)
		return
	}
	deadline := time.Now().Add(queueScrapeTimeout)
	for q := range queues {
		if time.Now().After(deadline) {
			return
		}
		d, err := queue.Depth{}, error(nil) // a queue no job was ever put on
		if known[q] {
			d, err = w.enq.Depth(q)
		}
		if err != nil {
			w.log.Warn("metrics: queue unreadable", "queue", q, "err", err)
			continue
		}
		for state, n := range map[string]int{"pending": d.Pending, "active": d.Active,
			"scheduled": d.Scheduled, "retry": d.Retry, "archived": d.Archived} {
			ch <- prometheus.MustNewConstMetric(queueDepthDesc, prometheus.GaugeValue, float64(n), q, state)
		}
		ch <- prometheus.MustNewConstMetric(queueLatencyDesc, prometheus.GaugeValue, d.Latency.Seconds(), q)
	}
}

// Handler serves the worker's operator endpoints: GET /metrics
// (Prometheus), GET /healthz (liveness: the process answers) and GET
// /readyz (readiness: Run has published the catalog and takes jobs, the
// worker is not stopping, and Redis answers PING).
func (w *Worker) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(w.metrics.reg,
		promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(w.log.Handler(), slog.LevelWarn)}))
	mux.HandleFunc("GET /healthz", func(rw http.ResponseWriter, _ *http.Request) {
		rw.Header().Set("Content-Type", "application/json")
		_, _ = rw.Write([]byte(`{"status":"ok"}`))
	})
	mux.HandleFunc("GET /readyz", w.serveReady)
	return mux
}

// readyCheckTimeout bounds the Redis round trip of one readiness check.
const readyCheckTimeout = 2 * time.Second

func (w *Worker) serveReady(rw http.ResponseWriter, r *http.Request) {
	reason := ""
	select {
	case <-w.ready:
		if w.stopping.Load() {
			reason = "stopping"
			break
		}
		ctx, cancel := context.WithTimeout(r.Context(), readyCheckTimeout)
		defer cancel()
		if err := w.cfg.Redis.Ping(ctx).Err(); err != nil {
			w.log.Warn("readiness: redis unreachable", "err", err)
			reason = "redis unreachable"
		}
	default:
		reason = "catalog not published yet"
	}
	rw.Header().Set("Content-Type", "application/json")
	if reason != "" {
		rw.Header().Set("Retry-After", "1")
		rw.WriteHeader(http.StatusServiceUnavailable)
		b, _ := json.Marshal(map[string]string{"status": "unavailable", "reason": reason})
		_, _ = rw.Write(b)
		return
	}
	_, _ = rw.Write([]byte(`{"status":"ready"}`))
}

// traceAttr is the log attribute naming ctx's trace, or an empty one.
func traceAttr(ctx context.Context) slog.Attr {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		return slog.String("trace", sc.TraceID().String())
	}
	return slog.Attr{}
}

// startSpan starts a span named name under ctx's span, or makes none when
// tracing is off (nil tracer: nothing on the job path).
func (w *Worker) startSpan(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if w.tracer == nil {
		return ctx, trace.SpanFromContext(ctx)
	}
	return w.tracer.Start(ctx, name, opts...)
}
