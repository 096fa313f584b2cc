package queue

import (
	"context"
	_ "embed"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpq/mcpq/taskstate"
)

// An idle worker's dequeue claims the task of the job it takes, in the
// same script (docs/reliability.md, "Job pickup").
//
// A worker's job was a dequeue, then the handler's claim of the task
// (taskstate.Store.ClaimBeside): two round trips before the tool runs.
// With ServeConfig.Claim set, the wakeClient runs scripts/take.lua in place
// of fair_dequeue.lua for the dequeue a wake-up sends from a hold (the
// worker was idle: a caller may wait on the job, and nothing waits on
// the dequeue loop): the same dequeue, then, for a job whose tool the
// worker serves, the claim (claim_job, in taskstate's script library:
// taskstate.NewScript), and it answers asynq with the job's message as the
// dequeue would. The claim's reply waits here, by
// the job's hash key, for the job's delivery, which hands it to the
// handler as Job.Claimed. A sweep's dequeues, a busy worker's, do not
// claim: asynq fetches with one goroutine per server, and a dequeue that
// claims costs Redis about what both did, which would slow the one loop
// that feeds every slot while the handlers' claims ran side by side
// (docs/benchmarks.md). What the script leaves to the handler's claim:
// a payload or job id of another shape, a tool not served here (its
// hand-back needs an unclaimed task), a task with an attempt running (a
// second delivery: ClaimBeside knows the worker's own runs), and every job
// of a queue under a per-principal share (Claim answers nil for it).
//
// The task is claimed when the job leaves the queue, not when the handler
// starts, microseconds later: a worker killed in between leaves a claimed
// task whose job asynq redelivers only much later, and the takeover scan
// runs it again once the worker's lease is old, as for a worker killed
// while it ran the task. Not on a Redis Cluster: the queue and the task
// live in different slots.

//go:embed scripts/take.lua
var takeSrc string

// takeScript is fair_dequeue.lua as dequeue() and take.lua, a function of
// taskstate's library (beside claim_job) where Redis has functions.
var takeScript = taskstate.NewScript("take", "local function dequeue()\n"+fairDequeueSrc+"\nend\n"+takeSrc)

// taker holds the claims dequeues made until their jobs' deliveries.
type taker struct {
	// args are the claim's arguments for asynq queue q, nil for none
	// (ServeConfig.Claim for q's mcpq queue); store runs the script.
	args  func(q string) []any
	store *taskstate.Store

	mu     sync.Mutex
	claims map[string]claimed // by the job's hash key
}

type claimed struct {
	reply any
	at    time.Time
}

// run runs take.lua with a dequeue's keys and argv (fair_dequeue.lua's)
// and the claim's arguments. Its answer is the job's message, as a
// dequeue's; a claim it made waits for the delivery (took).
func (t *taker) run(ctx context.Context, keys []string, argv, claim []any) *redis.Cmd {
	argv = append(argv, claim...)
	cmd := t.store.Run(ctx, takeScript, keys, argv...)
	res, ok := cmd.Val().([]any)
	if cmd.Err() != nil || !ok {
		return cmd // nil (no job), or the message alone (not claimed)
	}
	if len(res) != 3 {
		cmd.SetErr(errTakeReply)
		return cmd
	}
	msg, _ := res[0].(string)
	id, _ := res[1].(string)
	prefix, _ := argv[1].(string) // the queue's task key prefix
	if msg == "" || id == "" || prefix == "" {
		cmd.SetErr(errTakeReply)
		return cmd
	}
	t.put(prefix+id, res[2])
	cmd.SetVal(msg)
	return cmd
}

// errTakeReply is a take.lua reply of no shape it makes.
var errTakeReply = errors.New("mcpq: take.lua answered a reply of no known shape")

// put keeps a claim for the delivery of the job with hash key, sweeping
// claims older than aheadKeep (a delivery that never asked: its handler
// never ran) once there are many.
func (t *taker) put(key string, reply any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.claims == nil {
		t.claims = map[string]claimed{}
	}
	now := time.Now()
	if len(t.claims) >= 1024 {
		for k, c := range t.claims {
			if now.Sub(c.at) > aheadKeep {
				delete(t.claims, k)
			}
		}
	}
	t.claims[key] = claimed{reply: reply, at: now}
}

// took is the claim the dequeue of the job with hash key made, forgotten
// here; nil when it made none.
func (t *taker) took(key string) any {
	t.mu.Lock()
	defer t.mu.Unlock()
	c, ok := t.claims[key]
	if !ok {
		return nil
	}
	delete(t.claims, key)
	return c.reply
}
