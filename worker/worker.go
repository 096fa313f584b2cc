package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpq/mcpq/internal/billmetrics"
	"github.com/mcpq/mcpq/internal/queue"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/billing"
	"github.com/mcpq/mcpq/taskstate/catalog"
	"github.com/mcpq/mcpq/taskstate/events"
	"github.com/mcpq/mcpq/taskstate/series"
)

// Config configures a Worker. Zero values take the documented defaults.
type Config struct {
	// Redis is the shared Redis client (required). The worker does not close it.
	Redis redis.UniversalClient
	// Prefix starts every Redis key name of the deployment (default
	// DefaultPrefix); front ends and workers of one deployment share it.
	Prefix string
	// Name names this worker process in the timeline of each task it claims
	// and in the operator view (default: host name and process id, like
	// gpu-3-4711; docs/dashboard.md).
	Name string
	// Concurrency is how many jobs run at once (default 10) when Queues is empty.
	Concurrency int
	// Queues, when set, names the queues this worker serves and how many
	// jobs of each run at once ("gpu": 2, "cpu": 8). Each queue gets its
	// own asynq server, so a burst on one queue never takes the slots of
	// another (asynq has one concurrency per server, and priority weights
	// would share it). Entries on other queues are neither served nor
	// published. Empty (the default): every queue the entries name, one
	// server with Concurrency.
	Queues map[string]int
	// ToolQueues moves entries to queues by catalog key (a tool's name);
	// the key "*" moves every entry that names no queue (tools without
	// Tool.Queue, prompts, resources, completions). Every worker of a
	// deployment must agree on it: the front end enqueues a call on the
	// queue its catalog entry names.
	ToolQueues map[string]string
	// TaskCheckInterval is how often an idle worker looks for jobs
	// (default 20ms). A new job's wake-up delivers it at once
	// (docs/reliability.md, "Job pickup"), so the poll only bounds the wait
	// of a job whose wake-up was lost, to 1.5 × TaskCheckInterval, as with
	// polling alone.
	TaskCheckInterval time.Duration
	// CatalogInterval is how often the worker heartbeats the entries it
	// serves and publishes their definitions again (default 5s). An entry
	// stays in tools/list for ServedIntervals intervals after the last
	// heartbeat of its last worker.
	CatalogInterval time.Duration
	// ShutdownTimeout is how long running jobs get to finish on shutdown
	// before asynq puts them back in the queue (default 10s).
	ShutdownTimeout time.Duration
	// HeartbeatInterval is how often a running job proves it is alive and
	// learns of cancellation or expiry between steps (default 3s, or a
	// third of LostAfter when that is shorter, so a job that runs without
	// steps, such as a command tool, is not taken for lost).
	HeartbeatInterval time.Duration
	// ReapInterval is how often the worker finalizes expired tasks (default
	// 5s; any number of workers may reap at once).
	ReapInterval time.Duration
	// LedgerHook, when not nil, receives every principal's billing ledger
	// entries after they are written (docs/billing.md, "Settlement hook"):
	// the worker offers them every LedgerInterval (default 1s). It never
	// runs inside a task's transition, and a failing hook loses nothing:
	// the entries are offered again. Any number of workers may forward.
	LedgerHook     LedgerHook
	LedgerInterval time.Duration
	// MaxTTL caps Call.ExtendTTL (default DefaultMaxTTL, 24h;
	// front ends must have the same frontend.Config.MaxTTL).
	MaxTTL time.Duration
	// RecoverAfter is how long a working task may sit with no job before
	// the worker re-enqueues it (front end died before enqueueing; default 30s).
	RecoverAfter time.Duration
	// LostAfter is how old a running task's last heartbeat may be before
	// its delivery counts as lost and the task is run again (default
	// DefaultLostAfter, 10s). Keep it several HeartbeatIntervals.
	LostAfter time.Duration
	// MaxLostDeliveries is how many lost deliveries a task survives; one
	// more ends it "failed" (default 3).
	MaxLostDeliveries int
	// TakeoverInterval is how often the worker looks for lost deliveries
	// and overdue cancels (default 1s; any number of workers may look).
	TakeoverInterval time.Duration
	// MaxRunningPerPrincipal is a hard cap on each principal's tasks
	// running on a queue at once, counted across every worker of the
	// deployment, by mcpq queue name; the key "*" applies to every queue
	// not named. Without it a queue is already fair: a free slot goes to
	// the waiting principal with the fewest running (internal/queue
	// fair.go). The dequeue passes over a principal at its cap, so its
	// jobs wait in line without polling and the next runs when one of its
	// tasks on the queue ends. The claim checks the cap too, atomically; a
	// job it refuses (the two counts a moment apart) goes back to its
	// queue for BusyDelay (a new job id, as a takeover issues; no retry
	// spent). A parked task (input_required) counts for none, and a killed
	// worker's tasks stop counting after LostAfter. Empty (the default):
	// no cap. Every worker of a deployment needs the same.
	MaxRunningPerPrincipal map[string]int
	// QueueShards splits queues into shards, by mcpq queue name: each
	// shard is its own asynq queue on its own Redis Cluster slot, so one
	// queue's work spreads over a cluster's primaries (docs/deploy.md,
	// "Queue shards"). The worker serves every shard of its queues, and
	// every other shard of them asynq has seen a job on when it starts.
	// Front ends and workers of a deployment need the same.
	QueueShards map[string]int
	// BusyDelay is how long a job refused at claim over its principal's
	// cap, or handed back for a tool this worker does not serve
	// (handback.go), waits
	// before it is delivered again (default 1s; also how often, at most
	// every 5s, the worker moves due delayed jobs and retries to their
	// queue).
	BusyDelay time.Duration
	// Blobs says where result blocks too large for the task record go
	// (default: nowhere, they stay inline; worker/blobs.go).
	Blobs BlobConfig
	// Metrics is the registry the worker's collectors join and Handler's
	// /metrics serves (default: a new registry of its own).
	Metrics *prometheus.Registry
	// TracerProvider makes the spans of runs and steps, children of the
	// span of the request that enqueued the job (default nil: no spans).
	TracerProvider trace.TracerProvider
	// Clock is the time source (default time.Now).
	Clock func() time.Time
	// Logger receives the worker's logs (default slog.Default()).
	Logger *slog.Logger
}

// Defaults of Config, shared with the front end (frontend.Config has the
// same) and the task store.
const (
	// DefaultPrefix is Config.Prefix's default.
	DefaultPrefix = "mcpq:"
	// DefaultMaxTTL is Config.MaxTTL's default: the longest a task lives.
	DefaultMaxTTL = 24 * time.Hour
	// DefaultLostAfter is Config.LostAfter's default.
	DefaultLostAfter = 10 * time.Second
)

// Worker runs tools (and prompts, resources, completions) for tasks.
type Worker struct {
	cfg     Config
	store   *taskstate.Store
	log     *slog.Logger
	metrics *metrics
	// series counts claims, ends, takeovers and expiries for the operator
	// view's numbers over time; Run flushes it.
	series *series.Recorder
	tracer trace.Tracer // nil: tracing off

	mu      sync.Mutex
	entries map[string]*entry // by catalog.Entry.Key
	running bool
	queues  map[string]int // what Run serves: queue → slots (groups)
	started time.Time      // when New made the worker (catalog.WorkerInfo)
	// jobs holds the check-now function (watch) of each running delivery, by task id
	// and attempt (a stale delivery of a task may still run beside a newer
	// one), for the worker-wide stops subscription.
	jobsMu sync.Mutex
	jobs   map[string]map[int64]func()
	ready  chan struct{} // closed once the catalog is published and jobs are taken
	// stopping is set once Run begins shutting down.
	stopping atomic.Bool
	// enq enqueues the later jobs of tasks: over their principal's share,
	// handed back, taken over, recovered.
	enq *queue.Client
	// hub is Run's pub/sub hub (nil before Run): Call.HoldInput listens on
	// the task's events channel through it.
	hub atomic.Pointer[events.Hub]
}

// Ready is closed once Run has published the catalog and takes jobs.
func (w *Worker) Ready() <-chan struct{} { return w.ready }

// New returns a Worker serving tools.
func New(cfg Config, tools ...Tool) (*Worker, error) {
	if cfg.Redis == nil {
		return nil, errors.New("worker: Config.Redis is required")
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 10
	}
	if cfg.Name == "" {
		cfg.Name = defaultName()
	}
	if cfg.TaskCheckInterval <= 0 {
		cfg.TaskCheckInterval = 20 * time.Millisecond
	}
	if cfg.CatalogInterval <= 0 {
		cfg.CatalogInterval = 5 * time.Second
	}
	for q, n := range cfg.Queues {
		if q == "" || n <= 0 {
			return nil, fmt.Errorf("worker: queue %q needs a name and a concurrency above 0 (got %d)", q, n)
		}
	}
	for q, n := range cfg.QueueShards {
		if q == "" || n < 1 || n > queue.MaxShards {
			return nil, fmt.Errorf("worker: QueueShards entry %q=%d needs a queue and 1 to %d shards", q, n, queue.MaxShards)
		}
	}
	named := make([]string, 0, len(cfg.Queues)+len(cfg.ToolQueues)+len(cfg.QueueShards))
	for q := range cfg.Queues {
		named = append(named, q)
	}
	for _, q := range cfg.ToolQueues {
		named = append(named, q)
	}
	for q := range cfg.QueueShards {
		named = append(named, q)
	}
	for _, q := range named {
		if strings.Contains(q, queue.ShardSep) {
			return nil, fmt.Errorf("worker: queue %q: %q is kept for the names of a queue's shards (docs/deploy.md, \"Queue shards\")",
				q, queue.ShardSep)
		}
	}
	for k, q := range cfg.ToolQueues {
		if k == "" || q == "" {
			return nil, fmt.Errorf("worker: ToolQueues entry %q=%q needs a key and a queue", k, q)
		}
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = 10 * time.Second
	}
	if cfg.HeartbeatInterval <= 0 {
		lost := cfg.LostAfter
		if lost <= 0 {
			lost = DefaultLostAfter
		}
		cfg.HeartbeatInterval = min(3*time.Second, lost/3)
	}
	if cfg.LedgerInterval <= 0 {
		cfg.LedgerInterval = time.Second
	}
	if cfg.ReapInterval <= 0 {
		cfg.ReapInterval = 5 * time.Second
	}
	if cfg.MaxTTL <= 0 {
		cfg.MaxTTL = DefaultMaxTTL
	}
	if cfg.RecoverAfter <= 0 {
		cfg.RecoverAfter = 30 * time.Second
	}
	if cfg.LostAfter <= 0 {
		cfg.LostAfter = DefaultLostAfter
	}
	if cfg.MaxLostDeliveries <= 0 {
		cfg.MaxLostDeliveries = 3
	}
	if cfg.TakeoverInterval <= 0 {
		cfg.TakeoverInterval = time.Second
	}
	for q, n := range cfg.MaxRunningPerPrincipal {
		if q == "" || n < 0 {
			return nil, fmt.Errorf("worker: MaxRunningPerPrincipal entry %q=%d needs a queue (or *) and a number of 0 or more", q, n)
		}
	}
	if cfg.BusyDelay <= 0 {
		cfg.BusyDelay = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Metrics == nil {
		cfg.Metrics = prometheus.NewRegistry()
	}
	cfg.Blobs.setDefaults(cfg.MaxTTL)
	numbers := series.NewRecorder(cfg.Redis, cfg.Prefix, cfg.Clock)
	w := &Worker{cfg: cfg, entries: map[string]*entry{}, log: cfg.Logger, ready: make(chan struct{}), started: time.Now(),
		jobs:   map[string]map[int64]func(){},
		enq:    queue.NewClient(cfg.Redis, queue.Options{Prefix: cfg.Prefix, MaxTTL: cfg.MaxTTL, Shards: cfg.QueueShards}),
		series: numbers,
		store: taskstate.New(cfg.Redis, taskstate.Options{Prefix: cfg.Prefix, Clock: cfg.Clock, LostAfter: cfg.LostAfter,
			Worker:  workerID(cfg.Name),
			Series:  numbers,
			Settled: billmetrics.New(cfg.Metrics).Settled})} // billing totals of the settlements its scripts return
	if cfg.TracerProvider != nil {
		w.tracer = cfg.TracerProvider.Tracer("github.com/mcpq/mcpq/worker")
	}
	w.metrics = newMetrics(cfg.Metrics, w)
	for _, t := range tools {
		e, err := toolEntry(t)
		if err != nil {
			return nil, err
		}
		if _, dup := w.entries[e.def.Key()]; dup {
			return nil, fmt.Errorf("worker: tool %q registered twice", t.Name)
		}
		w.place(e)
		e.def.Order = len(w.entries) + 1
		w.entries[e.def.Key()] = e
	}
	return w, nil
}

// Run publishes the catalog and processes jobs until ctx is done. Shutdown
// order: stop taking new jobs, give running jobs ShutdownTimeout to finish
// (asynq re-queues the rest), stop publishing, release the pub/sub connection.
func (w *Worker) Run(ctx context.Context) error {
	w.mu.Lock()
	n := 0
	named := map[string]int{}
	for _, e := range w.entries {
		if w.serves(e) {
			n++
			named[e.queue] = w.cfg.Concurrency
		}
	}
	w.running = n > 0
	w.queues = w.groups(named)
	w.mu.Unlock()
	if n == 0 {
		if len(w.cfg.Queues) > 0 {
			return fmt.Errorf("worker: nothing to serve on queues %v", w.cfg.Queues)
		}
		return errors.New("worker: nothing to serve")
	}
	// Deferred first, so it runs last: the final flush counts what the
	// jobs handed back on the way out did.
	sctx, stopSeries := context.WithCancel(context.WithoutCancel(ctx))
	seriesDone := make(chan struct{})
	go func() {
		defer close(seriesDone)
		w.series.Run(sctx, func(err error) { w.log.Warn("series: flush the operator view numbers", "err", err) })
	}()
	defer func() { stopSeries(); <-seriesDone }()
	defer func() {
		w.mu.Lock()
		w.running = false
		w.mu.Unlock()
	}()
	if err := w.publish(ctx); err != nil {
		return fmt.Errorf("worker: publish catalog: %w", err)
	}
	hub := events.NewHub(w.cfg.Redis)
	defer hub.Close()
	w.hub.Store(hub)
	defer w.hub.Store(nil)
	stops, err := hub.Subscribe(ctx, w.store.Keys().Stops())
	if err != nil {
		return fmt.Errorf("worker: subscribe to stops: %w", err)
	}
	defer stops.Close()
	go w.routeStops(ctx, stops)
	lctx, stopLease := context.WithCancel(context.WithoutCancel(ctx))
	leaseDone := make(chan struct{})
	go func() { defer close(leaseDone); w.lease(lctx) }()
	defer func() { stopLease(); <-leaseDone }() // after the jobs went back: then the lease goes
	srvs, err := queue.Serve(ctx, w.serveConfig(hub, named), w.process)
	if err != nil && ctx.Err() != nil {
		return nil // stopped while starting: no job was taken
	} else if err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	w.log.Info("worker started", "entries", n, "queues", w.groups(named))
	close(w.ready)
	tick := time.NewTicker(w.cfg.CatalogInterval)
	defer tick.Stop()
	sweep := time.NewTicker(w.cfg.TakeoverInterval)
	defer sweep.Stop()
	reap := time.NewTicker(w.cfg.ReapInterval)
	defer reap.Stop()
	rescue := time.NewTicker(w.cfg.RecoverAfter)
	defer rescue.Stop()
	blobSweep := time.NewTicker(w.cfg.Blobs.SweepInterval)
	defer blobSweep.Stop()
	var ledger <-chan time.Time // nil: no hook, never ready
	if w.cfg.LedgerHook != nil {
		t := time.NewTicker(w.cfg.LedgerInterval)
		defer t.Stop()
		ledger = t.C
	}
	tctx, stopTakeover := context.WithCancel(ctx)
	defer stopTakeover()
	go w.takeover(tctx)
	for {
		select {
		case <-ctx.Done():
			w.stopping.Store(true)
			srvs.Stop()
			w.forget()
			w.log.Info("worker stopped")
			return nil
		case <-tick.C:
			if err := w.publish(ctx); err != nil && ctx.Err() == nil {
				w.log.Warn("publish catalog", "err", err)
			}
		case <-sweep.C:
			w.sweep(ctx)
		case <-reap.C:
			if n, err := w.reap(ctx); err != nil && ctx.Err() == nil {
				w.log.Warn("reap expired tasks", "err", err)
			} else if n > 0 {
				w.metrics.expired.Add(float64(n))
				w.series.Expired(n)
				w.log.Info("reaped expired tasks", "count", n)
			}
		case <-rescue.C:
			if _, err := w.recoverStranded(ctx); err != nil && ctx.Err() == nil {
				w.log.Warn("recover stranded tasks", "err", err)
			}
		case <-blobSweep.C:
			if w.cfg.Blobs.Store != nil {
				w.sweepBlobs(ctx)
			}
		case <-ledger:
			if _, err := w.store.Accounts().Forward(ctx, billing.MaxPage, w.cfg.LedgerHook.Forward); err != nil && ctx.Err() == nil {
				w.log.Warn("ledger hook: entries kept to offer again", "err", err)
			}
		}
	}
}

// ServedIntervals is how many CatalogIntervals an entry stays served
// after its last worker's last heartbeat: a worker killed without warning
// leaves tools/list within ServedIntervals × CatalogInterval.
const ServedIntervals = 3

// groups is the queue → concurrency table the worker serves: Config.Queues,
// or each queue the entries name (named) sharing Config.Concurrency.
func (w *Worker) groups(named map[string]int) map[string]int {
	if len(w.cfg.Queues) > 0 {
		return w.cfg.Queues
	}
	return named
}

// serveConfig configures the worker's asynq servers (internal/queue): one
// per queue of Config.Queues, or one for all the queues the entries name
// (named, the default), sharing Concurrency.
func (w *Worker) serveConfig(hub *events.Hub, named map[string]int) queue.ServeConfig {
	var groups []queue.Group
	if len(w.cfg.Queues) == 0 {
		g := queue.Group{Concurrency: w.cfg.Concurrency}
		for q := range named {
			g.Queues = append(g.Queues, q)
		}
		groups = append(groups, g)
	} else {
		for q, n := range w.cfg.Queues {
			groups = append(groups, queue.Group{Queues: []string{q}, Concurrency: n})
		}
	}
	return queue.ServeConfig{Redis: w.cfg.Redis, Keys: w.enq.Keys(), Hub: hub, Groups: groups,
		TaskCheckInterval: w.cfg.TaskCheckInterval,
		// Jobs over a share or handed back come back after BusyDelay, not up to 5 s later.
		DelayedCheck:    min(w.cfg.BusyDelay, 5*time.Second),
		ShutdownTimeout: w.cfg.ShutdownTimeout, Logger: w.log,
		Holding: w.metrics.holding.Add, Woken: w.metrics.woken.Inc,
		// A principal at its hard cap is passed over at dequeue: it waits without polling.
		Caps:   w.cfg.MaxRunningPerPrincipal,
		Shards: w.cfg.QueueShards}
}

// publish writes the definitions of the entries this worker serves and
// heartbeats them into the serving set (which announces entries that had
// no live worker).
func (w *Worker) publish(ctx context.Context) error {
	w.mu.Lock()
	defs := make([]catalog.Entry, 0, len(w.entries))
	keys := make([]string, 0, len(w.entries))
	for _, e := range w.entries {
		if w.serves(e) {
			defs = append(defs, e.def)
			keys = append(keys, e.def.Key())
		}
	}
	w.mu.Unlock()
	if err := w.store.Catalog().Publish(ctx, defs); err != nil {
		return err
	}
	if _, err := w.serve(ctx, keys); err != nil {
		return err
	}
	return w.describe(ctx, keys)
}

// serve heartbeats keys into the serving set for ServedIntervals intervals.
func (w *Worker) serve(ctx context.Context, keys []string) (catalog.ServingChange, error) {
	until := w.store.Now().Add(ServedIntervals * w.cfg.CatalogInterval)
	ch, err := w.store.Catalog().Serve(ctx, keys, until)
	if err == nil && len(ch.Added)+len(ch.Expired) > 0 {
		w.log.Info("catalog entries changed", "served", ch.Added, "no worker left", ch.Expired)
	}
	return ch, err
}

// sweep drops (and announces) the entries whose last worker's time ran out.
func (w *Worker) sweep(ctx context.Context) {
	ch, err := w.store.Catalog().Sweep(ctx)
	switch {
	case err != nil && ctx.Err() == nil:
		w.log.Warn("sweep catalog", "err", err)
	case len(ch.Expired) > 0:
		w.log.Info("catalog entries without a live worker", "entries", ch.Expired)
	}
}

// process runs one delivery of a task's job (ctx carries the trace of the
// request that enqueued it). It returns nil when the job is done with
// (whatever the task's outcome) and an error only when the job should be
// delivered again (Redis unreachable, worker shutting down).
func (w *Worker) process(ctx context.Context, j queue.Job) error {
	ctx, span := w.startSpan(ctx, "mcpq.run", trace.WithSpanKind(trace.SpanKindConsumer))
	defer span.End()
	err := w.runJob(ctx, span, j)
	if err != nil && span.IsRecording() {
		span.SetStatus(codes.Error, err.Error())
	}
	return err
}

// runJob is process inside the run's span.
func (w *Worker) runJob(ctx context.Context, span trace.Span, j queue.Job) error {
	var e *entry
	if j.Tool != "" {
		if e = w.entry(j.Tool); e == nil {
			return w.handBack(ctx, j) // for a worker that serves it (handback.go)
		}
	}
	ref := j.Ref
	share := w.share(j.Queue)
	// A second delivery of a job whose run goes on here (asynq's lease of
	// the first ran out, say in a Redis outage) claims nothing: ErrHeld.
	claim, err := w.store.ClaimBeside(ctx, ref, j.Seq, share, w.runningHere(ref.ID))
	var busy *taskstate.BusyError
	switch {
	case err == nil:
	case errors.As(err, &busy):
		w.later(ctx, j, busy)
		return nil
	case taskstate.NotOwned(err), errors.Is(err, taskstate.ErrCancelled), errors.Is(err, taskstate.ErrIllegal),
		errors.Is(err, taskstate.ErrHeld):
		w.log.Debug("job is a no-op", "task", ref.ID, "reason", err)
		if errors.Is(err, taskstate.ErrCancelled) || errors.Is(err, taskstate.ErrTerminal) {
			w.deleteArguments(ctx, ref.ID, "") // cancelled before it ran
		}
		return nil
	default:
		return err
	}
	rec := claim.Record
	if claim.Attempt == 1 && rec.Resumes == 0 && !rec.CreatedAt.IsZero() {
		waited := w.store.Now().Sub(rec.CreatedAt)
		w.metrics.pickup.Observe(waited.Seconds())
		w.series.Claimed(max(waited, time.Nanosecond))
	} else {
		w.series.Claimed(0)
	}
	if span.IsRecording() {
		span.SetAttributes(attribute.String("mcpq.task_id", ref.ID), attribute.String("mcpq.tool", rec.Tool),
			attribute.Int64("mcpq.attempt", claim.Attempt))
	}
	w.metrics.running.Inc()
	defer w.metrics.running.Dec()
	// Built only when something is logged: With formats its attributes at once.
	log := func() *slog.Logger {
		return w.log.With("task", ref.ID, "tool", rec.Tool, "attempt", claim.Attempt, traceAttr(ctx))
	}
	cancel := make(chan struct{})
	var cancelOnce sync.Once
	var cancelSeen atomic.Int64 // unix ns the run learned of a cancel
	// The run outlives asynq's lease of the job (asynq ends ctx when its
	// lease could not be renewed, as in a Redis outage): mcpq's own fencing
	// (heartbeat, takeover by worker lease) says when the task is no longer
	// this delivery's. Only a worker shutting down ends the run with ctx.
	runCtx, stopRun := context.WithCancelCause(context.WithoutCancel(ctx))
	defer stopRun(nil)
	defer context.AfterFunc(ctx, func() {
		if w.stopping.Load() {
			stopRun(context.Cause(ctx))
		}
	})()
	requestCancel := func() {
		cancelOnce.Do(func() { cancelSeen.Store(time.Now().UnixNano()); close(cancel); stopRun(ErrCancelled) })
	}
	// A stop announced before track is caught by the first heartbeat (and
	// Step checks the record's cancel flag and TTL).
	stopWatch, checkNow := w.watch(runCtx, ref, claim.Attempt, requestCancel, stopRun)
	defer stopWatch()
	w.track(ref.ID, claim.Attempt, checkNow)
	defer w.untrack(ref.ID, claim.Attempt)
	defer w.atDeadline(ref, rec.Deadline(), stopRun)()
	call := &Call{TaskID: ref.ID, Attempt: claim.Attempt, Arguments: rec.Arguments,
		ref: ref, tool: rec.Tool, record: rec, store: w.store, cancel: cancel, worker: w}
	var out taskstate.Outcome
	if e == nil || rec.Tool != j.Tool {
		e = w.entry(rec.Tool)
	}
	if e == nil { // a job that does not name its tool (enqueued by an mcpq before 0.2), for a tool not served here
		out = failed(proto.NewError(proto.CodeInvalidParams, "Unknown tool: %s", rec.Tool))
	} else {
		// Arguments kept in the object store are read under the heartbeat,
		// and their errors are handled as the handler's.
		var res any
		herr := w.loadArguments(runCtx, call)
		if herr == nil {
			res, herr = w.run(runCtx, e.run, call)
		}
		if ctx.Err() != nil && w.stopping.Load() && !call.cancelRequested() {
			return w.interrupted(ctx, ref, claim.Attempt, log)
		}
		if errors.Is(context.Cause(runCtx), errStop) {
			herr = errStop
		}
		if errors.Is(herr, errStop) {
			log().Info("task no longer ours: stopped without writing")
			return nil
		}
		if call.parked || errors.Is(herr, errParked) {
			// Parked: the task waits for input whatever the handler made
			// of the parking error (a handler that turned it into a
			// result must not complete the task over its pending input).
			w.metrics.inputWaits.WithLabelValues(rec.Tool).Inc()
			if w.log.Enabled(ctx, slog.LevelDebug) {
				log().Debug("task parked for input")
			}
			return nil
		}
		var transient *transientError
		if errors.As(herr, &transient) && !call.cancelRequested() {
			log().Warn("job will be retried", "err", herr)
			return herr
		}
		if herr == nil && !call.cancelRequested() {
			res, herr = w.offload(runCtx, call, res) // large blocks out of the record
		}
		out = outcome(e, res, herr, call.cancelRequested())
	}
	decided := time.Now()
	out.Beside = j.Done // the job's done rides with the outcome (internal/queue/done.go)
	status, err := w.conclude(ctx, rec, claim.Attempt, out, log)
	if status != "" {
		seen := decided // a cancel found by a step's check ended the run at once
		if ns := cancelSeen.Load(); ns != 0 {
			seen = time.Unix(0, ns)
		}
		w.metrics.finished(rec.Tool, status, rec.CreatedAt, w.store.Now(), seen, time.Now())
		took := time.Duration(0)
		if !rec.CreatedAt.IsZero() {
			took = max(w.store.Now().Sub(rec.CreatedAt), time.Nanosecond)
		}
		w.series.Ended(rec.Tool, string(status), took)
		if span.IsRecording() {
			span.SetAttributes(attribute.String("mcpq.status", string(status)))
		}
	}
	return err
}

// conclude writes a delivery's outcome, with a fresh context (a cancel
// stopped the run's), and deletes the arguments the task kept in the
// object store once it has ended. status is how the task ended when this
// write ended it ("" when it did not).
func (w *Worker) conclude(ctx context.Context, rec *taskstate.Record, attempt int64, out taskstate.Outcome,
	log func() *slog.Logger) (status proto.TaskStatus, err error) {
	err = w.finish(context.WithoutCancel(ctx), rec.Ref, attempt, out)
	switch {
	case errors.Is(err, taskstate.ErrCancelled):
		log().Info("cancel acknowledged before the outcome: task ended cancelled", "outcome", out.Status)
		status = proto.StatusCancelled
	case taskstate.NotOwned(err):
		log().Info("outcome not written", "status", out.Status, "reason", err)
		return "", nil
	case err != nil:
		return "", err
	default:
		if w.log.Enabled(ctx, slog.LevelDebug) { // log() formats its attributes at once: not per job for nothing
			log().Debug("task finished", "status", out.Status)
		}
		status = out.Status
	}
	if rec.ArgumentsRef != "" {
		w.deleteArguments(context.WithoutCancel(ctx), rec.Ref.ID, rec.ArgumentsRef)
	}
	return status, nil
}

// share is the principal share of queue q, the one the job came from.
func (w *Worker) share(q string) taskstate.Share {
	if len(w.cfg.MaxRunningPerPrincipal) == 0 {
		return taskstate.Share{}
	}
	n, ok := w.cfg.MaxRunningPerPrincipal[q]
	if !ok {
		n = w.cfg.MaxRunningPerPrincipal["*"]
	}
	return taskstate.Share{Queue: q, Max: n}
}

// later enqueues the next job of a task over its principal's share on
// its queue, to be delivered after BusyDelay. Should that fail, the task
// waits as "working" with no job, which the recovery of stranded tasks
// finds (RecoverAfter) and enqueues the same job id: it is not lost.
func (w *Worker) later(ctx context.Context, j queue.Job, busy *taskstate.BusyError) {
	j.Seq = busy.Seq
	if err := w.enq.EnqueueIn(ctx, j, w.cfg.BusyDelay); err != nil {
		w.log.Warn("task over its principal's share not re-enqueued: stranded-task recovery will", "task", j.Ref.ID,
			"job", queue.ID(j.Ref, j.Seq), "err", err)
		return
	}
	w.log.Debug("task over its principal's share: runs later", "task", j.Ref.ID, "queue", j.Queue, "running", busy.Running)
}

// finishRetryFor bounds how long finish keeps trying to write an outcome
// while Redis is unreachable.
const finishRetryFor = 2 * time.Minute

// finish writes the outcome, retrying while Redis is unreachable (up to
// finishRetryFor, or until the worker stops), so work done across a Redis
// outage is written as soon as Redis is back rather than run again. No
// takeover can come between: the scan waits LostAfter after an outage.
func (w *Worker) finish(ctx context.Context, ref taskstate.Ref, attempt int64, out taskstate.Outcome) error {
	deadline := time.Now().Add(finishRetryFor)
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
		err := w.store.Finish(ctx, ref, attempt, out)
		out.Beside = nil // sent once: a retry leaves the job to asynq's own done
		if err == nil || taskstate.NotOwned(err) || errors.Is(err, taskstate.ErrCancelled) ||
			errors.Is(err, taskstate.ErrIllegal) || time.Now().Add(wait).After(deadline) || w.stopping.Load() {
			return err
		}
		w.log.Warn("outcome not written yet: retrying", "task", ref.ID, "err", err, "in", wait)
		time.Sleep(wait)
	}
}

// interrupted handles a delivery whose worker is shutting down while its
// handler ran and no cancel was asked: the delivery gives up its hold
// (taskstate.Release), so the job asynq puts back in the queue is claimed
// at once by its next delivery; should the release not get through, the
// takeover scan runs the task again once this worker's lease is old.
func (w *Worker) interrupted(ctx context.Context, ref taskstate.Ref, attempt int64, log func() *slog.Logger) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	if err := w.store.Release(rctx, ref, attempt); err != nil && !taskstate.NotOwned(err) {
		log().Warn("worker stopping: hold not released; the takeover scan runs the task again", "err", err)
	}
	log().Info("worker stopping: job goes back to the queue")
	return ctx.Err()
}

func (w *Worker) track(id string, attempt int64, stop func()) {
	w.jobsMu.Lock()
	defer w.jobsMu.Unlock()
	if w.jobs[id] == nil {
		w.jobs[id] = map[int64]func(){}
	}
	w.jobs[id][attempt] = stop
}

func (w *Worker) untrack(id string, attempt int64) {
	w.jobsMu.Lock()
	defer w.jobsMu.Unlock()
	delete(w.jobs[id], attempt)
	if len(w.jobs[id]) == 0 {
		delete(w.jobs, id)
	}
}

// routeStops turns the worker-wide stops channel (a task id per cancel
// request, expiry or takeover) into an immediate heartbeat of each running
// delivery of the task: the record, not the signal, says what to do (a
// takeover's signal can arrive after the task's next delivery started
// here, which must go on).
func (w *Worker) routeStops(ctx context.Context, stops *events.Subscription) {
	for {
		select {
		case id := <-stops.C:
			w.jobsMu.Lock()
			for _, stop := range w.jobs[id] {
				stop()
			}
			w.jobsMu.Unlock()
		case <-ctx.Done():
			return
		}
	}
}

// watch heartbeats every HeartbeatInterval while the job runs, which
// catches a cancel (requestCancel) and stops the job (errStop) when the
// task is no longer its own. A timer, not a goroutine: most jobs end
// before their first heartbeat. It returns the func that stops it and one
// that heartbeats at once (on a stop signal).
func (w *Worker) watch(ctx context.Context, ref taskstate.Ref, attempt int64,
	requestCancel func(), stop context.CancelCauseFunc) (stopWatch func() bool, checkNow func()) {
	var t *time.Timer
	beat := func() {
		if ctx.Err() != nil {
			return
		}
		err := w.store.Heartbeat(ctx, ref, attempt)
		if err == nil || errors.Is(err, taskstate.ErrCancelled) {
			w.metrics.heartbeats.Inc()
		}
		switch {
		case errors.Is(err, taskstate.ErrCancelled):
			requestCancel()
		case taskstate.NotOwned(err):
			stop(errStop)
			return
		}
		if ctx.Err() == nil {
			t.Reset(w.cfg.HeartbeatInterval)
		}
	}
	t = time.AfterFunc(math.MaxInt64, beat) // armed below, once t is set
	t.Reset(w.cfg.HeartbeatInterval)
	return t.Stop, func() { t.Reset(0) }
}

// run calls h, turning a panic into a protocol error and a typed nil
// *proto.Error into no error.
func (w *Worker) run(ctx context.Context, h func(context.Context, *Call) (any, error), c *Call) (res any, err error) {
	defer func() {
		if p := recover(); p != nil {
			w.log.Error("tool handler panicked", "task", c.TaskID, "panic", p, "stack", string(debug.Stack()))
			res, err = nil, proto.NewError(proto.CodeInternalError, "Internal error: tool handler panicked")
		}
	}()
	res, err = h(ctx, c)
	if pe, ok := err.(*proto.Error); ok && pe == nil {
		err = nil
	}
	return res, err
}

// outcome classifies what a handler returned. For tools a plain error is a
// tool error (isError); for prompts, resources and completions it is an
// internal (protocol) error.
func outcome(e *entry, res any, err error, cancelRequested bool) taskstate.Outcome {
	var perr *proto.Error
	switch {
	case errors.Is(err, ErrCancelled) || cancelRequested:
		return taskstate.Outcome{Status: proto.StatusCancelled, StatusMessage: "Cancelled"}
	case errors.As(err, &perr):
		return failed(perr)
	case err != nil && e.toolErrors:
		res = ErrorResult(err.Error())
	case err != nil:
		return failed(proto.NewError(proto.CodeInternalError, "Internal error: %v", err))
	case res == nil && e.toolErrors:
		res = &proto.CallToolResult{}
	case res == nil:
		return failed(proto.NewError(proto.CodeInternalError, "Internal error: handler returned no result"))
	}
	msg := "Completed"
	if tr, ok := res.(*proto.CallToolResult); ok {
		if tr.Content == nil {
			tr.Content = []proto.Content{}
		}
		if tr.IsError {
			msg = "Completed with a tool error"
		}
	}
	b, merr := encodeResult(res)
	if merr != nil {
		return failed(proto.NewError(proto.CodeInternalError, "Internal error: result not encodable: %v", merr))
	}
	return taskstate.Outcome{Status: proto.StatusCompleted, Result: b, StatusMessage: msg}
}

func failed(e *proto.Error) taskstate.Outcome {
	return taskstate.Outcome{Status: proto.StatusFailed, Error: e, StatusMessage: e.Message}
}
