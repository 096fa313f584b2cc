package worker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/mcpq/mcpq/internal/queue"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/worker"
)

// shardedHarness is a harness whose jobs go to n shards of its queue, as
// a front end with --queue-shards would put them.
func shardedHarness(t *testing.T, b *redistest.Backend, n int) *harness {
	t.Helper()
	h := newHarness(t, b)
	h.jobs = queue.NewClient(b.Client, queue.Options{Prefix: b.Prefix, Shards: queue.Shards{h.queue: n}})
	if b.Mini == nil {
		t.Cleanup(func() {
			insp := asynq.NewInspectorFromRedisClient(b.Client)
			for _, q := range queue.ShardQueues(h.jobs.Keys().Queue(h.queue), n)[1:] {
				_ = insp.DeleteQueue(q, true)
			}
		})
	}
	return h
}

// TestShardedTakeover: on a queue of 4 shards, deliveries that go silent
// are taken back and run again, each on its task's shard, and complete.
func TestShardedTakeover(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		h := shardedHarness(t, b, 4)
		cfg := h.lostConfig(3)
		cfg.QueueShards = map[string]int{h.queue: 4}
		h.start(t, cfg, h.tool("hang", func(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
			if c.Attempt == 1 {
				<-ctx.Done()
				return worker.TextResult("stale"), nil
			}
			return worker.TextResult("second"), nil
		}))
		var tasks []task
		for range 8 {
			tasks = append(tasks, h.submit(t, "hang", `{}`))
		}
		for _, tk := range tasks {
			rec := h.terminal(t, tk)
			if rec.Status != proto.StatusCompleted || !strings.Contains(string(rec.Result), "second") || rec.Lost != 1 {
				t.Fatalf("task %s ended %s (%s), lost %d: want completed by its second delivery", tk.ref.ID, rec.Status, rec.Result, rec.Lost)
			}
		}
		// A job is acked a moment after its task's record ends.
		waitFor(t, "an empty queue on every shard", func() bool {
			d, err := h.jobs.Depth(h.queue)
			return err == nil && d.Pending+d.Active+d.Scheduled+d.Retry == 0
		})
	})
}

// TestShardedCap: a cap on a queue of 4 shards holds on the whole queue
// (the claim counts across shards), while another principal's calls run.
func TestShardedCap(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		h := shardedHarness(t, b, 4)
		log := &fairLog{}
		release := make(chan struct{})
		cfg := h.config()
		cfg.Queues = map[string]int{h.queue: 6}
		cfg.QueueShards = map[string]int{h.queue: 4}
		cfg.MaxRunningPerPrincipal = map[string]int{"*": 2}
		cfg.BusyDelay = 20 * time.Millisecond // a job bounced at claim comes back soon
		h.start(t, cfg, fairTools(h, log, release)...)
		for range 12 {
			h.submitAs(t, "flood", "long", h.queue)
		}
		waitFor(t, "2 long tasks running", func() bool { return log.count("long") == 2 })
		for range 3 {
			if rec := h.terminal(t, h.submitAs(t, "other", "quick", h.queue)); rec.Status != proto.StatusCompleted {
				t.Fatalf("the other principal's call ended %s", rec.Status)
			}
		}
		if n := log.count("long"); n != 2 {
			t.Fatalf("%d long tasks started under a cap of 2 on 4 shards", n)
		}
		release <- struct{}{}
		waitFor(t, "the next long task after one ended", func() bool { return log.count("long") == 3 })
		if n := log.count("long"); n != 3 {
			t.Errorf("%d long tasks started once one of 2 ended under a cap of 2, want 3", n)
		}
	})
}

// TestShardSepRefused: a queue name with the shard separator would read
// as a shard of another queue, so the worker refuses it where it is named.
func TestShardSepRefused(t *testing.T) {
	h := mini(t)
	ok := func(context.Context, *worker.Call) (*proto.CallToolResult, error) { return worker.TextResult("x"), nil }
	if _, err := worker.New(h.config(), worker.Tool{Name: "a", Queue: "gpu~1", Handler: ok}); err == nil || !strings.Contains(err.Error(), `"~"`) {
		t.Errorf("a tool on queue gpu~1: %v, want refused", err)
	}
	for _, cfg := range []func(*worker.Config){
		func(c *worker.Config) { c.Queues = map[string]int{"gpu~1": 1} },
		func(c *worker.Config) { c.ToolQueues = map[string]string{"*": "gpu~1"} },
		func(c *worker.Config) { c.QueueShards = map[string]int{"gpu~1": 2} },
		func(c *worker.Config) { c.QueueShards = map[string]int{"gpu": 0} },
	} {
		c := h.config()
		cfg(&c)
		if _, err := worker.New(c, worker.Tool{Name: "a", Handler: ok}); err == nil {
			t.Errorf("worker.New(%+v) accepted", c)
		}
	}
}
