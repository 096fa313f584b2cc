package queue

import (
	_ "embed"
	"time"

	"github.com/redis/go-redis/v9"
)

// Fair queues (docs/reliability.md, "Fairness"): a queue's jobs wait by
// principal, and a free slot goes to the waiting principal with the
// fewest jobs running on the queue.
//
// asynq keeps one FIFO pending list per queue, so one principal's burst
// of jobs would run before any later job of another. Every enqueue of
// this package (the front end's create, captured; resumes, takeovers and
// recoveries, through wakingClient) runs scripts/fair_enqueue.lua in place
// of asynq's enqueue script: the job's asynq task hash is written as asynq
// writes it (state "pending", and its principal in field mcpq_o), but its
// id goes to the principal's list of the queue, "asynq:{<queue>}:mcpq:w:
// <owner tag>", and the principal into the queue's "mcpq:waiters" set
// (scored by when its oldest waiting job was enqueued); "mcpq:n" counts
// the waiting jobs (Depth). Every dequeue of a worker (wakeClient) runs
// scripts/fair_dequeue.lua in place of asynq's: asynq's pending list
// first (jobs asynq itself puts there: a requeue at shutdown, a retry, a
// delayed job come due), then the oldest job of the waiting principal
// with the fewest running, counted from asynq's active list (a job whose
// lease ran out counts for none), passing over a principal at its cap
// (ServeConfig.Caps). The keys share the queue's hash tag, so a Redis
// Cluster runs each script on one node, as asynq's own.
//
// Nothing polls for a waiting job: asynq dequeues only when a slot is
// free, so waiting jobs cost Redis nothing until a slot frees, and then
// one script call. A worker without these scripts (an mcpq before them)
// sees only the pending list: upgrade the workers before the front ends.

var (
	//go:embed scripts/fair_enqueue.lua
	fairEnqueueSrc string
	//go:embed scripts/fair_dequeue.lua
	fairDequeueSrc string
	//go:embed scripts/fair_drop.lua
	fairDropSrc string
)

// The scripts, built once (a redis.Script only holds its source and SHA-1).
var (
	fairEnqueue = redis.NewScript(fairEnqueueSrc)
	fairDequeue = redis.NewScript(fairDequeueSrc)
	fairDrop    = redis.NewScript(fairDropSrc)
)

// fairDequeueArgs are fair_dequeue.lua's ARGV for one of asynq's dequeue
// calls (args: the lease's expiry and the task key prefix): then now and
// the queue's cap.
func fairDequeueArgs(args []any, now time.Time, limit int) []any {
	return []any{args[0], args[1], now.Unix(), limit}
}

// waitingKey is where mcpq:n, the count of a queue's waiting jobs, lives:
// asynqQueue is the asynq queue name.
func waitingKey(asynqQueue string) string { return "asynq:{" + asynqQueue + "}:mcpq:n" }
