package taskstate_test

import (
	"context"
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/taskstate"
)

// fakeJob is a taskstate.Job that reads, in the pipeline after the record
// (or by itself once the record was written), whether the record exists,
// and answers err.
type fakeJob struct {
	record string // the task's key
	exists *redis.IntCmd
	sent   bool
	err    error
}

func (f *fakeJob) Pipe(ctx context.Context, pipe redis.Pipeliner) {
	f.exists = pipe.Exists(ctx, f.record)
}

func (f *fakeJob) Result(context.Context, redis.UniversalClient) error { return f.outcome() }

func (f *fakeJob) Send(ctx context.Context, rdb redis.UniversalClient) error {
	f.sent, f.exists = true, rdb.Exists(ctx, f.record)
	return f.outcome()
}

func (f *fakeJob) outcome() error {
	if n, err := f.exists.Result(); err != nil || n != 1 {
		return errors.New("the job ran before the record was written")
	}
	return f.err
}

// TestCreateWithJob: Create sends the job after the record, in its
// pipeline (by itself after it on a Redis Cluster), and a job that fails
// leaves the record written, with a *JobError.
func TestCreateWithJob(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b)
		// Redis knows create.lua first: after a NOSCRIPT Create sends the
		// record again, behind the job.
		e.create(t, taskstate.CreateParams{})
		for _, jobErr := range []error{nil, errors.New("queue down")} {
			ref := taskstate.Ref{Owner: taskstate.OwnerTag(principal), ID: taskstate.NewID()}
			job := &fakeJob{record: e.s.Keys().Task(ref), err: jobErr}
			rec, err := e.s.Create(ctx(t), taskstate.CreateParams{ID: ref.ID, Principal: principal, Tool: "echo", Job: job})
			var je *taskstate.JobError
			switch {
			case jobErr == nil && err != nil:
				t.Fatalf("Create: %v", err)
			case jobErr != nil && (!errors.As(err, &je) || !errors.Is(err, jobErr) || rec == nil):
				t.Fatalf("Create with a failing job = %+v, %v; want the record and a JobError", rec, err)
			}
			if job.exists == nil || job.sent != b.Cluster {
				t.Fatalf("job piped %v, sent alone %v (cluster %v)", job.exists != nil, job.sent, b.Cluster)
			}
			if e.get(t, ref).Status != "working" {
				t.Fatal("the record was not written")
			}
		}
	})
}
