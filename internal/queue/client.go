package queue

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/mcpq/mcpq/taskstate"
)

// Options configure a Client. The zero value is usable.
type Options struct {
	// Prefix is mcpq's key prefix (default taskstate.DefaultPrefix).
	Prefix string
	// MaxTTL is the longest a task of the deployment may live; a job's
	// asynq timeout is a minute more (Timeout). Default DefaultMaxTTL.
	MaxTTL time.Duration
	// Capture lets Capture record a create's first enqueue (a front end).
	// It adds a hook to the Redis client that refuses, under a capture,
	// every command asynq's enqueue does not send (capture.go).
	Capture bool
	// Shards splits queues into shards (shards.go): a job goes to the
	// shard its task id picks. Every process of a deployment needs the
	// same (docs/deploy.md, "Queue shards").
	Shards Shards
}

// DefaultMaxTTL is Options.MaxTTL's default, the same as the front end's
// and the worker's (cmd/mcpq's defaults_test.go ties the three).
const DefaultMaxTTL = 24 * time.Hour

// Client puts jobs on mcpq's queues and looks at them: the one place the
// front end, the worker and the test harnesses enqueue, requeue, drop and
// inspect asynq jobs. Its enqueues wake the idle workers of the job's
// queue (dequeue.go). It is safe for concurrent use.
type Client struct {
	keys    Keys
	maxTTL  time.Duration
	capture bool
	shards  Shards
	// shardNames are the asynq queues of each sharded queue, by mcpq
	// name, computed once (ShardQueues).
	shardNames map[string][]string
	rdb        redis.UniversalClient // for what asynq's client cannot do (front.go)
	asynq      *asynq.Client
	insp       *asynq.Inspector
}

// NewClient returns a Client over rdb. It holds no connection of its own.
func NewClient(rdb redis.UniversalClient, opts Options) *Client {
	keys := Keys{Prefix: cmp.Or(opts.Prefix, taskstate.DefaultPrefix)}
	var through redis.UniversalClient = newWakingClient(rdb, keys)
	if opts.Capture {
		through = newCaptureClient(rdb, through, keys)
	}
	names := map[string][]string{}
	for q := range opts.Shards {
		if n := opts.Shards.of(q); n > 1 {
			names[q] = ShardQueues(keys.Queue(q), n)
		}
	}
	return &Client{keys: keys, maxTTL: cmp.Or(opts.MaxTTL, DefaultMaxTTL), capture: opts.Capture, shards: opts.Shards,
		shardNames: names, rdb: rdb, asynq: asynq.NewClientFromRedisClient(through), insp: asynq.NewInspectorFromRedisClient(rdb)}
}

// Keys returns the names the client uses.
func (c *Client) Keys() Keys { return c.keys }

// asynqQueue is the asynq queue of j's job: its queue's, or the shard
// its task id picks of a sharded queue (shards.go).
func (c *Client) asynqQueue(j Job) string {
	if names, ok := c.shardNames[j.Queue]; ok {
		return names[shardOf(j.Ref.ID, len(names))]
	}
	return c.keys.Queue(j.Queue)
}

// shardsSeen are the asynq queues of queue (an mcpq queue name) asynq has
// seen a job on, all (asynq:queues, as Queues reads it): its plain name
// and every shard's, whatever count made them.
func (c *Client) shardsSeen(queue string) ([]string, error) {
	all, err := c.insp.Queues()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, q := range all {
		if name, ok := c.keys.QueueName(q); ok && unshard(name) == queue {
			out = append(out, q)
		}
	}
	return out, nil
}

// Enqueue puts j on its queue, to be delivered at once. A job already
// there (the same task and Seq) is a harmless conflict and answers nil.
func (c *Client) Enqueue(ctx context.Context, j Job) error {
	return enqueue(ctx, c.asynq, c.asynqQueue(j), j, c.maxTTL, 0)
}

// EnqueueIn is Enqueue for a job to be delivered after delay: a task over
// its principal's share of the queue, or handed back by a worker that does
// not serve its tool. Such a job waits in asynq's scheduled set, which each
// worker's servers move to the queue every DelayedCheck (ServeConfig).
func (c *Client) EnqueueIn(ctx context.Context, j Job, delay time.Duration) error {
	return enqueue(ctx, c.asynq, c.asynqQueue(j), j, c.maxTTL, max(delay, time.Millisecond))
}

// Capture records the enqueue of j into a taskstate.Job for
// taskstate.CreateParams.Job, which sends it in the same round trip as the
// task's record (capture.go). It answers nil and no error when asynq sent
// nothing to record (the caller then enqueues after the create), and fails
// without a Client built with Options.Capture.
func (c *Client) Capture(ctx context.Context, j Job) (taskstate.Job, error) {
	if !c.capture {
		return nil, errors.New("queue: Capture on a Client without Options.Capture")
	}
	cj := &capturedJob{}
	if err := enqueue(context.WithValue(ctx, captureKey{}, cj), c.asynq, c.asynqQueue(j), j, c.maxTTL, 0); err != nil {
		return nil, err
	}
	if !cj.captured {
		return nil, nil
	}
	return cj, nil
}

// Drop deletes j's job if it is still queued: the first job of a create
// whose record was refused. A job not there (never queued, or taken by a
// worker, which finds no record and drops it) is no error.
func (c *Client) Drop(j Job) error {
	q, id := c.asynqQueue(j), ID(j.Ref, j.Seq)
	// A job waiting in its principal's list (fair.go) is not in asynq's
	// pending list, where asynq's inspector looks.
	n, err := fairDrop.Run(context.Background(), c.rdb, []string{"asynq:{" + q + "}:t:" + id, "asynq:{" + q + "}:pending"}, id).Int64()
	if err != nil {
		return fmt.Errorf("queue: drop waiting job %s: %w", id, err)
	}
	if n == 1 {
		return nil
	}
	err = c.insp.DeleteTask(q, id)
	if errors.Is(err, asynq.ErrTaskNotFound) || errors.Is(err, asynq.ErrQueueNotFound) {
		return nil
	}
	return err
}

// Revive enqueues j unless asynq still holds its job to run (pending,
// active, scheduled or waiting for a retry): a stranded task's job, lost
// or archived after its retries (an archived one is deleted first). It
// reports whether it enqueued. A sharded queue's job is looked for on
// every shard asynq has seen, not only the one this client's count picks:
// one enqueued under another count (a process that disagrees) is found
// too, and not enqueued twice.
func (c *Client) Revive(ctx context.Context, j Job) (bool, error) {
	queues, err := c.shardsSeen(j.Queue)
	if err != nil {
		return false, err
	}
	if own := c.asynqQueue(j); !slices.Contains(queues, own) {
		queues = append(queues, own)
	}
	id := ID(j.Ref, j.Seq)
	for _, queue := range queues {
		info, err := c.insp.GetTaskInfo(queue, id)
		switch {
		case err == nil && info.State != asynq.TaskStateArchived:
			return false, nil // it will run
		case err == nil:
			if err := c.insp.DeleteTask(queue, id); err != nil {
				return false, err
			}
		case !errors.Is(err, asynq.ErrTaskNotFound) && !errors.Is(err, asynq.ErrQueueNotFound):
			return false, err
		}
	}
	return true, c.Enqueue(ctx, j)
}

// Depth is what one queue holds: its jobs by state, and the age of its
// oldest pending job (0 when none waits). Pending counts the jobs waiting
// by principal (fair.go) too; Latency is asynq's, of its pending list.
type Depth struct {
	Pending, Active, Scheduled, Retry, Archived int
	Latency                                     time.Duration
}

// Queues lists the mcpq queues (of the client's prefix) asynq has seen a
// job on: a sharded queue once, by its name.
func (c *Client) Queues() (map[string]bool, error) {
	all, err := c.insp.Queues()
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(all))
	for _, q := range all {
		if name, ok := c.keys.QueueName(q); ok {
			out[unshard(name)] = true
		}
	}
	return out, nil
}

// Depth reads what queue (an mcpq queue asynq has seen: Queues) holds:
// of a sharded queue, the sum over every shard asynq has seen, and the
// oldest pending job's age of them all.
func (c *Client) Depth(queue string) (Depth, error) {
	shards, err := c.shardsSeen(queue)
	if err != nil {
		return Depth{}, err
	}
	if len(shards) == 0 {
		shards = []string{c.keys.Queue(queue)} // asynq answers its "queue not found"
	}
	var d Depth
	for _, q := range shards {
		info, err := c.insp.GetQueueInfo(q)
		if err != nil {
			return Depth{}, err
		}
		waiting, err := c.rdb.Get(context.Background(), waitingKey(q)).Int()
		if err != nil && err != redis.Nil {
			return Depth{}, fmt.Errorf("queue: read waiting jobs of %s: %w", q, err)
		}
		d.Pending += info.Pending + max(waiting, 0)
		d.Active += info.Active
		d.Scheduled += info.Scheduled
		d.Retry += info.Retry
		d.Archived += info.Archived
		d.Latency = max(d.Latency, info.Latency)
	}
	return d, nil
}

// Pending lists the ids of the jobs of queue (an mcpq queue name) that
// wait to run: those in asynq's pending list, then those waiting by
// principal (fair.go), each principal's oldest first; of a sharded
// queue, shard after shard (of this client's count). For tests and
// tools: it reads every waiting list.
func (c *Client) Pending(ctx context.Context, queue string) ([]string, error) {
	var ids []string
	for _, aq := range ShardQueues(c.keys.Queue(queue), c.shards.of(queue)) {
		more, err := c.pending(ctx, queue, aq)
		if err != nil {
			return nil, err
		}
		ids = append(ids, more...)
	}
	return ids, nil
}

// pending is Pending of one asynq queue aq of queue.
func (c *Client) pending(ctx context.Context, queue, aq string) ([]string, error) {
	ids, err := c.rdb.LRange(ctx, "asynq:{"+aq+"}:pending", 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("queue: pending jobs of %s: %w", queue, err)
	}
	slices.Reverse(ids) // asynq pushes left and pops right
	owners, err := c.rdb.ZRange(ctx, "asynq:{"+aq+"}:mcpq:waiters", 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("queue: waiting principals of %s: %w", queue, err)
	}
	for _, o := range owners {
		w, err := c.rdb.LRange(ctx, "asynq:{"+aq+"}:mcpq:w:"+o, 0, -1).Result()
		if err != nil {
			return nil, fmt.Errorf("queue: waiting jobs of %s: %w", queue, err)
		}
		slices.Reverse(w)
		ids = append(ids, w...)
	}
	return ids, nil
}
