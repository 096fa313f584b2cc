package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpq/mcpq/frontend"
	"github.com/mcpq/mcpq/internal/redisconn"
	"github.com/mcpq/mcpq/internal/toolpack/chaos"
	"github.com/mcpq/mcpq/internal/toolpack/conformance"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/worker"
	"github.com/mcpq/mcpq/worker/command"
	"github.com/mcpq/mcpq/worker/toolpack/demo"
	"github.com/mcpq/mcpq/worker/upstream"
)

// env reads an environment variable with a default.
func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return v
	}
	return def
}

func envDuration(name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		fmt.Fprintf(os.Stderr, "mcpq: %s=%q is not a duration (like 500ms or 2h); using %s\n", name, v, def)
		return def
	}
	return d
}

func envFloat(name string, def float64) float64 {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		fmt.Fprintf(os.Stderr, "mcpq: %s=%q is not a number; using %g\n", name, v, def)
		return def
	}
	return f
}

func envInt(name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		fmt.Fprintf(os.Stderr, "mcpq: %s=%q is not a number; using %d\n", name, v, def)
		return def
	}
	return n
}

// redisClient connects to REDIS_URL: one server (redis://host:6379/0), a
// Redis Cluster (redis+cluster://h1:p1,h2:p2/) or a Sentinel-managed primary
// (redis+sentinel://s1:p1,s2:p2/MASTER/0); the forms are in docs/redis.md.
func redisClient() (redis.UniversalClient, error) {
	rdb, err := redisconn.Connect(env("REDIS_URL", "redis://127.0.0.1:6379/0"))
	if err != nil {
		return nil, fmt.Errorf("REDIS_URL: %w", err)
	}
	return rdb, nil
}

// adviseRedis logs, once at start, a Redis setting that saves memory on
// every task: asynq's job hash (its message is over
// hash-max-listpack-value bytes, default 64) and a running task's record
// with long arguments lose Redis's compact encoding, and an ended task's
// record keeps its result in a separate key (taskstate.Keys.TaskExtra)
// instead of its own compact hash. Managed Redis may refuse CONFIG GET;
// then nothing is said.
func adviseRedis(ctx context.Context, log *slog.Logger, rdb redis.UniversalClient) {
	const setting = "hash-max-listpack-value"
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	v, err := rdb.ConfigGet(ctx, setting).Result()
	if err != nil {
		return
	}
	if n, err := strconv.Atoi(v[setting]); err == nil && n < 1024 {
		log.Info("Redis keeps hashes compact only for values up to " + v[setting] + " bytes; " +
			"'" + setting + " 1024' in redis.conf saves about 200 bytes per queued task and 100 per finished one (docs/benchmarks.md)")
	}
}

// frontendFlags registers the front end's flags, defaulted from the environment.
func frontendFlags(fs *flag.FlagSet, cfg *frontend.Config) {
	fs.Int64Var(&cfg.MaxBodyBytes, "max-body", int64(envInt("MCPQ_MAX_BODY_BYTES", 4<<20)), "largest request body in bytes (env MCPQ_MAX_BODY_BYTES)")
	fs.DurationVar(&cfg.SyncBudget, "sync-budget", envDuration("MCPQ_SYNC_BUDGET", 500*time.Millisecond), "how long an auto tool call waits before it becomes a task (env MCPQ_SYNC_BUDGET)")
	fs.DurationVar(&cfg.SyncWaitLimit, "sync-wait-limit", envDuration("MCPQ_SYNC_WAIT_LIMIT", 5*time.Minute), "longest a call is held open when it cannot be a task (env MCPQ_SYNC_WAIT_LIMIT)")
	fs.DurationVar(&cfg.DefaultTTL, "default-ttl", envDuration("MCPQ_DEFAULT_TTL", time.Hour), "task lifetime for tools that set none (env MCPQ_DEFAULT_TTL)")
	fs.BoolVar(&cfg.AllowUnlimitedTTL, "allow-unlimited-ttl", env("MCPQ_ALLOW_UNLIMITED_TTL", "") == "true", "let tools ask for tasks that never expire (env MCPQ_ALLOW_UNLIMITED_TTL=true)")
	fs.Func("allowed-origins", "comma-separated browser origins or host names allowed to call, * for all (env MCPQ_ALLOWED_ORIGINS; default localhost, 127.0.0.1, [::1])", func(v string) error {
		cfg.AllowedOrigins = splitList(v)
		return nil
	})
	cfg.AllowedOrigins = splitList(env("MCPQ_ALLOWED_ORIGINS", ""))
	fs.Func("eras", "comma-separated protocol versions served: 2026-07-28 (stateless) and 2025-11-25 (sessions opened by initialize) (env MCPQ_ERAS; default both)", func(v string) error {
		cfg.Eras = splitList(v)
		return nil
	})
	cfg.Eras = splitList(env("MCPQ_ERAS", ""))
	fs.DurationVar(&cfg.SessionIdle, "session-idle", envDuration("MCPQ_SESSION_IDLE", time.Hour), "how long a 2025-11-25 session lives without a request (env MCPQ_SESSION_IDLE)")
	fs.IntVar(&cfg.MaxJSONValues, "max-json-values", envInt("MCPQ_MAX_JSON_VALUES", frontend.DefaultMaxJSONValues), "most JSON values (array elements, object members) in one request body, counted before decoding, -1 for no bound (env MCPQ_MAX_JSON_VALUES)")
	fs.IntVar(&cfg.MaxDepth, "max-depth", envInt("MCPQ_MAX_DEPTH", 64), "deepest JSON nesting of a request body (env MCPQ_MAX_DEPTH)")
	fs.Float64Var(&cfg.RateLimit, "rate-limit", envFloat("MCPQ_RATE_LIMIT", 0), "requests per second per principal across replicas, 0 for none (env MCPQ_RATE_LIMIT)")
	fs.IntVar(&cfg.RateBurst, "rate-burst", envInt("MCPQ_RATE_BURST", 0), "rate limit burst (env MCPQ_RATE_BURST; default 2 x rate)")
	fs.IntVar(&cfg.MaxLiveTasks, "max-live-tasks", envInt("MCPQ_MAX_LIVE_TASKS", 1000), "tasks per principal that have not ended, -1 for no cap (env MCPQ_MAX_LIVE_TASKS)")
	fs.Int64Var(&cfg.MaxArgumentBytes, "max-argument-bytes", int64(envInt("MCPQ_MAX_ARGUMENT_BYTES", 1<<20)), "largest arguments of one call in bytes, -1 for the body limit only (env MCPQ_MAX_ARGUMENT_BYTES)")
	fs.Int64Var(&cfg.MaxArgumentBytesHeld, "max-argument-bytes-held", int64(envInt("MCPQ_MAX_ARGUMENT_BYTES_HELD", 64<<20)), "argument bytes one principal's live tasks may hold, in Redis or in --blob-url, -1 for no cap (env MCPQ_MAX_ARGUMENT_BYTES_HELD)")
	fs.IntVar(&cfg.InlineMaxArgumentBytes, "inline-max-argument-bytes", envInt("MCPQ_INLINE_MAX_ARGUMENT_BYTES", frontend.DefaultInlineMaxArgumentBytes), "largest call arguments kept in the task record; larger ones go to --blob-url and the record keeps their key, -1 for never (env MCPQ_INLINE_MAX_ARGUMENT_BYTES)")
	fs.IntVar(&cfg.MaxListenStreams, "max-listen-streams", envInt("MCPQ_MAX_LISTEN_STREAMS", 16), "open subscriptions/listen streams per principal on one front end, -1 for no cap (env MCPQ_MAX_LISTEN_STREAMS)")
	fs.DurationVar(&cfg.AuthRecheck, "auth-recheck", envDuration("MCPQ_AUTH_RECHECK", 2*time.Second), "how often open streams and held calls check their key again (env MCPQ_AUTH_RECHECK)")
	fs.IntVar(&cfg.WaitReplicas, "wait-replicas", envInt("MCPQ_WAIT_REPLICAS", 0), "Redis replicas that must hold a task's creation, update or cancel before it is acknowledged, 0 for none (env MCPQ_WAIT_REPLICAS; docs/redis.md)")
	fs.DurationVar(&cfg.WaitTimeout, "wait-timeout", envDuration("MCPQ_WAIT_TIMEOUT", time.Second), "how long to wait for those replicas before the request fails as not replicated (env MCPQ_WAIT_TIMEOUT)")
	cfg.Admins = splitList(os.Getenv("MCPQ_ADMIN_PRINCIPALS"))
	fs.Func("admin-principals", "principals (comma-separated, as named in --api-keys-file or MCPQ_API_KEYS) that see the operator view, GET /v1/ops/* (env MCPQ_ADMIN_PRINCIPALS; docs/dashboard.md)",
		func(v string) error { cfg.Admins = splitList(v); return nil })
	fs.BoolVar(&cfg.Billing, "billing", env("MCPQ_BILLING", "") == "true", "reserve priced tools' ceilings from the caller's account and settle them (env MCPQ_BILLING=true; docs/billing.md)")
	fs.DurationVar(&cfg.IdempotencyTTL, "idempotency-ttl", envDuration("MCPQ_IDEMPOTENCY_TTL", 24*time.Hour), "how long a tools/call idempotency key answers its task, at most the task's TTL (env MCPQ_IDEMPOTENCY_TTL)")
	fs.DurationVar(&cfg.PollInterval, "poll-interval", envDuration("MCPQ_POLL_INTERVAL", time.Second), "pollIntervalMs for tools that set none (env MCPQ_POLL_INTERVAL)")
}

// sharedFlags registers the settings front ends and workers must agree on,
// each once (mcpq dev registers them once, for both): the lost-delivery
// bound, the cap on task lifetimes and the queues' shards.
func sharedFlags(fs *flag.FlagSet, lostAfter, maxTTL *time.Duration, shards *map[string]int) {
	fs.DurationVar(lostAfter, "lost-after", envDuration("MCPQ_LOST_AFTER", taskstate.DefaultLostAfter),
		"a running task whose worker has not heartbeat for this long is run again elsewhere (env MCPQ_LOST_AFTER)")
	fs.DurationVar(maxTTL, "max-ttl", envDuration("MCPQ_MAX_TTL", worker.DefaultMaxTTL),
		"cap on every task lifetime, also when a tool extends it (env MCPQ_MAX_TTL)")
	shardsFlag(fs, shards) // queues.go
}

// workerFlags registers the worker's flags, defaulted from the environment.
func workerFlags(fs *flag.FlagSet, cfg *worker.Config, fixtures, tools *string) {
	fs.IntVar(&cfg.Concurrency, "concurrency", envInt("MCPQ_CONCURRENCY", 10), "jobs run at once (env MCPQ_CONCURRENCY)")
	fs.DurationVar(&cfg.TaskCheckInterval, "task-check-interval", envDuration("MCPQ_TASK_CHECK_INTERVAL", 20*time.Millisecond), "how often an idle worker polls for jobs; new jobs wake it, so this bounds a lost wake-up's delay (env MCPQ_TASK_CHECK_INTERVAL)")
	fs.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", envDuration("MCPQ_SHUTDOWN_TIMEOUT", 10*time.Second), "on SIGTERM, how long running jobs get to finish before they go back to the queue; keep a pod's terminationGracePeriodSeconds above it (env MCPQ_SHUTDOWN_TIMEOUT)")
	fs.IntVar(&cfg.MaxLostDeliveries, "max-lost-deliveries", envInt("MCPQ_MAX_LOST_DELIVERIES", 3), "lost deliveries a task survives; one more ends it failed (env MCPQ_MAX_LOST_DELIVERIES)")
	fs.StringVar(fixtures, "fixtures", env("MCPQ_FIXTURES", ""), `extra tool packs, comma-separated: "conformance", "chaos" (env MCPQ_FIXTURES)`)
	queueFlags(fs, cfg) // queues.go
	*tools = env("MCPQ_TOOLS", "")
	fs.Var(&fileList{v: tools}, "tools", "YAML or JSON files of command tools to serve instead of the demo pack, comma-separated or the flag repeated (env MCPQ_TOOLS; docs/tools.md)")
}

// fileList is a flag that may be given several times, each a
// comma-separated list; the values join with commas. The first use
// replaces the default (from the environment).
type fileList struct {
	v   *string
	set bool
}

func (f *fileList) String() string {
	if f.v == nil {
		return ""
	}
	return *f.v
}

func (f *fileList) Set(s string) error {
	if !f.set {
		*f.v, f.set = "", true
	}
	if *f.v != "" && s != "" {
		*f.v += ","
	}
	*f.v += s
	return nil
}

// splitList splits a comma-separated list, dropping empty items.
func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// newWorker builds a worker serving the named fixture packs, then the
// command tools and upstream servers of the tools file or, without one,
// the demo pack. stopUpstreams stops the upstream servers: call it once
// the worker's Run returned, so running calls keep their upstream while
// the worker drains.
func newWorker(ctx context.Context, cfg worker.Config, fixtures, tools string) (w *worker.Worker, stopUpstreams func(), err error) {
	w, err = worker.New(cfg)
	if err != nil {
		return nil, nil, err
	}
	stopUpstreams = func() {}
	if tools != "" {
		cmds, err := command.LoadFiles(splitList(tools), cfg.Logger)
		if err != nil {
			return nil, nil, err
		}
		for _, t := range cmds {
			if err := w.AddTool(ctx, t); err != nil {
				return nil, nil, err
			}
		}
		if stopUpstreams, err = serveUpstreams(w, tools, cfg.Logger); err != nil {
			return nil, nil, err
		}
	}
	if err := addFixtures(ctx, w, fixtures, tools == ""); err != nil {
		stopUpstreams()
		return nil, nil, err
	}
	return w, stopUpstreams, nil
}

// serveUpstreams starts the upstream MCP servers of the tools files
// (a comma-separated list, as --tools takes; worker/upstream), publishing
// their tools into w.
func serveUpstreams(w *worker.Worker, tools string, log *slog.Logger) (func(), error) {
	var specs []upstream.Spec
	for _, file := range splitList(tools) {
		more, err := upstream.Load(file, os.LookupEnv)
		if err != nil {
			return func() {}, err
		}
		specs = append(specs, more...)
	}
	if len(specs) == 0 {
		return func() {}, nil
	}
	for i := range specs {
		specs[i].Logger = log
	}
	ctx, cancel := context.WithCancel(context.Background())
	wait, err := upstream.Serve(ctx, w, specs)
	if err != nil {
		cancel()
		return nil, err
	}
	return func() { cancel(); wait() }, nil
}

// addFixtures adds the named fixture packs, and the demo pack when withDemo.
func addFixtures(ctx context.Context, w *worker.Worker, fixtures string, withDemo bool) error {
	for _, name := range strings.Split(fixtures, ",") {
		switch strings.TrimSpace(name) {
		case "":
		case "conformance":
			if err := conformance.Register(ctx, w); err != nil {
				return err
			}
		case "chaos": // scripts/chaos's tools
			for _, t := range chaos.Tools() {
				if err := w.AddTool(ctx, t); err != nil {
					return err
				}
			}
		default:
			return fmt.Errorf("unknown fixture pack %q (known: conformance, chaos)", name)
		}
	}
	if !withDemo {
		return nil
	}
	for _, t := range demo.Tools() {
		if err := w.AddTool(ctx, t); err != nil {
			return err
		}
	}
	return nil
}
