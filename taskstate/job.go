package taskstate

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// Job is what Create sends to Redis in the same round trip as a new
// record, after it: the task's first job (internal/queue captures asynq's
// enqueue into one). Create calls Pipe and, once the pipeline ran, Result;
// on a Redis Cluster, where the record and the job live in different
// slots, it sends the record first and then calls Send.
type Job interface {
	// Pipe adds the job's commands to pipe.
	Pipe(ctx context.Context, pipe redis.Pipeliner)
	// Result is the job's outcome once pipe ran, nil when it is queued; it
	// may resend through rdb what Redis could not run (a script it no
	// longer knew after a restart).
	Result(ctx context.Context, rdb redis.UniversalClient) error
	// Send sends the job by itself through rdb and returns its outcome.
	Send(ctx context.Context, rdb redis.UniversalClient) error
}

// JobError is returned by Create when the record was written but its job
// was not queued.
type JobError struct{ Err error }

func (e *JobError) Error() string { return "enqueue job: " + e.Err.Error() }
func (e *JobError) Unwrap() error { return e.Err }

// runWithJob runs create.lua, then the job, if any, in one pipeline, after
// counting the subscribers of channel watch into *listening when watch is
// set (CreateParams.Listening; not on a Redis Cluster). A missing script
// or function (after a SCRIPT or FUNCTION FLUSH or a Redis restart) runs
// create.lua again (functions.go); the job resends its own.
func (s *Store) runWithJob(ctx context.Context, job Job, keys []string, watch string, listening *bool,
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
		return "", replicaErr, job.Send(ctx, s.rdb)
	}
	pipe := s.rdb.Pipeline()
	var nc *redis.MapStringIntCmd
	if watch != "" { // before the record: a subscriber counted here hears all of the task's events
		nc = pipe.PubSubNumSub(ctx, watch)
	}
	rc := s.send(ctx, pipe, createScript, keys, args...)
	if job != nil {
		job.Pipe(ctx, pipe)
	}
	wc := s.addWait(ctx, pipe) // Options.WaitReplicas: covers the record and the job
	_, _ = pipe.Exec(ctx)
	if nc != nil && listening != nil {
		*listening = nc.Val()[watch] > 0
	}
	var replicaErr error
	if isMissing(rc.Err()) {
		rc, replicaErr = s.runWaited(ctx, createScript, keys, args...)
	} else {
		replicaErr = s.waitResult(wc)
	}
	if err := rc.Err(); err != nil {
		return "", err, nil
	}
	replayed, err := createReply(rc)
	if err != nil {
		return replayed, err, s.jobResult(ctx, job)
	}
	if replicaErr != nil {
		return "", replicaErr, s.jobResult(ctx, job)
	}
	return "", nil, s.jobResult(ctx, job)
}

// jobResult is the job's outcome; without a job there is nothing to read.
func (s *Store) jobResult(ctx context.Context, job Job) error {
	if job == nil {
		return nil
	}
	return job.Result(ctx, s.rdb)
}
