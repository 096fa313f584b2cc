package frontend

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/mcpq/mcpq/internal/access"
	"github.com/mcpq/mcpq/internal/billmetrics"
	"github.com/mcpq/mcpq/internal/queue"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/events"
	"github.com/mcpq/mcpq/taskstate/series"
)

// Server is a stateless MCP front end.
type Server struct {
	stateKey   []byte        // HMAC key of MRTR requestState, shared by replicas
	draining   chan struct{} // closed by Drain: listen streams end
	drainOnce  sync.Once
	cfg        Config
	store      *taskstate.Store
	buckets    *access.Store // Config.RateLimit's request buckets
	hub        *events.Hub
	catalog    *catalogCache
	listens    listenCounts // open listen streams per principal
	notes      logNotes     // warnings logged once per interval, not per request
	hosts      hostList     // AllowedOrigins as Host headers match them
	log        *slog.Logger
	metrics    *metrics
	tracer     trace.Tracer // nil: tracing off
	era        eraServer    // the 2025-11-25 era's requests (hook.go); nil when Config.Eras leaves it out
	resultMeta proto.ResultMeta
	metaJSON   []byte // resultMeta encoded (encodeTask); nil when it would not encode
	// versions are the protocol versions served (Config.Eras).
	versions []string
	methods  map[string]method
	// jobs is the default enqueuer (Config.Enqueuer nil): mcpq's queue,
	// whose create sends record and job together (run.go's create).
	jobs *queue.Client
	// series counts creates, cancels and billing for the operator view's
	// numbers over time; seriesStop ends its flush and sampling loop
	// (series.go).
	series     *series.Recorder
	seriesStop func()
}

// method serves one JSON-RPC method.
type method func(ctx context.Context, c *call) (any, error)

// call is one JSON-RPC request in flight.
type call struct {
	req       *proto.Request
	httpReq   *http.Request
	principal string
	meta      *proto.RequestMeta
	names     *routing // params fields decoded with _meta
	resp      *responder
	trace     trace.SpanContext // the request's span (or the client's), for log lines
	// hook is the era that claimed the request (hook.go); nil for a
	// modern request.
	hook callHook
	// progress is the last notifications/progress value sent (it only
	// increases; an era numbers its own progress after it).
	progress     float64
	progressSent bool
	// taskNow: answer a task at once, whatever the policy's sync budget
	// (a 2025-11-25 task-augmented call); it declares the Tasks extension.
	taskNow bool
	// ttl is the lifetime such a call asked for (ms; nil: none asked),
	// honoured up to the tool's TTL (ttlFor).
	ttl *int64
	// observer: the request only watches a task (2025-11-25
	// tasks/result); leaving or timing out does not cancel it.
	observer bool
	// seen is the newest version of the task this request has shown (the
	// events it took, the record a tasks/result starts from): awaitSettled
	// skips events at or below it. A Redis Cluster
	// delivers a publish to subscribers on other nodes later, so an event
	// can arrive after a newer one, or after a subscription made once the
	// change was shown (a resumed stream).
	seen int64
}

// tasksDeclared reports whether the request declared the Tasks extension.
func (c *call) tasksDeclared() bool {
	return c.taskNow || c.meta.ClientCapabilities.HasExtension(proto.TasksExtension)
}

// New returns a Server. Close releases its pub/sub connection.
func New(cfg Config) (*Server, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	var jobs *queue.Client
	if cfg.Enqueuer == nil {
		// Its enqueues outside a create (a resume after input) wake idle
		// workers too.
		jobs = queue.NewClient(cfg.Redis, queue.Options{Prefix: cfg.Prefix, MaxTTL: cfg.MaxTTL, Capture: true,
			Shards: cfg.QueueShards})
		cfg.Enqueuer = queueEnqueuer{jobs}
	}
	billing := billmetrics.New(cfg.Metrics)
	numbers := series.NewRecorder(cfg.Redis, cfg.Prefix, cfg.Clock)
	store := taskstate.New(cfg.Redis, taskstate.Options{Prefix: cfg.Prefix, Clock: cfg.Clock, LostAfter: cfg.LostAfter,
		WaitReplicas: cfg.WaitReplicas, WaitTimeout: cfg.WaitTimeout, Settled: billing.Settled, Series: numbers})
	key := cfg.StateKey
	if len(key) == 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var err error
		if key, err = stateKeyFromRedis(ctx, cfg.Redis, store.Keys()); err != nil {
			return nil, fmt.Errorf("frontend: requestState key: %w", err)
		}
	}
	s := &Server{
		stateKey:   key,
		draining:   make(chan struct{}),
		cfg:        cfg,
		store:      store,
		buckets:    access.New(cfg.Redis, cfg.Prefix, cfg.Clock),
		hub:        events.NewHub(cfg.Redis),
		catalog:    newCatalog(store, cfg.CatalogTTL, cfg.Logger),
		log:        cfg.Logger,
		resultMeta: proto.ResultMeta{proto.MetaServerInfo: cfg.ServerInfo},
		jobs:       jobs,
		series:     numbers,
		versions:   cfg.Eras,
		hosts:      allowHosts(cfg.AllowedOrigins),
	}
	if b, err := encodeJSON(s.resultMeta); err == nil {
		s.metaJSON = b
	}
	s.methods = map[string]method{
		proto.MethodDiscover:  s.discover,
		proto.MethodToolsList: s.listTools,
		proto.MethodToolsCall: s.callTool,
		proto.MethodTasksGet:  s.getTask,
		proto.MethodTasksCncl: s.cancelTask,
		proto.MethodTasksUpd:  s.updateTask,
		proto.MethodListen:    s.listen,

		proto.MethodPromptsList:        s.listPrompts,
		proto.MethodPromptsGet:         s.getPrompt,
		proto.MethodResourcesList:      s.listResources,
		proto.MethodResourcesTemplates: s.listTemplates,
		proto.MethodResourcesRead:      s.readResource,
		proto.MethodComplete:           s.complete,
	}
	s.era = s.plugLegacy() // frontend/era.go
	s.metrics = newMetrics(cfg.Metrics, s.methods, billing)
	if cfg.TracerProvider != nil {
		s.tracer = cfg.TracerProvider.Tracer("github.com/mcpq/mcpq/frontend")
	}
	s.startSeries()
	return s, nil
}

// Drain ends every open subscriptions/listen stream with its final result,
// so an HTTP server Shutdown that follows is not held up by them.
func (s *Server) Drain() { s.drainOnce.Do(func() { close(s.draining) }) }

// Close releases the server's pub/sub connection. Drain and stop the HTTP
// server first.
func (s *Server) Close() error {
	s.Drain()
	s.stopSeries()
	return s.hub.Close()
}

// serveHealth answers GET /healthz, liveness: the process is up and serving
// HTTP. It does not touch Redis, so an orchestrator does not restart every
// replica while Redis is away (they could not help); readiness is /readyz.
func (s *Server) serveHealth(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"status":"ok"}`))
}

// readyCheckTimeout bounds the Redis round trips of one readiness check.
const readyCheckTimeout = 2 * time.Second

// serveReady answers GET /readyz, readiness: 200 when this replica can
// serve requests (Redis answers PING and the tool catalog can be read), else
// 503 with Retry-After and a short reason, so a load balancer sends traffic
// elsewhere. A draining replica is not ready either.
func (s *Server) serveReady(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), readyCheckTimeout)
	defer cancel()
	reason := ""
	select {
	case <-s.draining:
		reason = "draining"
	default:
		if err := s.cfg.Redis.Ping(ctx).Err(); err != nil {
			s.log.Warn("readiness: redis unreachable", "err", err)
			reason = "redis unreachable"
		} else if _, err := s.catalog.list(ctx); err != nil {
			s.log.Warn("readiness: tool catalog unreadable", "err", err)
			reason = "tool catalog unreadable"
		}
	}
	w.Header().Set("Content-Type", "application/json")
	if reason != "" {
		setRetryAfter(w.Header(), http.StatusServiceUnavailable)
		w.WriteHeader(http.StatusServiceUnavailable)
		b, _ := json.Marshal(map[string]string{"status": "unavailable", "reason": reason})
		_, _ = w.Write(b)
		return
	}
	_, _ = w.Write([]byte(`{"status":"ready"}`))
}

// decodeParams decodes the request's params into v; its error is -32602.
func decodeParams(c *call, v any) error {
	if err := json.Unmarshal(c.req.Params, v); err != nil {
		return proto.NewError(proto.CodeInvalidParams, "Invalid params: %v", err)
	}
	return nil
}
