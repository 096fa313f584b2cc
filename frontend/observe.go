package frontend

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpq/mcpq/internal/billmetrics"
)

// What an operator sees of a front end: Prometheus metrics on /metrics and
// an OpenTelemetry span per JSON-RPC request. Both are recorded here and in
// the /mcp middleware only, so the methods stay free of instrumentation.
// Labels are bounded: a method name mcpq serves (else "other"), an outcome
// class, a catalog key. Never a task id or a principal.

// Request outcomes (label "outcome" of mcpq_frontend_requests_total).
const (
	outcomeOK          = "ok"          // a result
	outcomeError       = "error"       // a JSON-RPC error answered with HTTP 200
	outcomeRejected    = "rejected"    // HTTP 4xx: bad input, auth, limits
	outcomeUnavailable = "unavailable" // HTTP 5xx: Redis or a dependency is away
)

// methodOther labels requests whose method is not served (or never parsed).
const methodOther = "other"

// metrics are a front end's collectors.
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec   // method, outcome
	latency  *prometheus.HistogramVec // method
	created  *prometheus.CounterVec   // tool
	// billing counts reservations and refusals at create, and the
	// settlements this front end's store runs (tasks/cancel of a task no
	// worker holds, a task that could not be scheduled).
	billing *billmetrics.Counters
	// byMethod holds each served method's latency observer, resolved once.
	byMethod map[string]prometheus.Observer
}

func newMetrics(reg *prometheus.Registry, methods map[string]method, billing *billmetrics.Counters) *metrics {
	m := &metrics{
		reg:     reg,
		billing: billing,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpq_frontend_requests_total",
			Help: "JSON-RPC requests on /mcp by method and outcome (ok, error, rejected, unavailable).",
		}, []string{"method", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mcpq_frontend_request_duration_seconds",
			Help:    "Time from request to the end of its answer, by method (a listen stream counts until it ends).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
		}, []string{"method"}),
		created: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpq_tasks_created_total",
			Help: "Task records created by this front end, by catalog entry (tool name).",
		}, []string{"tool"}),
		byMethod: make(map[string]prometheus.Observer, len(methods)+1),
	}
	for name := range methods {
		m.byMethod[name] = m.latency.WithLabelValues(name)
	}
	m.byMethod[methodOther] = m.latency.WithLabelValues(methodOther)
	reg.MustRegister(m.requests, m.latency, m.created)
	return m
}

// noteMethod records the request's (served) method on w for the middleware.
func noteMethod(w http.ResponseWriter, name string) {
	if sw, ok := w.(*statusWriter); ok {
		sw.method = name
	}
}

// noteError records the JSON-RPC error code answered on w.
func noteError(w http.ResponseWriter, code int) {
	if sw, ok := w.(*statusWriter); ok {
		sw.code = code
	}
}

// statusWriter remembers what the /mcp handler answered: the HTTP status
// written, and (noted by the handler) the method and JSON-RPC error code.
// It unwraps for http.ResponseController and flushes for SSE.
type statusWriter struct {
	http.ResponseWriter
	status int
	method string // a served method, or "" (methodOther)
	code   int    // the JSON-RPC error code answered, 0 for a result
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// observe counts and times each /mcp request: one counter increment and
// one histogram observation, on children resolved up front for served
// methods.
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		method := sw.method
		if method == "" {
			method = methodOther
		}
		s.metrics.byMethod[method].Observe(time.Since(start).Seconds())
		s.metrics.requests.WithLabelValues(method, outcome(sw.status, sw.code)).Inc()
	})
}

// outcome classes an answer by its HTTP status and JSON-RPC error code.
func outcome(status, code int) string {
	switch {
	case status >= 500:
		return outcomeUnavailable
	case status >= 400:
		return outcomeRejected
	case code != 0:
		return outcomeError
	}
	return outcomeOK
}

// serveMetrics answers GET /metrics in the Prometheus text format.
func (s *Server) serveMetrics() http.Handler {
	return promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)})
}

// traceContext reads W3C traceparent (and tracestate) headers.
var traceContext = propagation.TraceContext{}

// endSpan marks the request's span failed with the JSON-RPC error answered.
func endSpan(span trace.Span, err error) {
	if !span.IsRecording() {
		return // toRPC is not free
	}
	pe, _ := toRPC(err)
	span.SetAttributes(attribute.Int("rpc.jsonrpc.error_code", pe.Code))
	span.SetStatus(codes.Error, pe.Message)
}

// startSpan starts the request's span. Its parent is the client's W3C
// trace context: _meta.traceparent (with _meta.tracestate) when given,
// else the traceparent header. The span context travels in the task's job
// to the worker (internal/queue), so the worker's run and steps join the
// client's trace. Without a TracerProvider no span is made (nothing on the
// hot path): the client's context alone is passed on.
func (s *Server) startSpan(ctx context.Context, c *call) (context.Context, trace.Span) {
	if c.meta.Traceparent != "" {
		carrier := propagation.MapCarrier{"traceparent": c.meta.Traceparent}
		if c.meta.Tracestate != "" {
			carrier["tracestate"] = c.meta.Tracestate
		}
		ctx = traceContext.Extract(ctx, carrier)
	} else if c.httpReq.Header.Get("Traceparent") != "" {
		ctx = traceContext.Extract(ctx, propagation.HeaderCarrier(c.httpReq.Header))
	}
	if s.tracer == nil {
		return ctx, trace.SpanFromContext(ctx) // a non-recording span: End is a no-op
	}
	return s.tracer.Start(ctx, c.req.Method, trace.WithSpanKind(trace.SpanKindServer))
}

// traceAttr is the log attribute naming sc's trace, or an empty one
// (which slog leaves out).
func traceAttr(sc trace.SpanContext) slog.Attr {
	if sc.IsValid() {
		return slog.String("trace", sc.TraceID().String())
	}
	return slog.Attr{}
}
