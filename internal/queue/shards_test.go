package queue_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/mcpq/mcpq/internal/queue"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/events"
)

// serveShards starts one server of queue "default" over cfgShards (nil:
// unsharded), recording each delivery's job by its id.
func serveShards(t *testing.T, b *redistest.Backend, shards queue.Shards, got *sync.Map) {
	t.Helper()
	hub := events.NewHub(b.Client)
	t.Cleanup(func() { _ = hub.Close() })
	srvs, err := queue.Serve(ctx(t), queue.ServeConfig{Redis: b.Client, Keys: queue.Keys{Prefix: b.Prefix}, Hub: hub,
		Groups: []queue.Group{{Queues: []string{"default"}, Concurrency: 4}}, Shards: shards,
		TaskCheckInterval: 20 * time.Millisecond, ShutdownTimeout: time.Second, Logger: slog.New(slog.DiscardHandler)},
		func(_ context.Context, j queue.Job) error {
			got.Store(j.Ref.ID, j)
			return nil
		})
	if err != nil {
		t.Fatalf("Serve: %v", err)
	}
	t.Cleanup(srvs.Stop)
}

// shardedJobs enqueues n jobs of queue "default" through c.
func shardedJobs(t *testing.T, c *queue.Client, n int) []queue.Job {
	t.Helper()
	jobs := make([]queue.Job, n)
	for i := range jobs {
		jobs[i] = queue.Job{Ref: newRef(), Tool: "echo", Queue: "default"}
		if err := c.Enqueue(ctx(t), jobs[i]); err != nil {
			t.Fatalf("Enqueue: %v", err)
		}
	}
	return jobs
}

// TestShardedQueue: a queue of 4 shards spreads its jobs over 4 asynq
// queues, reads as one queue (Queues, Depth, Pending), and a worker
// delivers every job as the queue's, with nothing left behind.
func TestShardedQueue(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		keys := queue.Keys{Prefix: b.Prefix}
		c := queue.NewClient(b.Client, queue.Options{Prefix: b.Prefix, Shards: queue.Shards{"default": 4}})
		jobs := shardedJobs(t, c, 200)
		names, err := c.Queues()
		if err != nil || len(names) != 1 || !names["default"] {
			t.Fatalf("Queues = %v, %v: want the one queue default", names, err)
		}
		shards := queue.ShardQueues(keys.Queue("default"), 4)
		for _, aq := range shards {
			n, err := b.Client.LLen(ctx(t), "asynq:{"+aq+"}:mcpq:w:"+jobs[0].Ref.Owner).Result()
			if err != nil || n == 0 {
				t.Fatalf("shard %s holds %d jobs (%v): 200 jobs should reach every shard of 4", aq, n, err)
			}
		}
		d, err := c.Depth("default")
		if err != nil || d.Pending != len(jobs) {
			t.Fatalf("Depth = %+v, %v: want %d pending, summed over the shards", d, err, len(jobs))
		}
		if ids, err := c.Pending(ctx(t), "default"); err != nil || len(ids) != len(jobs) {
			t.Fatalf("Pending lists %d jobs (%v), want %d", len(ids), err, len(jobs))
		}
		var got sync.Map
		serveShards(t, b, queue.Shards{"default": 4}, &got)
		for _, j := range jobs {
			until(t, "delivery of "+j.Ref.ID, func() bool { _, ok := got.Load(j.Ref.ID); return ok })
			v, _ := got.Load(j.Ref.ID)
			if dj := v.(queue.Job); dj.Queue != "default" {
				t.Fatalf("job delivered with queue %q, want the queue's name default", dj.Queue)
			}
		}
		until(t, "an empty queue", func() bool {
			d, err := c.Depth("default")
			return err == nil && d == (queue.Depth{})
		})
	})
}

// TestShardsDisagree: what a front end of another shard count enqueued
// is still served and found. A worker told of no shards serves every shard
// asynq has seen when it starts; an unsharded client's Revive finds a job
// on a shard (no second job) and its Drop-by-count misses nothing it made.
func TestShardsDisagree(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		sharded := queue.NewClient(b.Client, queue.Options{Prefix: b.Prefix, Shards: queue.Shards{"default": 3}})
		plain := queue.NewClient(b.Client, queue.Options{Prefix: b.Prefix})
		jobs := shardedJobs(t, sharded, 30)
		for _, j := range jobs {
			if again, err := plain.Revive(ctx(t), j); err != nil || again {
				t.Fatalf("Revive of a job queued on a shard = %v, %v: want it found there, not enqueued again", again, err)
			}
		}
		if d, err := plain.Depth("default"); err != nil || d.Pending != len(jobs) {
			t.Fatalf("an unsharded client's Depth = %+v, %v: want every shard's %d", d, err, len(jobs))
		}
		var got sync.Map
		serveShards(t, b, nil, &got) // told of no shards
		for _, j := range jobs {
			until(t, "delivery of "+j.Ref.ID, func() bool { _, ok := got.Load(j.Ref.ID); return ok })
		}
		// The other way: a sharded client revives a job an unsharded one
		// queued on the plain name, not a second one on its shard.
		j := queue.Job{Ref: taskstate.Ref{Owner: newRef().Owner, ID: "held-" + b.Prefix}, Tool: "echo", Queue: "other"}
		if err := plain.EnqueueIn(ctx(t), j, time.Hour); err != nil {
			t.Fatal(err)
		}
		wide := queue.NewClient(b.Client, queue.Options{Prefix: b.Prefix, Shards: queue.Shards{"other": 8}})
		if again, err := wide.Revive(ctx(t), j); err != nil || again {
			t.Fatalf("Revive of a job on the plain queue = %v, %v: want it found", again, err)
		}
	})
}
