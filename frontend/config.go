package frontend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpq/mcpq/internal/queue"
	"github.com/mcpq/mcpq/objstore"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
)

// Enqueuer puts a task's job on its queue, for a worker to run. A job
// already there (the same Task and Seq) is a harmless conflict: no error.
type Enqueuer interface {
	Enqueue(ctx context.Context, job Job) error
}

// queueEnqueuer is the default Enqueuer: mcpq's queue (internal/queue).
type queueEnqueuer struct{ c *queue.Client }

func (q queueEnqueuer) Enqueue(ctx context.Context, j Job) error {
	return q.c.Enqueue(ctx, queueJob(j))
}

// queueJob is j as internal/queue names it.
func queueJob(j Job) queue.Job {
	return queue.Job{Ref: j.Task, Tool: j.Tool, Seq: j.Seq, Queue: j.Queue}
}

// Job is one run of a task, as the front end hands it to an Enqueuer.
type Job struct {
	// Task names the task and Tool is its catalog key (catalog.Entry.Key).
	Task taskstate.Ref
	Tool string
	// Seq numbers the task's runs: 0 for the first, then
	// taskstate.AnswerResult.Resume for a resume after input.
	Seq int64
	// Queue is the queue of the tool's catalog entry (catalog.Entry.Queue).
	Queue string
}

// Config configures a Server. Zero values take the documented defaults.
type Config struct {
	// Redis is the shared Redis client (required). The server does not close it.
	Redis redis.UniversalClient
	// Prefix is the key prefix (default taskstate.DefaultPrefix).
	Prefix string
	// Enqueuer enqueues jobs (default: mcpq's queue on Redis, which sends
	// a new task's first job in the same round trip as its record).
	Enqueuer Enqueuer
	// Auth authenticates requests (default: everyone is the "anonymous"
	// principal, as in mcpq dev without keys).
	Auth Authenticator
	// OnAuthenticated, when set, is called with each request that
	// authenticated, before it is served (cmd/mcpq lifts the connection's
	// --unauthenticated-timeout with it).
	OnAuthenticated func(*http.Request)
	// RateLimit is each principal's sustained requests per second across
	// all replicas (token bucket in Redis); 0 turns it off. Default 0.
	RateLimit float64
	// RateBurst is the bucket size (default 2 × RateLimit, at least 1).
	RateBurst int
	// MaxLiveTasks caps each principal's tasks that have not ended; a call
	// past it gets HTTP 429 (default 1000; negative: no cap).
	MaxLiveTasks int
	// MaxArgumentBytes bounds one call's arguments (JSON bytes); larger is
	// -32602 (default 1 MiB; negative: only the body limit).
	MaxArgumentBytes int64
	// MaxArgumentBytesHeld caps the argument bytes each principal's live
	// tasks hold in Redis together; a call past it gets HTTP 429 (default
	// 64 MiB; negative: no cap).
	MaxArgumentBytesHeld int64
	// MaxListenStreams caps each principal's open subscriptions/listen
	// streams on one front end; past it a listen gets HTTP 429 (default 16;
	// negative: no cap). Across N front ends a principal holds at most
	// N × MaxListenStreams.
	MaxListenStreams int
	// AuthRecheck is how often an open request (a listen stream, a held
	// call) is authenticated again; one whose key was revoked ends with
	// 401 (default 2s; negative: never).
	AuthRecheck time.Duration
	// MaxDepth bounds the nesting of a request body's JSON (default 64).
	MaxDepth int
	// MaxJSONValues bounds the JSON values (array elements and object
	// members) of one request body, counted on the raw bytes before any
	// decode; more is HTTP 413 (default DefaultMaxJSONValues; negative:
	// no bound).
	MaxJSONValues int
	// StateKey is the HMAC key of MRTR requestState; every replica needs the
	// same one (default: created once in Redis and shared through it).
	StateKey []byte
	// AllowedOrigins lists the browser origins (scheme://host[:port], or a
	// bare host name matching any scheme and port) allowed to call; a request
	// with another Origin gets 403 (DNS-rebinding protection). Requests
	// without Origin are not browsers and pass. Default: localhost,
	// 127.0.0.1 and [::1]. "*" allows every origin.
	AllowedOrigins []string
	// ServerInfo names the server in every result's _meta (default mcpq).
	ServerInfo proto.Implementation
	// MaxBodyBytes bounds a request body; larger gets HTTP 413 (default 4 MiB).
	MaxBodyBytes int64
	// SyncBudget is how long an auto tool call waits for its result before
	// it answers a task, for tools that set none (default 500ms).
	SyncBudget time.Duration
	// SyncWaitLimit bounds how long a call is held open when it cannot
	// become a task (sync tools, clients without the Tasks extension);
	// then the task is cancelled and the call fails (default 5m).
	SyncWaitLimit time.Duration
	// DefaultTTL is the task lifetime for tools that set none (default 1h).
	DefaultTTL time.Duration
	// MaxTTL caps every task lifetime (default DefaultMaxTTL, 24h;
	// workers must have the same worker.Config.MaxTTL).
	MaxTTL time.Duration
	// QueueShards splits queues into shards, by mcpq queue name: a create
	// puts its job on the shard its task id picks (internal/queue
	// shards.go; docs/deploy.md, "Queue shards"). Workers must have the
	// same worker.Config.QueueShards.
	QueueShards map[string]int
	// AllowUnlimitedTTL lets tools ask for tasks that never expire
	// (ttlMs null); otherwise they get MaxTTL.
	AllowUnlimitedTTL bool
	// PollInterval is the pollIntervalMs for tools that set none (default 1s).
	PollInterval time.Duration
	// LostAfter is the workers' lost-delivery bound (worker.Config.LostAfter):
	// a running task silent that long shows "No word from its worker"
	// (default taskstate.DefaultLostAfter).
	LostAfter time.Duration
	// WaitReplicas, when above 0, makes a CreateTaskResult, a tasks/update
	// and a tasks/cancel wait until that many Redis replicas hold the write
	// (Redis WAIT); when fewer confirm within WaitTimeout the request fails
	// with -32603 "Not replicated" though the write was made (docs/redis.md).
	// Default 0: no wait.
	WaitReplicas int
	// WaitTimeout bounds that wait (default 1s); keep it below the Redis
	// client's read timeout (3s unless REDIS_URL sets read_timeout).
	WaitTimeout time.Duration
	// Admins are the principals that see the operator view: GET /v1/ops/*
	// (queues, workers, catalog coverage; docs/dashboard.md). Everyone
	// else gets 403 there. Default none.
	Admins []string
	// Billing turns billing on (docs/billing.md): a call of a tool with a
	// Price reserves its ceiling from the caller's account when its task
	// is created, and is refused when the balance does not cover it.
	// Default off: every tool is free and no account is read.
	Billing bool
	// IdempotencyTTL is how long a tools/call idempotency key answers the
	// task it made, at most the task's TTL (default 24h).
	IdempotencyTTL time.Duration
	// CatalogTTL is how long the tool catalog read from Redis is reused (default 1s).
	CatalogTTL time.Duration
	// Blobs is the object store workers put large results in
	// (worker.Config.Blobs.Store); resources/read serves them from it to
	// their task's owner. Nil: such reads answer "Resource not found".
	// The front end puts large call arguments there too
	// (InlineMaxArgumentBytes).
	Blobs objstore.Store
	// Metrics is the registry the server's collectors join and /metrics
	// serves (default: a new registry of its own). mcpq dev gives the front
	// end and the worker one registry, so one /metrics shows both.
	Metrics *prometheus.Registry
	// TracerProvider makes the request spans (default nil: no span is
	// made, though a client's trace context still reaches the jobs).
	TracerProvider trace.TracerProvider
	// Eras lists the protocol versions served: proto.ProtocolVersion (the
	// stateless 2026-07-28 era) and proto.LegacyVersion (the 2025-11-25
	// session era, opened by initialize; docs/eras.md). Default both.
	Eras []string
	// SessionIdle is how long a legacy session lives without a request
	// (default 1h).
	SessionIdle time.Duration
	// InlineMaxArgumentBytes is the largest arguments object (JSON bytes)
	// a task record holds; larger arguments go to Blobs and the record
	// holds their key (frontend/blobs.go). Default
	// DefaultInlineMaxArgumentBytes; negative, or no Blobs: never.
	InlineMaxArgumentBytes int
	// Clock is the time source (default time.Now).
	Clock func() time.Time
	// Logger receives the server's logs (default slog.Default()).
	Logger *slog.Logger
}

// DefaultMaxTTL is Config.MaxTTL's default, the longest a task lives: the
// same as worker.DefaultMaxTTL, which workers must have too.
const DefaultMaxTTL = 24 * time.Hour

// DefaultInlineMaxArgumentBytes is Config.InlineMaxArgumentBytes's
// default: the same 256 KiB as a result block's (worker.BlobConfig).
const DefaultInlineMaxArgumentBytes = 256 << 10

// DefaultMaxJSONValues is Config.MaxJSONValues's default: 2^20 values,
// twice what the largest arguments a call may send by default (1 MiB)
// can hold, so only bodies made of values refuse.
const DefaultMaxJSONValues = 1 << 20

// Version is mcpq's version, shown in serverInfo.
const Version = "0.1.0"

func (c *Config) setDefaults() error {
	if c.Redis == nil {
		return errors.New("frontend: Config.Redis is required")
	}
	if c.WaitReplicas < 0 || c.WaitTimeout < 0 {
		return fmt.Errorf("frontend: WaitReplicas (%d) and WaitTimeout (%s) must not be negative", c.WaitReplicas, c.WaitTimeout)
	}
	if len(c.AllowedOrigins) == 0 {
		c.AllowedOrigins = []string{"localhost", "127.0.0.1", "[::1]", "::1"}
	}
	if c.Auth == nil {
		c.Auth = Anonymous{}
	}
	if c.ServerInfo.Name == "" {
		c.ServerInfo = proto.Implementation{Name: "mcpq", Version: Version}
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	c.setLimitDefaults()
	if c.AuthRecheck == 0 {
		c.AuthRecheck = 2 * time.Second
	}
	def(&c.SyncBudget, 500*time.Millisecond)
	def(&c.SyncWaitLimit, 5*time.Minute)
	def(&c.DefaultTTL, time.Hour)
	def(&c.MaxTTL, DefaultMaxTTL)
	def(&c.PollInterval, time.Second)
	def(&c.CatalogTTL, time.Second)
	def(&c.SessionIdle, time.Hour)
	if len(c.Eras) == 0 {
		c.Eras = []string{proto.ProtocolVersion, proto.LegacyVersion}
	}
	for _, e := range c.Eras {
		if e != proto.ProtocolVersion && e != proto.LegacyVersion {
			return fmt.Errorf("frontend: era %q is not served (want %s or %s)", e, proto.ProtocolVersion, proto.LegacyVersion)
		}
	}
	def(&c.IdempotencyTTL, 24*time.Hour)
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Metrics == nil {
		c.Metrics = prometheus.NewRegistry()
	}
	return nil
}

// setLimitDefaults fills in the bounds on what one request or principal
// may cost (bodies, arguments, JSON values and depth, live tasks, listen
// streams) that the caller left zero.
func (c *Config) setLimitDefaults() {
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = 4 << 20
	}
	if c.RateLimit > 0 && c.RateBurst <= 0 {
		c.RateBurst = max(1, int(2*c.RateLimit))
	}
	if c.MaxArgumentBytes == 0 {
		c.MaxArgumentBytes = 1 << 20
	}
	if c.MaxArgumentBytesHeld == 0 {
		c.MaxArgumentBytesHeld = 64 << 20
	}
	switch {
	case c.Blobs == nil:
		c.InlineMaxArgumentBytes = -1 // nowhere else to keep them
	case c.InlineMaxArgumentBytes == 0:
		c.InlineMaxArgumentBytes = DefaultInlineMaxArgumentBytes
	}
	if c.MaxLiveTasks == 0 {
		c.MaxLiveTasks = 1000
	}
	if c.MaxJSONValues == 0 {
		c.MaxJSONValues = DefaultMaxJSONValues
	}
	if c.MaxDepth <= 0 {
		c.MaxDepth = 64
	}
	if c.MaxListenStreams == 0 {
		c.MaxListenStreams = 16
	}
}
