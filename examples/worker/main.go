// Command worker is an example of serving your own tools with mcpq: a
// worker binary with two tools, run next to `mcpq frontend` on the same
// Redis. deploy is typed, asks a person for approval (elicitation) and
// keeps checkpoints; count_primes streams progress.
//
//	REDIS_URL=redis://localhost:6379/0 go run ./examples/worker
//	mcpq frontend --allow-anonymous   # in another shell, same REDIS_URL
//
// Environment: REDIS_URL (default redis://localhost:6379/0), MCPQ_PREFIX
// (the key prefix; it must match the front end's). Flag -stage sets how
// long deploy's build and each rollout stage take.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpq/mcpq/worker"
)

func main() {
	stage := flag.Duration("stage", 2*time.Second, "how long deploy's build and each rollout stage take")
	flag.Parse()
	if err := run(*stage); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}

// queue is where jobs of this worker's tools go: a queue of their own, the
// fast path beside `mcpq worker` processes on worker.DefaultQueue (a worker
// hands a job of a tool it does not serve back to its queue, so sharing one
// works too, at a delay per hand-back: docs/tools.md).
const queue = "examples"

// tools are the tools this worker serves.
func tools(stage time.Duration) []worker.Tool {
	ts := []worker.Tool{deployTool(stage), primesTool()}
	for i := range ts {
		ts[i].Queue = queue
	}
	return ts
}

func run(stage time.Duration) error {
	url := os.Getenv("REDIS_URL")
	if url == "" {
		url = "redis://localhost:6379/0"
	}
	opts, err := redis.ParseURL(url)
	if err != nil {
		return fmt.Errorf("REDIS_URL: %w", err)
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	w, err := worker.New(worker.Config{Redis: rdb, Prefix: os.Getenv("MCPQ_PREFIX"), Logger: log}, tools(stage)...)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		select {
		case <-w.Ready():
			log.Info("serving", "tools", "deploy, count_primes")
		case <-ctx.Done():
		}
	}()
	return w.Run(ctx)
}
