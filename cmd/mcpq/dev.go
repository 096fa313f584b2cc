package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/mcpq/mcpq/frontend"
	"github.com/mcpq/mcpq/worker"
)

// runDev runs front end, worker and an embedded miniredis in one process.
// miniredis expires keys only when its clock is advanced, so a ticker
// advances it in real time. Shutdown order: front end, worker, Redis.
func runDev(ctx context.Context, log *slog.Logger, args []string) error {
	fs := flag.NewFlagSet("dev", flag.ExitOnError)
	addr := fs.String("addr", env("MCPQ_ADDR", "127.0.0.1:8080"), "listen address (env MCPQ_ADDR)")
	fcfg := frontend.Config{Logger: log}
	frontendFlags(fs, &fcfg)
	wcfg := worker.Config{Logger: log}
	var fixtures, tools string
	workerFlags(fs, &wcfg, &fixtures, &tools)
	sharedFlags(fs, &wcfg.LostAfter, &wcfg.MaxTTL, &wcfg.QueueShards)
	var auth authFlags
	auth.register(fs)
	var blobs blobFlags
	blobs.register(fs, true)
	hf := httpFlags(fs)
	_ = fs.Parse(args)
	if blobs.url == "" { // large results go to a folder that lives as long as the process
		dir, err := os.MkdirTemp("", "mcpq-dev-blobs-")
		if err != nil {
			return fmt.Errorf("blob folder: %w", err)
		}
		defer os.RemoveAll(dir)
		blobs.url = "file://" + dir
	}
	store, err := blobs.open(ctx)
	if err != nil {
		return err
	}
	fcfg.Blobs, wcfg.Blobs = store, blobs.workerConfig(store)
	mr := miniredis.NewMiniRedis()
	if err := mr.Start(); err != nil {
		return fmt.Errorf("embedded redis: %w", err)
	}
	defer mr.Close()
	stopClock := realTimeClock(mr)
	defer stopClock()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	fcfg.Redis, wcfg.Redis = rdb, rdb
	reg := newRegistry() // one /metrics, on the front end, shows both
	fcfg.Metrics, wcfg.Metrics = reg, reg
	tp, stopTracing, err := tracing(ctx, log, "mcpq-dev")
	if err != nil {
		return err
	}
	defer stopTracing()
	fcfg.TracerProvider, wcfg.TracerProvider = tp, tp
	fcfg.LostAfter, fcfg.MaxTTL, fcfg.QueueShards = wcfg.LostAfter, wcfg.MaxTTL, wcfg.QueueShards
	auth2, err := auth.devAuth(rdb)
	if err != nil {
		return err
	}
	fcfg.Auth = auth2

	w, stopUpstreams, err := newWorker(ctx, wcfg, fixtures, tools)
	if err != nil {
		return err
	}
	defer stopUpstreams()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	// The worker runs until the front end stops; should it stop first (an
	// error), the front end stops too: a dev server without its worker
	// would take calls that never run.
	wctx, stopWorker := context.WithCancel(context.Background())
	defer stopWorker()
	sctx, stopServing := context.WithCancel(ctx)
	defer stopServing()
	var werr error
	workerDone := make(chan struct{})
	go func() {
		defer close(workerDone)
		werr = w.Run(wctx)
		stopServing()
	}()

	select { // serve once the worker's catalog is there, so the first call finds its tool
	case <-w.Ready():
	case <-sctx.Done():
	}
	if sctx.Err() == nil {
		log.Info("mcpq dev: embedded Redis, front end and worker in one process", "redis", mr.Addr(), "fixtures", fixtures, "blobs", blobs.url)
		fmt.Printf("MCP URL: http://%s/mcp\n", ln.Addr())
	}
	herr := serveHTTP(sctx, log, ln, fcfg, hf)
	stopWorker()
	<-workerDone
	if herr != nil {
		return herr
	}
	return werr
}

// realTimeClock advances miniredis's clock with the wall clock, so TTLs
// expire as they would in Redis. It returns a func that stops it.
func realTimeClock(mr *miniredis.Miniredis) func() {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		last := time.Now()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				mr.FastForward(now.Sub(last))
				last = now
			}
		}
	}()
	return func() { close(done) }
}
