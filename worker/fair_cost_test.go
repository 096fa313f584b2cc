package worker_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpq/mcpq/internal/queue"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/taskstate"
)

// commandsProcessed reads INFO stats' total_commands_processed.
func commandsProcessed(t testing.TB, c redis.UniversalClient) int64 {
	t.Helper()
	info, err := c.Info(context.Background(), "stats").Result()
	if err != nil {
		t.Fatalf("INFO stats: %v", err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "total_commands_processed:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("total_commands_processed %q: %v", v, err)
			}
			return n
		}
	}
	t.Fatal("INFO stats has no total_commands_processed")
	return 0
}

// commandRate is the commands per second Redis ran over window.
func commandRate(t testing.TB, c redis.UniversalClient, window time.Duration) float64 {
	t.Helper()
	before, start := commandsProcessed(t, c), time.Now()
	time.Sleep(window) // a measuring window, not a wait for a condition
	return float64(commandsProcessed(t, c)-before-1) / time.Since(start).Seconds()
}

// TestFairWaitingCostsNothing (issue 25 acceptance): on a redis-server of
// its own, Redis runs no more than twice the commands per second of an
// idle worker while 1,000 tasks of one principal wait over its share
// (MaxRunningPerPrincipal 4 on a queue of 8 slots: 4 run, 4 slots stay
// free and keep polling as an idle worker does). Before, each waiting job
// was re-enqueued every BusyDelay: 28,500 commands/s against 446 idle.
func TestFairWaitingCostsNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("measures two windows of Redis commands")
	}
	t.Parallel()
	srv := redistest.StartServer(t)
	b := &redistest.Backend{Name: "redis-server", Client: srv.Client(t), Prefix: "fair:"}
	h := newHarness(t, b)
	log := &fairLog{}
	release := make(chan struct{})
	cfg := h.config()
	cfg.Queues = map[string]int{h.queue: 8}
	cfg.MaxRunningPerPrincipal = map[string]int{"*": 4}
	h.start(t, cfg, fairTools(h, log, release)...) // returns once the worker takes jobs
	const window = 3 * time.Second
	idle := commandRate(t, b.Client, window)
	ctx := context.Background()
	for range 1004 {
		rec, err := h.store.Create(ctx, taskstate.CreateParams{Principal: "flood", Tool: "long",
			Arguments: json.RawMessage(`{}`), PollIntervalMs: 100})
		if err != nil {
			t.Fatalf("Create: %v", err)
		}
		if err := h.jobs.Enqueue(ctx, queue.Job{Ref: rec.Ref, Tool: "long", Queue: h.queue}); err != nil {
			t.Fatalf("Enqueue: %v", err)
		}
	}
	waitFor(t, "4 long tasks running", func() bool { return log.count("long") == 4 })
	d, err := h.jobs.Depth(h.queue)
	if err != nil {
		t.Fatal(err)
	}
	if d.Pending != 1000 {
		t.Errorf("Depth: %d pending, want the 1000 waiting", d.Pending)
	}
	waiting := commandRate(t, b.Client, window)
	t.Logf("Redis commands/s: idle %.0f, 1,000 tasks waiting over a share of 4: %.0f", idle, waiting)
	if waiting > 2*idle {
		t.Errorf("1,000 waiting tasks cost %.0f commands/s, more than twice idle (%.0f)", waiting, idle)
	}
	if n := log.count("long"); n != 4 {
		t.Errorf("%d long tasks started under a share of 4", n)
	}
}
