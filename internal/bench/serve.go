package bench

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/hibiken/asynq"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/redis/go-redis/v9"

	"github.com/mcpq/mcpq/frontend"
	"github.com/mcpq/mcpq/internal/access"
	"github.com/mcpq/mcpq/internal/queue"
	"github.com/mcpq/mcpq/internal/redisconn"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/worker"
	"github.com/mcpq/mcpq/worker/upstream"
)

// Roles a child process serves (Serve).
const (
	// RoleFrontend is mcpq's front end (frontend.New) on net/http.
	RoleFrontend = "frontend"
	// RoleWorker is mcpq's worker (worker.New) serving benchTools.
	RoleWorker = "worker"
	// RoleAsynqWorker is a bare asynq server whose handler does nothing.
	RoleAsynqWorker = "asynq-worker"
	// RoleFloorEnqueue is a net/http handler that only enqueues through asynq
	// and answers fixed JSON.
	RoleFloorEnqueue = "floor-enqueue"
	// RoleFloorRead is a net/http handler that does one HGETALL and answers it.
	RoleFloorRead = "floor-hgetall"
	// RolePeer is the official Go SDK's stateless Streamable HTTP server with
	// one trivial tool.
	RolePeer = "peer"
)

// floorQueue is the asynq queue of the floors and of the raw asynq worker.
const floorQueue = "floor"

// jobTimeout is the asynq timeout mcpq's enqueues set for the default
// MaxTTL (queue.Timeout), for the floors that enqueue through asynq alone.
var jobTimeout = queue.Timeout(worker.DefaultMaxTTL)

// floorAnswer is the fixed answer of the enqueue floor: a JSON-RPC response
// the size of mcpq's CreateTaskResult.
const floorAnswer = `{"jsonrpc":"2.0","id":1,"result":{"resultType":"task","taskId":"AAAAAAAAAAAAAAAAAAAAAA",` +
	`"status":"working","statusMessage":"Queued","createdAt":"2026-01-01T00:00:00.000Z",` +
	`"lastUpdatedAt":"2026-01-01T00:00:00.000Z","ttlMs":3600000,"pollIntervalMs":1000,` +
	`"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"floor","version":"0.1.0"}}}}`

// tenantHeader names the principal of a bench request to the front end
// (tenantAuth); requests without it are the anonymous principal, as with
// frontend.Anonymous. Only the multi-tenant memory figure sends it.
const tenantHeader = "X-Bench-Tenant"

type tenantAuth struct{}

func (tenantAuth) Authenticate(r *http.Request) (string, error) {
	if t := r.Header.Get(tenantHeader); t != "" {
		return t, nil
	}
	return frontend.AnonymousPrincipal, nil
}

// anonymousOwner is the owner tag of the front end's anonymous principal.
var anonymousOwner = taskstate.OwnerTag(frontend.AnonymousPrincipal)

// Serve runs one role until SIGINT or SIGTERM. It prints
// "ready <addr> <debug-addr>" on stdout once it serves; the debug address
// serves /debug/pprof/, /stats (memory) and /count (handled jobs).
func Serve(role string, args []string) error {
	fs := flag.NewFlagSet("serve "+role, flag.ContinueOnError)
	redisURL := fs.String("redis", "redis://127.0.0.1:6379/0", "Redis URL")
	conc := fs.Int("concurrency", 10, "worker concurrency")
	check := fs.Duration("task-check-interval", 0, "worker idle poll interval (0: the worker's default)")
	billing := fs.Bool("billing", false, "front end: billing on (Config.Billing)")
	oauthIssuer := fs.String("oauth-issuer", "", "front end: OAuth tokens of this issuer and the bench API key, instead of tenant headers (group 11)")
	up := fs.String("upstream", "", "worker: also front the Streamable HTTP MCP server at this URL (its tools prefixed up.)")
	durable := fs.Bool("durable", false, "asynq worker: the handler HSETs its result into the job's task record (the cost floor)")
	scripts := fs.Int("scripts", 0, "asynq worker: EVALSHA this many claim-weight scripts per job (the worker's ceiling floor)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	opts, err := redis.ParseURL(*redisURL)
	if err != nil {
		return err
	}
	// The floors run asynq as its users do, on a default go-redis client;
	// mcpq's front end and worker on the client cmd/mcpq makes
	// (redisconn.Connect: no look at a pooled connection before each use).
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	if role == RoleFrontend || role == RoleWorker {
		mcpqRDB, err := redisconn.Connect(*redisURL)
		if err != nil {
			return err
		}
		defer mcpqRDB.Close()
		rdb = mcpqRDB.(*redis.Client)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})).With("role", role)
	count := &counter{}

	dln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go func() { _ = http.Serve(dln, debugMux(count)) }()

	var handler http.Handler
	var drain, finish func()
	switch role {
	case RoleFrontend:
		// No cap on live tasks or listen streams: the loads create far more
		// than the defaults (1,000 tasks, 16 streams per principal).
		var auth frontend.Authenticator = tenantAuth{}
		if *oauthIssuer != "" {
			store := access.New(rdb, "", nil)
			if auth, err = frontend.NewOAuth(frontend.OAuthConfig{Issuers: []string{*oauthIssuer}, Resource: benchResource,
				Keys:   frontend.NewKeyAuth(map[string]string{benchAPIKey: frontend.AnonymousPrincipal}, store, false),
				Mapper: store, Logger: log}); err != nil {
				return err
			}
		}
		srv, err := frontend.New(frontend.Config{Redis: rdb, Logger: log, MaxLiveTasks: -1, MaxListenStreams: -1,
			Auth: auth, Billing: *billing})
		if err != nil {
			return err
		}
		handler, drain, finish = srv.Handler(), srv.Drain, func() { _ = srv.Close() }
	case RoleFloorEnqueue:
		handler = floorEnqueue(asynq.NewClientFromRedisClient(rdb))
	case RoleFloorRead:
		handler = floorRead(rdb)
	case RolePeer:
		handler = peerHandler()
	case RoleWorker:
		w, err := worker.New(worker.Config{Redis: rdb, Concurrency: *conc, TaskCheckInterval: *check, Logger: log},
			benchTools(count)...)
		if err != nil {
			return err
		}
		if *up != "" {
			if _, err := upstream.Serve(ctx, w, []upstream.Spec{upstreamSpec(*up, *conc, log)}); err != nil {
				return err
			}
		}
		done := make(chan error, 1)
		go func() { done <- w.Run(ctx) }()
		select {
		case <-w.Ready():
		case err := <-done:
			return fmt.Errorf("worker stopped before it was ready: %v", err)
		}
		fmt.Printf("ready - %s\n", dln.Addr())
		return <-done
	case RoleAsynqWorker:
		srv := asynq.NewServerFromRedisClient(rdb, asynq.Config{Concurrency: *conc,
			Queues: map[string]int{floorQueue: 1}, TaskCheckInterval: 20 * time.Millisecond,
			LogLevel: asynq.WarnLevel, ShutdownTimeout: 2 * time.Second})
		mux := asynq.NewServeMux()
		mux.HandleFunc(queue.Type, floorHandler(rdb, count, *durable, *scripts))
		if err := srv.Start(mux); err != nil {
			return err
		}
		fmt.Printf("ready - %s\n", dln.Addr())
		<-ctx.Done()
		srv.Shutdown()
		return nil
	default:
		return fmt.Errorf("unknown role %q", role)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	fmt.Printf("ready %s %s\n", ln.Addr(), dln.Addr())
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	if drain != nil {
		drain() // end listen streams first, so Shutdown is not held up by them
	}
	if finish != nil {
		defer finish()
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// floorEnqueue only enqueues a job the way the front end does (same type,
// payload size and options) and answers fixed JSON.
func floorEnqueue(enq *asynq.Client) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		ref := taskstate.Ref{Owner: anonymousOwner, ID: taskstate.NewID()}
		_, err := enq.EnqueueContext(r.Context(), asynq.NewTask(queue.Type, queue.Payload(queue.Job{Ref: ref, Tool: toolNoop})),
			asynq.TaskID(ref.ID), asynq.Queue(floorQueue), asynq.MaxRetry(queue.MaxRetry), asynq.Timeout(jobTimeout))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, floorAnswer)
	})
}

// floorRead does one HGETALL of the task record the Mcp-Name header names
// (as tasks/get would) and answers its fields as JSON.
func floorRead(rdb *redis.Client) http.Handler {
	keys := taskstate.Keys{Prefix: taskstate.DefaultPrefix}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		ref := taskstate.Ref{Owner: anonymousOwner, ID: r.Header.Get("Mcp-Name")}
		m, err := rdb.HGetAll(r.Context(), keys.Task(ref)).Result()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		b, _ := json.Marshal(m)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
	})
}

// upstreamSpec fronts the Streamable HTTP server at url: its noop as a
// sync tool named up.noop, conc requests at once.
func upstreamSpec(url string, conc int, log *slog.Logger) upstream.Spec {
	return upstream.Spec{Name: "peer", URL: url, Prefix: upstreamPrefix, Tools: []string{toolNoop}, Concurrency: conc,
		Overrides: map[string]upstream.Override{toolNoop: {Policy: worker.PolicySync}}, Logger: log}
}

// peerArgs are the (empty) arguments of the peer's tool.
type peerArgs struct{}

// peerHandler is the Go SDK's stateless server answering a trivial tool.
func peerHandler() http.Handler {
	server := mcp.NewServer(&mcp.Implementation{Name: "peer", Version: "1.0.0"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: toolNoop, Description: "does nothing"},
		func(context.Context, *mcp.CallToolRequest, peerArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
		})
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
}

// childStats is what a child's /stats answers.
type childStats struct {
	HeapAlloc  uint64 `json:"heapAlloc"`
	HeapInuse  uint64 `json:"heapInuse"`
	HeapSys    uint64 `json:"heapSys"`
	StackInuse uint64 `json:"stackInuse"`
	Sys        uint64 `json:"sys"`
	NumGC      uint32 `json:"numGC"`
	// Mallocs counts heap objects allocated since the process started.
	Mallocs    uint64 `json:"mallocs"`
	Goroutines int    `json:"goroutines"`
}

// childCount is what a child's /count answers.
type childCount struct {
	Handled int64 `json:"handled"`
	FirstNs int64 `json:"firstNs"`
	LastNs  int64 `json:"lastNs"`
}

func debugMux(c *counter) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/stats", func(w http.ResponseWriter, _ *http.Request) {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		_ = json.NewEncoder(w).Encode(childStats{HeapAlloc: m.HeapAlloc, HeapInuse: m.HeapInuse, HeapSys: m.HeapSys,
			StackInuse: m.StackInuse, Sys: m.Sys, NumGC: m.NumGC, Mallocs: m.Mallocs, Goroutines: runtime.NumGoroutine()})
	})
	mux.HandleFunc("/count", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(childCount{Handled: c.n.Load(), FirstNs: c.first.Load(), LastNs: c.last.Load()})
	})
	return mux
}
