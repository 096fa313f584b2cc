package taskstate

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"
)

// A new task needs two writes: its record (create.lua) and its asynq job
// (asynq's enqueue script). Sent one after the other they cost two round
// trips; JobCapture lets Create send both in one pipeline. asynq's Client
// runs its enqueue script through the Redis client it was built on; built on
// a JobCapture, a script call made under a CaptureJob context is recorded
// instead of sent, and Create pipelines it right after create.lua. Redis runs
// a connection's commands in order, so the record exists before any worker
// can dequeue the job.
//
// This leans on asynq's internals (which script it runs and what its answer
// means), which a public API would not: kept because it halves the Redis
// round trips of every create (scripts/bench: create at about 0.6x the
// HTTP+enqueue floor instead of 0.4x). It fails closed: under a capture,
// only the enqueue script of the asynq version pinned below is recorded
// (any other script is refused, not faked) and only asynq's queue-set SADD
// may reach Redis (any other command is an error), so an asynq upgrade
// that changes either fails every create and the capture tests, rather
// than losing jobs. taskstate/capture_test.go pins the script's answers.

// asynqEnqueueSHA is the SHA-1 of asynq v0.26.0's enqueue script (the one
// its Client runs for a task with an id, no uniqueness and no delay).
const asynqEnqueueSHA = "98d28b42650870a743450ffda9791e9e19c6991b"

// asynqQueuesKey is the set asynq adds each queue name to before its
// first enqueue: the one command allowed through under a capture.
const asynqQueuesKey = "asynq:queues"

// Job is one captured script call: an asynq enqueue waiting to be sent.
type Job struct {
	sha, src string
	keys     []string
	args     []any
	captured bool
}

// Captured reports whether an enqueue was recorded into j.
func (j *Job) Captured() bool { return j != nil && j.captured }

type captureKey struct{}

// CaptureJob returns a context under which the next script call through a
// JobCapture is recorded into the returned Job rather than run.
func CaptureJob(ctx context.Context) (context.Context, *Job) {
	j := &Job{}
	return context.WithValue(ctx, captureKey{}, j), j
}

// JobCapture is a Redis client for an asynq.Client whose enqueues Create can
// pipeline. Every other command, and script calls without a CaptureJob
// context, go to Redis unchanged.
type JobCapture struct {
	redis.UniversalClient
	// sources maps a script's SHA-1 to its source, learnt from the EVAL
	// that follows a NOSCRIPT, so Create can resend it after a SCRIPT FLUSH.
	sources sync.Map
}

// NewJobCapture wraps rdb. It adds a hook to rdb that refuses, under a
// CaptureJob context, every command but asynq's queue-set SADD.
func NewJobCapture(rdb redis.UniversalClient) *JobCapture {
	rdb.AddHook(captureGuard{})
	return &JobCapture{UniversalClient: rdb}
}

// captureGuard fails commands sent under a CaptureJob context that the
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

// unexpectedUnderCapture is the error for cmd under a CaptureJob context,
// nil when there is none, cmd is asynq's SADD of a queue name, or it is
// go-redis setting up a new connection (it sends those through the hooks).
func unexpectedUnderCapture(ctx context.Context, cmd redis.Cmder) error {
	if _, under := ctx.Value(captureKey{}).(*Job); !under {
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
	return fmt.Errorf("taskstate: %q sent while capturing an asynq enqueue: not what asynq v0.26.0 sends (see capture.go)", cmd.Name())
}

// unknownScript refuses to record (and fake the answer of) a script that is
// not the pinned asynq enqueue script.
func unknownScript(sha string) error {
	return fmt.Errorf("taskstate: script %s run while capturing an asynq enqueue is not asynq v0.26.0's enqueue script (see capture.go)", sha)
}

func capturing(ctx context.Context) *Job {
	j, _ := ctx.Value(captureKey{}).(*Job)
	if j == nil || j.captured {
		return nil
	}
	return j
}

// EvalSha records the call under a CaptureJob context.
func (c *JobCapture) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	j := capturing(ctx)
	if j == nil {
		return c.UniversalClient.EvalSha(ctx, sha, keys, args...)
	}
	cmd := redis.NewCmd(ctx)
	if sha != asynqEnqueueSHA {
		cmd.SetErr(unknownScript(sha))
		return cmd
	}
	src, ok := c.sources.Load(sha)
	if !ok {
		cmd.SetErr(redis.ErrNoScript) // redis.Script.Run falls back to EVAL, which carries the source

		return cmd
	}
	*j = Job{sha: sha, src: src.(string), keys: keys, args: args, captured: true}
	cmd.SetVal(int64(1)) // asynq's enqueue script: 1 is "enqueued"; Create reports the real answer
	return cmd
}

// Eval records the call under a CaptureJob context and learns the source.
func (c *JobCapture) Eval(ctx context.Context, src string, keys []string, args ...any) *redis.Cmd {
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
	c.sources.Store(sha, src)
	*j = Job{sha: sha, src: src, keys: keys, args: args, captured: true}
	cmd.SetVal(int64(1))
	return cmd
}

// ErrJobConflict: the captured enqueue found a job with the same id.
var ErrJobConflict = errors.New("taskstate: a job with this id is already queued")

// JobError is returned by Create when the record was written but its
// pipelined job was not enqueued.
type JobError struct{ Err error }

func (e *JobError) Error() string { return "enqueue job: " + e.Err.Error() }
func (e *JobError) Unwrap() error { return e.Err }

// runWithJob runs create.lua, then the captured job, if any, and the
// wake-up of its queue (Keys.Wake: idle workers dequeue at once) in one
// pipeline, after counting the subscribers of channel watch into
// *listening when watch is set (CreateParams.Listening; not on a Redis
// Cluster). A NOSCRIPT (after a SCRIPT FLUSH or a Redis restart) resends
// that script with its source, record first.
func (s *Store) runWithJob(ctx context.Context, job *Job, keys []string, watch string, listening *bool,
	args ...any) (replayed string, recErr, jobErr error) {
	if _, cluster := s.rdb.(*redis.ClusterClient); cluster {
		// The two scripts' keys live in different slots, so a cluster
		// pipeline may run them on two nodes in either order: one at a time.
		// A replica shortfall still wrote the record: its job goes too.
		reply, replicaErr := s.runWaited(ctx, createScript, keys, args...)
		replayed, recErr := createReply(reply)
		if recErr != nil || job == nil {
			return replayed, recErr, nil
		}
		return "", replicaErr, s.jobResult(ctx, s.rdb.EvalSha(ctx, job.sha, job.keys, job.args...), job, true)
	}
	pipe := s.rdb.Pipeline()
	var nc *redis.MapStringIntCmd
	if watch != "" { // before the record: a subscriber counted here hears all of the task's events
		nc = pipe.PubSubNumSub(ctx, watch)
	}
	rc := createScript.EvalSha(ctx, pipe, keys, args...)
	var jc *redis.Cmd
	if job != nil {
		jc = pipe.EvalSha(ctx, job.sha, job.keys, job.args...)
		if ch, ok := s.wakeChannel(job); ok {
			pipe.Publish(ctx, ch, "") // after the job: a woken worker finds it; its answer does not matter
		}
	}
	wc := s.addWait(ctx, pipe) // Options.WaitReplicas: covers the record and the job
	_, _ = pipe.Exec(ctx)
	if nc != nil && listening != nil {
		*listening = nc.Val()[watch] > 0
	}
	var replicaErr error
	if isNoScript(rc.Err()) {
		rc, replicaErr = s.runWaited(ctx, createScript, keys, args...)
	} else {
		replicaErr = s.waitResult(wc)
	}
	if err := rc.Err(); err != nil {
		return "", err, nil
	}
	replayed, err := createReply(rc)
	if err != nil {
		return replayed, err, s.jobResult(ctx, jc, job, false)
	}
	if replicaErr != nil {
		return "", replicaErr, s.jobResult(ctx, jc, job, false)
	}
	return "", nil, s.jobResult(ctx, jc, job, false)
}

// jobResult reads the answer of asynq's enqueue script (1 enqueued, 0 the id
// is taken), resending it with its source after a NOSCRIPT. It publishes
// the queue's wake-up after an enqueue that was not pipelined with one
// (wake), or was resent after it. Without a job there is nothing to read.
func (s *Store) jobResult(ctx context.Context, jc *redis.Cmd, job *Job, wake bool) error {
	if job == nil {
		return nil
	}
	if isNoScript(jc.Err()) {
		jc = s.rdb.Eval(ctx, job.src, job.keys, job.args...)
		wake = true
	}
	if ch, ok := s.wakeChannel(job); ok && wake && jc.Err() == nil {
		s.rdb.Publish(ctx, ch, "") // lost, it costs a poll interval: its error is not the create's
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

// wakeChannel is the wake channel (Keys.Wake) of the queue of a captured
// enqueue.
func (s *Store) wakeChannel(job *Job) (string, bool) { return wakeChannel(s.keys, job.keys) }

// wakeChannel is the wake channel (Keys.Wake) of the queue of asynq's
// enqueue script called with keys: its KEYS[2] is the queue's pending
// list. ok is false for a queue outside the prefix of k.
func wakeChannel(k Keys, keys []string) (string, bool) {
	if len(keys) != 2 {
		return "", false
	}
	q, ok := AsynqPendingQueue(keys[1])
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

// WakingClient is a Redis client for an asynq.Client whose enqueues wake
// the idle workers of the job's queue (worker/wake.go): asynq's enqueue
// script goes out in one pipeline with the PUBLISH on the queue's wake
// channel (Keys.Wake), after it. Every other call goes to Redis unchanged.
// Create pipelines its own wake-up; this is for the enqueues made outside a
// create (a resume after input, a takeover, a stranded task's recovery).
type WakingClient struct {
	redis.UniversalClient
	keys Keys
}

// NewWakingClient wraps rdb for the queues of keys' prefix.
func NewWakingClient(rdb redis.UniversalClient, keys Keys) *WakingClient {
	return &WakingClient{UniversalClient: rdb, keys: keys}
}

// EvalSha runs the call; asynq's enqueue script with a wake-up.
func (c *WakingClient) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	ch, ok := c.wakes(sha, keys)
	if !ok {
		return c.UniversalClient.EvalSha(ctx, sha, keys, args...)
	}
	return c.withWake(ctx, ch, func(p redis.Cmdable) *redis.Cmd { return p.EvalSha(ctx, sha, keys, args...) })
}

// Eval runs the call as EvalSha does (go-redis sends the source after a
// NOSCRIPT).
func (c *WakingClient) Eval(ctx context.Context, src string, keys []string, args ...any) *redis.Cmd {
	sum := sha1.Sum([]byte(src))
	ch, ok := c.wakes(hex.EncodeToString(sum[:]), keys)
	if !ok {
		return c.UniversalClient.Eval(ctx, src, keys, args...)
	}
	return c.withWake(ctx, ch, func(p redis.Cmdable) *redis.Cmd { return p.Eval(ctx, src, keys, args...) })
}

// wakes is the wake channel of an enqueue script call's queue.
func (c *WakingClient) wakes(sha string, keys []string) (string, bool) {
	if sha != asynqEnqueueSHA {
		return "", false
	}
	return wakeChannel(c.keys, keys)
}

// withWake sends the call and then the wake-up: in one pipeline, or one
// after the other on a cluster (a PUBLISH has no slot to share).
func (c *WakingClient) withWake(ctx context.Context, ch string, call func(redis.Cmdable) *redis.Cmd) *redis.Cmd {
	if _, cluster := c.UniversalClient.(*redis.ClusterClient); cluster {
		cmd := call(c.UniversalClient)
		if cmd.Err() == nil {
			c.UniversalClient.Publish(ctx, ch, "")
		}
		return cmd
	}
	pipe := c.UniversalClient.Pipeline()
	cmd := call(pipe)
	pipe.Publish(ctx, ch, "") // a lost wake-up costs a poll interval: its answer does not matter
	_, _ = pipe.Exec(ctx)
	return cmd
}
