package queue

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// A new task needs two writes: its record (taskstate's create.lua) and its
// asynq job (asynq's enqueue script). Sent one after the other they cost
// two round trips; a capture lets taskstate.Store.Create send both in one
// pipeline. asynq's Client runs its enqueue script through the Redis
// client it was built on; built on a captureClient, a script call made
// under a capture context (Client.Capture) is recorded into a capturedJob
// instead of sent, and Create pipelines it right after create.lua. Redis
// runs a connection's commands in order, so the record exists before any
// worker can dequeue the job.
//
// This leans on asynq's internals (which script it runs and what its answer
// means), which a public API would not: kept because it halves the Redis
// round trips of every create (scripts/bench: create at about 0.6x the
// HTTP+enqueue floor instead of 0.4x). It fails closed: under a capture,
// only the enqueue script of the asynq version pinned below is recorded
// (any other script is refused, not faked) and only asynq's queue-set SADD
// may reach Redis (any other command is an error), so an asynq upgrade
// that changes either fails every create and the capture tests, rather
// than losing jobs. capture_test.go pins the script's answers.

// asynqEnqueueSHA is the SHA-1 of asynq v0.26.0's enqueue script (the one
// its Client runs for a task with an id, no uniqueness and no delay).
const asynqEnqueueSHA = "98d28b42650870a743450ffda9791e9e19c6991b"

// ErrJobConflict: the captured enqueue found a job with the same id.
var ErrJobConflict = errors.New("queue: a job with this id is already queued")

// capturedJob is one captured script call, an asynq enqueue waiting to be
// sent: a taskstate.Job.
type capturedJob struct {
	sha, src string
	keys     []string
	args     []any
	captured bool
	// wake is the wake channel of the job's queue (Keys.Wake), "" for a
	// queue outside the prefix.
	wake string
	// cmd is the enqueue's answer, once Pipe sent it.
	cmd *redis.Cmd
}

// Pipe adds the enqueue, then the wake-up of its queue (idle workers
// dequeue at once; a woken worker finds the job, and the PUBLISH's answer
// does not matter), to pipe.
func (j *capturedJob) Pipe(ctx context.Context, pipe redis.Pipeliner) {
	j.cmd = pipe.EvalSha(ctx, j.sha, j.keys, j.args...)
	if j.wake != "" {
		pipe.Publish(ctx, j.wake, "")
	}
}

// Result reads the answer of the enqueue Pipe sent.
func (j *capturedJob) Result(ctx context.Context, rdb redis.UniversalClient) error {
	return j.result(ctx, rdb, j.cmd, false)
}

// Send runs the enqueue by itself, then the wake-up (a Redis Cluster: the
// record and the job live in different slots, maybe on different nodes).
func (j *capturedJob) Send(ctx context.Context, rdb redis.UniversalClient) error {
	return j.result(ctx, rdb, rdb.EvalSha(ctx, j.sha, j.keys, j.args...), true)
}

// result reads the answer of asynq's enqueue script (1 enqueued, 0 the id
// is taken), resending it with its source after a NOSCRIPT (a SCRIPT
// FLUSH or a Redis restart). It publishes the queue's wake-up after an
// enqueue that was not pipelined with one (wake), or was resent after it.
func (j *capturedJob) result(ctx context.Context, rdb redis.UniversalClient, jc *redis.Cmd, wake bool) error {
	if isNoScript(jc.Err()) {
		jc = rdb.Eval(ctx, j.src, j.keys, j.args...)
		wake = true
	}
	if wake && j.wake != "" && jc.Err() == nil {
		rdb.Publish(ctx, j.wake, "") // lost, it costs a poll interval: its error is not the create's
	}
	n, err := jc.Int64()
	switch {
	case err != nil:
		return err
	case n == 0:
		return ErrJobConflict
	}
	return nil
}

type captureKey struct{}

// captureClient is the Redis client of an asynq.Client whose enqueues a
// create can pipeline. Every other command, and script calls outside a
// capture context, go to Redis unchanged.
type captureClient struct {
	redis.UniversalClient
	keys Keys
}

// newCaptureClient wraps next, which reaches rdb. It adds a hook to rdb
// that refuses, under a capture context, every command but asynq's
// queue-set SADD.
func newCaptureClient(rdb, next redis.UniversalClient, keys Keys) *captureClient {
	rdb.AddHook(captureGuard{})
	return &captureClient{UniversalClient: next, keys: keys}
}

// captureGuard fails commands sent under a capture context that the
// capture does not expect.
type captureGuard struct{}

func (captureGuard) DialHook(next redis.DialHook) redis.DialHook { return next }

func (captureGuard) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if err := unexpectedUnderCapture(ctx, cmd); err != nil {
			cmd.SetErr(err)
			return err
		}
		return next(ctx, cmd)
	}
}

func (captureGuard) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			if err := unexpectedUnderCapture(ctx, cmd); err != nil {
				cmd.SetErr(err)
				return err
			}
		}
		return next(ctx, cmds)
	}
}

// unexpectedUnderCapture is the error for cmd under a capture context, nil
// when there is none, cmd is asynq's SADD of a queue name, or it is
// go-redis setting up a new connection (it sends those through the hooks).
func unexpectedUnderCapture(ctx context.Context, cmd redis.Cmder) error {
	if _, under := ctx.Value(captureKey{}).(*capturedJob); !under {
		return nil
	}
	switch args := cmd.Args(); cmd.Name() {
	case "sadd":
		if len(args) == 3 && args[1] == asynqQueuesKey {
			return nil
		}
	case "hello", "auth", "client", "select", "readonly", "ping":
		return nil
	}
	return fmt.Errorf("queue: %q sent while capturing an asynq enqueue: not what asynq v0.26.0 sends (see capture.go)", cmd.Name())
}

// unknownScript refuses to record (and fake the answer of) a script that is
// not the pinned asynq enqueue script.
func unknownScript(sha string) error {
	return fmt.Errorf("queue: script %s run while capturing an asynq enqueue is not asynq v0.26.0's enqueue script (see capture.go)", sha)
}

func capturing(ctx context.Context) *capturedJob {
	j, _ := ctx.Value(captureKey{}).(*capturedJob)
	if j == nil || j.captured {
		return nil
	}
	return j
}

// EvalSha records the call under a capture context.
func (c *captureClient) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	j := capturing(ctx)
	if j == nil {
		return c.UniversalClient.EvalSha(ctx, sha, keys, args...)
	}
	cmd := redis.NewCmd(ctx)
	if sha != asynqEnqueueSHA {
		cmd.SetErr(unknownScript(sha))
		return cmd
	}
	c.record(j, keys, args)
	cmd.SetVal(int64(1)) // asynq's enqueue script: 1 is "enqueued"; Create reports the real answer
	return cmd
}

// Eval records the call under a capture context.
func (c *captureClient) Eval(ctx context.Context, src string, keys []string, args ...any) *redis.Cmd {
	j := capturing(ctx)
	if j == nil {
		return c.UniversalClient.Eval(ctx, src, keys, args...)
	}
	sum := sha1.Sum([]byte(src))
	sha := hex.EncodeToString(sum[:])
	cmd := redis.NewCmd(ctx)
	if sha != asynqEnqueueSHA {
		cmd.SetErr(unknownScript(sha))
		return cmd
	}
	c.record(j, keys, args)
	cmd.SetVal(int64(1))
	return cmd
}

// record fills j with the call, as fair_enqueue.lua (fair.go: same keys,
// arguments and answer), and the wake channel of its queue.
func (c *captureClient) record(j *capturedJob, keys []string, args []any) {
	*j = capturedJob{sha: fairEnqueue.Hash(), src: fairEnqueueSrc, keys: keys, args: args, captured: true}
	j.wake, _ = wakeChannel(c.keys, keys)
}

// wakeChannel is the wake channel (Keys.Wake) of the queue of asynq's
// enqueue script called with keys: its KEYS[2] is the queue's pending
// list. ok is false for a queue outside the prefix of k.
func wakeChannel(k Keys, keys []string) (string, bool) {
	if len(keys) != 2 {
		return "", false
	}
	q, ok := pendingQueue(keys[1])
	if !ok {
		return "", false
	}
	name, ok := k.QueueName(q)
	if !ok {
		return "", false
	}
	return k.Wake(name), true
}

func isNoScript(err error) bool { return err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") }
