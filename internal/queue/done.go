package queue

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpq/mcpq/taskstate"
)

// A delivery's job is marked done in the round trip that writes the task's
// outcome (docs/reliability.md, "Job pickup").
//
// asynq marks a job done (its done script: the job leaves the active list
// and the lease set, its hash goes, the processed counters count it) in a
// round trip of its own once the handler returned nil. A worker's job ends
// with the outcome (taskstate.Store.Finish) and then that round trip: two
// per job where one would do. So a delivery carries Job.Done, which
// Finish sends after the outcome in one pipeline (taskstate.Outcome.Beside),
// and when the done script answered OK there, the server's Redis client
// (wakeClient) answers asynq's own done call for that job OK without
// sending it.
//
// The outcome is still written before the job leaves asynq, and a crash
// leaves what it left before. What changes: a handler that returns an
// error after an outcome write Redis refused (ErrIllegal, a script error)
// no longer gets asynq's retries of the job, already gone: they found the
// same task with nothing to do, and the takeover scan looks after a task
// left running. (With Redis away the whole pipeline fails, and asynq
// retries as before.) A done script Redis does not
// know yet (the first job after a start or a SCRIPT FLUSH: asynq loads it
// with its first done) answers NOSCRIPT here, and asynq's own call runs. Not
// on a Redis Cluster: record and job are in different slots, so a pipeline
// may run them on two nodes in either order.
//
// This leans on asynq internals (the done script, its keys and arguments);
// TestDoneBesideOutcome (done_internal_test.go) pins them: if asynq changes
// them, its own done runs and the test fails.

// asynqDoneSHA is the SHA-1 of asynq v0.26.0's done script (internal/rdb
// doneCmd), for a job without a unique key or retention (mcpq sets neither).
// KEYS: the queue's active list and lease set, the job's hash, the day's
// and the total processed counters; ARGV: the job id, the day counter's
// expiry (unix s) and the largest int64 (the total wraps there).
const asynqDoneSHA = "1241eaa1c73409baaf1fea0c08d203a4911bda15"

// asynqStatsTTL is how long asynq keeps a day's processed counter
// (internal/rdb statsTTL).
const asynqStatsTTL = 90 * 24 * time.Hour

// doneAhead holds the jobs whose done ran beside their outcome, by task hash
// key, until asynq's own done call for each comes.
type doneAhead struct {
	mu   sync.Mutex
	jobs map[string]time.Time
	// answered counts asynq done calls answered without sending (tests).
	answered int64
}

// aheadKeep bounds how long an entry waits for asynq's call: one whose
// call never comes (asynq skips it when its lease of the job ran out) goes
// then.
const aheadKeep = time.Minute

func (d *doneAhead) add(key string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.jobs == nil {
		d.jobs = map[string]time.Time{}
	}
	now := time.Now()
	if len(d.jobs) >= 1024 {
		for k, at := range d.jobs {
			if now.Sub(at) > aheadKeep {
				delete(d.jobs, k)
			}
		}
	}
	d.jobs[key] = now
}

// take reports whether the job with hash key was done beside its outcome,
// forgetting it.
func (d *doneAhead) take(key string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.jobs[key]; !ok {
		return false
	}
	delete(d.jobs, key)
	d.answered++
	return true
}

// drop forgets key: asynq will not call done for it (the handler failed).
func (d *doneAhead) drop(key string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.jobs, key)
}

// doneCall is asynq's done call of job id on the asynq queue whose keys
// start with prefix; key is the job's hash.
type doneCall struct {
	ahead       *doneAhead
	prefix, key string
	id          string
	cmd         *redis.Cmd
}

var _ taskstate.Job = (*doneCall)(nil)

// newDoneCall is the done call of job id on asynq queue q.
func newDoneCall(ahead *doneAhead, q, id string) *doneCall {
	prefix := "asynq:{" + q + "}:"
	return &doneCall{ahead: ahead, prefix: prefix, key: prefix + "t:" + id, id: id}
}

// call is the script's keys and arguments as asynq's RDB.Done makes them now.
func (d *doneCall) call() ([]string, []any) {
	now := time.Now()
	return []string{d.prefix + "active", d.prefix + "lease", d.key,
			d.prefix + "processed:" + now.UTC().Format("2006-01-02"), d.prefix + "processed"},
		[]any{d.id, now.Add(asynqStatsTTL).Unix(), int64(math.MaxInt64)}
}

// Pipe adds the done script, by SHA only: a NOSCRIPT leaves the job to
// asynq's own call.
func (d *doneCall) Pipe(ctx context.Context, pipe redis.Pipeliner) {
	keys, args := d.call()
	d.cmd = pipe.EvalSha(ctx, asynqDoneSHA, keys, args...)
}

// Result records the job as done when the script answered OK.
func (d *doneCall) Result(context.Context, redis.UniversalClient) error {
	if err := d.cmd.Err(); err != nil {
		return err
	}
	d.ahead.add(d.key)
	return nil
}

// Send runs the done call by itself.
func (d *doneCall) Send(ctx context.Context, rdb redis.UniversalClient) error {
	keys, args := d.call()
	d.cmd = rdb.EvalSha(ctx, asynqDoneSHA, keys, args...)
	return d.Result(ctx, rdb)
}

// answerDone answers asynq's done call for a job done beside its outcome:
// OK, without sending it; nil for any other call.
func (d *doneAhead) answerDone(ctx context.Context, sha string, keys []string) *redis.Cmd {
	if sha != asynqDoneSHA || len(keys) != 5 || !d.take(keys[2]) {
		return nil
	}
	cmd := redis.NewCmd(ctx)
	cmd.SetVal("OK")
	return cmd
}
