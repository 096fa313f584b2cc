package queue_test

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpq/mcpq/internal/queue"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/events"
)

// serveShards starts one server of queue "default" over shards (nil:
// unsharded), recording each delivery's job by its id.
func serveShards(t *testing.T, b *redistest.Backend, shards queue.Shards, got *sync.Map) {
	t.Helper()
	serveShardsStop(t, b, shards, got)
}

// serveShardsStop is serveShards, answering the servers' Stop (also run
// at cleanup; twice is harmless).
func serveShardsStop(t *testing.T, b *redistest.Backend, shards queue.Shards, got *sync.Map) func() {
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
	var once sync.Once
	stop := func() { once.Do(srvs.Stop) }
	t.Cleanup(stop)
	return stop
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

// TestShardedQueueSpreadsOverCluster runs a queue's load (enqueues, each
// with its wake-up, and a worker's dequeues and acks) on the 3-primary
// Redis Cluster (scripts/lib.sh start_redis_cluster: equal contiguous slot
// ranges) and counts each primary's commands from INFO commandstats. With
// 3 shards each primary does within 20 % of a third; unsharded, the one
// primary of the queue's slot does most of it, which shows the count can
// tell. Counts, not time: the figures are the same on any machine, but for
// what other tests run on the cluster meanwhile, whose keys hash all over
// it and so add about evenly.
func TestShardedQueueSpreadsOverCluster(t *testing.T) {
	b := redistest.Cluster(t)
	cc := b.Client.(*redis.ClusterClient)
	const jobs = 600
	load := func(t *testing.T, shards int) map[string]int64 {
		prefix := b.Prefix + strconv.Itoa(shards) + ":"
		before := commandCalls(t, cc)
		c := queue.NewClient(b.Client, queue.Options{Prefix: prefix, Shards: queue.Shards{"default": shards}})
		sb := *b
		sb.Prefix = prefix
		var got sync.Map
		stop := serveShardsStop(t, &sb, queue.Shards{"default": shards}, &got)
		shardedJobs(t, c, jobs)
		until(t, "every delivery", func() bool {
			n := 0
			got.Range(func(any, any) bool { n++; return true })
			return n == jobs
		})
		stop()
		after := commandCalls(t, cc)
		delta := map[string]int64{}
		for node, n := range after {
			delta[node] = n - before[node]
		}
		return delta
	}
	spread := func(delta map[string]int64) (lo, hi float64) {
		var total int64
		for _, n := range delta {
			total += n
		}
		mean := float64(total) / float64(len(delta))
		lo, hi = math.Inf(1), 0
		for _, n := range delta {
			lo, hi = min(lo, float64(n)/mean), max(hi, float64(n)/mean)
		}
		return lo, hi
	}
	sharded := load(t, 3)
	lo, hi := spread(sharded)
	t.Logf("3 shards: commands per primary %v: %.2f to %.2f of even", sharded, lo, hi)
	if len(sharded) != 3 || lo < 0.8 || hi > 1.2 {
		t.Errorf("3 shards on 3 primaries: commands per primary %v, %.2f to %.2f of even: want within 20 %%", sharded, lo, hi)
	}
	plain := load(t, 1)
	lo, hi = spread(plain)
	t.Logf("unsharded: commands per primary %v: %.2f to %.2f of even", plain, lo, hi)
	if hi < 1.5 {
		t.Errorf("unsharded: commands per primary %v, at most %.2f of even: the count does not tell one primary's queue from a spread one", plain, hi)
	}
}

// commandCalls sums each primary's INFO commandstats calls, but for INFO
// and CLUSTER (this test's and the client's own look-ups), by address.
func commandCalls(t *testing.T, cc *redis.ClusterClient) map[string]int64 {
	t.Helper()
	var mu sync.Mutex
	out := map[string]int64{}
	err := cc.ForEachMaster(ctx(t), func(ctx context.Context, c *redis.Client) error {
		info, err := c.Info(ctx, "commandstats").Result()
		if err != nil {
			return err
		}
		var n int64
		for _, line := range strings.Split(info, "\n") {
			name, rest, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
			if !ok || name == "cmdstat_info" || strings.HasPrefix(name, "cmdstat_cluster") {
				continue
			}
			calls, _, _ := strings.Cut(rest, ",")
			v, err := strconv.ParseInt(calls, 10, 64)
			if err != nil {
				return fmt.Errorf("commandstats line %q: %w", line, err)
			}
			n += v
		}
		mu.Lock()
		out[c.Options().Addr] = n
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatalf("INFO commandstats: %v", err)
	}
	return out
}

// TestUnservedShardLogged: a worker that started before a front end of a
// higher shard count logs an error naming each shard it does not serve.
func TestUnservedShardLogged(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		hub := events.NewHub(b.Client)
		t.Cleanup(func() { _ = hub.Close() })
		logs := &logBuffer{}
		srvs, err := queue.Serve(ctx(t), queue.ServeConfig{Redis: b.Client, Keys: queue.Keys{Prefix: b.Prefix}, Hub: hub,
			Groups: []queue.Group{{Queues: []string{"default"}, Concurrency: 1}}, ShardCheck: 10 * time.Millisecond,
			TaskCheckInterval: 20 * time.Millisecond, ShutdownTimeout: time.Second, Logger: slog.New(slog.NewTextHandler(logs, nil))},
			func(context.Context, queue.Job) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srvs.Stop)
		c := queue.NewClient(b.Client, queue.Options{Prefix: b.Prefix, Shards: queue.Shards{"default": 2}})
		shardedJobs(t, c, 40)
		shard := queue.ShardQueues(queue.Keys{Prefix: b.Prefix}.Queue("default"), 2)[1]
		name, _ := queue.Keys{Prefix: b.Prefix}.QueueName(shard)
		until(t, "an error naming shard "+name, func() bool { return strings.Contains(logs.String(), "shard="+name) })
		if n := strings.Count(logs.String(), "shard="+name); n != 1 {
			t.Errorf("shard %s named %d times, want once:\n%s", name, n, logs)
		}
	})
}

// logBuffer is a log destination safe for concurrent writes.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
