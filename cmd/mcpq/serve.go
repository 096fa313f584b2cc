package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/mcpq/mcpq/frontend"
	"github.com/mcpq/mcpq/internal/redisconn"
	"github.com/mcpq/mcpq/worker"
)

// shutdownTimeout bounds the graceful stop of the HTTP server.
const shutdownTimeout = 15 * time.Second

// runFrontend runs the front end until ctx is done. Shutdown order: stop
// accepting and finish in-flight requests, release pub/sub, close Redis.
func runFrontend(ctx context.Context, log *slog.Logger, args []string) error {
	fs := flag.NewFlagSet("frontend", flag.ExitOnError)
	addr := fs.String("addr", env("MCPQ_ADDR", ":8080"), "listen address (env MCPQ_ADDR)")
	cfg := frontend.Config{Logger: log, Prefix: env("MCPQ_PREFIX", "")}
	frontendFlags(fs, &cfg)
	sharedFlags(fs, &cfg.LostAfter, &cfg.MaxTTL, &cfg.QueueShards)
	var auth authFlags
	auth.register(fs)
	var blobs blobFlags
	blobs.register(fs, false)
	hf := httpFlags(fs)
	redisBound := fs.Duration("redis-request-timeout", envDuration("MCPQ_REDIS_REQUEST_TIMEOUT", 2*time.Second),
		"longest one Redis command of a request may go unanswered before the request fails with 503 (env MCPQ_REDIS_REQUEST_TIMEOUT)")
	_ = fs.Parse(args)
	var err error
	if cfg.Blobs, err = blobs.open(ctx); err != nil {
		return err
	}
	rdb, err := redisconn.ConnectBounded(env("REDIS_URL", "redis://127.0.0.1:6379/0"), *redisBound)
	if err != nil {
		return fmt.Errorf("REDIS_URL: %w", err)
	}
	defer rdb.Close()
	cfg.Redis = rdb
	adviseRedis(ctx, log, rdb)
	cfg.Metrics = newRegistry()
	tp, stopTracing, err := tracing(ctx, log, "mcpq-frontend")
	if err != nil {
		return err
	}
	defer stopTracing()
	cfg.TracerProvider = tp
	if cfg.Auth, err = auth.frontendAuth(rdb, cfg.Prefix); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	log.Info("frontend listening", "url", "http://"+ln.Addr().String()+"/mcp")
	return serveHTTP(ctx, log, ln, cfg, hf)
}

// httpLimits are the HTTP server's limits.
type httpLimits struct {
	maxHeaderBytes, maxConns, perAddress                  int
	readHeaderTimeout, readTimeout, idle, unauthenticated time.Duration
}

func httpFlags(fs *flag.FlagSet) *httpLimits {
	h := &httpLimits{}
	fs.IntVar(&h.maxHeaderBytes, "max-header-bytes", envInt("MCPQ_MAX_HEADER_BYTES", 64<<10), "largest request header block in bytes (env MCPQ_MAX_HEADER_BYTES)")
	fs.DurationVar(&h.readHeaderTimeout, "read-header-timeout", envDuration("MCPQ_READ_HEADER_TIMEOUT", 10*time.Second), "time to read request headers (env MCPQ_READ_HEADER_TIMEOUT)")
	fs.DurationVar(&h.readTimeout, "read-timeout", envDuration("MCPQ_READ_TIMEOUT", time.Minute), "time to read a whole request (env MCPQ_READ_TIMEOUT)")
	fs.IntVar(&h.maxConns, "max-connections", envInt("MCPQ_MAX_CONNECTIONS", 4096), "most open client connections; more wait to be accepted, 0 = no limit (env MCPQ_MAX_CONNECTIONS)")
	fs.IntVar(&h.perAddress, "max-connections-per-address", envInt("MCPQ_MAX_CONNECTIONS_PER_ADDRESS", 256), "most open connections from one client IP address; more are answered 429 and closed, 0 = no limit; behind a proxy every client has its address, so raise it or use 0 (env MCPQ_MAX_CONNECTIONS_PER_ADDRESS)")
	fs.DurationVar(&h.idle, "idle-timeout", envDuration("MCPQ_IDLE_TIMEOUT", 2*time.Minute), "keep-alive idle time (env MCPQ_IDLE_TIMEOUT)")
	fs.DurationVar(&h.unauthenticated, "unauthenticated-timeout", envDuration("MCPQ_UNAUTHENTICATED_TIMEOUT", 10*time.Second),
		"longest a connection may stay open without an authenticated request; it is closed when idle past it, 0 = no limit (env MCPQ_UNAUTHENTICATED_TIMEOUT)")
	return h
}

// serveHTTP serves a front end on ln until ctx is done, then stops it in
// order. There is no write timeout: answers may be held open up to the sync
// wait limit, and listen streams last as long as the client wants.
func serveHTTP(ctx context.Context, log *slog.Logger, ln net.Listener, cfg frontend.Config, h *httpLimits) error {
	hs := &http.Server{MaxHeaderBytes: h.maxHeaderBytes,
		ReadHeaderTimeout: h.readHeaderTimeout, ReadTimeout: h.readTimeout, IdleTimeout: h.idle}
	cfg.OnAuthenticated = newAuthWatch(h.unauthenticated).install(hs)
	srv, err := frontend.New(cfg)
	if err != nil {
		return err
	}
	defer srv.Close()
	hs.Handler = srv.Handler()
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(limitPerAddress(limitConnections(ln, h.maxConns), h.perAddress)) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("frontend stopping")
	srv.Drain() // end listen streams, so Shutdown is not held up by them
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// runWorker runs a worker until ctx is done. Shutdown order: stop taking
// jobs, let running jobs finish (or re-queue them), stop the metrics and
// health endpoint, flush spans, close Redis.
func runWorker(ctx context.Context, log *slog.Logger, args []string) error {
	fs := flag.NewFlagSet("worker", flag.ExitOnError)
	cfg := worker.Config{Logger: log, Prefix: env("MCPQ_PREFIX", "")}
	var fixtures, tools string
	workerFlags(fs, &cfg, &fixtures, &tools)
	sharedFlags(fs, &cfg.LostAfter, &cfg.MaxTTL, &cfg.QueueShards)
	var blobs blobFlags
	blobs.register(fs, true)
	// Off by default: several workers often share a host (tests, a dev
	// machine); deploy/k8s sets :9090.
	opsAddr := fs.String("metrics-addr", env("MCPQ_METRICS_ADDR", ""),
		"address of the worker's /metrics, /healthz and /readyz, like :9090; empty for none (env MCPQ_METRICS_ADDR)")
	_ = fs.Parse(args)
	store, err := blobs.open(ctx)
	if err != nil {
		return err
	}
	cfg.Blobs = blobs.workerConfig(store)
	rdb, err := redisClient()
	if err != nil {
		return err
	}
	defer rdb.Close()
	cfg.Redis = rdb
	cfg.Metrics = newRegistry()
	tp, stopTracing, err := tracing(ctx, log, "mcpq-worker")
	if err != nil {
		return err
	}
	defer stopTracing()
	cfg.TracerProvider = tp
	w, stopUpstreams, err := newWorker(ctx, cfg, fixtures, tools)
	if err != nil {
		return err
	}
	defer stopUpstreams() // after Run drained the running calls
	stopOps, err := serveOps(log, *opsAddr, w.Handler())
	if err != nil {
		return err
	}
	defer stopOps()
	return w.Run(ctx)
}
