package main

import (
	"context"
	"errors"
	"flag"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/mcpq/mcpq/frontend"
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
	_ = fs.Parse(args)
	rdb, err := redisClient()
	if err != nil {
		return err
	}
	defer rdb.Close()
	cfg.Redis = rdb
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	log.Info("frontend listening", "url", "http://"+ln.Addr().String()+"/mcp")
	return serveHTTP(ctx, log, ln, cfg)
}

// serveHTTP serves a front end on ln until ctx is done, then stops it in order.
func serveHTTP(ctx context.Context, log *slog.Logger, ln net.Listener, cfg frontend.Config) error {
	srv, err := frontend.New(cfg)
	if err != nil {
		return err
	}
	defer srv.Close()
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
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
// jobs, let running jobs finish (or re-queue them), close Redis.
func runWorker(ctx context.Context, log *slog.Logger, args []string) error {
	fs := flag.NewFlagSet("worker", flag.ExitOnError)
	cfg := worker.Config{Logger: log, Prefix: env("MCPQ_PREFIX", "")}
	var fixtures string
	workerFlags(fs, &cfg, &fixtures)
	_ = fs.Parse(args)
	rdb, err := redisClient()
	if err != nil {
		return err
	}
	defer rdb.Close()
	cfg.Redis = rdb
	w, err := newWorker(ctx, cfg, fixtures)
	if err != nil {
		return err
	}
	return w.Run(ctx)
}
