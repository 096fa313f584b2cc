// Package job is the one contract of a task's asynq job, for the front end,
// the worker (its runs, recovery and takeover) and the benchmarks: its
// type, its payload (the task's Ref), its id (the task id and the job's
// sequence number, Record.Resumes) and the options every enqueue uses.
// asynq only delivers: the task record in Redis is the source of truth.
package job

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/hibiken/asynq"

	"github.com/mcpq/mcpq/taskstate"
)

// Type is the asynq task type of a task's job; the payload is the JSON Ref.
const Type = "mcpq:run"

// Payload is the asynq payload for the task's job.
func Payload(ref taskstate.Ref) []byte {
	if plain([]byte(ref.Owner)) && plain([]byte(ref.ID)) {
		// What json.Marshal writes for names that need no escaping.
		return []byte(`{"o":"` + ref.Owner + `","id":"` + ref.ID + `"}`)
	}
	b, _ := json.Marshal(ref)
	return b
}

// Decode reads a payload Payload made.
func Decode(b []byte) (taskstate.Ref, error) {
	// Payload writes {"o":"<owner tag>","id":"<id>"}, neither needing
	// escapes: read that shape directly, anything else as JSON.
	const pre, mid, post = `{"o":"`, `","id":"`, `"}`
	if rest, ok := bytes.CutPrefix(b, []byte(pre)); ok {
		if owner, id, ok := bytes.Cut(rest, []byte(mid)); ok {
			if id, ok := bytes.CutSuffix(id, []byte(post)); ok && plain(owner) && plain(id) {
				return taskstate.Ref{Owner: string(owner), ID: string(id)}, nil
			}
		}
	}
	var r taskstate.Ref
	err := json.Unmarshal(b, &r)
	return r, err
}

// plain reports whether b stands in a JSON string as is, exactly as
// json.Marshal writes it (which also escapes <, > and &).
func plain(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c == '"' || c == '\\' || c >= 0x80 || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// ID is the asynq task id of a task's job number seq: the task id for
// its first run, plus "#" and the sequence number for each later job (a
// resume after input, or a takeover from a lost worker: Record.Resumes).
// Enqueueing the same job twice is then a harmless conflict, and a late
// delivery of an earlier job claims nothing.
func ID(ref taskstate.Ref, resume int64) string {
	if resume == 0 {
		return ref.ID
	}
	return ref.ID + "#" + strconv.FormatInt(resume, 10)
}

// Seq reads the job sequence number from the asynq task id of one of
// ref's jobs (ID); ok is false for an id ID does not make.
func Seq(ref taskstate.Ref, jobID string) (seq int64, ok bool) {
	if jobID == ref.ID {
		return 0, true
	}
	rest, found := strings.CutPrefix(jobID, ref.ID+"#")
	if !found {
		return 0, false
	}
	n, err := strconv.ParseInt(rest, 10, 64)
	return n, err == nil && n >= 0
}

// MaxRetry is how often asynq re-delivers a job whose delivery returned an
// error (Redis unreachable mid-run); RetryDelay keeps those re-deliveries
// seconds apart, not asynq's default minutes. A job asynq archives after
// them is found by the worker's recovery of stranded tasks.
const MaxRetry = 3

// RetryDelay is the asynq RetryDelayFunc of workers: 1 s, 2 s, 4 s, at
// most 10 s.
func RetryDelay(n int, _ error, _ *asynq.Task) time.Duration {
	return min(time.Second<<min(n, 4), 10*time.Second)
}

// Enqueuer puts a job on a queue (*asynq.Client is one).
type Enqueuer interface {
	EnqueueContext(ctx context.Context, task *asynq.Task, opts ...asynq.Option) (*asynq.TaskInfo, error)
}

// Requeue puts job number seq of ref on queue to be delivered after
// delay (a task over its principal's share of the queue, which waits
// without spending a retry); otherwise as Enqueue.
func Requeue(ctx context.Context, enq Enqueuer, ref taskstate.Ref, seq int64, queue string, maxTTL, delay time.Duration) error {
	return enqueue(ctx, enq, ref, seq, queue, maxTTL, asynq.ProcessIn(delay))
}

// Enqueue puts job number seq of ref on queue (an asynq queue name, which
// carries mcpq's prefix: taskstate.Keys.Queue). maxTTL is the longest a
// task may live: asynq's timeout is only a backstop, the record's TTL and
// heartbeats are what stop a job. A job already there (the same id) is a
// harmless conflict and answers nil.
func Enqueue(ctx context.Context, enq Enqueuer, ref taskstate.Ref, seq int64, queue string, maxTTL time.Duration) error {
	return enqueue(ctx, enq, ref, seq, queue, maxTTL)
}

func enqueue(ctx context.Context, enq Enqueuer, ref taskstate.Ref, seq int64, queue string, maxTTL time.Duration,
	more ...asynq.Option) error {
	opts := append([]asynq.Option{asynq.TaskID(ID(ref, seq)), asynq.Queue(queue), asynq.MaxRetry(MaxRetry),
		asynq.Timeout(maxTTL + time.Minute)}, more...)
	_, err := enq.EnqueueContext(ctx, asynq.NewTask(Type, Payload(ref)), opts...)
	if errors.Is(err, asynq.ErrTaskIDConflict) {
		return nil
	}
	return err
}
